"""The small-cpu recipe's step (768-token batches, float32) with its packed attention in 4 (default), 2 or 1 groups,
by two matmuls and a softmax (the default here) or SDPA: forward + backward of the same 30 batches, taking turns.

    python groups_ab.py OUTPUT_DIR TOKENIZER
"""
import statistics
# the trainer as zhen-train builds it: step_profile.py's setup
exec(open("benchmarks/results/2026-12-02-zen3-i/step_profile.py").read().split("print(trainer.fast.describe())")[0])
model = trainer.model
model.train()
windows = trainer.windows()
batches = [trainer.collate(trainer.data.train[next(windows)[0]]) for _ in range(30)]
variants = [(4, "matmul"), (2, "matmul"), (1, "matmul"), (4, "sdpa"), (1, "sdpa")]
def run(groups, kernel):
    trainer.fast.attention_groups, trainer.fast.attention_kernel = groups, kernel
    start = time.perf_counter()
    for b in batches:
        n = torch.tensor(float(b["labels"].ne(-100).sum()))
        trainer.fast.loss(model, b, num_items_in_batch=n).backward()
        model.zero_grad(set_to_none=True)
    return time.perf_counter() - start
for v in variants: run(*v)
T = {v: [] for v in variants}
for r in range(6):
    for v in (variants if r % 2 else variants[::-1]):
        T[v].append(run(*v))
base = T[variants[0]]
for v, t in T.items():
    ratios = [b / x for b, x in zip(base, t)]
    print(v, "median %.3f s  min %.3f s  speed vs default: median per turn %.3f" % (statistics.median(t), min(t), statistics.median(ratios)))
