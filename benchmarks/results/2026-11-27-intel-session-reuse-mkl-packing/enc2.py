import sys, time, torch, warnings
import probes
warnings.simplefilter("ignore")
from zhen import ZhenForConditionalGeneration
from zhen.fast_generation import FastDecoder
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
ids = torch.randint(10, 1000, (1, 12)); mask = torch.ones_like(ids)
enc = m.get_encoder()
acc = {}
def timed(name, f):
    return probes.timed(acc, name, f)
with torch.inference_mode(), FastDecoder(m) as d:
    layer_fwd = type(enc.layers[0]).forward
    type(enc.layers[0]).forward = timed("layers", layer_fwd)
    type(enc).embed = timed("embed", type(enc).embed)
    import zhen.modeling_zhen as mz
    mz.create_bidirectional_mask = timed("mask", mz.create_bidirectional_mask)
    type(enc.layers[0].self_attn).forward = timed("attn", type(enc.layers[0].self_attn).forward)
    type(enc.layers[0].mlp).forward = timed("mlp", type(enc.layers[0].mlp).forward)
    for _ in range(20): d.encode(ids, mask)
    acc.clear()
    n = 300
    a = time.perf_counter()
    for _ in range(n): d.encode(ids, mask)
    tot = (time.perf_counter() - a) / n * 1e6
    print("encode us", round(tot), {k: round(v / n * 1e6) for k, v in acc.items()})
