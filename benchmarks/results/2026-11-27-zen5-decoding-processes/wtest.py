import time, torch, sys
from zhen import translate
from zhen.translation import load_model_and_tokenizer
from zhen.translation_workers import TranslationWorkers, batches_longest_first
if __name__ == "__main__":
    torch.set_num_threads(2)
    lines = open("/tmp/en2k.txt").read().splitlines()[:1024]
    m, t = load_model_and_tokenizer("/tmp/ckbase", None, device="cpu")
    opts = dict(tgt_lang="zh", max_new_tokens=32)
    with TranslationWorkers("/tmp/ckbase", None, 2, 1) as w:
        idx, batches = batches_longest_first(lines, 32)
        list(w.translate_batches(batches[:4], **opts))
        translate(lines[:128], m, t, **opts)
        for _ in range(3):
            t0 = time.perf_counter(); list(w.translate_batches(batches, **opts)); a = time.perf_counter() - t0
            t0 = time.perf_counter(); translate(lines, m, t, **opts); b = time.perf_counter() - t0
            print(f"workers {a:.2f} s, in-process streams {b:.2f} s", flush=True)
