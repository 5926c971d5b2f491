#!/usr/bin/env python
"""Train a zhen model: a thin wrapper over `zhen-train` (see `zhen/commands/train.py` and README.md)."""

from zhen.commands.train import main


if __name__ == "__main__":
    main()
