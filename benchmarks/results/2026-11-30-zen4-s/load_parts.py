"""Loading an int8 model, by part: tokenizer, float32 checkpoint, deepcopy, quantize_parts."""
import time, torch, warnings, copy
warnings.simplefilter("ignore")
from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.quantization import quantize_dynamic, quantize_parts
P = "/tmp/s36/small-cpu/model"
t = time.perf_counter(); tok = ZhenTokenizerFast.from_pretrained(P); t1 = time.perf_counter()
m = ZhenForConditionalGeneration.from_pretrained(P); t2 = time.perf_counter()
c = copy.deepcopy(m); t3 = time.perf_counter()
q = quantize_parts(c.float().eval()); t4 = time.perf_counter()
print(f"tokenizer {1e3*(t1-t):.0f} ms, model {1e3*(t2-t1):.0f} ms, deepcopy {1e3*(t3-t2):.0f} ms, quantize {1e3*(t4-t3):.0f} ms")
