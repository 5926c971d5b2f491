import resource, sys, torch
from zhen import hardware
if sys.argv[1] == "kept":
    assert hardware.keep_freed_memory()
def step():
    blocks = [torch.empty(3_000_000).fill_(1.0) for _ in range(3)]  # three 12 MB blocks alive at once
for _ in range(3):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
