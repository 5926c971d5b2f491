import torch, time
torch.set_num_threads(1)
x = torch.randn(256, 16000)*3
def t(f, n=50):
    f(); s=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-s)/n*1e3
y=x.clone()
print("log_softmax out", t(lambda: torch.log_softmax(y, -1, out=y)))
print("log_softmax new", t(lambda: torch.log_softmax(x, -1)))
print("softmax", t(lambda: torch.softmax(x, -1)))
print("logsumexp", t(lambda: torch.logsumexp(x, -1)))
print("amax rows", t(lambda: x.amax(-1)))
print("amax chunks", t(lambda: x.view(256,250,64).amax(-1)))
print("exp", t(lambda: torch.exp(x, out=y)))
print("sub+exp_+sum", t(lambda: (x - x.amax(-1, keepdim=True)).exp_().sum(-1)))
print("copy", t(lambda: y.copy_(x)))
print("sum", t(lambda: x.sum(-1)))
