import time, torch
torch.set_num_threads(2)
from zhen import translate
from zhen.translation import load_model_and_tokenizer
m, t = load_model_and_tokenizer("/tmp/ckbase", None, device="cpu")
lines = open("/tmp/en2k.txt").read().splitlines()
translate(lines[:64], m, t, tgt_lang="zh", max_new_tokens=32)
for _ in range(2):
    t0 = time.perf_counter(); out = translate(lines, m, t, tgt_lang="zh", max_new_tokens=32); print(f"in-process streams: {time.perf_counter()-t0:.1f} s", flush=True)
