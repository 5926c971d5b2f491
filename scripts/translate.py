#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Translate lines of text with a zhen checkpoint: the same as the `zhen-translate` command (see `--help`)."""

from zhen.commands.translate import main


if __name__ == "__main__":
    main()
