"""Two cores on real text at the `small-cpu` width: zhen's int8 session alone on one thread, in two decoding streams
of one process (what `zhen.translate` does), and as two processes side by side, each alone on its thread;
CTranslate2's int8 alone and with `inter_threads=2`. 1,000 Tatoeba sentences in batches of 32, longest first (as
bleu_int8.py). Each mode runs in a fresh process, the modes taking turns over the rounds; seconds for 1,000
sentences (two processes: each one's own 1,000, so the pair's rate is twice that), and the work the two cores did
against one core alone (2 x the two-core seconds / the one-core seconds: 1.00 is no loss).

    python streams_or_processes.py <small-cpu>/model en-zh 1 3     # greedy, 3 rounds; 4 for beam 4
"""

import json
import os
import statistics
import subprocess
import sys
import time
import warnings


def translate(path, direction, beams, mode):
    import torch

    warnings.simplefilter("ignore")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", ".."))
    from bleu_int8 import translate_ids

    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
    from zhen.data import load_parallel
    from zhen.evaluation import parallel_columns

    src, tgt = direction.split("-")
    torch.set_num_threads(2 if mode in ("streams", "ct2-two") else 1)
    tokenizer = ZhenTokenizerFast.from_pretrained(path)
    texts = parallel_columns(load_parallel(os.path.join(here, "../../../../shared/data/tatoeba/valid.jsonl.gz")), 1000)
    texts = texts[src]

    def max_new_tokens(length):
        return max(1, min(int(1.5 * length) + 10, 512))

    if mode.startswith("ct2"):
        from zhen.convert_ctranslate2 import CTranslate2Generator

        generator = CTranslate2Generator(os.path.join(here, "ct2-int8"), compute_type="int8",
                                         inter_threads=2 if mode == "ct2-two" else 1, intra_threads=1)  # fmt: skip

        def run():
            return translate_ids(lambda batches: [wait() for wait in [generator.generate(**b, asynchronous=True)
                                                                     for b in batches]],
                                 tokenizer, texts, src, tgt, 32, beams, max_new_tokens)  # fmt: skip
    else:
        from zhen.fast_generation import FastDecoder
        from zhen.quantization import quantize_dynamic

        model = quantize_dynamic(ZhenForConditionalGeneration.from_pretrained(path, dtype=torch.float32).eval())
        streams = 2 if mode == "streams" else 1

        def run():
            with torch.inference_mode(), FastDecoder(model, weights="auto") as decoder:
                return translate_ids(lambda batches: list(decoder.map(lambda b: decoder.generate(**b), batches,
                                                                      streams)),
                                     tokenizer, texts, src, tgt, 32, beams, max_new_tokens)  # fmt: skip

    run()  # warm: the layers' program compiled, memory kept
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    path, direction, beams, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(here, "ct2-int8")):
        from zhen.convert_ctranslate2 import convert

        convert(path, os.path.join(here, "ct2-int8"), quantization="int8")

    def child(mode):
        return subprocess.Popen([sys.executable, __file__, "--child", path, direction, str(beams), mode],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip

    seconds = {mode: [] for mode in ("zhen alone", "zhen streams", "zhen two processes", "ct2 alone", "ct2 two")}
    for round_ in range(rounds):
        for mode in seconds if round_ % 2 == 0 else list(seconds)[::-1]:
            if mode == "zhen two processes":
                pair = [child("alone"), child("alone")]
                times = [float(p.communicate()[0].split()[-1]) for p in pair]
                seconds[mode].append(max(times) / 2)  # the pair translates 2,000 sentences in the slower one's time
            else:
                kind = {"zhen alone": "alone", "zhen streams": "streams", "ct2 alone": "ct2-alone", "ct2 two": "ct2-two"}
                seconds[mode].append(float(child(kind[mode]).communicate()[0].split()[-1]))
            print(f"round {round_ + 1} {mode}: {seconds[mode][-1]:.3f} s per 1,000", flush=True)
    median = {mode: statistics.median(s) for mode, s in seconds.items()}
    print(f"# {path} {direction} beam {beams}: medians of {rounds} rounds, seconds per 1,000 sentences")
    for mode, s in median.items():
        alone = median["ct2 alone" if mode.startswith("ct2") else "zhen alone"]
        work = "" if "alone" in mode else f"; two cores' work / one core's {2 * s / alone:.2f}"
        print(f"{mode}: {s:.3f} s ({1000 / s:.0f} sentences/s){work}")
    print(f"zhen streams / ct2 two: {median['ct2 two'] / median['zhen streams']:.2f}x; zhen two processes / ct2 two: "
          f"{median['ct2 two'] / median['zhen two processes']:.2f}x; alone: {median['ct2 alone'] / median['zhen alone']:.2f}x")
    print(json.dumps({"benchmark": "streams_or_processes", "seconds": seconds}))


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        print(translate(*sys.argv[2:4], int(sys.argv[4]), sys.argv[5]))
    else:
        main()
