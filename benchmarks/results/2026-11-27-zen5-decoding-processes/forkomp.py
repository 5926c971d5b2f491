import torch, multiprocessing as mp, time
from concurrent.futures import ProcessPoolExecutor
torch.set_num_threads(2)
a = torch.randn(1024, 1024)
for _ in range(5): a @ a
def init(n): torch.set_num_threads(n)
def work(i):
    x = torch.randn(512, 512)
    t = time.perf_counter()
    for _ in range(20): x @ x
    return torch.get_num_threads(), time.perf_counter() - t
with ProcessPoolExecutor(2, mp_context=mp.get_context("fork"), initializer=init, initargs=(2,)) as p:
    print(list(p.map(work, range(4))))
print("ok")
