import time, torch, warnings, sys
warnings.simplefilter("ignore")
torch.set_num_threads(2)
from zhen import ZhenForConditionalGeneration, ZhenConfig
import zhen.fast_generation as fg
from zhen.fast_generation import FastDecoder
for preset in ("small", "base"):
    try:
        model = ZhenForConditionalGeneration(ZhenConfig.from_preset(preset)).eval()
    except Exception as e:
        print(preset, e); continue
    def t(f, n=20):
        f(); s=time.perf_counter()
        for _ in range(n): f()
        return (time.perf_counter()-s)/n*1e3
    for n in (64, 256, 1024):
        fg.SAMPLED_VALUES = n
        fg.forget_session_copies(model)
        hit = t(lambda: FastDecoder(model).__enter__().__exit__())
        miss = t(lambda: FastDecoder(model, keep_copies=False).__enter__().__exit__())
        print(preset, f"sample {n}: session open+close kept copies {hit:.2f} ms; made anew {miss:.2f} ms")
