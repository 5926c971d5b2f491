"""The fused loss alone at tiny's shapes in bf16 (3,600 rows, d 256, vocab 16k), 2 threads, chunk sizes taking turns."""
import sys, time, torch
sys.path.insert(0, ".")
from zhen import hardware
from zhen.fast_training import LinearCrossEntropy
torch.set_num_threads(2)
hardware.keep_freed_memory(large_blocks=True)
torch.manual_seed(0)
n, d, V = int(sys.argv[1]) if len(sys.argv) > 1 else 3600, 256, 16000
hidden = torch.randn(n, d, requires_grad=True)
weight = (torch.randn(V, d) * 0.05).requires_grad_()
labels = torch.randint(0, V, (n,))
def run(chunk):
    with torch.autocast("cpu", torch.bfloat16):
        loss = LinearCrossEntropy.apply(hidden, weight, labels, 0.1, chunk, False)
    loss.backward()
    return loss
chunks = [int(c) for c in (sys.argv[2] if len(sys.argv) > 2 else "512,1024,2048,4096").split(",")]
times = {c: [] for c in chunks}
for c in chunks: run(c)
for r in range(6):
    for c in chunks:
        s = time.perf_counter(); run(c); times[c].append(time.perf_counter() - s)
for c in chunks:
    t = sorted(times[c])
    print(f"chunk {c}: best {t[0]*1e3:.1f} ms, median {t[len(t)//2]*1e3:.1f} ms")
