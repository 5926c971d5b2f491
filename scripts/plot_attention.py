#!/usr/bin/env python
"""Plot the cross-attention of a zhen checkpoint: the same as the `zhen-plot-attention` command (see `--help`)."""

from zhen.commands.plot_attention import main


if __name__ == "__main__":
    main()
