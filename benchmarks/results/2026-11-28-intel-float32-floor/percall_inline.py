import os, sys, runpy, torch
import zhen.layer_steps as ls
if os.environ.get("INLINE") == "1":
    original = ls.scripted
    def scripted(steps, owner):
        program = original(steps, owner)
        if isinstance(program, torch.jit.ScriptModule) and not getattr(program, "_zhen_inlined", False):
            torch._C._jit_pass_inline(program.graph)
            program._zhen_inlined = True
        return program
    ls.scripted = scripted
sys.argv = ["percall.py", sys.argv[1]]
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
runpy.run_path("/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing/percall.py", run_name="__main__")
