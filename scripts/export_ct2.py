#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Convert a zhen checkpoint to CTranslate2: the same as the `zhen-export-ct2` command (see `--help`)."""

from zhen.commands.export_ct2 import main


if __name__ == "__main__":
    main()
