"""A model whose weights are bf16 on this CPU (no bf16 instructions): its own session (what zhen.translate and the
pipeline did before) against the session of its float32 copy (`zhen.fast_generation.decoding_model`, what they do
now), greedy, 16 new tokens; the first call through the copy includes making it."""
import os, sys, time, torch
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from common import zhen_model  # benchmarks/common.py: tiny = d_model 256, 3+3 layers, vocab 16k; base = transformer-base
from zhen.fast_generation import FastDecoder, decoding_model, forget_session_copies

torch.set_num_threads(2)
for preset in ("tiny", "base"):
    torch.manual_seed(0)
    bf16 = zhen_model(preset, dropout=0.0).eval().to(torch.bfloat16)
    vocab = bf16.config.vocab_size
    for rows in (1, 16, 64):
        ids = torch.randint(10, vocab, (rows, 20)); mask = torch.ones_like(ids)
        kw = dict(forced_bos_token_id=5, num_beams=1, max_new_tokens=16, min_new_tokens=16)
        with FastDecoder(bf16) as d:
            d.generate(ids, mask, **kw)
            t = time.perf_counter(); d.generate(ids, mask, **kw); own = time.perf_counter() - t
        times = []
        for call in range(3):
            t = time.perf_counter()
            with FastDecoder(decoding_model(bf16)) as d:
                d.generate(ids, mask, **kw)
            times.append(time.perf_counter() - t)
        print(f"{preset} {rows:2d} rows: bf16 model's own session {own:.3f} s; through its float32 copy: first call "
              f"{times[0]:.3f} s (copy made), then {min(times[1:]):.3f} s = {own / min(times[1:]):.1f}x", flush=True)
    forget_session_copies(bf16)
    t = time.perf_counter(); decoding_model(bf16); print(f"{preset}: making the float32 copy {time.perf_counter() - t:.3f} s")
