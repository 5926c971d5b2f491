"""Self-attention of a decoding step (`layer_steps.attend_history`, compiled by TorchScript, run by its plain
interpreter as the decoding programs are), before (780a5df: PyTorch's softmax over the short rows) and after
(`hardware.row_softmax`: short rows as columns of the transposed scores), in one process: us a call, best of
3 x 5 x 100 calls of 10, by rows (4 heads, head_dim 64) and history length. Run from the repository root."""
import importlib.util, subprocess, sys, tempfile, time
import torch
torch.set_num_threads(1)
import zhen.layer_steps as new
from zhen.fast_generation import _row_index
old_source = subprocess.run(["git", "show", "780a5df:zhen/layer_steps.py"], capture_output=True, text=True, check=True).stdout
path = tempfile.NamedTemporaryFile("w", suffix="_layer_steps_old.py", delete=False).name
open(path, "w").write(old_source)
spec = importlib.util.spec_from_file_location("zhen.layer_steps_old", path)
old = importlib.util.module_from_spec(spec); sys.modules["zhen.layer_steps_old"] = old; spec.loader.exec_module(old)
def program(module):
    @torch.jit.script
    def ten_calls(q, keys, values, n: int, rows: tuple[torch.Tensor, torch.Tensor]):
        y = q
        for _ in range(10):
            y = module.attend_history(q, keys[:, :, :n], values[:, :, :n], 0.125, None, rows)
        return y
    return ten_calls
before, after = program(old), program(new)
def best(f):
    for _ in range(10): f()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(100): f()
        times.append((time.perf_counter() - start) / 100)
    return min(times) * 1e6 / 10
with torch.jit.optimized_execution(False):
    for rows in (64, 32, 16):
        line = []
        for n in (2, 4, 8, 11, 15):
            keys, values, q = torch.randn(rows, 4, 54, 1, 64), torch.randn(rows, 4, 54, 1, 64), torch.randn(rows, 4, 1, 64)
            index = _row_index(rows * 4, 1, n, 54, "cpu")
            assert torch.allclose(before(q, keys, values, n, index), after(q, keys, values, n, index), atol=1e-6)
            b = min(best(lambda: before(q, keys, values, n, index)) for _ in range(3))
            a = min(best(lambda: after(q, keys, values, n, index)) for _ in range(3))
            line.append(f"{n:2d} positions {b:4.0f} -> {a:4.0f}")
        print(f"{rows:2d} rows: " + " | ".join(line), flush=True)
