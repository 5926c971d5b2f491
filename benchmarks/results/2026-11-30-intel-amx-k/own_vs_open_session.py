"""One text a call through zhen.translate with its own session (as users call it) and inside a session held open,
taking turns per text, and FastDecoder.generate alone. Usage: own_vs_open_session.py CHECKPOINT BEAMS"""
import os, sys, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load
import zhen
from zhen.fast_generation import FastDecoder
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
path, beams = sys.argv[1], int(sys.argv[2])
m, tok = load(path)
for src, tgt in (("en","zh"),("zh","en")):
    texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 16)[src]
    for t in texts[:4]: zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams)
    a=[]; b=[]; c=[]
    for r in range(3):
        for t in texts:
            s=time.perf_counter(); zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams); a.append(time.perf_counter()-s)
            with FastDecoder(m) as d:
                s=time.perf_counter(); zhen.translate(t, m, tok, src_lang=src, tgt_lang=tgt, num_beams=beams); b.append(time.perf_counter()-s)
                ids = tok([t], return_tensors="pt"); 
                s=time.perf_counter(); d.generate(**ids, forced_bos_token_id=tok.get_lang_id(tgt), num_beams=beams, max_new_tokens=30); c.append(time.perf_counter()-s)
    print(src, tgt, "own session %.2f ms, open session %.2f ms, bare generate %.2f ms; paired own/open %.3f" % (
        statistics.median(a)*1e3, statistics.median(b)*1e3, statistics.median(c)*1e3, statistics.median([x/y for x,y in zip(a,b)])))
