import os, sys, torch, threading, multiprocessing as mp, ctypes
torch.set_num_threads(1)
lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
def work():
    a = torch.randn(64, 256); b = torch.randn(256, 256)
    for _ in range(10): a @ b
hung = 0
for trial in range(int(sys.argv[2])):
    ts = [threading.Thread(target=work) for _ in range(2)]
    [t.start() for t in ts]; [t.join() for t in ts]
    if sys.argv[1] == "free": lib.mkl_serv_free_buffers()
    ctx = mp.get_context("fork")
    p = ctx.Process(target=work); p.start(); p.join(5)
    if p.is_alive(): hung += 1; p.kill()
print(sys.argv[1], "hung", hung, "of", sys.argv[2])
