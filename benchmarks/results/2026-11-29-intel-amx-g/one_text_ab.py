"""One text a call, greedy, base: drafted_greedy_search of this commit (tensors, any batch) against the previous one
(lists, one sentence), taking turns call by call. Usage: one_text_ab.py MODEL SRC OLD_DRAFT_DECODING_PY (`git show a170cfa:zhen/draft_decoding.py`)"""
import importlib.util, statistics, sys, time, warnings
import torch
warnings.simplefilter("ignore")
from transformers.utils import logging; logging.set_verbosity_error()
import zhen, zhen.fast_generation as fg, zhen.draft_decoding as dd
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_parallel
from zhen.evaluation import parallel_columns
torch.set_num_threads(2)
spec = importlib.util.spec_from_file_location("zhen.old_draft_decoding", sys.argv[3])
old = importlib.util.module_from_spec(spec); old.__package__ = "zhen"; spec.loader.exec_module(old)
new_search = fg.drafted_greedy_search
def old_search(target, draft, draft_length=None, batch=1, **options):
    return old.drafted_greedy_search(target, draft, draft_length=draft_length, **options)
path, src = sys.argv[1], sys.argv[2]; tgt = "zh" if src == "en" else "en"
tok = ZhenTokenizerFast.from_pretrained(path); model = ZhenForConditionalGeneration.from_pretrained(path).eval()
texts = parallel_columns(load_parallel("../shared/data/tatoeba/valid.jsonl.gz"), 32)[src]
for i in range(40): zhen.translate(texts[i % 32], model, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
times = {"old": [], "new": []}; ratios = []; same = 0
for r in range(2):
    for i, text in enumerate(texts):
        res = {}
        for v in (["old", "new"] if i % 2 else ["new", "old"]):
            fg.drafted_greedy_search = old_search if v == "old" else new_search
            s = time.perf_counter(); out = zhen.translate(text, model, tok, src_lang=src, tgt_lang=tgt, num_beams=1)
            res[v] = (time.perf_counter() - s, out)
        for v in res: times[v].append(res[v][0])
        ratios.append(res["old"][0] / res["new"][0]); same += res["old"][1] == res["new"][1]
print(f"{path} {src}->{tgt} one text a call, {len(ratios)} paired calls: old {statistics.median(times['old'])*1e3:.1f} ms, "
      f"new {statistics.median(times['new'])*1e3:.1f} ms; new x old, median of paired ratios {statistics.median(ratios):.3f}; same {same}/{len(ratios)}")
