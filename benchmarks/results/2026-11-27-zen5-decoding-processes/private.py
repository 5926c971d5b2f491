# Forked workers with private copies of the weights (cloned in each child) against shared ones and threads
import os, sys, time, torch, warnings, multiprocessing as mp
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.fast_generation import FastDecoder, Bf16Linear
torch.set_num_threads(2)
beams = int(sys.argv[1])
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
dec = FastDecoder(model).__enter__()
order = sorted(source_batches(256, 32, 32000), key=lambda b: -b["input_ids"].numel())
def one(b):
    return dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
def init(private):
    torch.set_num_threads(1)
    if private:
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, Bf16Linear):
                    m.weight = m.weight.clone()
                    m.bias = None if m.bias is None else m.bias.clone()
            for p in model.parameters():
                p.data = p.data.clone()
def child(i):
    with torch.inference_mode():
        return one(order[i])
pools = {k: mp.get_context("fork").Pool(2, initializer=init, initargs=(k == "private",)) for k in ("shared", "private")}
runs = {"threads": lambda: list(dec.map(one, order, 2))}
runs.update({k: (lambda p=p: list(p.imap(child, range(len(order))))) for k, p in pools.items()})
with torch.inference_mode():
    for f in runs.values(): f(); f()
    res = {k: [] for k in runs}
    for _ in range(4):
        for k, f in runs.items():
            t = time.perf_counter(); f(); res[k].append(256 * 32 / (time.perf_counter() - t))
print("beam", beams, "; ".join(f"{k}: " + "/".join(f"{v:.0f}" for v in vs) for k, vs in res.items()), flush=True)
for p in pools.values(): p.terminate()
