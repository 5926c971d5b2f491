"""zhen.translate on real sentences with batch_size 32 vs 64 (alternating subprocesses): seconds and peak RSS."""
import gzip, json, resource, subprocess, sys, time
if len(sys.argv) > 1 and sys.argv[1] == "--one":
    import warnings; warnings.filterwarnings("ignore")
    import torch, zhen
    from zhen.translation import load_model_and_tokenizer
    _, model_dir, path, limit, beams, bs = sys.argv[1:]
    rows = [json.loads(l) for l in gzip.open(path, "rt")][: int(limit)]
    model, tok = load_model_and_tokenizer(model_dir)
    texts = [r["en"] for r in rows]
    zhen.translate(texts[:64], model, tok, tgt_lang="zh", num_beams=int(beams), batch_size=int(bs))  # warm-up
    t = time.perf_counter()
    out = zhen.translate(texts, model, tok, tgt_lang="zh", num_beams=int(beams), batch_size=int(bs))
    s = time.perf_counter() - t
    print(json.dumps(dict(seconds=s, rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, out=out)))
    sys.exit()
model_dir = sys.argv[1]
sets = {"tatoeba": ("/work/shared/data/tatoeba/valid.jsonl.gz", 1024), "news": ("/work/shared/data/news/valid.jsonl.gz", 384)}
for name, (path, limit) in sets.items():
    for beams in (1, 4):
        res = {32: [], 64: []}; outs = {}
        for r in range(2):
            for bs in (32, 64):
                p = subprocess.run([sys.executable, __file__, "--one", model_dir, path, str(limit), str(beams), str(bs)], capture_output=True, text=True)
                d = json.loads(p.stdout.strip().splitlines()[-1]); res[bs].append(d); outs[bs] = d["out"]
        same = sum(a == b for a, b in zip(outs[32], outs[64]))
        def f(bs):
            runs = ", ".join("%.2f" % d["seconds"] for d in res[bs])
            return "%.2fs (%s) rss %.0f MiB" % (min(d["seconds"] for d in res[bs]), runs, max(d["rss"] for d in res[bs]))
        print(f"{name} {limit} beams {beams}: bs32 {f(32)} | bs64 {f(64)} | ratio {min(d['seconds'] for d in res[32])/min(d['seconds'] for d in res[64]):.3f} | same output {same}/{len(outs[32])}", flush=True)
