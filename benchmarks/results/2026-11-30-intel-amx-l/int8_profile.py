"""Where a small-cpu int8 greedy run of 512 Tatoeba sentences (sorted by length, 64 a batch, one session) spends its
time, and its int8 products by rows. Usage (repo root): int8_profile.py CHECKPOINT BEAMS SRC-TGT"""
import sys, time, warnings, collections
warnings.simplefilter("ignore")
import torch
from torch.profiler import profile, ProfilerActivity
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import FastDecoder
from zhen.quantization import quantize_dynamic
torch.set_num_threads(2)
M = sys.argv[1]; beams = int(sys.argv[2]); src, tgt = sys.argv[3].split("-")
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
cols = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 512)
q = quantize_dynamic(model)
tok.src_lang = src
texts = cols[src]
order = sorted(range(len(texts)), key=lambda i: -len(tok(texts[i])['input_ids']))
def run():
    with torch.inference_mode(), FastDecoder(q) as dec:
        for i in range(0, len(order), 64):
            b = tok([texts[j] for j in order[i:i+64]], padding=True, return_tensors="pt")
            n = b["input_ids"].shape[1]
            dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=tok.get_lang_id(tgt), num_beams=beams, max_new_tokens=int(1.5*n)+10)
run()
t=time.perf_counter(); run(); print("total s", time.perf_counter()-t)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
    run()
agg = collections.defaultdict(float); cnt=collections.Counter()
tot = 0
for e in p.events():
    if e.name in ("quantized::linear_dynamic", "quantized::linear_relu_dynamic") and e.input_shapes:
        shp = e.input_shapes[0]
        rows = 1
        for d in shp[:-1]: rows *= d
        b = "1-16" if rows <= 16 else "17-64" if rows <= 64 else "65-128" if rows <= 128 else "129-512" if rows<=512 else ">512"
        agg[b] += e.cpu_time_total/1e6; cnt[b]+=1
ka = p.key_averages()
for k in sorted(ka, key=lambda k: -k.self_cpu_time_total)[:15]:
    print(f"{k.key:45s} self {k.self_cpu_time_total/1e6:7.3f}s n={k.count}")
print("profiled total self:", sum(k.self_cpu_time_total for k in ka)/1e6)
for b in agg: print("int8 products rows", b, f"{agg[b]:.3f}s", cnt[b])
