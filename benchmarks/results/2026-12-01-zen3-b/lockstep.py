"""Two threads (one PyTorch thread each: torch.set_num_threads(1) per thread is global, so use 1) each multiply
M=64 rows by the 6 decoder layers' packed weights in turn (a decoding step), 32 steps: free-running vs in lock step
(a barrier after every layer), so that the second thread finds the layer's weights in the shared L3."""
import threading, time, torch
torch.set_num_threads(1)
shapes = [(512, 1536), (512, 512), (512, 512), (512, 512), (512, 2048), (2048, 512)]
layers = [[torch.ops.mkldnn._reorder_linear_weight(torch.randn(n, k), None) for k, n in shapes] for _ in range(6)]
flops = 2 * 64 * sum(k * n for k, n in shapes) * 6 * 32 * 2
def run(barrier):
    def work():
        xs = {k: torch.randn(64, k) for k, _ in shapes}
        for step in range(32):
            for layer in layers:
                for (k, n), w in zip(shapes, layer):
                    torch.ops.mkldnn._linear_pointwise(xs[k], w, None, "none", [], "")
                if barrier is not None:
                    barrier.wait()
    threads = [threading.Thread(target=work) for _ in range(2)]
    t = time.perf_counter()
    for th in threads: th.start()
    for th in threads: th.join()
    return flops / (time.perf_counter() - t) / 1e9
for rnd in range(3):
    print(f"free {run(None):.1f} GFLOP/s, lock step {run(threading.Barrier(2)):.1f} GFLOP/s", flush=True)
