"""A model whose weights are bf16, decoded on this CPU (no bf16 instructions) against the same model in float32:
16 and 64 sentences, greedy, 16 new tokens, tiny and base widths."""
import time, torch
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder

for preset, vocab in (("tiny", 16000), ("base", 32000)):
    torch.manual_seed(0)
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset(preset, vocab_size=vocab)).eval()
    bf16 = ZhenForConditionalGeneration(model.config).eval()
    bf16.load_state_dict(model.state_dict())
    bf16 = bf16.to(torch.bfloat16)
    for rows in (16, 64):
        ids = torch.randint(10, vocab, (rows, 20)); mask = torch.ones_like(ids)
        kw = dict(forced_bos_token_id=5, num_beams=1, max_new_tokens=16, min_new_tokens=16)
        for name, m in (("float32", model), ("bf16", bf16)):
            with FastDecoder(m) as d:
                d.generate(ids, mask, **kw)
                t = time.perf_counter(); d.generate(ids, mask, **kw)
                print(f"{preset} {rows} rows {name} weights, session {d.weights}: {time.perf_counter() - t:.3f} s", flush=True)
