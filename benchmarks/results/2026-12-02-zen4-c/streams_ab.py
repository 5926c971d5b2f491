"""FastTraining(streams=2) against streams=1 (needs training_streams.patch applied), two models taking turns step by
step on the same batches, paired ratios and page faults a step. Usage: python streams_ab.py tiny|small|base bf16|no
STEPS MAX_TOKENS (the measurement with glibc's arenas limited to one added `ctypes.CDLL("libc.so.6").mallopt(-8, 1)`
before importing torch)."""
import sys, time, statistics, warnings, resource
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")

import torch
from bench_train import make_batches
from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_training import FastTraining

preset, precision, steps, max_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(2)
def build(streams):
    torch.manual_seed(0)
    cfg = ZhenConfig.from_preset(preset, vocab_size=16000 if preset != "base" else 32000, dropout=0.1, label_smoothing=0.1)
    m = ZhenForConditionalGeneration._from_config(cfg, attn_implementation="sdpa").train()
    f = FastTraining(m, mixed_precision=precision, streams=streams)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True)
    params = [p for p in m.parameters() if p.requires_grad]
    def step(b):
        inputs = {k: b[k] for k in ("input_ids", "attention_mask", "labels")}
        tokens = (b["labels"] != -100).sum()
        with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
            if f.streams is None:
                loss = f.loss(m, inputs, tokens)
            else:
                loss = f.streams.backward(lambda part: f.loss(m, part, tokens), inputs, params)
        if f.streams is None:
            loss.backward()
        opt.step(); opt.zero_grad(set_to_none=True)
    return step
systems = {"streams": build(2), "whole": build(1)}
batches = make_batches("base" if preset == "base" else "tiny", max_tokens, 2 + steps)
for b in batches[:2]:
    for s in systems.values(): s(b)
t = {k: [] for k in systems}; faults = {k: 0 for k in systems}
tok = 0
for i, b in enumerate(batches[2:]):
    tok += int((b["labels"] != -100).sum())
    for name in (list(systems) if i % 2 == 0 else list(systems)[::-1]):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        s = time.perf_counter(); systems[name](b); t[name].append(time.perf_counter() - s)
        faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
for k in t:
    print(preset, precision, max_tokens, k, "tok/s %.0f" % (tok / sum(t[k])), "faults/step %.0f" % (faults[k] / steps))
print("paired median whole/streams %.3f" % statistics.median(a / b for a, b in zip(t["whole"], t["streams"])))
