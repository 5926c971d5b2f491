import gzip, json, time, torch, collections, resource
import zhen
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, hardware
from zhen.quantization import quantize_dynamic
torch.set_num_threads(1)
path = "/tmp/s51/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(path)
q = quantize_dynamic(model)
rows = [json.loads(l) for l in gzip.open("../shared/data/tatoeba/valid.jsonl.gz", "rt")][:1000]
texts = [r["en"] for r in rows]
stats = collections.defaultdict(lambda: [0, 0.0, 0, None])
orig = hardware.packed_product
def timed(op, *args):
    x = args[0]
    f0 = f1 = 0
    t = time.perf_counter(); y = orig(op, *args); dt = time.perf_counter() - t
    if y.shape[-1] == 16000:
        s = stats[(tuple(x.shape), x.is_contiguous(), x.dtype)]
        s[0] += 1; s[1] += dt; s[2] += f1 - f0; s[3] = args[1]
    return y
import zhen.quantization, zhen.layer_steps, zhen.decoder_steps
for mod in (hardware, zhen.quantization, zhen.layer_steps):
    if hasattr(mod, "packed_product"): mod.packed_product = timed
run = lambda: zhen.translate(texts, model=q, tokenizer=tok, src_lang="en", tgt_lang="zh", streams=1, num_beams=1)
for _ in range(2): run()
stats.clear()
t = time.perf_counter(); out = run(); wall = time.perf_counter() - t
print(f"wall {wall:.2f}")
for k, (n, dt, faults, packed) in sorted(stats.items(), key=lambda kv: -kv[1][1])[:8]:
    print(k, n, f"{dt*1e3/n:.2f} ms avg, faults/call {faults/n:.0f}")
big = max(stats.items(), key=lambda kv: kv[1][1])
(shape, contig, dtype), (n, dt, f, packed) = big
x = torch.randn(*shape)
with torch.inference_mode():
    for _ in range(3): orig(torch.ops.quantized.linear_dynamic, x, packed, True)
    t = time.perf_counter()
    for _ in range(20): orig(torch.ops.quantized.linear_dynamic, x, packed, True)
    print("isolated same packed", (time.perf_counter() - t) / 20 * 1e3, "ms")
    junk = torch.empty(2**20)
    ts = []
    for _ in range(20):
        junk.fill_(1.0)  # 4 MB of other memory between calls
        t = time.perf_counter(); y = orig(torch.ops.quantized.linear_dynamic, x, packed, True); ts.append(time.perf_counter() - t)
        del y
    print("isolated, 4 MB touched between", sorted(ts)[10] * 1e3, "ms")
