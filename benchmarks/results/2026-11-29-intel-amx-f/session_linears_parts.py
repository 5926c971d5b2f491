import sys, time, warnings, statistics
import torch
from torch import nn
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen.layer_steps import submodules
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
zhen.translate("Hello.", m, tok, src_lang="en", tgt_lang="zh")
def b(f, n=500):
    ts = []
    for _ in range(n):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    return statistics.median(ts) * 1e6
stacks = [m.get_decoder(), m.get_encoder()]
def build_sites():
    sites = []
    for parent in [m, *(module for stack in stacks for module in submodules(stack))]:
        if fg._is_relu_mlp(parent): continue
        for name, child in parent._modules.items():
            if fg._is_relu_mlp(child): sites.append((parent, name, child, fg.Bf16ReluMLP))
            elif type(child) is nn.Linear and parent is not m: sites.append((parent, name, child, fg.Bf16Linear))
            elif type(child) is nn.Linear and name == "lm_head": sites.append((parent, name, child, fg.Bf16Linear))
    return sites
sites = build_sites()
kept = fg._COPIES[m]; machine = fg.current_hardware()
print("walk decoder+encoder", b(lambda: [submodules(s) for s in stacks]))
print("build sites", b(build_sites), len(sites))
print("session_copy loop", b(lambda: [fg.session_copy(mod, make, kept, {}, machine) for _, _, mod, make in sites]))
copies = [fg.session_copy(mod, make, kept, {}, machine) for _, _, mod, make in sites]
def few():
    for c, (_, _, _, make) in zip(copies, sites):
        for l in (c.fc1, c.fc2) if make is fg.Bf16ReluMLP else (c,): l.multiply_few_rows_in_float32(True)
print("multiply_few_rows loop", b(few))
print("current_hardware", b(fg.current_hardware))
print("_COPIES lock+pop+put", b(lambda: fg._COPIES.__setitem__(m, fg._COPIES.pop(m))))
d = fg.FastDecoder(m); d.lock.acquire()
def lean():
    d.swap_in_lean_modules()
    for parent, name, original in reversed(d.swapped): fg._put(parent, name, original)
    d.swapped.clear()
print("lean swap+undo", b(lean))
print("walk model", b(lambda: submodules(m)))
d.lock.release()
