#!/usr/bin/env python
"""Train the zhen tokenizer: the same as the `zhen-train-tokenizer` command (see `--help`)."""

from zhen.commands.train_tokenizer import main


if __name__ == "__main__":
    main()
