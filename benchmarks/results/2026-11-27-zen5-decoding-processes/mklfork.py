import os, sys, torch, threading, multiprocessing as mp
torch.set_num_threads(1)
dtype = torch.bfloat16 if sys.argv[1] == "bf16" else torch.float32
def work():
    a = torch.randn(64, 256, dtype=dtype); b = torch.randn(256, 256, dtype=dtype)
    for _ in range(10): a @ b
ts = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
def child(q):
    work(); q.put("ok")
ctx = mp.get_context("fork")
q = ctx.Queue()
p = ctx.Process(target=child, args=(q,)); p.start(); p.join(10)
print(sys.argv[1], "child", "hung" if p.is_alive() else q.get())
if p.is_alive(): p.kill()
