import sys, os, time, torch, warnings, multiprocessing as mp, resource
from concurrent.futures import ProcessPoolExecutor
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.quantization import quantize_dynamic
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
precision, beams = sys.argv[1], int(sys.argv[2])
model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
if precision == "int8": model = quantize_dynamic(model)
dec = FastDecoder(model).__enter__()
batches = source_batches(256, 32, 32000)
order = sorted(batches, key=lambda b: -b["input_ids"].numel())
def one(b):
    return dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
def init():
    torch.set_num_threads(1)
def child(i):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    with torch.inference_mode():
        out = one(order[i])
    return out, os.getpid(), time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
def procs():
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2, mp_context=mp.get_context("fork"), initializer=init) as pool:
        res = []
        for r in pool.map(child, range(len(order))):
            res.append(r)
    print("total", f"{time.perf_counter()-t0:.2f}", " ".join(f"{p%100}:{d*1000:.0f}ms/{f}" for _, p, d, f in res))
with torch.inference_mode():
    one(order[0])
    list(dec.map(one, order, 2))
    for _ in range(3):
        procs()
