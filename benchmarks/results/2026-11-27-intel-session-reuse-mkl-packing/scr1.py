import sys, time, torch, warnings, gzip, json
from probes import best_us
warnings.simplefilter("ignore")
import zhen, zhen.screened_argmax as sa
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.fast_generation import argmax
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
# capture real hidden states fed to the LM head
hs = []
h = m.lm_head.register_forward_hook(lambda mod, i, o: hs.append(i[0].detach().reshape(-1, i[0].shape[-1])[-1:].clone()))
texts = [json.loads(l)["en"] for l, _ in zip(gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt"), range(8))]
with torch.inference_mode():
    for t in texts:
        tok.src_lang = "en"
        enc = tok(t, return_tensors="pt")
        m.generate(**enc, forced_bos_token_id=tok.get_lang_id("zh"), max_new_tokens=20)
h.remove()
print(len(hs), "hidden states")
sa.MIN_PRODUCT = 0
s = sa.ScreenedArgmax(m.lm_head)
W = m.lm_head.weight
def t(f, n=300):
    return best_us(f, n)
with torch.inference_mode():
    x = hs[5]
    print("screen ok", s(x) is not None, "agree", [int(s(y)) == int(argmax(torch.nn.functional.linear(y, W))) for y in hs[:10]])
    print("linear+argmax", t(lambda: argmax(torch.nn.functional.linear(x, W))))
    print("screen", t(lambda: s(x)))
    q = torch.randint(-100, 100, (1, W.shape[1]), dtype=torch.int8)
    print("_int_mm M=1", t(lambda: torch._int_mm(q, s.int8_weight)))
    q17 = torch.randint(-100, 100, (17, W.shape[1]), dtype=torch.int8)
    print("_int_mm M=17", t(lambda: torch._int_mm(q17, s.int8_weight)))
    wt = s.int8_weight.t().contiguous()
    print("int8 weight contiguous (vocab,d) -> _int_mm(q, wt.t())", t(lambda: torch._int_mm(q, wt.t())))
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(50): s(x)
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=40))
print("--- break-even")
H = torch.cat(hs)
with torch.inference_mode():
    for V in (4000, 8000, 12000, 16000):
        lin = torch.nn.Linear(W.shape[1], V, bias=False)
        lin.weight.data = W[:V].clone()
        sc = sa.ScreenedArgmax(lin)
        for rows in (1, 2, 4, 8):
            xs = [H[i:i + rows] for i in range(0, 48, rows)][:6]
            ok = sum(sc(x) is not None for x in xs)
            full = sum(t(lambda: argmax(torch.nn.functional.linear(x, lin.weight)), 100) for x in xs) / len(xs)
            scr = sum(t(lambda: sc(x), 100) for x in xs) / len(xs)
            print(f"V={V} rows={rows} macs={rows*V*W.shape[1]/2**20:.1f}M full {full:.0f} us screen {scr:.0f} us ratio {full/scr:.2f} screened {ok}/{len(xs)}", flush=True)
