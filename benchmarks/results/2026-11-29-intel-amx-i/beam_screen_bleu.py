"""BLEU of beam search in a bf16 session with the LM head's screen (forced on for a vocabulary of any size), without
it (the bf16 head product), and in a float32 session, on the first N pairs of a test file, both directions.

    python beam_screen_bleu.py MODEL_DIR TEST_FILE --limit 200 --beams 4
"""

import argparse
import gzip
import json

import sacrebleu
import torch

from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, fast_generation, hardware, screened_argmax, translate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("test")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--beams", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(2)
    model = ZhenForConditionalGeneration.from_pretrained(args.model).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    pairs = [json.loads(line) for line in gzip.open(args.test, "rt")][: args.limit]
    screened_argmax.FEW_ROWS_MIN_WEIGHT = 0
    screened_argmax.PACK_AFTER = 0
    arms = {
        "bf16 session, screened": (dict(cpu_bf16="native"), 0),
        "bf16 session, bf16 head": (dict(cpu_bf16="native"), 1 << 40),
        "float32 session": (dict(cpu_bf16="emulated"), 1 << 40),
    }
    outputs = {}
    for name, (machine, threshold) in arms.items():
        fast_generation.BF16_SCREENED_HEAD = threshold
        with hardware.forced(**machine):
            for source, target in (("en", "zh"), ("zh", "en")):
                texts = [p[source] for p in pairs]
                hyps = translate(texts, model, tokenizer, tgt_lang=target, num_beams=args.beams, batch_size=1)
                refs = [p[target] for p in pairs]
                bleu = sacrebleu.corpus_bleu(hyps, [refs], tokenize="zh" if target == "zh" else "13a").score
                outputs[name, target] = hyps
                print(f"{name:26s} {source}->{target} BLEU {bleu:5.2f}", flush=True)
    for target in ("zh", "en"):
        for name in ("bf16 session, screened", "bf16 session, bf16 head"):
            same = sum(a == b for a, b in zip(outputs[name, target], outputs["float32 session", target]))
            print(f"->{target}: {name} same as the float32 session's: {same}/{len(pairs)}")


if __name__ == "__main__":
    main()
