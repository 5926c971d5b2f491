#!/usr/bin/env python
"""Export a zhen checkpoint to ONNX: the same as the `zhen-export-onnx` command (see `--help`)."""

from zhen.commands.export_onnx import main


if __name__ == "__main__":
    main()
