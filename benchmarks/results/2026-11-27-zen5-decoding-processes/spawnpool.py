# python spawnpool.py 2048 [--session-per-batch]  (after mkckpt.py)
import sys, time, multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
_W = {}
def init(path):
    import torch
    torch.set_num_threads(1)
    from zhen.translation import load_model_and_tokenizer
    _W["m"], _W["t"] = load_model_and_tokenizer(path, None, device="cpu")
    if "--session-per-batch" in sys.argv:
        return  # zhen.translate opens a session (bf16 weight copies) for every batch
    from zhen.fast_generation import FastDecoder
    session = FastDecoder(_W["m"]).__enter__()  # one session for the worker's life
    oi, oe, ox = FastDecoder.__init__, FastDecoder.__enter__, FastDecoder.__exit__
    FastDecoder.__new__ = lambda cls, model, *a, **k: session if model is _W["m"] else object.__new__(cls)
    FastDecoder.__init__ = lambda self, *a, **k: None if self is session else oi(self, *a, **k)
    FastDecoder.__enter__ = lambda self: self if self is session else oe(self)
    FastDecoder.__exit__ = lambda self, *a: None if self is session else ox(self, *a)
def work(texts):
    from zhen import translate
    return translate(texts, _W["m"], _W["t"], tgt_lang="zh", max_new_tokens=32, streams=1)
if __name__ == "__main__":
    lines = open("/tmp/en2k.txt").read().splitlines()[: int(sys.argv[1])]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn"), initializer=init, initargs=("/tmp/ckbase",)) as pool:
        pool.submit(len, []).result(); pool.submit(len, []).result()
        t1 = time.perf_counter()
        batches = []
        for s in range(0, len(lines), 256):
            window = sorted(lines, key=len, reverse=True)[s:s+256]  # sorted over all lines, as zhen.translate
            batches += [window[i:i+32] for i in range(0, len(window), 32)]
        out = [x for r in pool.map(work, batches) for x in r]
    t2 = time.perf_counter()
    print(f"spawn pool: start {t1-t0:.1f} s, translate {t2-t1:.1f} s, total {t2-t0:.1f} s, {len(out)} lines")
