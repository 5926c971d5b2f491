"""(Needs relu_in_place_prototype.patch applied.) The float32 session's packed encoder at base (random weights), 64 synthetic sentences, 2 threads: its MLPs' ReLU in
place (now) against a new tensor (before), alternated sessions; mean and best ms of 10 encodings each, 4 rounds; and
greedy batches of 32 new tokens likewise (2 rounds)."""
import sys, time, warnings
import torch
sys.path.insert(0, "/work/main/benchmarks")
warnings.simplefilter("ignore")
from common import synthetic_pairs, pad, PAD, ZH
from zhen import ZhenForConditionalGeneration, fast_generation
from zhen.fast_generation import FastDecoder

torch.set_num_threads(2)
model = ZhenForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
sources = sorted((s for s, _ in synthetic_pairs(256, model.config.vocab_size, 0)), key=len)
batches = [pad(sources[i:i + 64], PAD, multiple=1) for i in range(0, 256, 64)]
variants = {"new tensor (before)": torch.nn.ReLU(), "in place (now)": torch.nn.ReLU(inplace=True)}
results = {}
for r in range(4):
    for name, relu in variants.items():
        fast_generation._RELU_IN_PLACE = relu
        with torch.inference_mode(), FastDecoder(model) as dec:
            times = []
            for _ in range(10):
                ids = batches[2]
                start = time.perf_counter(); dec.encode(ids, ids.ne(PAD).long()); times.append(time.perf_counter() - start)
            results.setdefault(name + " encode", []).append((round(1000 * sum(times) / 10, 1), round(1000 * min(times), 1)))
            if r < 2:
                start = time.perf_counter()
                for ids in batches:
                    dec.generate(ids, ids.ne(PAD).long(), forced_bos_token_id=ZH, num_beams=1, max_new_tokens=32, min_new_tokens=32)
                results.setdefault(name + " 4 greedy batches s", []).append(round(time.perf_counter() - start, 3))
for k, v in results.items():
    print(k, v)
