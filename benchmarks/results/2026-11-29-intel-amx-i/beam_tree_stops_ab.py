"""One text a call, beam 4, drafted (a float32 session: run with ZHEN_HARDWARE=cpu_bf16=emulated on a CPU with bf16;
the model past its `DRAFT_AFTER`-th call): the draft's tree ending where the draft's own search ends (`draft_beams`
choosing with the finished set, as now) against the previous behaviour (its running beams only, the tree as deep as
the draft length says), taking turns call by call in one process. Prints each arm's median ms a call, the median
paired ratio and whether the translations are the same.

    ZHEN_HARDWARE=cpu_bf16=emulated python beam_tree_stops_ab.py MODEL_DIR TEST_FILE [--calls 48]
"""

import argparse
import copy
import gzip
import json
import statistics
import time

import torch

from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast, draft_decoding, fast_generation, translate


def previous_draft_beams(draft, search, cur_len, levels, lagging, processors):
    """`draft_beams` before this session's change: the tree as deep as `levels`, ended only when all beams end."""
    search = copy.copy(search)
    tokens = search.last_tokens(cur_len)
    if lagging is None:
        hidden_states = draft.step(tokens, cur_len - 1)
    else:
        last, origins = lagging
        own = torch.arange(len(tokens), device=tokens.device)[:, None]
        ours = torch.cat([draft.cache.origins[:, : cur_len - 1], own], 1)
        both = torch.cat([torch.cat([origins[:, : cur_len - 1], own], 1), ours])
        hidden_states = draft.steps(torch.cat([last, tokens]), cur_len - 2, both)[len(tokens) :]
    parents, drafted = [], []
    for level in range(levels):
        if level:
            hidden_states = draft.step(drafted[-1], cur_len - 1 + level)
        log_probs = fast_generation.beam_log_probs(draft, hidden_states, cur_len + level, **processors)
        rows, _, _, ends = search.continue_best(log_probs, cur_len + level)
        if ends.all():
            break
        draft.reorder(rows, cur_len + level)
        parents.append(rows)
        drafted.append(search.running[0, :, cur_len + level])
    return parents, drafted


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("test")
    parser.add_argument("--calls", type=int, default=48)
    parser.add_argument("--beams", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = ZhenForConditionalGeneration.from_pretrained(args.model).eval()
    tokenizer = ZhenTokenizerFast.from_pretrained(args.model)
    pairs = [json.loads(line) for line in gzip.open(args.test, "rt")]
    calls = [(pairs[i]["en" if i % 2 == 0 else "zh"], "zh" if i % 2 == 0 else "en") for i in range(args.calls)]
    current = draft_decoding.draft_beams
    with fast_generation.FastDecoder(model) as session:
        assert session.drafts_beams, "beams are drafted in a float32 session only: ZHEN_HARDWARE=cpu_bf16=emulated"

    def run(text, lang, ends_with_search):
        draft_decoding.draft_beams = current if ends_with_search else previous_draft_beams
        start = time.perf_counter()
        out = translate(text, model, tokenizer, tgt_lang=lang, num_beams=args.beams)
        return time.perf_counter() - start, out

    for text, lang in calls[:40]:
        run(text, lang, True)
    times, same = {True: [], False: []}, 0
    for i, (text, lang) in enumerate(calls):
        outs = {}
        for arm in (True, False) if i % 2 == 0 else (False, True):
            t, outs[arm] = run(text, lang, arm)
            times[arm].append(t)
        same += outs[True] == outs[False]
    ratios = [b / a for a, b in zip(times[True], times[False])]
    q = statistics.quantiles(ratios, n=4)
    print(f"{args.model} on {args.test}: {len(calls)} calls of one text, beam {args.beams}, threads {args.threads}")
    print(f"tree ends with the draft's search  median {statistics.median(times[True]) * 1e3:.1f} ms")
    print(f"tree as deep as the draft length   median {statistics.median(times[False]) * 1e3:.1f} ms")
    print(f"paired ratio (previous / now) median {statistics.median(ratios):.3f} (quartiles {q[0]:.3f}-{q[2]:.3f}); "
          f"same translations {same}/{len(calls)}")


if __name__ == "__main__":
    main()
