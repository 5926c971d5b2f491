import torch, time, threading
torch.set_num_threads(1)
N = 200000
def loop():
    x = torch.zeros(16)
    for _ in range(N): x.add_(1)
t = time.perf_counter(); loop(); one = time.perf_counter() - t
ts = [threading.Thread(target=loop) for _ in range(2)]
t = time.perf_counter(); [th.start() for th in ts]; [th.join() for th in ts]; two = time.perf_counter() - t
print(f"one thread {one/N*1e6:.2f} us/call; two threads {two/(2*N)*1e6:.2f} us/call (wall per call per thread {two/N*1e6:.2f})")
