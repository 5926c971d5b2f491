"""Tests of `zhen.translate`: order, batching, languages, defaults, truncation, loading, and the errors it raises."""

import copy
import re
import threading

import pytest
import torch

import zhen
from zhen import hardware
from zhen.fast_generation import FastDecoder
from zhen.pipeline_zhen import default_max_new_tokens, max_new_tokens_limit, max_source_tokens
from zhen.translation import load_model_and_tokenizer, resolve_languages, translate


HAN = re.compile(r"[\u4e00-\u9fff]")


def test_translates_both_directions_in_input_order(tiny_model, tiny_tokenizer, tiny_pairs):
    en, zh = map(list, zip(*tiny_pairs))
    to_zh = translate(en, tiny_model, tiny_tokenizer, src_lang="en", tgt_lang="zh", batch_size=3)
    to_en = translate(zh, tiny_model, tiny_tokenizer, src_lang="zh", tgt_lang="en", batch_size=3)
    assert sum(a == b for a, b in zip(to_zh, zh)) >= 14
    assert sum(a == b for a, b in zip(to_en, en)) >= 14
    assert all(HAN.search(text) for text in to_zh) and not any(HAN.search(text) for text in to_en)


def test_length_sorted_batches_equal_one_by_one(tiny_model, tiny_tokenizer, tiny_pairs):
    texts = [en for en, _ in tiny_pairs][:7]
    batched = translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", batch_size=4)
    assert batched == [translate(text, tiny_model, tiny_tokenizer, tgt_lang="zh") for text in texts]


@pytest.mark.parametrize("num_beams", [1, 2])
def test_streams_give_the_translations_of_one_stream(tiny_model, tiny_tokenizer, tiny_pairs, num_beams):
    texts = [en for en, _ in tiny_pairs]
    kwargs = dict(tgt_lang="zh", batch_size=3, num_beams=num_beams)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the threads each of two streams gets on two cores
    try:
        one_stream = translate(texts, tiny_model, tiny_tokenizer, streams=1, **kwargs)
    finally:
        torch.set_num_threads(threads)
    assert translate(texts, tiny_model, tiny_tokenizer, streams=2, **kwargs) == one_stream
    assert translate(texts, tiny_model, tiny_tokenizer, streams=3, progress=True, **kwargs) == one_stream
    with pytest.raises(ValueError, match="streams must be at least 1"):
        translate(texts, tiny_model, tiny_tokenizer, streams=0, **kwargs)


def test_a_few_texts_decode_in_the_calling_thread_with_all_its_threads(
    tiny_model, tiny_tokenizer, tiny_pairs, monkeypatch
):
    texts = [en for en, _ in tiny_pairs][:5]
    expected = translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", streams=1)
    generate, seen = zhen.fast_generation.FastDecoder.generate, []

    def recording(self, *args, **kwargs):
        seen.append((threading.get_ident(), torch.get_num_threads()))
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(zhen.fast_generation.FastDecoder, "generate", recording)
    assert translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", streams=4) == expected  # one batch
    assert seen == [(threading.get_ident(), torch.get_num_threads())]


def test_translate_keeps_no_session_copies_of_a_model_in_training(tiny_model, tiny_tokenizer, tiny_pairs):
    """Validation during training translates a model whose weights change at the next step: nothing is kept. In
    eval mode the session's copies of the weights (where the machine makes any) are kept for the next call."""
    zhen.fast_generation.forget_session_copies(tiny_model)
    tiny_model.train()
    try:
        translate(tiny_pairs[0][0], tiny_model, tiny_tokenizer, tgt_lang="zh")
    finally:
        tiny_model.eval()
    assert not zhen.fast_generation._COPIES.get(tiny_model)
    translate(tiny_pairs[0][0], tiny_model, tiny_tokenizer, tgt_lang="zh")
    makes_copies = zhen.fast_generation.session_weights(tiny_model) != "plain"
    assert bool(zhen.fast_generation._COPIES.get(tiny_model)) == makes_copies


def test_single_string_gives_single_string(tiny_model, tiny_tokenizer, tiny_pairs):
    en, zh = tiny_pairs[0]
    assert translate(en, tiny_model, tiny_tokenizer, tgt_lang="zh") == zh


def test_zhen_exports_translate():
    assert zhen.translate is translate


def test_empty_texts_give_empty_strings_without_disturbing_others(tiny_model, tiny_tokenizer, tiny_pairs):
    en, zh = tiny_pairs[1]
    assert translate(["", en, "   ", "\n"], tiny_model, tiny_tokenizer, tgt_lang="zh") == ["", zh, "", ""]
    assert translate([], tiny_model, tiny_tokenizer, tgt_lang="zh") == []


def test_target_language_is_required(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="target language is required"):
        translate("Hello.", tiny_model, tiny_tokenizer)


@pytest.mark.parametrize(
    ("src", "tgt", "message"),
    [("en", "fr", "Unknown language code 'fr'"), ("zh-CN", "zh", "both 'zh'"), ("klingon", "zh", "valid codes")],
)
def test_bad_languages_raise_clear_errors(src, tgt, message):
    with pytest.raises(ValueError, match=message):
        resolve_languages(src, tgt)


def test_source_language_defaults_to_the_other_one_and_aliases_work():
    assert resolve_languages(None, "zh") == ("en", "zh")
    assert resolve_languages(None, "english") == ("zh", "en")
    assert resolve_languages("zh-Hant", "en-US") == ("zh", "en")


def test_generate_gets_forced_target_code_and_pass_through_kwargs(tiny_model, tiny_tokenizer, monkeypatch):
    calls = []
    generate = tiny_model.generate

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return generate(*args, **kwargs)

    monkeypatch.setattr(tiny_model, "generate", spy)
    translate(["Hello.", "Please sit down."], tiny_model, tiny_tokenizer, tgt_lang="en", src_lang="zh", batch_size=1,
              num_beams=2, no_repeat_ngram_size=3, length_penalty=0.8)  # fmt: skip
    assert len(calls) == 2
    for kwargs in calls:
        assert kwargs["forced_bos_token_id"] == tiny_tokenizer.get_lang_id("en") == 4
        assert (kwargs["num_beams"], kwargs["no_repeat_ngram_size"], kwargs["length_penalty"]) == (2, 3, 0.8)
        source_length = kwargs["input_ids"].shape[-1]
        assert kwargs["max_new_tokens"] == int(1.5 * source_length + 10)


def test_forced_bos_token_id_is_refused(tiny_model, tiny_tokenizer):
    with pytest.raises(ValueError, match="tgt_lang"):
        translate("Hello.", tiny_model, tiny_tokenizer, tgt_lang="zh", forced_bos_token_id=5)


def test_max_new_tokens_limits_output(tiny_model, tiny_tokenizer, tiny_pairs):
    en, _ = tiny_pairs[3]
    short = translate(en, tiny_model, tiny_tokenizer, tgt_lang="zh", max_new_tokens=3)
    assert len(tiny_tokenizer(short, add_special_tokens=False)["input_ids"]) <= 2  # code + 2 tokens


def test_default_generation_length_follows_source_and_position_table(tiny_model):
    config = tiny_model.config  # sinusoidal, 256 positions
    assert default_max_new_tokens(10, config) == 25
    assert max_source_tokens(config) == 256 and max_new_tokens_limit(config) == 255
    assert default_max_new_tokens(1000, config) == 255
    rope = zhen.ZhenConfig.from_preset("tiny", vocab_size=600, position_embedding_type="rope")
    assert max_source_tokens(rope) is None and default_max_new_tokens(1000, rope) == 512


def test_overlong_input_is_truncated_with_a_warning_not_a_crash(tiny_model, tiny_tokenizer, tiny_pairs):
    long_text = " ".join(en for en, _ in tiny_pairs)
    truncated = []
    out = translate(["Hi.", long_text], tiny_model, tiny_tokenizer, tgt_lang="zh", max_source_tokens=8,
                    on_truncate=lambda *args: truncated.append(args))  # fmt: skip
    assert len(out) == 2 and out[1]
    (index, num_tokens, limit) = truncated[0]
    assert (index, limit) == (1, 8) and num_tokens > 8 and len(truncated) == 1


def test_input_longer_than_the_position_table_runs(tiny_tokenizer):
    torch.manual_seed(0)
    config = zhen.ZhenConfig.from_preset("tiny", vocab_size=len(tiny_tokenizer), max_position_embeddings=16)
    model = zhen.ZhenForConditionalGeneration(config).eval()
    out = translate("word " * 40, model, tiny_tokenizer, tgt_lang="zh", on_truncate=lambda *args: None)
    assert isinstance(out, str)


def test_restores_training_mode_and_tokenizer_languages(tiny_model, tiny_tokenizer):
    tiny_tokenizer.src_lang, tiny_tokenizer.tgt_lang = "en", "zh"
    tiny_model.train()
    try:
        translate("你好。", tiny_model, tiny_tokenizer, src_lang="zh", tgt_lang="en")
        assert tiny_model.training
    finally:
        tiny_model.eval()
    assert (tiny_tokenizer.src_lang, tiny_tokenizer.tgt_lang) == ("en", "zh")


def test_loads_from_a_folder_with_the_tokenizer_of_the_same_folder(tiny_checkpoint, tiny_pairs):
    en, zh = tiny_pairs[2]
    assert translate(en, str(tiny_checkpoint), tgt_lang="zh") == zh
    model, tokenizer = load_model_and_tokenizer(tiny_checkpoint)
    assert isinstance(model, zhen.ZhenForConditionalGeneration) and not model.training
    assert isinstance(tokenizer, zhen.ZhenTokenizerFast)


@pytest.mark.parametrize("saved", [torch.bfloat16, torch.float16])
def test_a_half_precision_checkpoint_loads_in_float32_unless_asked(tiny_model, tiny_tokenizer, tmp_path, saved):
    """Sessions choose the inference precision from float32 weights; bf16 or fp16 weights as loaded ("auto") decode
    several times slower on a CPU that emulates them."""
    folder = tmp_path / "half"
    copy.deepcopy(tiny_model).to(saved).save_pretrained(folder)
    tiny_tokenizer.save_pretrained(folder)
    model, _ = load_model_and_tokenizer(folder)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert torch.equal(
        model.get_output_embeddings().weight, tiny_model.get_output_embeddings().weight.to(saved).float()
    )
    as_saved, _ = load_model_and_tokenizer(folder, dtype="auto")
    assert {p.dtype for p in as_saved.parameters()} == {saved}
    asked, _ = load_model_and_tokenizer(folder, dtype=torch.bfloat16)
    assert {p.dtype for p in asked.parameters()} == {torch.bfloat16}
    en, zh = "I love nature.", translate("I love nature.", model, tiny_tokenizer, tgt_lang="zh")
    assert translate(en, str(folder), tgt_lang="zh") == zh
    int8_model, _ = load_model_and_tokenizer(folder, int8=True)  # quantized from the float32 weights
    assert isinstance(translate(en, int8_model, tiny_tokenizer, tgt_lang="zh"), str)


@pytest.mark.parametrize("cpu_bf16", ["emulated", "native"])
def test_a_bf16_model_translates_through_its_float32_copy_where_bf16_is_emulated(
    tiny_model, tiny_tokenizer, tiny_pairs, cpu_bf16, monkeypatch
):
    """`zhen.translate` and the pipeline (a list, one text) decode a bf16 model where the CPU emulates bf16 in a
    session of its float32 copy ([`zhen.fast_generation.decoding_model`]): the float32 model's translations, several
    times faster there; where bf16 is native, in the bf16 model's own session."""
    model = copy.deepcopy(tiny_model).bfloat16()
    float32_model = copy.deepcopy(model).float()
    en = [en for en, _ in tiny_pairs[:6]]
    decoded = []
    own_init = FastDecoder.__init__
    monkeypatch.setattr(FastDecoder, "__init__", lambda self, m, **kw: decoded.append(m) or own_init(self, m, **kw))
    with hardware.forced(cpu_bf16=cpu_bf16):
        expected = translate(en, float32_model, tiny_tokenizer, tgt_lang="zh")
        decoded.clear()
        translations = translate(en, model, tiny_tokenizer, tgt_lang="zh")
        pipeline = zhen.ZhenTranslationPipeline(model=model, tokenizer=tiny_tokenizer, device=-1, tgt_lang="zh")
        from_pipeline = [record["translation_text"] for record in pipeline(en, batch_size=4)]
        one_text = pipeline(en[0])[0]["translation_text"]
    dtype = torch.float32 if cpu_bf16 == "emulated" else torch.bfloat16
    assert len(decoded) == 3 and all(m.dtype == dtype for m in decoded)
    if cpu_bf16 == "emulated":
        assert decoded[0] is decoded[1] is decoded[2] is not model  # the copy, kept
        assert translations == from_pipeline == expected and one_text == expected[0]
    else:
        assert all(m is model for m in decoded) and from_pipeline == translations


def test_a_folder_that_is_not_a_checkpoint_is_named(tmp_path):
    with pytest.raises(ValueError, match="not a zhen checkpoint: it has no config.json"):
        translate("Hi.", tmp_path, tgt_lang="zh")
    with pytest.raises(FileNotFoundError, match="No checkpoint folder"):
        translate("Hi.", tmp_path / "missing", tgt_lang="zh")


def test_loaded_model_needs_a_zhen_tokenizer(tiny_model):
    with pytest.raises(ValueError, match="pass its tokenizer"):
        translate("Hi.", tiny_model, tgt_lang="zh")
    with pytest.raises(ValueError, match="not a zhen tokenizer"):
        translate("Hi.", tiny_model, object(), tgt_lang="zh")


def test_non_string_input_is_named(tiny_model, tiny_tokenizer):
    with pytest.raises(TypeError, match=r"texts\[1\] is of type int"):
        translate(["Hi.", 3], tiny_model, tiny_tokenizer, tgt_lang="zh")


def test_translate_decodes_in_the_session_its_thread_has_open(tiny_model, tiny_tokenizer, tiny_pairs, monkeypatch):
    """Inside `with FastDecoder(model):` (what each `zhen-translate --workers` process holds), `translate` decodes in
    that session instead of opening another (which would wait for it); options only `model.generate` implements
    cannot run there and say so."""
    from zhen.fast_generation import FastDecoder

    opened, original_init = [], FastDecoder.__init__

    def counted_init(self, *args, **kwargs):
        opened.append(args)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(FastDecoder, "__init__", counted_init)
    english = [en for en, _ in tiny_pairs]
    expected = translate(english, tiny_model, tiny_tokenizer, tgt_lang="zh")
    assert len(opened) == 1
    with FastDecoder(tiny_model) as session:
        assert FastDecoder.open_in_this_thread(tiny_model) is session and len(opened) == 2
        for _ in range(2):
            assert translate(english, tiny_model, tiny_tokenizer, tgt_lang="zh", batch_size=5) == expected
        assert len(opened) == 2  # no session of their own
        with pytest.raises(ValueError, match="do_sample.*cannot run inside the FastDecoder session"):
            translate(english, tiny_model, tiny_tokenizer, tgt_lang="zh", do_sample=True)
    assert FastDecoder.open_in_this_thread(tiny_model) is None
    assert translate(english, tiny_model, tiny_tokenizer, tgt_lang="zh") == expected and len(opened) == 3


@pytest.mark.parametrize(
    "weights,texts,streams,beams,expected",
    [("bf16", 1000, 2, 1, 125), ("packed", 3000, 2, 1, 128), ("bf16", 1000, 1, 1, 128), ("packed", 600, 2, 1, 75),
     ("bf16", 500, 2, 1, 64), ("bf16", 10, 1, 1, 64), ("bf16", 3000, 2, 4, 64), ("packed", 3000, 2, 2, 64),
     ("plain", 3000, 2, 1, 64)],
)  # fmt: skip
def test_default_batch_size_takes_more_texts_for_greedy_search_in_float_sessions(weights, texts, streams, beams,
                                                                                 expected):  # fmt: skip
    """Greedy search in a float32 or bf16 session on a CPU takes up to 128 texts a batch while each stream still gets
    four batches, never fewer than 64; beam search, other sessions (an int8 model's) and a GPU's 64."""
    from zhen.fast_generation import default_batch_size

    assert default_batch_size(weights, texts, streams, beams) == expected
    assert default_batch_size(weights, texts, streams, beams, "cuda:0") == 64


MACHINE_SESSIONS = {"bf16": dict(cpu_bf16="native"),
                    "packed": dict(cpu_bf16="emulated", onednn_packing="on", float32_packing="onednn"),
                    "plain": dict(cpu_bf16="emulated", onednn_packing="off", mkl_packing="off")}  # fmt: skip


@pytest.mark.parametrize("session", sorted(MACHINE_SESSIONS))
@pytest.mark.parametrize("num_beams", [1, 2])
def test_translate_batches_by_default_as_its_session_decodes_best(tiny_model, tiny_tokenizer, tiny_pairs, monkeypatch,
                                                                 session, num_beams):  # fmt: skip
    """Without `batch_size`, `translate` takes `default_batch_size`'s texts a batch for the session it opens on this
    machine class (each class forced), the search and the streams; an int8 model's batches stay at the default. The
    translations are those of any other batch size."""
    from zhen import hardware
    from zhen.fast_generation import FastDecoder, session_weights
    from zhen.quantization import quantize_dynamic

    monkeypatch.setattr(hardware, "DEFAULT_BATCH_SIZE", 3)
    monkeypatch.setattr(hardware, "GREEDY_BATCH_SIZE", 6)
    monkeypatch.setattr(hardware, "STREAM_BATCHES", 2)
    sizes, fast_generate = [], FastDecoder.generate

    def spy(self, *args, **kwargs):
        sizes.append(len(kwargs["input_ids"]))
        return fast_generate(self, *args, **kwargs)

    monkeypatch.setattr(FastDecoder, "generate", spy)
    texts = [en for en, _ in tiny_pairs]  # 16
    with hardware.forced(**MACHINE_SESSIONS[session]):
        assert session_weights(tiny_model) == session
        expected = translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", num_beams=num_beams, batch_size=16)
        sizes.clear()
        for streams, greedy_sizes in ((1, [6, 6, 4]), (2, [4, 4, 4, 4]), (4, [3] * 5 + [1])):
            got = translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh", num_beams=num_beams, streams=streams)
            greedy_float = num_beams == 1 and session != "plain"
            assert sorted(sizes, reverse=True) == (greedy_sizes if greedy_float else [3] * 5 + [1]) and got == expected
            sizes.clear()
    int8 = quantize_dynamic(tiny_model)
    translate(texts, int8, tiny_tokenizer, tgt_lang="zh", num_beams=num_beams, streams=1)
    assert sizes == [3] * 5 + [1]
