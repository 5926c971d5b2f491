# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-train`: train a zhen model from parallel text (or, with no data arguments, the bundled sample corpus).

Examples:

    zhen-train                                            # the sample corpus, a couple of minutes on a CPU
    zhen-train --train-files train.jsonl.gz --valid-files valid.jsonl.gz --preset small --output-dir runs/small
    zhen-train --config recipe.yaml --resume              # continue an interrupted run
    accelerate launch --multi_gpu --num_processes 4 -m zhen.commands.train --config recipe.yaml

Every flag is a field of `zhen.training_config.TrainingConfig`. Every setting is checked before any work; a second
run into the same output folder is refused while the first runs.
"""

import argparse
import dataclasses
import logging
import sys
import types
import typing
from typing import Any

import yaml

from ..training import train
from ..training_config import TrainingConfig, field_type, make_config
from ._cli import command


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    """One flag per field of `TrainingConfig` (`max_tokens` is `--max-tokens`), with its help and default."""
    parser = argparse.ArgumentParser(
        prog="zhen-train",
        description=(description or "")
        + " The defaults shown are those of a run that names its data; a run that names none starts from the sample "
        "recipe (zhen/sample_data/sample_recipe.yaml), and a --resume'd run from the settings it recorded.",
        argument_default=argparse.SUPPRESS,
    )
    parser.add_argument("--config", help="YAML or JSON file of configuration fields; flags override it.")
    for f in dataclasses.fields(TrainingConfig):
        text = f"{f.metadata['help']} (default: {_default_text(f)})".replace("%", "%%")
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, help=text, **_argument_for(f))
    parser.add_argument(
        "--debug", action="store_true", help="Print the full traceback of an error (also with ZHEN_DEBUG=1)."
    )
    return parser


def resolve_config(argv: list[str] | None = None) -> TrainingConfig:
    """The `TrainingConfig` of a command line: defaults (or the sample recipe, or a resumed run's recorded settings)
    < `--config` file < flags (see `zhen.training_config.make_config`)."""
    values = vars(build_parser().parse_args(argv))
    values.pop("debug", None)
    config_file = values.pop("config", None)
    for name in ("model_overrides", "train_weights"):
        if name in values:
            values[name] = dict(values[name])
    return make_config(values, config_file)


def _argument_for(f: dataclasses.Field) -> dict[str, Any]:
    annotation = field_type(f)
    options = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = options[0] if isinstance(annotation, types.UnionType) else annotation
    if base is bool:
        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(base) is list:
        return {"nargs": "*", "type": str}
    if typing.get_origin(base) is dict:
        return {"nargs": "*", "type": _parse_override, "metavar": "KEY=VALUE"}
    return {"type": base}


def _parse_override(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    key, value = text.split("=", 1)
    return key, yaml.safe_load(value)  # 256 -> int, true -> bool, rope -> str


def _default_text(f: dataclasses.Field) -> str:
    default = f.default_factory() if f.default is dataclasses.MISSING else f.default
    return "none" if default in (None, [], {}) else str(default)


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
