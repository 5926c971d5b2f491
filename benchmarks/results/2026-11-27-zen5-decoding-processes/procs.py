# python procs.py int8|fp32 BEAMS [kept]
import sys, os, time, torch, warnings, multiprocessing as mp
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
def threads():
    return list(dec.map(one, order, 2))
def init():
    torch.set_num_threads(1)
def child(i):
    return one(order[i])
POOL = None
KEEP = len(sys.argv) > 3 and sys.argv[3] == "kept"  # one pool forked once and kept, else a pool per call
def procs():
    global POOL
    if not KEEP:
        with mp.get_context("fork").Pool(2, initializer=init) as pool:
            return list(pool.imap(child, range(len(order))))
    if POOL is None:
        POOL = mp.get_context("fork").Pool(2, initializer=init)
        list(POOL.imap(child, range(len(order))))
    return list(POOL.imap(child, range(len(order))))
with torch.inference_mode():
    one(order[0])
    for f in (threads, procs, threads, procs, threads, procs):
        t = time.perf_counter(); out = f(); dt = time.perf_counter() - t
        print(precision, beams, f.__name__, f"{256*32/dt:.0f} tok/s", flush=True)
