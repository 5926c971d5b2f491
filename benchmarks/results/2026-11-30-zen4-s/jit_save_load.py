"""Compiling the decoder's layers' program against saving and loading it (torch.jit.save / torch.jit.load)."""
import os, sys, time, warnings, torch, io
warnings.simplefilter("ignore")
torch.set_num_threads(1)
exec(open("benchmarks/results/2026-11-30-zen4-s/setup_batches.py").read())
import zhen.layer_steps as ls
with torch.inference_mode(), fg.FastDecoder(q, script_layers=False) as s:
    s.generate(**batches[0])
    dec = s.model.get_decoder()
    steps = ls.decoder_layer_steps(dec)
    t = time.perf_counter(); prog = torch.jit.script(steps); ls.inline(prog); print(f"compile {1e3*(time.perf_counter()-t):.0f} ms")
    buf = io.BytesIO()
    try:
        t = time.perf_counter(); torch.jit.save(prog, buf); print(f"save {1e3*(time.perf_counter()-t):.0f} ms, {len(buf.getvalue())/1e6:.1f} MB")
        buf.seek(0)
        t = time.perf_counter(); loaded = torch.jit.load(buf); print(f"load {1e3*(time.perf_counter()-t):.0f} ms")
    except Exception as e:
        print("save/load failed:", type(e).__name__, str(e)[:300])
