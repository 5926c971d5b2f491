#!/usr/bin/env python
"""Convert a zhen checkpoint to CTranslate2: the same as the `zhen-export-ct2` command (see `--help`)."""

from zhen.commands.export_ct2 import main


if __name__ == "__main__":
    main()
