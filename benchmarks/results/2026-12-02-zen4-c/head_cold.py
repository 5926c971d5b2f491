import time, torch, statistics, warnings
warnings.simplefilter("ignore")
import zhen.hardware as hw
torch.set_num_threads(1)
rows, width, vocab = 64, 256, 16000
W = torch.randn(vocab, width) * 0.05; h = torch.randn(rows, width)
flush = torch.zeros(64 << 20, dtype=torch.uint8)
torch.backends.quantized.engine = "onednn"
qw = torch.quantize_per_channel(W, (W.abs().amax(1) / 127), torch.zeros(vocab, dtype=torch.int64), 0, torch.qint8)
pk = torch.ops.quantized.linear_prepack(qw, torch.zeros(vocab))
torch.backends.quantized.engine = "fbgemm"
pkf = torch.ops.quantized.linear_prepack(qw, torch.zeros(vocab))
for name, p in (("onednn", pk), ("fbgemm", pkf)):
    for cold in (False, True):
        ts = []
        for i in range(40):
            if cold: flush.add_(1)
            s = time.perf_counter(); hw.packed_product(torch.ops.quantized.linear_dynamic, h, p, False); ts.append(time.perf_counter() - s)
        print(name, "cold" if cold else "warm", "min %.2f med %.2f ms" % (min(ts) * 1e3, statistics.median(ts) * 1e3))
