import sys, time, torch, os, multiprocessing as mp
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from common import zhen_model, source_batches
from zhen.quantization import quantize_dynamic
from zhen.fast_generation import FastDecoder
from zhen import hardware
torch.set_num_threads(2)
model = quantize_dynamic(zhen_model("base", "prenorm", "sdpa", 0.0).eval())
batches = source_batches(256, 32, 32000)
order = sorted(batches, key=lambda b: -b["input_ids"].numel())
with torch.inference_mode(), FastDecoder(model) as dec:
    one = lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=int(sys.argv[1]), max_new_tokens=32, min_new_tokens=32)
    one(order[0])
    def child(i):
        return one(order[i])
    def init(): torch.set_num_threads(1)
    pool = mp.get_context("fork").Pool(2, initializer=init)
    def imap(): return list(pool.imap(child, range(len(order))))
    def ours(): return list(dec.map(one, order, 2))
    def threads():
        with hardware.forced(fork="off"):
            return list(dec.map(one, order, 2))
    for f in (imap, ours, threads) * 4:
        t = time.perf_counter(); f(); dt = time.perf_counter() - t
        print(f.__name__, f"{256*32/dt:.0f}", end="; ", flush=True)
    pool.terminate()
