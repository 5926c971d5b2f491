#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Score a zhen checkpoint with sacreBLEU: the same as the `zhen-evaluate` command (see `--help`)."""

from zhen.commands.evaluate import main


if __name__ == "__main__":
    main()
