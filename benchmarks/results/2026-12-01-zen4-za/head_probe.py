"""bf16 session head (Bf16Linear, 64 rows) vs ScreenedArgmax on hidden states of a random base model."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from best_time import best_seconds
import sys, time, torch
sys.path.insert(0, "benchmarks")
from common import zhen_model
from zhen.session_modules import Bf16Linear
from zhen.screened_argmax import ScreenedArgmax
torch.manual_seed(0)
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
model = zhen_model("base").eval()
head = model.lm_head
b16 = Bf16Linear(head)
screen = ScreenedArgmax(head)
# hidden: final-norm outputs of the decoder on random inputs
with torch.inference_mode():
    enc = model.get_encoder()(input_ids=torch.randint(5, 32000, (64, 20)))
    dec = model.get_decoder()(input_ids=torch.randint(5, 32000, (64, 8)), encoder_hidden_states=enc.last_hidden_state)
    hidden = dec.last_hidden_state[:, -1].contiguous().float()
    ref = (hidden @ head.weight.T).argmax(-1)
    got = screen(hidden)
    print("screen", None if got is None else bool((got == ref).all()))
    b = b16(hidden).argmax(-1)
    print("bf16 agrees with fp32 argmax", float((b == ref).float().mean()))
    t = lambda f: best_seconds(f, 50, 5, 5) * 1e3
    for rows in (64, 32, 16, 8):
        h = hidden[:rows].contiguous()
        tb = t(lambda: b16(h).argmax(-1))
        ts = t(lambda: screen(h))
        ti = t(lambda: torch._int_mm(torch.round(h / 0.01).clamp(-127,127).to(torch.int8), screen.int8_weight))
        print(f"rows {rows}: bf16 head+argmax {tb:.2f} ms, screen {ts:.2f} ms, _int_mm alone {ti:.2f} ms")
    from zhen.screened_argmax import fbgemm_sums
    from zhen import hardware
    print("machine", hardware.current())
    packed = screen.fbgemm_weight
    print("fbgemm levels", screen.fbgemm_levels, packed is not None)
    for rows in (64, 32, 16, 8):
        h = hidden[:rows].contiguous()
        q = torch.round(h / h.abs().amax(-1, keepdim=True) * screen.fbgemm_levels)
        tf = t(lambda: fbgemm_sums(q, packed, screen.fbgemm_levels))
        ex = torch._int_mm(q.to(torch.int8), screen.int8_weight).float()
        print(f"rows {rows}: fbgemm sums {tf:.2f} ms, exact {bool((fbgemm_sums(q, packed, screen.fbgemm_levels) == ex).all())}")
