"""zhen.translate (int8, beam 4, en->zh) on the first 500 Tatoeba validation pairs: one thread, then two decoding
streams at 64, 32 and 16 a batch, best of two. Edit the checkpoint path (here the `small-cpu` model of this session)."""
import gzip, json, time, torch, sys
from zhen.translation import load_model_and_tokenizer, translate
model, tok = load_model_and_tokenizer("/tmp/rt/small/model", int8=True)
src = [json.loads(l)["en"] for l in gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt")][:500]
translate(src[:64], model, tok, tgt_lang="zh", num_beams=4)
for streams, bs in [(1, 64), (2, 64), (2, 32), (2, 16)]:
    if streams == 1: torch.set_num_threads(1)
    else: torch.set_num_threads(2)
    best = 1e9
    for _ in range(2):
        t = time.perf_counter(); translate(src, model, tok, tgt_lang="zh", num_beams=4, batch_size=bs, streams=streams); best = min(best, time.perf_counter() - t)
    print(streams, bs, f"{len(src)/best:.0f} sent/s", flush=True)
