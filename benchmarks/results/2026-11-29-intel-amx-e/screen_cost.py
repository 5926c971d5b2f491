import statistics, time, torch, sys
from zhen.screened_argmax import ScreenedArgmax
from zhen.fast_generation import Bf16Linear, argmax
from zhen import ZhenForConditionalGeneration
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
head = m.get_output_embeddings()
screen = ScreenedArgmax(head); b16 = Bf16Linear(head)
dec = m.get_decoder()
# realistic hidden states: run decoder on a few tokens
h = torch.randn(64, head.in_features)
with torch.inference_mode():
    h = dec.layer_norm(torch.randn(64, head.in_features) * 3)
evict = [torch.randn(1 << 20) for _ in range(8)]
v = {"screen": lambda x: screen(x), "bf16 head + argmax": lambda x: argmax(b16(x)), "fp32 head + argmax": lambda x: argmax(head(x))}
t = {k: [] for k in v}; agree = 0; declined = 0
with torch.inference_mode():
    for i in range(64):
        x = h[i:i+1]
        for k, f in v.items():
            for e in evict: e.sum()
            s = time.perf_counter(); r = f(x); t[k].append(time.perf_counter() - s)
            if k == "screen": declined += r is None; sr = r
        agree += sr is not None and int(sr[0]) == int(argmax(head(x))[0])
print({k: f"{statistics.median(ts)*1e6:.0f} us" for k, ts in t.items()}, f"screen agrees with fp32 argmax {agree}/64, declined {declined}")
