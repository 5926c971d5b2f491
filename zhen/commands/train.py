"""`zhen-train`: train a zhen model from parallel text (or, with no data arguments, the bundled sample corpus).

Examples:

    zhen-train                                            # the sample corpus, a couple of minutes on a CPU
    zhen-train --train-files train.jsonl.gz --valid-files valid.jsonl.gz --preset small --output-dir runs/small
    zhen-train --config recipe.yaml --resume              # continue an interrupted run
    accelerate launch --multi_gpu --num_processes 4 -m zhen.commands.train --config recipe.yaml

Every setting is checked before any work; a second run into the same output folder is refused while the first runs.
"""

import logging
import sys

from ..training import train
from ..training_config import build_parser, resolve_config
from ._cli import command


class _StderrHandler(logging.StreamHandler):
    """Logs to whatever `sys.stderr` is at the time: `main` may run several times in one process (tests, notebooks),
    which may replace `sys.stderr` in between."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


@command("zhen-train")
def main(argv: list[str] | None = None) -> None:
    build_parser(__doc__.splitlines()[0]).parse_args(argv)  # --help and argument errors before any work
    zhen_logger = logging.getLogger("zhen")
    if not any(isinstance(handler, _StderrHandler) for handler in zhen_logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        zhen_logger.addHandler(handler)
    zhen_logger.setLevel(logging.INFO)
    train(resolve_config(argv))


if __name__ == "__main__":
    main()
