"""zhen.translate's default path on real sentences, this tree against another checkout (alternating subprocesses, each
importing zhen from its tree): seconds, peak RSS and whether the translations are identical.

    python realscript.py MODEL_DIR OTHER_TREE
"""
import gzip, json, os, resource, subprocess, sys, time
if len(sys.argv) > 1 and sys.argv[1] == "--one":
    import warnings; warnings.filterwarnings("ignore")
    import zhen
    from zhen.translation import load_model_and_tokenizer
    _, model_dir, path, limit, beams = sys.argv[1:]
    rows = [json.loads(l) for l in gzip.open(path, "rt")][: int(limit)]
    model, tok = load_model_and_tokenizer(model_dir)
    texts = [r["en"] for r in rows]
    zhen.translate(texts[:64], model, tok, tgt_lang="zh", num_beams=int(beams))  # warm-up
    t = time.perf_counter()
    out = zhen.translate(texts, model, tok, tgt_lang="zh", num_beams=int(beams))
    s = time.perf_counter() - t
    print(json.dumps(dict(seconds=s, rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, out=out, zhen=zhen.__file__)))
    sys.exit()
model_dir, other = sys.argv[1], sys.argv[2]
trees = {"this": os.path.dirname(os.path.dirname(os.path.abspath(__file__))) if len(sys.argv) < 4 else sys.argv[3], "other": other}
sets = {"tatoeba": ("/work/shared/data/tatoeba/valid.jsonl.gz", 1024), "news": ("/work/shared/data/news/valid.jsonl.gz", 384)}
for name, (path, limit) in sets.items():
    for beams in (1, 4):
        res = {t: [] for t in trees}; outs = {}
        for r in range(2):
            for tree, root in trees.items():
                env = dict(os.environ, PYTHONPATH=root)
                p = subprocess.run([sys.executable, __file__, "--one", model_dir, path, str(limit), str(beams)], capture_output=True, text=True, env=env, cwd="/tmp")
                d = json.loads(p.stdout.strip().splitlines()[-1]); res[tree].append(d); outs[tree] = d["out"]
        same = sum(a == b for a, b in zip(outs["this"], outs["other"]))
        def f(tree):
            runs = ", ".join("%.2f" % d["seconds"] for d in res[tree])
            return "%.2fs (%s) rss %.0f MiB [%s]" % (min(d["seconds"] for d in res[tree]), runs, max(d["rss"] for d in res[tree]), res[tree][0]["zhen"])
        print(f"{name} {limit} beams {beams}: this {f('this')} | other {f('other')} | speed-up {min(d['seconds'] for d in res['other'])/min(d['seconds'] for d in res['this']):.3f} | same output {same}/{len(outs['this'])}", flush=True)
