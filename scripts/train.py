#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Train a zhen model: a thin wrapper over `zhen-train` (see `zhen/commands/train.py` and README.md)."""

from zhen.commands.train import main


if __name__ == "__main__":
    main()
