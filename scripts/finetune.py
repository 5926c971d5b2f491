#!/usr/bin/env python
"""Fine-tune a zhen checkpoint with Seq2SeqTrainer: the same as the `zhen-finetune` command (see `--help`)."""

from zhen.commands.finetune import main


if __name__ == "__main__":
    main()
