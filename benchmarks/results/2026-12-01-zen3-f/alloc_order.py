"""Does where a model's parameters were allocated (mmapped by glibc before zhen raises its thresholds, or from the
heap after) change a float32 training step's speed? Three base pre-norm models in one process, taking turns."""
import sys, time, torch, warnings, collections
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import make_batches
from common import zhen_model
from zhen.fast_training import FastTraining
torch.set_num_threads(2)
size = sys.argv[1]; rounds = int(sys.argv[2]); count = int(sys.argv[3])
batches = make_batches(size, 4096, count + 1)
torch.manual_seed(0); a = zhen_model(size).train()
torch.manual_seed(0); c = zhen_model(size).train()
fa = FastTraining(a, mixed_precision="no")  # raises glibc's thresholds
with torch.no_grad():
    for p in c.parameters(): p.data = p.data.clone()
torch.manual_seed(0); b = zhen_model(size).train()
fb, fc = FastTraining(b, mixed_precision="no"), FastTraining(c, mixed_precision="no")
models = {"A mmapped": (a, fa), "B heap": (b, fb), "C cloned": (c, fc)}
for name, (m, _) in models.items():
    offs = collections.Counter(p.data_ptr() % 4096 for p in m.parameters() if p.numel() >= 1 << 18)
    print(name, "offsets in page of large params:", dict(offs.most_common(3)))
optims = {n: torch.optim.AdamW(m.parameters(), lr=1e-4, fused=True) for n, (m, _) in models.items()}
def step(name, batch):
    m, f = models[name]
    t = time.perf_counter()
    f.loss(m, {k: batch[k] for k in ("input_ids", "attention_mask", "labels")}).backward()
    optims[name].step(); optims[name].zero_grad(set_to_none=True)
    return time.perf_counter() - t
for n in models: step(n, batches[0])
best = {n: [9e9] * count for n in models}
names = list(models)
for r in range(rounds):
    for i, batch in enumerate(batches[1:]):
        shift = (r + i) % 3
        for n in names[shift:] + names[:shift]:
            best[n][i] = min(best[n][i], step(n, batch))
for n in names: print(n, [f"{t:.2f}" for t in best[n]], f"sum {sum(best[n]):.2f}")
