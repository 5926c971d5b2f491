"""PyTorch 2.13's oneDNN int8 dynamic product keeps one kernel for the first input shape it meets, with or without
the ReLU of that first call: `quantized::linear_relu_dynamic` after a plain call of the same shape leaves out the
ReLU (and a fused call first would put ReLU into later plain calls). FBGEMM's packing does not. `python onednn_relu.py`"""
import torch

torch.manual_seed(0)
w, b = torch.randn(512, 256) * 0.05, torch.randn(512) * 0.01
qw = torch.quantize_per_channel(w, w.abs().amax(1) / 127, torch.zeros(512, dtype=torch.long), 0, torch.qint8)
for engine in ("onednn", "fbgemm"):
    previous, torch.backends.quantized.engine = torch.backends.quantized.engine, engine
    packed = torch.ops.quantized.linear_prepack(qw, b)
    torch.backends.quantized.engine = previous
    for rows in (8, 64, 3, 8):  # the first shape met is 8 rows
        x = torch.randn(rows, 256) * 8
        product = torch.ops.quantized.linear_dynamic(x, packed, True)
        fused = torch.ops.quantized.linear_relu_dynamic(x, packed, True)
        print(f"{engine}, {rows} rows: fused == relu(product) {torch.equal(fused, product.relu())}, "
              f"negatives left in the fused product {(fused < 0).sum().item()}")  # fmt: skip
