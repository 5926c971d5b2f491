import sys, torch, warnings, collections
warnings.simplefilter("ignore")
from zhen import ZhenForConditionalGeneration
import zhen.fast_generation as fg
from zhen.quantization import quantize_dynamic
model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained("/tmp/s36/small-cpu/model", dtype=torch.float32).eval())
x = torch.randint(6, 16000, (1, 12)); x[:, 0] = 4; x[:, -1] = 2
with torch.inference_mode(), fg.FastDecoder(model, script_layers=True) as s:
    s.generate(input_ids=x, attention_mask=torch.ones_like(x), num_beams=1, max_new_tokens=5)
    prog = [p for k, p in s.programs.items() if k[0] is True][0]
g = prog.graph
c = collections.Counter(n.kind() for n in g.nodes())
print(sum(c.values()), "top-level nodes")
def walk(block, c):
    for n in block.nodes():
        c[n.kind()] += 1
        for b in n.blocks(): walk(b, c)
c2 = collections.Counter(); walk(g, c2)
print(sum(c2.values()), "nodes incl. blocks")
for k, v in c2.most_common(60): print(v, k)
open("/tmp/s41/graph.txt", "w").write(str(g))
