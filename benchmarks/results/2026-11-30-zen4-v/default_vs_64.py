"""zhen.translate with its default batch size (now default_batch_size) against batch_size=64 (the old default), taking
turns in one process; env MODEL, CORPUS (tatoeba|news), SPLIT (valid|train), N (texts), BEAMS, ROUNDS, INT8=1 for an int8 copy."""
import os, statistics, time, warnings
warnings.simplefilter("ignore")
import torch
import zhen
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.fast_generation import default_batch_size, session_weights
from zhen.hardware import decoding_streams
model, tok = zhen.translation.load_model_and_tokenizer(os.environ.get("MODEL", "/tmp/s36/small-cpu/model"),
                                                       int8=os.environ.get("INT8") == "1")
cols = parallel_columns(load_parallel(f"../shared/data/{os.environ.get('CORPUS', 'tatoeba')}/{os.environ.get('SPLIT', 'valid')}.jsonl.gz"),
                        int(os.environ.get("N", "1000")))
texts, beams = cols["en"], int(os.environ.get("BEAMS", "1"))
chosen = default_batch_size(session_weights(model), len(texts), decoding_streams("cpu"), beams)
zhen.translate(texts[:200], model, tok, tgt_lang="zh", num_beams=beams)
times = {"default": [], "64": []}
for r in range(int(os.environ.get("ROUNDS", "5"))):
    for name in (("default", "64") if r % 2 == 0 else ("64", "default")):
        t0 = time.perf_counter()
        out = zhen.translate(texts, model, tok, tgt_lang="zh", num_beams=beams, batch_size=None if name == "default" else 64)
        times[name].append(time.perf_counter() - t0)
d, s = statistics.median(times["default"]), statistics.median(times["64"])
print(f"{os.environ.get('CORPUS', 'tatoeba')} N={len(texts)} beams={beams} threads={torch.get_num_threads()} weights={session_weights(model)} "
      f"default batch {chosen}: {1e3*d:.0f} ms, batch 64: {1e3*s:.0f} ms, default x 64: {s/d:.3f}  "
      f"(rounds: default {[round(1e3*x) for x in times['default']]}, 64 {[round(1e3*x) for x in times['64']]})", flush=True)
