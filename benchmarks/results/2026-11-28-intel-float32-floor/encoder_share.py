import sys, time, torch, warnings
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
from common import zhen_model, marian_model, source_batches, SIZES
from zhen.fast_generation import FastDecoder
torch.set_num_threads(1)
z = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
m = marian_model("base", "sdpa").eval() if True else None
bs = source_batches(256, 64, SIZES["base"]["vocab"])
def best(f, n=3):
    f(); b=1e9
    for _ in range(n):
        t=time.perf_counter(); f(); b=min(b, time.perf_counter()-t)
    return b
with torch.inference_mode():
    for i in (0, 2):
        b = bs[i]
        print("batch", i, "shape", tuple(b["input_ids"].shape), "real tokens", int(b["attention_mask"].sum()))
        with FastDecoder(z) as dec:
            tz = best(lambda: dec.encode(b["input_ids"], b["attention_mask"]))
            tzd = best(lambda: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=1, max_new_tokens=32, min_new_tokens=32))
        tm = best(lambda: m.get_encoder()(input_ids=b["input_ids"], attention_mask=b["attention_mask"]))
        tmd = best(lambda: m.generate(input_ids=b["input_ids"], attention_mask=b["attention_mask"], num_beams=1, max_new_tokens=32, min_new_tokens=32, do_sample=False), 1)
        print(f"  zhen encoder {tz:.3f} s, generate {tzd:.3f}; marian encoder {tm:.3f}, generate {tmd:.3f}; ratio total {tmd/tzd:.2f}, decoder-only ratio {(tmd-tm)/(tzd-tz):.2f}")
