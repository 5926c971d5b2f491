import time, warnings, cProfile, pstats
warnings.filterwarnings("ignore")
import torch
from zhen.translation import load_model_and_tokenizer
from zhen.fast_generation import FastDecoder
from zhen import layer_steps
model, tok = load_model_and_tokenizer("/tmp/rt/small/model")
print(model.config.decoder_layers, model.config.d_model)
for i in range(3):
    with FastDecoder(model) as d:
        t = time.perf_counter(); steps = layer_steps.decoder_layer_steps(model.get_decoder()); t1 = time.perf_counter()
        s = layer_steps.scripted(steps, model); t2 = time.perf_counter()
        print("build %.1f ms script %.1f ms" % ((t1-t)*1e3, (t2-t1)*1e3))
with FastDecoder(model) as d:
    steps = layer_steps.decoder_layer_steps(model.get_decoder())
    cProfile.run("layer_steps.scripted(steps)", "/tmp/probe/sc.prof")
pstats.Stats("/tmp/probe/sc.prof").sort_stats("cumulative").print_stats(25)
