exec(open("benchmarks/results/2026-12-02-zen3-h/enc_probe.py").read().split("q = quantize_dynamic")[0])
torch.set_num_threads(1)
q = quantize_dynamic(model)
d = tempfile.mkdtemp()
out = convert(M, os.path.join(d, "int8"), quantization="int8")
gen = CTranslate2Generator(out, compute_type="int8", inter_threads=1, intra_threads=1)
torch.set_num_threads(1)
tok.src_lang, tok.tgt_lang = "en", "zh"
ids = tok([cols["en"][i] for i in range(200, 264)], padding=True, return_tensors="pt")
b = dict(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"], forced_bos_token_id=tok.get_lang_id("zh"), num_beams=1)
def ct2(n):
    t = time.perf_counter(); gen.generate(**b, max_new_tokens=n, min_new_tokens=n); return time.perf_counter() - t
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
def zh(n):
    t = time.perf_counter(); dec.generate(**b, max_new_tokens=n, min_new_tokens=n); return time.perf_counter() - t
for f in (ct2, zh):
    for _ in range(2): f(2); f(22)
    a = min(f(2) for _ in range(5)); c = min(f(22) for _ in range(5))
    print(f.__name__, "2 tokens %.1f ms  22 tokens %.1f ms  per step %.2f ms" % (1e3 * a, 1e3 * c, 1e3 * (c - a) / 20))
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    zh(22)
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=40, max_shapes_column_width=60))
