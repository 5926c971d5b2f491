import sys, torch, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, "/work/main/benchmarks")
from bench_train import make_batches
from common import zhen_model
from zhen.fast_training import FastTraining
torch.set_num_threads(2)
batches = make_batches("base", 4096, 2)
tiny = torch.finfo(torch.float32).tiny
for variant in ("prenorm", "postnorm"):
    torch.manual_seed(0)
    model = zhen_model("base", variant=variant).train()
    fast = FastTraining(model, mixed_precision="no")
    stats = {"act": [0, 0], "grad": [0, 0]}
    def count(kind, t):
        stats[kind][0] += int(((t != 0) & (t.abs() < tiny)).sum()); stats[kind][1] += t.numel()
    hooks = []
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            hooks.append(m.register_forward_hook(lambda mod, i, o: count("act", i[0])))
            hooks.append(m.register_full_backward_hook(lambda mod, gi, go: count("grad", go[0])))
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for b in batches:
        loss = fast.loss(model, {k: b[k] for k in ("input_ids", "attention_mask", "labels")}); loss.backward(); optim.step(); optim.zero_grad()
    print(variant, {k: f"{v[0]} denormal of {v[1]}" for k, v in stats.items()}, flush=True)
