"""8-bit against 7-bit inputs to FBGEMM's int8 product of a weight of 127s (scale 1): the sums equal `torch._int_mm`'s? Run
with FBGEMM_ENABLE_INSTRUCTIONS=AVX2, AVX512, AVX512_E1 (VNNI)."""
import os, warnings, torch
warnings.simplefilter("ignore")
torch.manual_seed(0)
w = torch.full((256, 512), 127, dtype=torch.int8)
packed = torch.ops.quantized.linear_prepack(torch._make_per_tensor_quantized_tensor(w, 1.0, 0), None)
op = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32
for levels, zero in ((63, 64), (127, 128)):
    q = torch.full((4, 512), float(levels))
    got = op(q, 1.0, zero, packed)
    exact = torch._int_mm(q.to(torch.int8), w.t()).float()
    print(os.environ.get("FBGEMM_ENABLE_INSTRUCTIONS"), levels, "equal", torch.equal(got, exact), float(got[0, 0]), float(exact[0, 0]))
