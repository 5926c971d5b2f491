import gzip, json, statistics, time, sys, torch
torch.set_num_threads(2)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, fast_generation as fg
m = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
tok = ZhenTokenizerFast.from_pretrained(sys.argv[1])
pairs = [json.loads(l) for l in gzip.open(sys.argv[2], "rt")]
calls = [(pairs[i]["en" if i % 2 == 0 else "zh"], "zh" if i % 2 == 0 else "en") for i in range(int(sys.argv[3]))]
def run(text, lang, drafted):
    s = time.perf_counter()
    with fg.FastDecoder(m, drafts=True if drafted else False) as d:
        d.drafts_beams = drafted
        tok.src_lang = "en" if lang == "zh" else "zh"; tok.tgt_lang = lang
        ids = tok(text, return_tensors="pt")
        out = d.generate(ids.input_ids, ids.attention_mask, forced_bos_token_id=tok.get_lang_id(lang), num_beams=4, max_new_tokens=128)
    return time.perf_counter() - s, out.tolist()
for t, l in calls[:10]: run(t, l, True); run(t, l, False)
times = {True: [], False: []}; same = 0
for i, (t, l) in enumerate(calls):
    o = {}
    for arm in ((True, False) if i % 2 == 0 else (False, True)):
        dt, o[arm] = run(t, l, arm); times[arm].append(dt)
    same += o[True] == o[False]
r = [b / a for a, b in zip(times[True], times[False])]
print("drafted beams (bf16 session) median ms", statistics.median(times[True]) * 1e3, "undrafted", statistics.median(times[False]) * 1e3,
      "paired undrafted/drafted", statistics.median(r), "same", same, "/", len(calls))
