#!/usr/bin/env python
# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Plot the cross-attention of a zhen checkpoint: the same as the `zhen-plot-attention` command (see `--help`)."""

from zhen.commands.plot_attention import main


if __name__ == "__main__":
    main()
