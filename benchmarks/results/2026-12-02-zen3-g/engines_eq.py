import torch, warnings
warnings.simplefilter("ignore")
from zhen.quantization import packing_for_engine
torch.manual_seed(0)
for out_f, in_f in ((768,256),(1024,256),(256,1024),(512,2048)):
    w = torch.quantize_per_channel(torch.randn(out_f, in_f)*0.05, torch.rand(out_f)*0.001+1e-4, torch.zeros(out_f, dtype=torch.long), 0, torch.qint8)
    b = torch.randn(out_f)
    fb = torch.ops.quantized.linear_prepack(w, b)
    with packing_for_engine("onednn"):
        on = torch.ops.quantized.linear_prepack(w, b)
    for rr in (True, False):
        x = torch.randn(640, in_f) * 3
        x[0, :] = 10
        a = torch.ops.quantized.linear_dynamic(x, fb, rr); c = torch.ops.quantized.linear_dynamic(x, on, rr)
        ref = torch.nn.functional.linear(x, w.dequantize(), b)
        print(out_f, in_f, "reduce_range", rr, "max|fb-on|", (a-c).abs().max().item(), "max|fb-ref|", (a-ref).abs().max().item(), "max|on-ref|", (c-ref).abs().max().item(), "scale", ref.abs().max().item())
