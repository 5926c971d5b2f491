# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-env`: what zhen found on this machine (CPU bf16, MKL, GPU) and what it does there, with the versions of the
libraries it runs on; paste it into a bug report.

Example:

```bash
zhen-env
ZHEN_HARDWARE=cpu_bf16=emulated zhen-env     # what zhen does on a CPU without bf16 instructions
```
"""

import platform
from importlib.metadata import version

from ..hardware import report
from ._cli import command, make_parser


PACKAGES = ("zhen-transformer", "torch", "transformers", "tokenizers", "accelerate", "datasets", "sacrebleu")


@command("zhen-env")
def main(argv: list[str] | None = None) -> None:
    make_parser("zhen-env", __doc__.split("\n\n")[0]).parse_args(argv)
    print(report())
    print(f"Python {platform.python_version()} on {platform.platform()}")
    print(", ".join(f"{name} {_version(name)}" for name in PACKAGES))


def _version(package: str) -> str:
    try:
        return version(package)
    except Exception:
        return "not installed"


if __name__ == "__main__":
    main()
