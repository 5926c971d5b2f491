#!/usr/bin/env python
"""Upload an exported zhen folder to the Hugging Face Hub: the same as the `zhen-push` command (see `--help`)."""

from zhen.commands.push import main


if __name__ == "__main__":
    main()
