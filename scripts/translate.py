#!/usr/bin/env python
"""Translate lines of text with a zhen checkpoint: the same as the `zhen-translate` command (see `--help`)."""

from zhen.commands.translate import main


if __name__ == "__main__":
    main()
