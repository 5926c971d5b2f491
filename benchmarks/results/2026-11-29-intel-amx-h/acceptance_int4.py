"""`2026-11-29-intel-amx-g/acceptance.py` (drafted greedy tokens kept per check, drafting forced) with the draft int8
(as there) or fake-quantized int4 (`fakequant.py`). Usage:
ZHEN_HARDWARE=cpu_bf16=emulated acceptance_int4.py MODEL SRC [int8|int4g32|int4g128]"""

import runpy
import sys

sys.path.insert(0, "/work/main/benchmarks/results/2026-11-29-intel-amx-h")
import fakequant  # noqa: E402

fakequant.install(sys.argv[3] if len(sys.argv) > 3 else "int8")
sys.argv = sys.argv[:3]
runpy.run_path("/work/main/benchmarks/results/2026-11-29-intel-amx-g/acceptance.py", run_name="__main__")
