#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Train the zhen tokenizer: the same as the `zhen-train-tokenizer` command (see `--help`)."""

from zhen.commands.train_tokenizer import main


if __name__ == "__main__":
    main()
