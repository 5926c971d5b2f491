"""cProfile of compiling the decoder's layers' program the first time in a process, and a second compile of the same classes."""
import os, sys, time, warnings, torch, cProfile, pstats
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.layer_steps as ls
with torch.inference_mode(), fg.FastDecoder(q, script_layers=False) as s:
    s.generate(**batches[0])
    dec = s.model.get_decoder()
    steps = ls.decoder_layer_steps(dec)
    pr = cProfile.Profile(); pr.enable()
    t = time.perf_counter()
    prog = torch.jit.script(steps)
    t1 = time.perf_counter()
    ls.inline(prog)
    t2 = time.perf_counter()
    pr.disable()
    print(f"script {1e3*(t1-t):.0f} ms inline {1e3*(t2-t1):.0f} ms")
    # second compile of a fresh steps object of the same classes
    steps2 = ls.decoder_layer_steps(dec)
    t = time.perf_counter(); prog2 = torch.jit.script(steps2); print(f"second script {1e3*(time.perf_counter()-t):.0f} ms")
pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
