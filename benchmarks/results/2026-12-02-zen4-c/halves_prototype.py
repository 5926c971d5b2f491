"""Training streams prototype: a step as two halves of the batch, one in this thread and one in a worker, each on one
PyTorch thread, against the whole step on two threads (and on one: whole1), taking turns step by step.
Usage: python halves_prototype.py tiny|small|base bf16|fp32 STEPS [MAX_TOKENS]"""
"""Prototype: a training step as two halves of the batch in two threads (1 PyTorch thread each) vs the usual step."""
import sys, time, threading, statistics, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "benchmarks")
import torch
from bench_train import make_batches
from common import zhen_model
from zhen.fast_training import FastTraining

size, precision = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 8
max_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
torch.set_num_threads(2)
torch.manual_seed(0)
model = (__import__("zhen").ZhenForConditionalGeneration._from_config(__import__("zhen").ZhenConfig.from_preset("small", vocab_size=16000, dropout=0.1, label_smoothing=0.1), attn_implementation="sdpa") if size == "small" else zhen_model(size, variant="prenorm")).train()
fast = FastTraining(model, mixed_precision=precision.replace("fp32", "no"))
params = [p for p in model.parameters() if p.requires_grad]
optim = torch.optim.AdamW(params, lr=1e-4, fused=True)
dtype = torch.bfloat16 if precision == "bf16" else None
KEYS = ("input_ids", "attention_mask", "labels")

def half_loss(batch, rows, items):
    b = {k: batch[k][rows] for k in KEYS}
    # trim padding columns of the half
    src = int(b["attention_mask"].sum(1).max()); tgt = int((b["labels"] != -100).sum(1).max())
    b = {"input_ids": b["input_ids"][:, :src], "attention_mask": b["attention_mask"][:, :src], "labels": b["labels"][:, :tgt]}
    with torch.autocast("cpu", torch.bfloat16, enabled=dtype is not None):
        return fast.loss(model, b, items)

def whole(batch):
    with torch.autocast("cpu", torch.bfloat16, enabled=dtype is not None):
        loss = fast.loss(model, {k: batch[k] for k in KEYS})
    loss.backward()
    optim.step(); optim.zero_grad(set_to_none=True)
    return float(loss)

def whole1(batch):
    torch.set_num_threads(1)
    try:
        return whole(batch)
    finally:
        torch.set_num_threads(2)

def halves(batch):
    n = len(batch["labels"])
    lengths = (batch["labels"] != -100).sum(1)
    order = lengths.argsort(descending=True)
    parts = [order[0::2].sort().values, order[1::2].sort().values]
    items = (batch["labels"] != -100).sum()
    grads, losses = [None, None], [None, None]
    def work(i):
        torch.set_num_threads(1)
        loss = half_loss(batch, parts[i], items)
        grads[i] = torch.autograd.grad(loss, params, allow_unused=True)
        losses[i] = loss.detach()
    t = threading.Thread(target=work, args=(1,)); t.start()
    work(0); t.join()
    torch.set_num_threads(2)
    for p, g0, g1 in zip(params, *grads):
        p.grad = g0 if g1 is None else (g1 if g0 is None else g0.add_(g1))
    optim.step(); optim.zero_grad(set_to_none=True)
    return float(losses[0] + losses[1])

batches = make_batches("tiny" if size == "small" else size, max_tokens, 2 + steps)
for b in batches[:2]: whole(b); halves(b)
t = {"whole": [], "halves": [], "whole1": []}
F = {"whole": whole, "halves": halves, "whole1": whole1}
tok = 0
for i, b in enumerate(batches[2:]):
    tok += int((b["labels"] != -100).sum())
    names = list(F)[i % 3:] + list(F)[:i % 3]
    for name in names:
        f = F[name]
        s = time.perf_counter(); f(b); t[name].append(time.perf_counter() - s)
for k in t:
    print(size, precision, k, "tok/s %.0f" % (tok / sum(t[k])), "median step %.3f s" % statistics.median(t[k]))
r = [a / b for a, b in zip(t["whole"], t["halves"])]
print("paired median whole/halves %.3f" % statistics.median(r))
