"""`zhen.translate` greedy in a float32 session (`ZHEN_HARDWARE=cpu_bf16=emulated`, the class of CPUs without native
bf16), a few texts a call: the screen's few-row product with 8-bit hidden values (`int8_full_range=on`: FBGEMM's
packed weight at any vocabulary size) against 7-bit ones (`off`: FBGEMM only from 8M weights, `_int_mm` below).
One process per variant and round, the variants alternated; each warms up over 40 calls (FBGEMM packs after 256
few-row screens, drafting starts at the 33rd call), then times CALLS calls per direction. Prints ms a call and a hash of the translations.

    python few_texts_8bit_screen_ab.py MODEL TEXTS_A_CALL [CALLS] [ROUNDS]
"""
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time

WARM_CALLS = 40  # past DRAFT_AFTER (33): greedy search of 1-4 texts is drafted from the 33rd call on


def one_run(model_dir: str, per_call: int, calls: int) -> None:
    import warnings

    import torch

    import zhen
    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast

    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    model = ZhenForConditionalGeneration.from_pretrained(model_dir).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(model_dir)
    with gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt") as lines:
        rows = [json.loads(line) for line, _ in zip(lines, range(per_call * (calls + WARM_CALLS)))]
    result = {}
    for src, tgt in (("en", "zh"), ("zh", "en")):
        texts = [row[src] for row in rows]
        batches = [texts[i : i + per_call] for i in range(0, len(texts), per_call)]
        for batch in batches[:WARM_CALLS]:
            zhen.translate(batch, model, tokenizer, src_lang=src, tgt_lang=tgt, num_beams=1)
        start = time.perf_counter()
        out = [t for batch in batches[WARM_CALLS:] for t in
               zhen.translate(batch, model, tokenizer, src_lang=src, tgt_lang=tgt, num_beams=1)]  # fmt: skip
        result[f"{src}-{tgt}"] = ((time.perf_counter() - start) / calls * 1000,
                                  hashlib.md5("\n".join(out).encode()).hexdigest()[:8])  # fmt: skip
    print(json.dumps(result))


def main() -> None:
    model_dir, per_call = sys.argv[1], int(sys.argv[2])
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 24
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    times: dict = {}
    for _ in range(rounds):
        for full_range in ("off", "on"):
            env = {**os.environ, "ZHEN_HARDWARE": f"cpu_bf16=emulated,int8_full_range={full_range}"}
            done = subprocess.run([sys.executable, __file__, "--one", model_dir, str(per_call), str(calls)], env=env,
                                  capture_output=True, text=True, check=True)  # fmt: skip
            for direction, (ms, digest) in json.loads(done.stdout.strip().splitlines()[-1]).items():
                times.setdefault((direction, full_range), []).append((round(ms, 2), digest))
    print(f"{model_dir}, {per_call} texts a call, {calls} calls a direction, {rounds} rounds (ms a call, hash)")
    for direction in ("en-zh", "zh-en"):
        off, on = times[(direction, "off")], times[(direction, "on")]
        median = lambda runs: sorted(ms for ms, _ in runs)[len(runs) // 2]  # noqa: E731
        print(f"  {direction}: 7 bits {off}\n         8 bits {on}\n         median {median(off)} -> {median(on)}: "
              f"{median(off) / median(on):.3f}x; same translations: {off[0][1] == on[0][1]}")


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        one_run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
