#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Export a zhen checkpoint to ONNX: the same as the `zhen-export-onnx` command (see `--help`)."""

from zhen.commands.export_onnx import main


if __name__ == "__main__":
    main()
