#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""What zhen found on this machine: a thin wrapper over `zhen-env` (see `zhen/commands/env.py`)."""

from zhen.commands.env import main


if __name__ == "__main__":
    main()
