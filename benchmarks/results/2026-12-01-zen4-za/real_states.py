"""Record the hidden states of the screened bf16 head's calls in zhen.translate (small-cpu, Tatoeba en->zh, greedy),
then time each recorded call: the screen (as run) vs the bf16 head + argmax, one thread; candidates per row."""
import gzip, json, sys, time, collections
import torch
from zhen import ZhenForConditionalGeneration, translate
from zhen.session_modules import ScreenedBf16Head, Bf16Linear
import zhen.screened_argmax as sa
from transformers import AutoTokenizer
model_dir, test, src, tgt = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
pairs = [json.loads(l) for l in gzip.open(test, "rt")][:1000]
model = ZhenForConditionalGeneration.from_pretrained(model_dir).eval()
tok = AutoTokenizer.from_pretrained(model_dir)
calls = []
orig = ScreenedBf16Head.next_tokens
def rec(self, h, banned=None):
    calls.append((self, h.clone(), banned)); return orig(self, h, banned)
ScreenedBf16Head.next_tokens = rec
translate([p[src] for p in pairs], model, tok, src_lang=src, tgt_lang=tgt, num_beams=1, streams=1)
ScreenedBf16Head.next_tokens = orig
torch.set_num_threads(1)
rows = collections.Counter(len(h) for _, h, _ in calls)
print("calls", len(calls), "rows histogram (top)", rows.most_common(8))
head = calls[0][0]
screen = head.screen
# candidates per row
cands = []
orig_nz = torch.Tensor.nonzero
tot_s = tot_b = 0.0
by_rows = collections.defaultdict(lambda: [0.0, 0.0, 0])
with torch.inference_mode():
  for _ in range(2):
    for _, h, banned in calls:
        s = time.perf_counter(); screen(h, banned); a = time.perf_counter() - s
        s = time.perf_counter(); Bf16Linear.forward(head, h).argmax(-1); b = time.perf_counter() - s
        k = min(len(h), 64) // 8 * 8
        by_rows[k][0] += a; by_rows[k][1] += b; by_rows[k][2] += 1
        tot_s += a; tot_b += b
print(f"screen total {tot_s*1e3/2:.0f} ms, bf16 head total {tot_b*1e3/2:.0f} ms, few_rows {screen.few_rows}, packed {screen.few_row_screens}")
for k in sorted(by_rows):
    a, b, n = by_rows[k]
    print(f"rows {k}-{k+7}: n {n//2}, screen {a/n*1e6:.0f} us, bf16 {b/n*1e6:.0f} us")
