import time, torch, statistics, warnings
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from zhen import screened_argmax as sa
from zhen.fast_generation import argmax
from transformers import AutoModelForSeq2SeqLM
sa.FEW_ROWS_MIN_WEIGHT = 1 << 20; sa.PACK_AFTER = 0
m = AutoModelForSeq2SeqLM.from_pretrained("/tmp/s26/run/small-cpu/model").eval()
head = m.lm_head
s = sa.ScreenedArgmax(head)
p = torch.ops.mkldnn._reorder_linear_weight(head.weight.detach().to(torch.bfloat16), None)
h = torch.randn(1, 256) * 3
# real-ish hidden: take decoder final norm output on random tokens? use random scaled
def t(f, n=300):
    ts = []
    for i in range(n):
        a = time.perf_counter(); f(); ts.append(time.perf_counter() - a)
    return 1e6 * statistics.median(ts[20:])
packed = s.fbgemm_weight
q = torch.round(h / (h.abs().max() / 63))
print("fbgemm sums one row %.1f us" % t(lambda: sa.fbgemm_sums(q, packed)))
print("int_mm one row %.1f us" % t(lambda: torch._int_mm(q.to(torch.int8), s.int8_weight)))
print("screen many_rows %.1f us" % t(lambda: s.many_rows(h, None)))
print("screen one_row (int_mm) %.1f us" % t(lambda: s.one_row(h[0], None)))
print("bf16 head + argmax %.1f us" % t(lambda: argmax(torch.ops.mkldnn._linear_pointwise(h.to(torch.bfloat16), p, None, "none", [], "").float())))
print(s.many_rows(h, None), argmax(head(h)))
