import sys, time, torch, warnings
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import checkpoint_and_pairs, best_us
from zhen.fast_generation import FastDecoder
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
tok.src_lang = "en"
enc = tok([rows[3]["en"]], return_tensors="pt")
with torch.inference_mode(), FastDecoder(m) as dec:
    steps = dec.decoder_steps(enc["input_ids"], enc["attention_mask"], int(sys.argv[2]), 40)
    prog = steps.layer_steps
    import os
    if os.environ.get("INLINE") in ("1", "2"):
        torch._C._jit_pass_inline(prog.graph)
    if os.environ.get("INLINE") == "2":
        g = prog.graph
        torch._C._jit_pass_constant_propagation(g)
        torch._C._jit_pass_peephole(g)
        torch._C._jit_pass_cse(g)
        torch._C._jit_pass_dce(g)
    print(type(prog), len(list(prog.graph.nodes())))
    tokens = torch.tensor([5] * steps.rows)
    for p in range(8): h = steps.step(tokens, p)
    hs, pe = steps.decoder.embed(tokens[:, None], None, torch.full((1,1),8))
    ref = steps.run_layer_steps(hs, pe).clone()
    t0 = best_us(lambda: steps.run_layer_steps(hs, pe), 300)
    print(f"INLINE={os.environ.get('INLINE')} step us {t0:.0f}", ref.flatten()[:4].tolist())
