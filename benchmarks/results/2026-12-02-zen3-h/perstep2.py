exec(open("benchmarks/results/2026-12-02-zen3-h/perstep.py").read().split("tok.src_lang")[0])
tok.src_lang, tok.tgt_lang = "en", "zh"
dec = FastDecoder(q, weights="auto").__enter__()
torch.inference_mode().__enter__()
for start, n, hi in ((500, 64, 10), (500, 16, 10), (500, 8, 10), (0, 64, 30)):
    ids = tok([cols["en"][i] for i in range(start, start + n)], padding=True, return_tensors="pt")
    b = dict(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"], forced_bos_token_id=tok.get_lang_id("zh"), num_beams=1)
    def ct2(n):
        t = time.perf_counter(); gen.generate(**b, max_new_tokens=n, min_new_tokens=n); return time.perf_counter() - t
    def zh(n):
        t = time.perf_counter(); dec.generate(**b, max_new_tokens=n, min_new_tokens=n); return time.perf_counter() - t
    for f in (ct2, zh):
        for _ in range(2): f(2); f(hi)
        a = min(f(2) for _ in range(7)); c = min(f(hi) for _ in range(7))
        print(f.__name__, "rows", n, "src", ids["input_ids"].shape[1], "2 tokens %.1f ms  %d tokens %.1f ms  per step %.2f ms" % (1e3 * a, hi, 1e3 * c, 1e3 * (c - a) / (hi - 2)))
