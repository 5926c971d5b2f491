"""`zhen.fast_generation.generate` must return exactly what `model.generate` returns: greedy and beam search, every
position type x norm placement, padded batches, min/max lengths, beam-search options, and a trained model whose
translations end on their own."""

import itertools

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import argmax, generate, packed_linear, topk, unsupported_options
from zhen.modeling_zhen import ZhenLinear


PAD, EOS, EN, ZH = 0, 2, 4, 5
VARIANTS = list(itertools.product(["sinusoidal", "learned", "rope"], [True, False]))


def tiny_model(seed=0, vocab_size=600, **overrides) -> ZhenForConditionalGeneration:
    torch.manual_seed(seed)
    return ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=vocab_size, **overrides)).eval()


def padded_sources(vocab_size=600, lengths=(9, 7, 4, 2, 9), seed=0):
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths) + 2
    input_ids = torch.full((len(lengths), width), PAD)
    for row, n in enumerate(lengths):
        input_ids[row, : n + 2] = torch.cat(
            [torch.tensor([EN]), torch.randint(6, vocab_size, (n,), generator=generator), torch.tensor([EOS])]
        )
    return input_ids, input_ids.ne(PAD).long()


def assert_same_as_generate(model, input_ids, attention_mask, **kwargs):
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False, **kwargs)
    actual = generate(model, input_ids, attention_mask, **kwargs)
    assert actual.shape == expected.shape and torch.equal(actual, expected), f"{kwargs}\n{expected}\n{actual}"


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("num_beams", [1, 4])
def test_equals_generate_for_every_variant(position_embedding_type, normalize_before, num_beams):
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    input_ids, attention_mask = padded_sources()
    for min_new_tokens, max_new_tokens in [(0, 10), (10, 10), (3, 14)]:
        assert_same_as_generate(
            model, input_ids, attention_mask, forced_bos_token_id=ZH, num_beams=num_beams,
            max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens,
        )  # fmt: skip


@pytest.mark.parametrize("early_stopping", [False, True, "never"])
@pytest.mark.parametrize("length_penalty", [1.0, 0.0, 2.0, -0.5])
def test_beam_search_options_equal_generate(early_stopping, length_penalty):
    """A 12-token vocabulary makes hypotheses end early and often, which exercises the finished-beam bookkeeping."""
    for seed in range(3):
        model = tiny_model(seed, vocab_size=12, position_embedding_type="rope")
        input_ids, attention_mask = padded_sources(vocab_size=12, seed=seed)
        for num_beams, num_return_sequences in [(2, 1), (4, 1), (4, 3)]:
            assert_same_as_generate(
                model, input_ids, attention_mask, forced_bos_token_id=ZH, num_beams=num_beams, max_new_tokens=10,
                length_penalty=length_penalty, early_stopping=early_stopping,
                num_return_sequences=num_return_sequences,
            )  # fmt: skip


def test_defaults_and_unforced_start_equal_generate():
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    assert_same_as_generate(model, input_ids, attention_mask)  # generation_config defaults: greedy, 20 tokens
    assert_same_as_generate(model, input_ids, attention_mask, min_new_tokens=30)  # runs to the default maximum
    assert_same_as_generate(model, input_ids, attention_mask, num_beams=3, max_new_tokens=6)
    assert_same_as_generate(model, input_ids[:1], None, forced_bos_token_id=ZH, max_new_tokens=5)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_trained_model_translations_equal_generate(tiny_model, tiny_tokenizer, tiny_pairs, num_beams):
    """On a model that really translates, outputs end on `</s>` at different lengths: padding and stopping count."""
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    tiny_tokenizer.src_lang = "en"
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), num_beams=num_beams, max_new_tokens=40)
    assert_same_as_generate(tiny_model, batch["input_ids"], batch["attention_mask"], **kwargs)
    out = generate(tiny_model, batch["input_ids"], batch["attention_mask"], **kwargs)
    texts = tiny_tokenizer.batch_decode(out, skip_special_tokens=True)
    assert sum(text == zh for text, (_, zh) in zip(texts, tiny_pairs)) >= len(tiny_pairs) - 2


def test_bfloat16_model_runs_and_mostly_agrees():
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    reference = generate(model, input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8, min_new_tokens=8)
    out = generate(model.to(torch.bfloat16), input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8,
                   min_new_tokens=8)  # fmt: skip
    assert out.shape == reference.shape and (out == reference).float().mean() > 0.5


def test_unsupported_generation_options_are_refused():
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    assert unsupported_options(model, do_sample=False, use_cache=True, num_beams=2, max_length=9) == []
    assert unsupported_options(model, do_sample=True, top_k=5) == ["do_sample", "top_k"]
    with pytest.raises(NotImplementedError, match="top_k"):
        generate(model, input_ids, attention_mask, top_k=5)
    assert_same_as_generate(model, input_ids, attention_mask, max_length=7, use_cache=True)  # neutral values pass
    model.generation_config.no_repeat_ngram_size = 3
    assert unsupported_options(model) == ["no_repeat_ngram_size"]
    with pytest.raises(NotImplementedError, match="no_repeat_ngram_size"):
        generate(model, input_ids, attention_mask)


def test_position_table_overflow_raises_clear_error():
    model = tiny_model(vocab_size=40, max_position_embeddings=8)
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        generate(model, torch.tensor([[EN, 7, EOS]]), max_new_tokens=12)


def test_argmax_and_topk_equal_torch():
    torch.manual_seed(0)
    for width in (300, 1000, 16000, 16003):
        scores = torch.randn(37, width)
        assert torch.equal(argmax(scores), scores.argmax(-1))
        ties = torch.randint(0, 4, (37, width)).float()  # many equal maxima: the first one wins
        assert torch.equal(argmax(ties), ties.argmax(-1))
        for k in (2, 8):
            values, indices = topk(scores, k)
            expected = torch.topk(scores, k)
            assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)


@pytest.mark.parametrize("linear_class", [torch.nn.Linear, ZhenLinear])
def test_packed_linear_is_bit_identical(linear_class):
    torch.manual_seed(0)
    linear = linear_class(64, 300)
    assert (packed_linear(linear, 32) is linear) != torch.backends.mkl.is_available()  # packed where MKL is
    x = torch.randn(32, 64)
    with torch.inference_mode():
        assert torch.equal(packed_linear(linear, 32)(x), linear(x))
        assert torch.equal(packed_linear(linear, 32)(x[:5]), linear(x[:5]))  # fewer rows than packed for
        linear.weight.mul_(2)  # a changed weight is repacked
        assert torch.equal(packed_linear(linear, 32)(x), linear(x))
        assert torch.equal(packed_linear(linear, 5)(x[:5]), linear(x[:5]))  # packed again for another row count


def test_batches_of_different_sizes_in_turn_equal_generate():
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    for rows in (slice(0, 5), slice(0, 2), slice(0, 5), slice(3, 4)):
        for num_beams in (1, 3):
            assert_same_as_generate(model, input_ids[rows], attention_mask[rows], forced_bos_token_id=ZH,
                                    num_beams=num_beams, max_new_tokens=8)  # fmt: skip
