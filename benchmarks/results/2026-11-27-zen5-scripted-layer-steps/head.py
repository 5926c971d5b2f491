import torch, time
from torch.ao.nn.quantized.dynamic import Linear as QLinear
torch.set_num_threads(1)
for rows in (64, 256):
  x = torch.randn(rows, 256)
  lin = torch.nn.Linear(256, 16000)
  q = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)[0]
  packed = q._packed_params._packed_params
  w16 = torch.ops.mkldnn._reorder_linear_weight(lin.weight.detach().bfloat16(), None)
  b16 = lin.bias.detach().bfloat16()
  w32 = torch.ops.mkldnn._reorder_linear_weight(lin.weight.detach(), None)
  fns = {
    "int8": lambda: torch.ops.quantized.linear_dynamic(x, packed, False),
    "int8-rr": lambda: torch.ops.quantized.linear_dynamic(x, packed, True),
    "bf16": lambda: torch.ops.mkldnn._linear_pointwise(x.bfloat16(), w16, b16, "none", [], ""),
    "fp32": lambda: torch.ops.mkldnn._linear_pointwise(x, w32, lin.bias, "none", [], ""),
    "logsoftmax": lambda: torch.log_softmax(torch.randn(rows,16000), -1),
  }
  with torch.inference_mode():
    for n, f in fns.items():
      for _ in range(3): f()
      t = time.perf_counter(); k = 20
      for _ in range(k): f()
      dt = (time.perf_counter() - t) / k
      print(rows, n, f"{dt*1e6:.0f} us", f"{rows*256*16000*2/dt/1e9:.0f} GFLOP/s")
