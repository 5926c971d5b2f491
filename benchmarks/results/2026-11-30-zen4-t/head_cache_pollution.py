"""A decoding step's layers (DecoderSteps.step) in an int8 session, 12 (argv[1]) identical rows, with the LM head and argmax as usual, without them (a fixed token), with a 4 MB read and 0.8 MB write in their place, and with the head computed but a fixed token chosen: medians of the step's time."""
import os, sys, time, warnings, statistics, torch, collections
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M = "/tmp/s36/small-cpu/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M); tok.src_lang, tok.tgt_lang = "en", "zh"
q = quantize_dynamic(model)
text = "The government said on Tuesday that it would spend more money on schools, hospitals and roads in the poorest regions of the country over the next five years."
ids = tok(text)["input_ids"]; zh = tok.get_lang_id("zh")
R = int(sys.argv[1]); N = 41
def batch(r, n): return dict(input_ids=torch.tensor([ids] * r), attention_mask=torch.ones(r, len(ids), dtype=torch.long), forced_bos_token_id=zh, num_beams=1, max_new_tokens=n)
S = collections.defaultdict(list)
orig_step, orig_next = fg.DecoderSteps.step, fg.DecoderSteps.next_tokens
def step(self, tokens, position):
    t = time.perf_counter(); y = orig_step(self, tokens, position); S[mode].append(time.perf_counter() - t); return y
fixed = None
def cheap_next(self, h, banned=None):
    return torch.full((len(h),), 7, dtype=torch.long)
junk_r = torch.ones(1 << 20); junk_w = torch.empty(int(sys.argv[2]) if len(sys.argv) > 2 else 200000)
def head_fixed_next(self, h, banned=None):
    self.logits(h)
    return torch.full((len(h),), 7, dtype=torch.long)
def polluting_next(self, h, banned=None):
    junk_r.sum(); junk_w.fill_(1.0)
    return torch.full((len(h),), 7, dtype=torch.long)
fg.DecoderSteps.step = step
with torch.inference_mode(), fg.FastDecoder(q, script_layers=True) as s:
    for mode in ["with head", "no head", "pollute", "head, fixed tokens", "with head", "no head", "pollute", "head, fixed tokens"]:
        fg.DecoderSteps.next_tokens = {"with head": orig_next, "no head": cheap_next, "pollute": polluting_next, "head, fixed tokens": head_fixed_next}[mode]
        S[mode].clear()
        for _ in range(10): s.generate(**batch(R, N))
print(R, {k: f"{statistics.median(v)*1e6:.0f} us" for k, v in S.items()})
