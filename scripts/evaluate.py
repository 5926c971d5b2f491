#!/usr/bin/env python
"""Score a zhen checkpoint with sacreBLEU: the same as the `zhen-evaluate` command (see `--help`)."""

from zhen.commands.evaluate import main


if __name__ == "__main__":
    main()
