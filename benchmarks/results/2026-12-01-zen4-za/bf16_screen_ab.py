"""Base greedy, 512 sentences in batches of 64, 32 new tokens, 2 streams: bf16 session as is vs its LM head
screened by an int8 product (FBGEMM for every row count once packed, or _int_mm). Taking turns in one process."""
import copy, sys, time, torch
sys.path.insert(0, "benchmarks")
from common import zhen_model, source_batches, ZH
import zhen.fast_generation as fg, zhen.decoder_steps as ds, zhen.screened_argmax as sa
from zhen.session_modules import Bf16Linear, ScreenedHead
from zhen.screened_argmax import ScreenedArgmax
from zhen.hardware import decoding_streams

class ScreenedBf16Head(Bf16Linear):
    def __init__(self, linear):
        super().__init__(linear)
        self.screen = ScreenedArgmax(linear)
    next_tokens = ScreenedHead.next_tokens

ds.ScreenedHead = (ScreenedHead, ScreenedBf16Head)
mode = sys.argv[1] if len(sys.argv) > 1 else "fbgemm"
if mode == "fbgemm":
    sa.FEW_ROWS = 1 << 30
    sa.PACK_AFTER = 0
beams = int(sys.argv[2]) if len(sys.argv) > 2 else 1
torch.manual_seed(0)
plain = zhen_model("base", dropout=0.0).eval()
screened = copy.deepcopy(plain)
batches = source_batches(512, 64, 32000)
orig_swap = fg.FastDecoder.swap_in_session_linears
def open_session(model, screen):
    def swap(self):
        if screen and self.weights == "bf16":
            head = self.model.lm_head
            orig_swap(self)
            self.swap(self.model, "lm_head", self.model.lm_head, ScreenedBf16Head(head))
        else:
            orig_swap(self)
    fg.FastDecoder.swap_in_session_linears = swap
    d = fg.FastDecoder(model).__enter__()
    fg.FastDecoder.swap_in_session_linears = orig_swap
    print("weights", d.weights, type(model.lm_head).__name__)
    return d
decoders = {"plain": open_session(plain, False), "screened": open_session(screened, True)}
def run(d):
    f = lambda b: d.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams,
                             max_new_tokens=32, min_new_tokens=32)
    order = sorted(range(len(batches)), key=lambda i: -batches[i]["input_ids"].shape[1])
    s = time.perf_counter()
    out = list(d.map(f, [batches[i] for i in order], decoding_streams("cpu")))
    return time.perf_counter() - s, out
times = {k: [] for k in decoders}
outs = {}
for r in range(int(sys.argv[3]) if len(sys.argv) > 3 else 4):
    for k, d in decoders.items():
        sec, outs[k] = run(d)
        times[k].append(512 * 32 / sec)
    print(r, {k: round(v[-1]) for k, v in times.items()}, flush=True)
same = sum(bool((a == b).all()) for a, b in zip(outs["plain"], outs["screened"]))
rows = sum(float((a == b).all(-1).float().sum()) for a, b in zip(outs["plain"], outs["screened"]))
print("best tok/s", {k: max(v) for k, v in times.items()}, "ratio", max(times["screened"]) / max(times["plain"]))
print("identical batches", same, "/", len(batches), "identical rows", rows)
