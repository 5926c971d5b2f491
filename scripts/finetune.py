#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Fine-tune a zhen checkpoint with Seq2SeqTrainer: the same as the `zhen-finetune` command (see `--help`)."""

from zhen.commands.finetune import main


if __name__ == "__main__":
    main()
