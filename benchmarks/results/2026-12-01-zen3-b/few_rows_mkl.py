# mkl_few_rows forced off / on: one-text calls (1, 2, 4 rows, 16 new tokens, drafts off) at the benchmark widths, best of three rounds of eight calls.
import time, torch, sys
sys.path.insert(0, "/work/main/benchmarks")
from common import zhen_model
from zhen import hardware
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
for size in ("tiny", "base"):
    torch.manual_seed(0)
    m = zhen_model(size, dropout=0.0).eval()
    vocab = m.config.vocab_size
    for rows in (1, 2, 4):
        ids = torch.randint(10, vocab, (rows, 20)); mask = torch.ones_like(ids)
        kw = dict(forced_bos_token_id=5, num_beams=1, max_new_tokens=16, min_new_tokens=16)
        res = {}
        for rnd in range(3):
            for few in ("off", "on"):
                with hardware.forced(mkl_few_rows=few):
                    ts = []
                    for call in range(10):
                        t = time.perf_counter()
                        with FastDecoder(m, drafts=False) as d:
                            d.generate(ids, mask, **kw)
                        ts.append(time.perf_counter() - t)
                res.setdefault(few, []).append(min(ts[2:]))
        off, on = min(res["off"]), min(res["on"])
        print(f"{size} {rows} rows: mkl_few_rows off {off*1e3:.1f} ms, on {on*1e3:.1f} ms: {off/on:.2f}x", flush=True)
