"""One thread: bf16 session head + argmax (Bf16Linear as a session has it) vs the int8 screen (FBGEMM packed /
_int_mm), by rows, on hidden states of the trained small-cpu model (d256, 16k) and a random base model (d512, 32k)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from best_time import best_seconds
import sys, time, torch
sys.path.insert(0, "benchmarks")
import zhen.screened_argmax as sa
from zhen.session_modules import Bf16Linear
from zhen.screened_argmax import ScreenedArgmax
from zhen import ZhenForConditionalGeneration
from common import zhen_model
torch.set_num_threads(1)
t = lambda f: best_seconds(f, 40, 7, 3) * 1e3
def hidden_of(model, rows, vocab):
    with torch.inference_mode():
        enc = model.get_encoder()(input_ids=torch.randint(5, vocab, (rows, 20)))
        dec = model.get_decoder()(input_ids=torch.randint(5, vocab, (rows, 8)), encoder_hidden_states=enc.last_hidden_state)
        return dec.last_hidden_state.reshape(-1, model.config.d_model)[:rows * 8].contiguous().float()
for name, model in (("small-cpu", ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model").eval()),
                    ("base random", zhen_model("base", dropout=0.0).eval())):
    head = model.lm_head
    b16 = Bf16Linear(head)
    screen = ScreenedArgmax(head)
    hid = hidden_of(model, 64, model.config.vocab_size)
    packed = screen.fbgemm_weight
    with torch.inference_mode():
        for rows in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            h = hid[:rows].contiguous()
            screen.few_rows, sa.PACK_AFTER = 1 << 30, 0
            tf = t(lambda: screen(h))
            screen.few_rows = 0
            ti = t(lambda: screen(h))
            tb = t(lambda: b16(h).argmax(-1))
            screen.few_rows, sa.PACK_AFTER = 1 << 30, 0
            ok = screen(h)
            ok = None if ok is None else bool((ok == (h @ head.weight.T).argmax(-1)).all())
            print(f"{name} rows {rows}: bf16 {tb:.3f} ms, screen fbgemm {tf:.3f} ({tb/tf:.2f}x), _int_mm {ti:.3f} ({tb/ti:.2f}x), exact {ok}", flush=True)
