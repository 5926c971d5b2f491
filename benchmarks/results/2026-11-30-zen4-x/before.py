"""The pipeline module as it was at commit 55d6278 (each batch of a list through `Pipeline.__call__`), imported from
git as `zhen._pipeline_before`; run from the repository root."""
import importlib.util
import subprocess
import sys

import zhen  # noqa: F401 - the package its relative imports resolve in


def before_module():
    code = subprocess.check_output(["git", "show", "55d6278:zhen/pipeline_zhen.py"], text=True)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("zhen._pipeline_before", loader=None))
    module.__package__ = "zhen"
    sys.modules[module.__name__] = module
    exec(compile(code, "zhen/pipeline_zhen.py@55d6278", "exec"), module.__dict__)
    return module


Before = before_module().ZhenTranslationPipeline
