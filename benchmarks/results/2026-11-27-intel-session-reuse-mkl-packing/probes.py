"""What the probes of this folder share: a product's best time, and timers around functions."""

import time


def best_us(f, n: int, warmup: int = 5, rounds: int = 3) -> float:
    """The best of `rounds` mean times of `n` calls of `f`, in microseconds, after `warmup` calls."""
    for _ in range(warmup):
        f()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def timed(totals: dict, name: str, f):
    """`f`, adding the seconds each call takes to `totals[name]`, and counting its calls in `totals[name + " #"]`."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = f(*args, **kwargs)
        totals[name] = totals.get(name, 0) + time.perf_counter() - start
        totals[name + " #"] = totals.get(name + " #", 0) + 1
        return result

    return wrapper


def time_methods(totals: dict, owner, names):
    """Wrap each method `names` of `owner` with [`timed`], its seconds added to `totals[name]`."""
    for name in names:
        setattr(owner, name, timed(totals, name, getattr(owner, name)))


def alternate_per_call(owner, attribute: str, variants: dict, texts: list, rounds: int = 3, **translate_kwargs) -> dict:
    """`zhen.translate` one text a call, `rounds` times with each of `variants` (name: what `owner.attribute` is set
    to) in turn: each variant's ms a call per round, and an 8-character hash of its translations."""
    import hashlib

    import zhen

    results = {}
    for _ in range(rounds):
        for name, value in variants.items():
            setattr(owner, attribute, value)
            start = time.perf_counter()
            out = [zhen.translate(text, **translate_kwargs) for text in texts]
            results.setdefault(name, []).append(round((time.perf_counter() - start) / len(texts) * 1000, 2))
            results[name + "_hash"] = hashlib.md5("\n".join(out).encode()).hexdigest()[:8]
    return results


def each_way(model, tokenizer, rows, count: int, warm: int = 3, **translate_kwargs):
    """For en→zh and zh→en: the direction's name, the first `count` source texts of `rows` and `zhen.translate`'s
    keyword arguments, after `warm` calls (session copies, programs, drafts made once)."""
    import zhen

    for source, target in (("en", "zh"), ("zh", "en")):
        texts = [row[source] for row in rows][:count]
        options = dict(model=model, tokenizer=tokenizer, src_lang=source, tgt_lang=target, **translate_kwargs)
        for text in texts[:warm]:
            zhen.translate(text, **options)
        yield f"{source}->{target}", texts, options


def checkpoint_and_pairs(path: str, pairs: int = 48):
    """The model and tokenizer saved at `path` (eval mode, 2 PyTorch threads) and the first `pairs` Tatoeba validation
    pairs (`../shared/data`), as the one-text-a-call probes use them."""
    import gzip
    import json
    import warnings

    import torch

    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast

    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    model = ZhenForConditionalGeneration.from_pretrained(path).eval()
    with gzip.open("/work/shared/data/tatoeba/valid.jsonl.gz", "rt") as lines:
        rows = [json.loads(line) for line, _ in zip(lines, range(pairs))]
    return model, ZhenTokenizerFast.from_pretrained(path), rows
