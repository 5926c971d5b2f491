import sys, time, torch
sys.path.insert(0, "/work/main/benchmarks/results/2026-11-27-intel-session-reuse-mkl-packing")
from probes import checkpoint_and_pairs, best_us
from zhen.fast_generation import FastDecoder, row_index
from zhen.layer_steps import interpreted
m, tok, rows = checkpoint_and_pairs(sys.argv[1])
tok.src_lang = "en"
enc = tok([rows[3]["en"]], return_tensors="pt")
with torch.inference_mode(), FastDecoder(m) as dec:
    steps = dec.decoder_steps(enc["input_ids"], enc["attention_mask"], 1, 40)
    tokens = torch.tensor([5])
    for p in range(8): h = steps.step(tokens, p)
    hs, pe = steps.decoder.embed(tokens[:, None], None, torch.full((1,1),8))
    cache = steps.cache
    cache.position = 8
    source = cache.layers[0]
    columns, value_rows = cache.history(9)
    args = (hs, cache.keys, cache.values, 8, cache.source_keys, cache.source_values, steps.source_bias, None, None, columns, value_rows, row_index(source.keys.transpose(-1, -2), 1), row_index(source.values, 1))
    prog = steps.layer_steps
    def direct():
        with interpreted(prog):
            return prog(*args)
    print("step us", best_us(lambda: steps.step(tokens, 8), 500))
    print("run_layer_steps us", best_us(lambda: steps.run_layer_steps(hs, pe), 500))
    print("program direct us", best_us(direct, 500))
    print("embed us", best_us(lambda: steps.decoder.embed(tokens[:, None], None, torch.full((1,1),8)), 500))
    print("next_tokens us", best_us(lambda: steps.next_tokens(h), 500))
    print("screen one_row us", best_us(lambda: steps.lm_head.screen.one_row(h[0], None), 500))
