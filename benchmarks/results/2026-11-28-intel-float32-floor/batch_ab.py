import sys, time, torch, warnings, subprocess, os
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
from common import zhen_model, source_batches, SIZES
from zhen.fast_generation import FastDecoder
size, beams, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(0)
model = zhen_model(size, "prenorm", "sdpa", 0.0).eval()
bs = source_batches(256, 64, SIZES[size]["vocab"])
b = bs[2]
with torch.inference_mode(), FastDecoder(model) as dec:
    go = lambda: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    out = go(); go()
    best = 1e9
    for _ in range(3):
        t = time.perf_counter(); go(); best = min(best, time.perf_counter() - t)
    print(os.environ.get("ZHEN_PROTO_ROWS"), size, beams, threads, "%.3f s" % best, int(out.sum()))
