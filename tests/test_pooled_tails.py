"""Greedy batches whose tails are decoded together (`zhen.pooled_tails`): every batch's output is what
`model.generate` gives it alone, whichever session, stream count, length limits and forced tokens."""

import pytest
import torch

import zhen
from zhen import hardware, pooled_tails
from zhen.fast_generation import FastDecoder
from zhen.pooled_tails import TailPool
from zhen.quantization import quantize_dynamic


SESSIONS = {
    "plain": dict(weights="plain"),
    "packed": dict(weights="packed"),
    "bf16": dict(weights="bf16"),
    "python-layers": dict(weights="plain", script_layers=False),
    "module-layers": dict(weights="plain", inline_layers=False),
}


def greedy_batches(tokenizer, pairs, direction="en-zh", rows=5, max_new_tokens=(40, 7, 40, 12, 40)):
    """Batches of the sample sentences, longest first as `zhen.translate` makes them, with their own length limits
    (some so short that rows stop on them)."""
    source, target = direction.split("-")
    texts = sorted((pair[0 if source == "en" else 1] for pair in pairs), key=len, reverse=True)
    tokenizer.src_lang = source
    batches = []
    for number, start in enumerate(range(0, len(texts), rows)):
        encoded = tokenizer(texts[start : start + rows], padding=True, return_tensors="pt")
        limit = max_new_tokens[number % len(max_new_tokens)]
        batches.append(dict(**encoded, forced_bos_token_id=tokenizer.get_lang_id(target), max_new_tokens=limit))
    return batches


def parks(monkeypatch) -> list[int]:
    """The rows of each parked tail, recorded."""
    parked, park = [], TailPool.park

    def recording(self, steps, sequences, active, cur_len, max_length):
        parked.append(len(active))
        return park(self, steps, sequences, active, cur_len, max_length)

    monkeypatch.setattr(TailPool, "park", recording)
    return parked


@pytest.mark.parametrize("session", SESSIONS)
@pytest.mark.parametrize("streams", [1, 2])
@pytest.mark.parametrize("direction", ["en-zh", "zh-en"])
def test_each_batch_gets_what_generate_gives_it_alone(tiny_model, tiny_tokenizer, tiny_pairs, session, streams,
                                                      direction, monkeypatch):  # fmt: skip
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)  # park from the first finished row on
    monkeypatch.setattr(pooled_tails, "UNPOOLED_LAST_BATCHES", 0)  # and to the last batch
    parked = parks(monkeypatch)
    batches = greedy_batches(tiny_tokenizer, tiny_pairs, direction)
    with FastDecoder(tiny_model, **SESSIONS[session]) as decoder:
        expected = [decoder.generate(**batch, tail_pool=None) for batch in batches]
        outputs = list(decoder.generate_batches(batches, streams))
    assert len(parked) >= 2, "no tails were pooled"
    if session != "bf16":  # a bf16 session is checked against its own batches alone, above
        expected = [tiny_model.generate(**batch, do_sample=False) for batch in batches]
    assert len(outputs) == len(expected)
    for number, (output, wanted) in enumerate(zip(outputs, expected)):
        assert output.shape == wanted.shape and torch.equal(output, wanted), number


@pytest.mark.parametrize("pooled_batches", [1, 100])
def test_tails_join_at_their_own_positions_however_often_the_pool_is_decoded(tiny_model, tiny_tokenizer, tiny_pairs,
                                                                              pooled_batches, monkeypatch):  # fmt: skip
    """Tails parked at several positions (batches of different lengths) join the running rows where their histories
    are as long; the pool is decoded after each batch's worth of rows, or once at the end."""
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    monkeypatch.setattr(pooled_tails, "POOLED_BATCHES", pooled_batches)
    joined, join = [], TailPool.joined

    def recording(self, groups, length, slot):
        joined.append(len(groups))
        return join(self, groups, length, slot)

    monkeypatch.setattr(TailPool, "joined", recording)
    batches = greedy_batches(tiny_tokenizer, tiny_pairs, rows=4, max_new_tokens=(40,))
    expected = [tiny_model.generate(**batch, do_sample=False) for batch in batches]
    with FastDecoder(tiny_model, weights="plain") as decoder:
        outputs = list(decoder.generate_batches(batches))
        assert len(decoder.tail_pools) == 1
    assert decoder.tail_pools == {}  # their memory given back with the session
    assert all(torch.equal(output, wanted) for output, wanted in zip(outputs, expected))
    assert max(joined) >= 2, "no two tails were decoded together"


def test_min_new_tokens_and_forced_eos_hold_in_the_pool(tiny_model, tiny_tokenizer, tiny_pairs, monkeypatch):
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    parked = parks(monkeypatch)
    model = tiny_model
    saved = model.generation_config.forced_eos_token_id
    model.generation_config.forced_eos_token_id = tiny_tokenizer.eos_token_id
    try:
        batches = greedy_batches(tiny_tokenizer, tiny_pairs, max_new_tokens=(9, 14))
        for batch in batches[1::2]:
            batch["min_new_tokens"] = 5
        expected = [model.generate(**batch, do_sample=False) for batch in batches]
        with FastDecoder(model, weights="plain") as decoder:
            outputs = list(decoder.generate_batches(batches))
    finally:
        model.generation_config.forced_eos_token_id = saved
    assert parked
    assert all(torch.equal(output, wanted) for output, wanted in zip(outputs, expected))


def test_beam_search_and_a_session_without_pooling_decode_each_batch_alone(tiny_model, tiny_tokenizer, tiny_pairs,
                                                                           monkeypatch):  # fmt: skip
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    parked = parks(monkeypatch)
    batches = greedy_batches(tiny_tokenizer, tiny_pairs)
    beams = [dict(batch, num_beams=3) for batch in batches]
    expected = [tiny_model.generate(**batch, do_sample=False) for batch in beams]
    with FastDecoder(tiny_model, weights="plain") as decoder:
        outputs = list(decoder.generate_batches(beams, streams=2))
    assert all(torch.equal(output, wanted) for output, wanted in zip(outputs, expected)) and not parked
    with FastDecoder(tiny_model, weights="plain", pool_tails=False) as decoder:
        assert decoder.tail_pool() is None
        outputs = list(decoder.generate_batches(batches))
    assert not parked
    assert all(torch.equal(o, tiny_model.generate(**b, do_sample=False)) for o, b in zip(outputs, batches))


def test_an_int8_session_pools_its_tails_and_translates_as_its_batches_do(tiny_model, tiny_tokenizer, tiny_pairs,
                                                                          monkeypatch):  # fmt: skip
    """int8 products scale a step's rows together (dynamic quantization), so a tail among other rows may round
    differently: nearly every row stays the same."""
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    parked = parks(monkeypatch)
    int8 = quantize_dynamic(tiny_model)
    batches = greedy_batches(tiny_tokenizer, tiny_pairs)
    with FastDecoder(int8) as decoder:
        expected = [decoder.generate(**batch) for batch in batches]
        outputs = list(decoder.generate_batches(batches, streams=2))
    assert parked
    rows = [(o.tolist(), w.tolist()) for os, ws in zip(outputs, expected) for o, w in zip(os, ws)]
    assert sum(o[: len(w)] == w for o, w in rows) >= 0.9 * len(rows)


def test_an_error_in_a_stream_reaches_the_caller(tiny_model, tiny_tokenizer, tiny_pairs):
    batches = greedy_batches(tiny_tokenizer, tiny_pairs)
    batches[3]["do_sample"] = True
    with FastDecoder(tiny_model, weights="plain") as decoder:
        with pytest.raises(NotImplementedError, match="do_sample"):
            list(decoder.generate_batches(batches, streams=2))
        # the session decodes on: nothing of the failed call is left in the pools
        outputs = list(decoder.generate_batches(batches[:3], streams=2))
    assert all(torch.equal(o, tiny_model.generate(**b, do_sample=False)) for o, b in zip(outputs, batches[:3]))


@pytest.mark.parametrize("machine", [dict(cpu_bf16="native"), dict(cpu_bf16="emulated"),
                                     dict(cpu_bf16="emulated", onednn_packing="off", mkl_packing="off")])  # fmt: skip
def test_translate_pools_the_tails_of_its_greedy_batches(tiny_model, tiny_tokenizer, tiny_pairs, machine,
                                                         monkeypatch):  # fmt: skip
    """`zhen.translate` decodes through `generate_batches` on every session class: the same translations as its
    batches alone."""
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    parked = parks(monkeypatch)
    texts = [en for en, _ in tiny_pairs]
    with hardware.forced(**machine):
        pooled = zhen.translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", batch_size=4, streams=2)
        assert parked
        monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.0)
        alone = zhen.translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", batch_size=4, streams=2)
    assert pooled == alone


@pytest.mark.parametrize("machine", [dict(cpu_bf16="native"), dict(cpu_bf16="emulated"),
                                     dict(cpu_bf16="emulated", onednn_packing="off", mkl_packing="off")])  # fmt: skip
@pytest.mark.parametrize("num_beams", [1, 2])
def test_the_pipelines_lists_decode_as_translate_decodes(tiny_model, tiny_tokenizer, tiny_pairs, machine, num_beams,
                                                         monkeypatch):  # fmt: skip
    """A list given to the pipeline is batched and decoded as `zhen.translate` decodes it, on every session class
    (`generate_batches`, in two streams, greedy tails pooled): the same translations, batch for batch."""
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    monkeypatch.setattr(zhen.pipeline_zhen, "decoding_streams", lambda device: 2)
    parked = parks(monkeypatch)
    translator = zhen.ZhenTranslationPipeline(model=tiny_model, tokenizer=tiny_tokenizer, tgt_lang="zh")
    texts = [en for en, _ in tiny_pairs]
    with hardware.forced(**machine):
        listed = translator(texts, batch_size=4, num_beams=num_beams)
        assert bool(parked) == (num_beams == 1)
        expected = zhen.translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", batch_size=4, streams=2,
                                  num_beams=num_beams)  # fmt: skip
    assert [record["translation_text"] for record in listed] == expected


@pytest.mark.parametrize("streams", [1, 2])
def test_in_several_streams_the_last_batches_decode_alone_so_that_the_streams_end_together(
    tiny_model, tiny_tokenizer, tiny_pairs, streams, monkeypatch
):
    """Each stream decodes its pool before the batches it takes last (fewer than `UNPOOLED_LAST_BATCHES` a stream
    left): a pool's tails end late, and the other streams would wait. One stream pools to the end."""
    monkeypatch.setattr(pooled_tails, "TAIL_SHARE", 0.9)
    limits, park = [], TailPool.park

    def recording(self, steps, sequences, active, cur_len, max_length):
        limits.append(max_length - 1)
        return park(self, steps, sequences, active, cur_len, max_length)

    monkeypatch.setattr(TailPool, "park", recording)
    batches = greedy_batches(tiny_tokenizer, tiny_pairs, rows=3, max_new_tokens=(30,))
    for number, batch in enumerate(batches):
        batch["max_new_tokens"] = 30 + number  # which batch parked
    expected = [tiny_model.generate(**batch, do_sample=False) for batch in batches]
    with FastDecoder(tiny_model, weights="plain") as decoder:
        outputs = list(decoder.generate_batches(batches, streams))
    assert all(torch.equal(output, wanted) for output, wanted in zip(outputs, expected))
    parked = {limit - 30 for limit in limits}
    last = set(range(len(batches) - pooled_tails.UNPOOLED_LAST_BATCHES * 2, len(batches)))  # two streams' last
    assert len(parked) >= 2 and (parked.isdisjoint(last) if streams > 1 else parked & last), (sorted(parked), last)
