"""A bf16-autocast training step of `small-cpu` through FastTraining (the packed path, matmul attention: what
`zhen-train --mixed-precision auto` runs on this CPU) on Tatoeba batches of ~3,000 tokens, two threads: the step's time
(median of 15, 5 batches x 3 rounds) and, profiled, the softmax's forward and backward and all copies. Run from the
repository root, before (780a5df) and after."""
import statistics, time, warnings, collections, torch
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_training import FastTraining
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).train()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/train.jsonl.gz"), 2000)
tok.src_lang, tok.tgt_lang = "en", "zh"
batches = []
for start in range(0, 1000, 200):
    enc = tok(cols["en"][start:start + 200], text_target=cols["zh"][start:start + 200], padding=True, return_tensors="pt")
    enc["labels"][enc["labels"] == tok.pad_token_id] = -100
    batches.append(dict(enc))
fast = FastTraining(model, mixed_precision="bf16")
print("attention kernel", fast.attention_kernel)
def step(b):
    with torch.autocast("cpu", torch.bfloat16):
        loss = fast.loss(model, b)
    loss.backward()
    model.zero_grad(set_to_none=True)
for b in batches: step(b)
times = []
for _ in range(3):
    for b in batches:
        t = time.perf_counter(); step(b); times.append(time.perf_counter() - t)
from torch.profiler import profile
with profile() as p:
    for b in batches: step(b)
totals = collections.Counter()
for e in p.key_averages():
    if e.key in ("aten::_softmax", "aten::_softmax_backward_data"): totals["softmax fwd+bwd"] += e.self_cpu_time_total
    if e.key == "aten::copy_": totals["copies"] += e.self_cpu_time_total
print(f"step median {statistics.median(times)*1e3:.0f} ms;", {k: f"{v/1e3/len(batches):.1f} ms a step" for k, v in totals.items()},
      f"profiled {sum(e.self_cpu_time_total for e in p.key_averages())/1e3/len(batches):.0f} ms a step")
