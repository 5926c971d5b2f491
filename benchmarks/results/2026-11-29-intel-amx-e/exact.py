import statistics, time, torch
torch.set_num_threads(2)
bf = torch.bfloat16
lp = torch.ops.mkldnn._linear_pointwise
w = torch.randn(1536, 512, dtype=bf) * 0.05; b = torch.randn(1536, dtype=bf); x = torch.randn(4, 512, dtype=bf)
pk = torch.ops.mkldnn._reorder_linear_weight(w, None)
ref = lp(x, pk, b, "none", [], "")
print("F.linear equal lp:", torch.equal(ref, torch.nn.functional.linear(x, w, b)))
try:
    y32 = torch.mm(w, x.t().contiguous(), out_dtype=torch.float32)
    print("out_dtype ok", y32.dtype, torch.equal((y32.t() + b.float()).to(bf), ref))
except Exception as e: print("out_dtype:", e)
y = torch.addmm(b[:, None], w, x.t().contiguous())
print("addmm equal:", torch.equal(y.t(), ref), (y.t().float() - ref.float()).abs().max())
y = torch.addmm(b[:, None].float(), w.float(), x.t().float())
print("fp32 of bf16 equal:", torch.equal(y.t().to(bf), ref))
# addmm exactness in float against bf16 rounding of fp32 product
