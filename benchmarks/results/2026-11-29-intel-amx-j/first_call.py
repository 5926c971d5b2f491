"""The first calls of a fresh process, one text a call, en->zh: `zhen.translate` as it is (the layers' programs in
Python over a model's first SCRIPT_AFTER_SECONDS of decoding), `zhen.translate` compiling them at its first call (the
previous default: SCRIPT_AFTER_SECONDS = 0), and `model.generate` on the same checkpoint (float32, SDPA).
Usage: first_call.py CHECKPOINT NUM_BEAMS SYSTEM CALLS; prints each call's milliseconds and the total."""
import sys, time, warnings
warnings.simplefilter("ignore")
import torch
from transformers.utils import logging; logging.set_verbosity_error()
import zhen
from zhen import fast_generation, hardware
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
from zhen.translation import load_model_and_tokenizer
torch.set_num_threads(2)
path, beams, system, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if system == "compile-at-once":
    fast_generation.SCRIPT_AFTER_SECONDS = 0.0
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), count)["en"]
model, tok = load_model_and_tokenizer(path)
times = []
for text in texts:
    start = time.perf_counter()
    if system == "generate":
        tok.src_lang, tok.tgt_lang = "en", "zh"
        with torch.inference_mode():
            ids = model.generate(**tok(text, return_tensors="pt"), num_beams=beams,
                                 forced_bos_token_id=tok.get_lang_id("zh"))
        tok.decode(ids[0], skip_special_tokens=True)
    else:
        if system == "measure-packing" and text is texts[0]:
            hardware.measured_float32_packing()
        zhen.translate(text, model, tok, src_lang="en", tgt_lang="zh", num_beams=beams)
    times.append(time.perf_counter() - start)
print(f"{system} beams {beams}: first {times[0]*1e3:.0f} ms, second {times[1]*1e3:.0f} ms, median of calls 2-{count} "
      f"{sorted(times[1:])[len(times[1:])//2]*1e3:.1f} ms, all {count} calls {sum(times):.2f} s, "
      f"compiled: {fast_generation.scripting_due(model)}")
