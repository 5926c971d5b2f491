import sys, time, torch, warnings, os, pickle
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
import zhen.layer_steps as ls
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
M="/tmp/rt/small/model"
model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
tok = ZhenTokenizerFast.from_pretrained(M)
q = quantize_dynamic(model)
tok.src_lang, tok.tgt_lang = "en","zh"
text = "The ecological footprint of a country is closely related to its level of economic development."
cap={}
orig=ls.attend_history
def grab(query, keys, values, scaling, columns, value_rows):
    if keys.shape[2]==16 and "a" not in cap:
        cap["a"]=(query.clone(), keys, values, scaling, columns.clone() if columns is not None else None, tuple(x.clone() for x in value_rows) if value_rows else None)
    return orig(query, keys, values, scaling, columns, value_rows)
ls.attend_history=grab
with torch.inference_mode(), fg.FastDecoder(q, script_layers=False) as dec:
    enc = tok([text]*64, return_tensors="pt")
    kw=dict(**enc, forced_bos_token_id=tok.get_lang_id("zh"), num_beams=4, max_new_tokens=30, min_new_tokens=30)
    dec.generate(**kw)
    query, keys, values, scaling, columns, value_rows = cap["a"]

    print("query", query.shape, query.stride(), "keys", keys.shape, "columns", columns.shape, "value_rows", [x.shape for x in value_rows])
    def t(f, n=200):
        for _ in range(5): f()
        s=time.perf_counter()
        for _ in range(n): f()
        return (time.perf_counter()-s)/n*1e6
    batch, heads, length, beams, dim = keys.shape
    rows=query.shape[0]; queries=rows//batch
    qq = query.reshape(batch, queries, heads, dim).transpose(1, 2).contiguous()
    kk = keys.reshape(batch, heads, length * beams, dim).transpose(-1, -2)
    every = torch.matmul(qq, kk)
    scores = every.gather(-1, columns)
    weights = (scores * scaling).softmax(-1)
    table = values.as_strided((batch * values.stride(0) // dim, dim), (dim, 1))
    print("total", f"{t(lambda: orig(query, keys, values, scaling, columns, value_rows)):.0f}us")
    print("q reshape contiguous", f"{t(lambda: query.reshape(batch, queries, heads, dim).transpose(1, 2).contiguous()):.0f}us")
    print("matmul scores", f"{t(lambda: torch.matmul(qq, kk)):.0f}us")
    print("gather columns", f"{t(lambda: every.gather(-1, columns)):.0f}us")
    print("scale+softmax", f"{t(lambda: (scores * scaling).softmax(-1)):.0f}us")
    print("embedding_bag values", f"{t(lambda: torch.embedding_bag(table, value_rows[0], value_rows[1], False, 0, False, weights.reshape(-1))[0]):.0f}us")
    out = torch.embedding_bag(table, value_rows[0], value_rows[1], False, 0, False, weights.reshape(-1))[0]
    print("output reshape", f"{t(lambda: out.reshape(batch, heads, queries, dim).transpose(1, 2).reshape(rows, 1, heads, dim)):.0f}us")
    # alternatives
    kc = keys.reshape(batch, heads, length*beams, dim)
    print("alt: matmul with kT contiguous (batch,heads,dim,LB)", f"{t(lambda: torch.matmul(qq, kc.transpose(-1,-2).contiguous())):.0f}us (incl transpose copy)")
    kT = kc.transpose(-1,-2).contiguous()
    print("alt: matmul on pre-transposed keys", f"{t(lambda: torch.matmul(qq, kT)):.0f}us")
    print("alt: baddbmm flattened", f"{t(lambda: torch.bmm(qq.view(-1,queries,dim), kT.view(-1,dim,length*beams))):.0f}us")
