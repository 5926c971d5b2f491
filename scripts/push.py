#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Upload an exported zhen folder to the Hugging Face Hub: the same as the `zhen-push` command (see `--help`)."""

from zhen.commands.push import main


if __name__ == "__main__":
    main()
