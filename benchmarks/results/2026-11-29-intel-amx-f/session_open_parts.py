import sys, time, warnings, statistics
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg
from zhen.layer_steps import submodules
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
torch.set_num_threads(2)
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
zhen.translate("Hello.", m, tok, src_lang="en", tgt_lang="zh")
def bench(f, n=300):
    ts = []
    for _ in range(n):
        s = time.perf_counter(); f(); ts.append(time.perf_counter() - s)
    return statistics.median(ts) * 1e6
def open_close():
    with fg.FastDecoder(m): pass
print("open+close", bench(open_close))
print("FastDecoder() init", bench(lambda: fg.FastDecoder(m)))
print("walk model", bench(lambda: submodules(m)))
print("decoder_weights", bench(lambda: fg.decoder_weights(m)))
d = fg.FastDecoder(m); d.lock.acquire()
def lean():
    d.swap_in_lean_modules()
    for parent, name, original in reversed(d.swapped): fg._put(parent, name, original)
    d.swapped.clear()
def linears():
    d.swap_in_session_linears()
    for parent, name, original in reversed(d.swapped): fg._put(parent, name, original)
    d.swapped.clear()
print("swap_in_lean_modules+undo", bench(lean))
print("swap_in_session_linears+undo", bench(linears))
kept = fg._COPIES[m]
entries = list(kept.items())
print("sites", len(entries))
print("stamps all_match", bench(lambda: [fg.WeightStamp.all_match(e[1], fg._weights_of(mod)) for mod, e in entries]))
print("_weights_of", bench(lambda: [fg._weights_of(mod) for mod, e in entries]))
ws = [fg._weights_of(mod) for mod, e in entries]
print("matches only", bench(lambda: [fg.WeightStamp.all_match(e[1], w) for (mod, e), w in zip(entries, ws)]))
d.lock.release()
