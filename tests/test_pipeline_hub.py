"""Tests of the `translation` pipeline and of Hub export: a complete folder loads and translates where zhen is not
importable, through the Auto classes and `pipeline("translation")`; `zhen-push` logic with a fake HfApi."""

import copy
import json
import re
import shutil
import sys

import pytest
import torch
from datasets import Dataset
from transformers import pipeline
from transformers.dynamic_module_utils import get_class_from_dynamic_module
from transformers.pipelines.pt_utils import KeyDataset
from transformers.testing_utils import CaptureLogger
from transformers.tokenization_utils_base import TruncationStrategy
from transformers.utils import logging

from zhen import hub, pipeline_zhen
from zhen.modeling_zhen import CODE_FILES
from zhen.pipeline_zhen import ReturnType, ZhenTranslationPipeline
from zhen.translation import translate


generation_logger = logging.get_logger("transformers.generation.utils")
pipeline_logger = logging.get_logger("zhen.pipeline_zhen")


@pytest.fixture(scope="module")
def hub_folder(tiny_model, tiny_tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub") / "zhen-tiny"
    metrics = {"en-zh": {"bleu": 97.5, "chrf": 98.1, "bleu_signature": "nrefs:1|tok:zh", "sentences": 16}}
    hub.save_for_hub(tiny_model, tiny_tokenizer, folder, metrics=metrics)
    return folder


def test_pipeline_object_translates_strings_and_lists(tiny_model, tiny_tokenizer, tiny_pairs):
    translator = ZhenTranslationPipeline(model=tiny_model, tokenizer=tiny_tokenizer, device=-1, tgt_lang="zh")
    (en, zh), (en2, zh2) = tiny_pairs[:2]
    assert translator(en) == [{"translation_text": zh}]
    assert translator([en, en2], batch_size=2) == [{"translation_text": zh}, {"translation_text": zh2}]
    assert translator(zh, src_lang="zh", tgt_lang="en", num_beams=2) == [{"translation_text": en}]


def test_lists_are_translated_as_each_text_alone_without_a_data_loader(translator, tiny_pairs, monkeypatch):
    """A list gives what each of its texts gives alone (every return option, several sequences, a stop sequence,
    the user's lengths), without the data loader Transformers runs a list through: the fast decoder takes its batches
    ([`ZhenTranslationPipeline._decode_in_batches`]). With options only `generate` implements (a repetition penalty,
    a stop sequence) a list of several texts still goes through it. Returned token ids are normal tensors, which the
    caller may edit."""
    from transformers import Pipeline

    loaders = []
    get_iterator = Pipeline.get_iterator
    monkeypatch.setattr(Pipeline, "get_iterator", lambda *a, **k: loaders.append(1) or get_iterator(*a, **k))
    texts = [en for en, _ in tiny_pairs[:5]]
    stop = translator.tokenizer.decode(translator.tokenizer.encode(tiny_pairs[0][1], add_special_tokens=False)[1:2])
    for kwargs in ({}, {"num_beams": 2}, {"num_beams": 2, "num_return_sequences": 2}, {"return_tensors": True},
                   {"return_tensors": True, "return_text": True, "max_new_tokens": 3},
                   {"clean_up_tokenization_spaces": True, "min_new_tokens": 6}):  # fmt: skip
        for batch_size in (1, 2, 5):
            alone = [translator(text, **kwargs) for text in texts]
            expected = [result if len(result) > 1 else result[0] for result in alone]
            listed = translator(texts, batch_size=batch_size, **kwargs)
            pad = translator.tokenizer.pad_token_id
            assert _without_padding(listed, pad) == _without_padding(expected, pad), (kwargs, batch_size)
        assert str(translator(texts[:1], **kwargs)) == str([alone[0]] if len(alone[0]) > 1 else alone[0])
    assert not loaders
    ids = translator(texts, batch_size=2, return_tensors=True)[0]["translation_token_ids"]
    ids += 0  # not an inference tensor
    for kwargs in ({"repetition_penalty": 1.2}, {"stop_sequence": stop}):
        loaders.clear()
        assert translator(texts, batch_size=2, **kwargs) == [translator(text, **kwargs)[0] for text in texts]
        assert loaders


def _without_padding(result, pad: int):
    """A pipeline result with its token ids as lists, without the pad tokens a batch adds."""
    if isinstance(result, list):
        return [_without_padding(record, pad) for record in result]
    ids = result.get("translation_token_ids")
    return result if ids is None else {**result, "translation_token_ids": [t for t in ids.tolist() if t != pad]}


def test_inputs_that_are_not_text_are_named(translator, tiny_pairs, monkeypatch):
    """A string, a list, a generator: an input that is not a string, or not valid Unicode, is an error naming it (its
    place among the call's inputs) before anything is translated; several sequences need beam search, as in
    `generate`."""
    en = tiny_pairs[0][0]
    with pytest.raises(TypeError, match=r"inputs\[2\] is of type int, not a string: 5\. The pipeline translates text"):
        translator([en, "", 5])
    with pytest.raises(TypeError, match=r"inputs\[1\] is of type NoneType"):
        translator([en, None], repetition_penalty=1.2)  # the `generate` path too
    with pytest.raises(ValueError, match=r"inputs\[1\] holds a lone surrogate '\\udcff' at character 3"):
        translator([en, "ab\udcff"])
    with pytest.raises(ValueError, match=r"The input holds a lone surrogate"):
        translator("ab\udcff")
    with pytest.raises(TypeError, match=r"The input is of type bytes"):
        translator(b"Hello")
    texts = [en] * 9 + [b"Hello"]
    monkeypatch.setattr(pipeline_zhen, "read_ahead_batches", lambda streams: 1)  # lists of 2 texts
    with pytest.raises(TypeError, match=r"inputs\[9\] is of type bytes"):
        list(translator((text for text in texts), batch_size=2))  # read ahead in lists: named by its place in all
    for kwargs in ({}, {"repetition_penalty": 1.2}):
        with pytest.raises(ValueError, match="num_return_sequences"):
            translator([en, en], num_return_sequences=2, **kwargs)


def test_pipeline_needs_a_target_language(tiny_model, tiny_tokenizer):
    translator = ZhenTranslationPipeline(model=tiny_model, tokenizer=tiny_tokenizer, device=-1)
    with pytest.raises(ValueError, match="needs the target language"):
        translator("Hello.")
    with pytest.raises(ValueError, match="tgt_lang"):
        translator("Hello.", tgt_lang="zh", forced_bos_token_id=5)


@pytest.fixture
def translator(tiny_model, tiny_tokenizer):
    """A pipeline over a copy of `tiny_model` whose generation config pins `max_new_tokens`, as zhen exports used to,
    and has the `max_length` of the current ones: the user's lengths must win over both."""
    model = copy.deepcopy(tiny_model)
    model.generation_config.max_new_tokens = 255
    model.generation_config.max_length = 256
    return ZhenTranslationPipeline(model=model, tokenizer=tiny_tokenizer, device=-1, tgt_lang="zh")


@pytest.fixture
def generate_calls(translator, monkeypatch):
    """The batches `translator` asks the model to translate (with zhen's fast decoder or `model.generate`), as lists
    of token-id lists."""
    from zhen.fast_generation import FastDecoder

    calls, generate, fast_generate = [], translator.model.generate, FastDecoder.generate

    def spy(*args, **kwargs):
        calls.append(kwargs["input_ids"].tolist())
        return generate(*args, **kwargs)

    def fast_spy(self, *args, **kwargs):
        calls.append(kwargs["input_ids"].tolist())
        return fast_generate(self, *args, **kwargs)

    monkeypatch.setattr(translator.model, "generate", spy)
    monkeypatch.setattr(FastDecoder, "generate", fast_spy)
    return calls


def test_blank_inputs_give_empty_translations_without_the_model(translator, generate_calls, tiny_pairs):
    (en, zh), (en2, zh2) = tiny_pairs[:2]
    assert translator("") == [{"translation_text": ""}]
    assert translator(" \n ", src_lang="en") == [{"translation_text": ""}]
    assert generate_calls == []
    texts = ["", en, "  ", en2, ""]
    expected = ["", zh, "", zh2, ""]
    assert translator(texts, batch_size=2) == [{"translation_text": text} for text in expected]
    assert len(generate_calls) == 1 and len(generate_calls[0]) == 2  # the two texts, batched together
    (ids,) = translator("", return_tensors=True)[0].values()
    assert ids.tolist() == [1, 5, 2]  # <s> __zh__ </s>, what an empty translation is
    with pytest.raises(ValueError, match="needs the target language"):
        ZhenTranslationPipeline(model=translator.model, tokenizer=translator.tokenizer, device=-1)("")


def test_one_call_decodes_all_its_batches_in_one_session(translator, tiny_pairs, monkeypatch):
    """Session weights are made once per call, not per batch, and the model is as it was after the call; a generator's
    texts are translated in lists read ahead, one session each."""
    from zhen.fast_generation import FastDecoder

    opened, enter = [], FastDecoder.__enter__
    monkeypatch.setattr(FastDecoder, "__enter__", lambda self: opened.append(self) or enter(self))
    texts = [en for en, _ in tiny_pairs[:5]]
    one_by_one = [translator(text)[0] for text in texts]
    assert len(opened) == 5
    opened.clear()
    assert translator(texts, batch_size=2) == one_by_one and len(opened) == 1
    assert translator(["", *texts], batch_size=2) == [{"translation_text": ""}, *one_by_one] and len(opened) == 2
    monkeypatch.setattr(pipeline_zhen, "decoding_streams", lambda device: 1)
    monkeypatch.setattr(pipeline_zhen, "read_ahead_batches", lambda streams: 2)  # lists of 4 texts: 5 texts in two
    assert [r[0] for r in translator((text for text in texts), batch_size=2)] == one_by_one and len(opened) == 2 + 2
    assert type(translator.model.lm_head) is torch.nn.Linear
    assert translator.model.config._attn_implementation != "zhen_decoding"


def test_calls_inside_a_session_the_caller_has_open_decode_in_it(translator, tiny_pairs, monkeypatch):
    """As `zhen.translate`: a string, a list or a generator translated inside a `FastDecoder` session the caller has
    open for the model (in this thread) decodes in that session, where opening a second one would raise; options only
    `generate` implements are refused there, with the reason."""
    from zhen.fast_generation import FastDecoder

    texts = [en for en, _ in tiny_pairs[:5]]
    expected = translator(texts, batch_size=2)
    opened, enter = [], FastDecoder.__enter__
    monkeypatch.setattr(FastDecoder, "__enter__", lambda self: opened.append(self) or enter(self))
    with FastDecoder(translator.model) as session:
        assert translator(texts[0]) == [expected[0]]
        assert translator(texts, batch_size=2) == expected
        assert [r[0] for r in translator((text for text in texts), batch_size=2)] == expected
        assert translator(texts) == expected  # the default batch size, from the open session's weights
        for inputs in (texts[0], texts):  # `generate` there would multiply by the session's copies: refused
            with pytest.raises(ValueError, match=r"\['repetition_penalty'\] need model.generate, which cannot run"):
                translator(inputs, repetition_penalty=1.2)
    assert opened == [session]


def test_calls_from_two_threads_each_translate_in_their_own_session(translator, tiny_pairs):
    import threading

    texts = [en for en, _ in tiny_pairs[:6]]
    expected = translator(texts, batch_size=2)
    results, errors = {}, []

    def call(name):
        try:
            results[name] = [translator(texts[::-1], batch_size=2), translator(texts, batch_size=3)]
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=call, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and all(result == [expected[::-1], expected] for result in results.values())


def test_a_list_is_batched_longest_first_and_returned_in_input_order(translator, generate_calls, tiny_pairs,
                                                                      monkeypatch):  # fmt: skip
    monkeypatch.setattr(pipeline_zhen, "decoding_streams", lambda device: 1)  # batches in turn
    texts = sorted((en for en, _ in tiny_pairs[:7]), key=lambda text: (len(text) % 3, text))  # lengths mixed
    one_by_one = [translator(text)[0] for text in texts]
    generate_calls.clear()
    assert translator(texts, batch_size=3) == one_by_one
    pad = translator.tokenizer.pad_token_id
    batched = [[token for token in row if token != pad] for batch in generate_calls for row in batch]
    sources = [translator.preprocess(text, tgt_lang="zh")["input_ids"][0].tolist() for text in texts]
    assert sorted(batched) == sorted(sources)
    assert [len(row) for row in batched] == sorted(map(len, sources), reverse=True)  # in tokens, as zhen.translate
    assert [len(batch) for batch in generate_calls] == [3, 3, 1]


def test_a_list_without_a_batch_size_is_batched_as_zhen_translate_batches(translator, generate_calls, tiny_pairs,
                                                                          tiny_tokenizer):  # fmt: skip
    """Transformers' pipelines translate a list one text at a time unless told a batch size; zhen's fast decoder
    sorts by length and drops finished sentences, so the pipeline batches as `zhen.translate` does by default. Options
    only `generate` implements, or a batch size given (per call or to the pipeline), keep theirs."""
    texts = [en for en, _ in tiny_pairs[:7]]
    one_by_one = [translator(text)[0] for text in texts]
    generate_calls.clear()
    assert translator(texts) == one_by_one and len(generate_calls) == 1  # all in one batch of up to 64
    assert list(translator(text for text in texts)) == [[record] for record in one_by_one] and len(generate_calls) == 2
    generate_calls.clear()
    translator(texts, batch_size=1)
    translator(texts, repetition_penalty=1.2)  # `generate`: Transformers' default, one text a batch
    assert len(generate_calls) == 2 * len(texts)
    pairs = ZhenTranslationPipeline(model=translator.model, tokenizer=tiny_tokenizer, device=-1, tgt_lang="zh",
                                    batch_size=2)  # fmt: skip
    generate_calls.clear()
    assert pairs(texts) == one_by_one and len(generate_calls) == 4


@pytest.mark.parametrize("num_beams", [1, 2])
def test_a_list_without_a_batch_size_takes_zhen_translates_default_batch_size(translator, generate_calls, tiny_pairs,
                                                                              monkeypatch, num_beams):  # fmt: skip
    """A list (or generator) called without a batch size is batched by `default_batch_size`, as `zhen.translate`:
    greedy search in a float32 or bf16 session in larger batches (here forced to a bf16 one)."""
    from zhen import hardware

    monkeypatch.setattr(hardware, "DEFAULT_BATCH_SIZE", 2)
    monkeypatch.setattr(hardware, "GREEDY_BATCH_SIZE", 4)
    monkeypatch.setattr(hardware, "STREAM_BATCHES", 1)
    texts = [en for en, _ in tiny_pairs[:7]]
    with hardware.forced(cpu_bf16="native"):
        expected = translator(texts, batch_size=7, num_beams=num_beams)
        generate_calls.clear()
        assert translator(texts, num_beams=num_beams) == expected
        assert sorted(map(len, generate_calls), reverse=True) == ([4, 3] if num_beams == 1 else [2, 2, 2, 1])


@pytest.mark.parametrize("num_beams", [1, 2])
def test_a_list_is_translated_in_streams_within_the_call_session(translator, tiny_pairs, monkeypatch, num_beams):
    """List calls on a CPU decode `decoding_streams` batches at once, in the call's one session: the results are
    those of one stream with the same threads each; options only `generate` implements decode in the caller."""
    import threading

    from zhen.fast_generation import FastDecoder

    texts = [en for en, _ in tiny_pairs[:7]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        monkeypatch.setattr(pipeline_zhen, "decoding_streams", lambda device: 1)
        one_stream = translator(texts, batch_size=2, num_beams=num_beams)
    finally:
        torch.set_num_threads(threads)
    monkeypatch.setattr(pipeline_zhen, "decoding_streams", lambda device: 2)
    opened, decoding_threads = [], set()
    enter, generate = FastDecoder.__enter__, FastDecoder.generate
    monkeypatch.setattr(FastDecoder, "__enter__", lambda self: opened.append(self) or enter(self))

    def spy(self, *args, **kwargs):
        decoding_threads.add(threading.get_ident())
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(FastDecoder, "generate", spy)
    assert translator(["", *texts], batch_size=2, num_beams=num_beams) == [{"translation_text": ""}, *one_stream]
    assert len(opened) == 1  # the call's session, shared by its streams
    assert threading.get_ident() not in decoding_threads and len(decoding_threads) == 2
    assert type(translator.model.lm_head) is torch.nn.Linear
    generating_threads, model_generate = set(), translator.model.generate

    def generate_spy(*args, **kwargs):
        generating_threads.add(threading.get_ident())
        return model_generate(*args, **kwargs)

    monkeypatch.setattr(translator.model, "generate", generate_spy)
    translator(texts, batch_size=2, num_beams=num_beams, repetition_penalty=1.2)  # only `generate` implements it
    assert generating_threads == {threading.get_ident()}


@pytest.mark.parametrize("streams", [1, 2])
def test_generators_and_datasets_are_read_ahead_and_translated_in_streams(translator, tiny_pairs, monkeypatch,
                                                                           streams):  # fmt: skip
    """Lazy inputs are translated `read_ahead_batches(streams)` batches at a time, each list read ahead in its
    own session (in streams, longest first), results in input order, and no session open while the caller holds a
    result: the loop may translate other texts."""
    from zhen.fast_generation import FastDecoder, _lock_of

    texts = [en for en, _ in tiny_pairs[:7]] + ["", tiny_pairs[0][0]]
    expected = [[record] for record in translator(texts, batch_size=2)]
    monkeypatch.setattr(pipeline_zhen, "decoding_streams", lambda device: streams)
    monkeypatch.setattr(pipeline_zhen, "read_ahead_batches", lambda streams: streams)  # a batch per stream
    window = 2 * streams
    opened, enter = [], FastDecoder.__enter__
    monkeypatch.setattr(FastDecoder, "__enter__", lambda self: opened.append(self) or enter(self))
    read = []

    def generator():
        for text in texts:
            read.append(text)
            yield text

    results = []
    for result in translator(generator(), batch_size=2):
        if not results:
            assert len(read) == window  # one list read ahead, not the whole generator
        lock = _lock_of(translator.model)
        assert lock.acquire(blocking=False), "a session is open while the caller holds a result"
        lock.release()
        assert translator(texts[0]) == expected[0]  # the caller may translate while iterating
        results.append(result)
    assert results == expected
    assert len(opened) == -(-len(texts) // window) + len(texts)  # one per list, and the caller's own calls
    assert list(translator(KeyDataset(Dataset.from_dict({"en": texts}), "en"), batch_size=2)) == expected
    assert list(translator((text for text in []), batch_size=2)) == []


def test_a_generator_with_options_only_generate_implements_is_translated_by_generate(translator, tiny_pairs):
    texts = [en for en, _ in tiny_pairs[:3]]
    expected = translator(texts, batch_size=2, repetition_penalty=1.2)
    lazy = translator((text for text in texts), batch_size=2, repetition_penalty=1.2)
    assert type(lazy).__name__ == "PipelineIterator" and [r[0] for r in lazy] == expected


def test_blank_inputs_from_a_generator_are_batched_with_the_others(translator, tiny_pairs):
    (en, zh), (en2, zh2) = tiny_pairs[:2]
    results = list(translator((text for text in [en, "", en2]), batch_size=2))
    assert results == [[{"translation_text": zh}], [{"translation_text": ""}], [{"translation_text": zh2}]]


def test_the_users_length_settings_win(translator, tiny_model, tiny_tokenizer, tiny_pairs):
    en, zh = tiny_pairs[3]
    full = translator(en, return_tensors=True)[0]["translation_token_ids"]
    assert len(full) > 4 and tiny_tokenizer.decode(full, skip_special_tokens=True) == zh
    with CaptureLogger(generation_logger) as captured:
        for kwargs in ({"max_length": 3}, {"max_new_tokens": 2}):
            ids = translator(en, return_tensors=True, **kwargs)[0]["translation_token_ids"]
            assert ids.tolist() == full[:3].tolist(), kwargs  # <s>, the forced __zh__ and one token
        at_init = ZhenTranslationPipeline(
            model=translator.model, tokenizer=tiny_tokenizer, device=-1, tgt_lang="zh", max_length=4
        )
        assert at_init(en, return_tensors=True)[0]["translation_token_ids"].tolist() == full[:4].tolist()
        longer = translator(en, return_tensors=True, min_length=len(full) + 3)[0]["translation_token_ids"]
        assert len(longer) >= len(full) + 3
    assert "max_new_tokens" not in captured.out


def test_lengths_beyond_the_position_table_are_capped(translator, tiny_pairs):
    with CaptureLogger(pipeline_logger) as captured:
        ids = translator(tiny_pairs[0][0], max_new_tokens=10_000, return_tensors=True)[0]["translation_token_ids"]
    assert "capped at 255 new tokens" in captured.out and len(ids) <= 256


def test_truncation_like_v4(translator):
    long_text = "Hello. " * 200  # about 1,000 tokens; the model reads 256
    with CaptureLogger(pipeline_logger) as captured:
        translator(long_text, max_new_tokens=3)
    assert "reached the 256 tokens" in captured.out
    for truncation in (True, "longest_first", TruncationStrategy.LONGEST_FIRST):
        with CaptureLogger(pipeline_logger) as captured:
            assert len(translator(long_text, truncation=truncation, max_new_tokens=3)) == 1
        assert captured.out == ""
    for truncation in (False, "do_not_truncate", TruncationStrategy.DO_NOT_TRUNCATE):
        with pytest.raises(ValueError, match="more than the 256 this model reads. Pass truncation=True"):
            translator(long_text, truncation=truncation)
    assert translator("Hello.", truncation=False)[0]["translation_text"]


def test_return_arguments_like_v4(translator, tiny_tokenizer, tiny_pairs):
    (en, zh), (en2, zh2) = tiny_pairs[4:6]
    (ids_only,) = translator(en, return_tensors=True)
    ids = ids_only["translation_token_ids"].tolist()
    assert set(ids_only) == {"translation_token_ids"} and ids[1] == 5
    for kwargs in ({"return_text": False}, {"return_type": ReturnType.TENSORS}):
        (result,) = translator(en, **kwargs)
        assert set(result) == {"translation_token_ids"} and result["translation_token_ids"].tolist() == ids
    assert translator(en, return_tensors=False) == [{"translation_text": zh}]
    both = translator([en, en2], return_text=True, return_tensors=True, batch_size=2)
    assert [item["translation_text"] for item in both] == [zh, zh2]
    for item in both:
        assert (
            tiny_tokenizer.decode(item["translation_token_ids"], skip_special_tokens=True) == item["translation_text"]
        )
    zh_ids = tiny_tokenizer.encode(zh, add_special_tokens=False)
    ids = translator(zh, src_lang="zh", tgt_lang="en", return_tensors=True)[0]["translation_token_ids"]
    cleaned = translator(zh, src_lang="zh", tgt_lang="en", clean_up_tokenization_spaces=True)[0]["translation_text"]
    assert cleaned == tiny_tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=True)
    stop = tiny_tokenizer.decode(zh_ids[1:2])
    assert translator(en, stop_sequence=stop) == [{"translation_text": tiny_tokenizer.decode(zh_ids[:2])}]


def test_pipeline_translation_task_from_a_folder(hub_folder, tiny_pairs):
    en, zh = tiny_pairs[4]
    translator = pipeline("translation", model=str(hub_folder), trust_remote_code=True, src_lang="en", tgt_lang="zh")
    assert type(translator).__name__ == "ZhenTranslationPipeline"
    assert translator(en) == [{"translation_text": zh}]
    # The checkpoint's copy of the decoder compiles the layers' steps with TorchScript, as zhen's own does.
    remote_decoder = get_class_from_dynamic_module("fast_generation.FastDecoder", str(hub_folder))
    assert remote_decoder.__module__.startswith("transformers_modules")
    with remote_decoder(translator.model) as decoder:
        assert isinstance(decoder.layer_steps(script=True), torch.jit.ScriptModule)
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        pipeline("translation", model=str(hub_folder), tgt_lang="zh")
    # With zhen imported, naming the class needs no remote code.
    direct = pipeline("translation", model=str(hub_folder), pipeline_class=ZhenTranslationPipeline, tgt_lang="zh")
    assert direct(en) == [{"translation_text": zh}]


def test_saved_folder_is_a_complete_hub_repository(hub_folder):
    assert hub.missing_hub_files(hub_folder) == []
    config = json.loads((hub_folder / "config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSeq2SeqLM"}
    assert config["custom_pipelines"]["translation"] == {
        "impl": "pipeline_zhen.ZhenTranslationPipeline",
        "pt": ["AutoModelForSeq2SeqLM"],
        "type": "text",
    }
    tokenizer_config = json.loads((hub_folder / "tokenizer_config.json").read_text())
    assert tokenizer_config["auto_map"]["AutoTokenizer"][1] == "tokenization_zhen.ZhenTokenizerFast"
    card = (hub_folder / "README.md").read_text()
    assert "pipeline_tag: translation" in card and "| en-zh |  | 16 | 97.50 | 98.10 |" in card
    assert 'model="your-name/zhen-model"' in card  # a local folder name is no Hub id
    from transformers.dynamic_module_utils import get_imports

    for code in hub_folder.glob("*.py"):  # the custom code needs nothing but itself, torch and transformers
        text = code.read_text()
        assert set(get_imports(code)) - sys.stdlib_module_names <= {"torch", "transformers", "tokenizers"}, code.name
        modules = re.findall(r"^\s*from\s+\.(\S+)\s+import", text, flags=re.MULTILINE)
        for names in re.findall(r"^\s*from\s+\.\s+import\s+([\w ,]+)", text, flags=re.MULTILINE):  # from . import a, b
            modules += [name.split(" as ")[0].strip() for name in names.split(",")]
        for module in modules:
            assert (hub_folder / f"{module}.py").is_file(), f"{code.name} imports .{module}, which is not shipped"
    shipped = {p.name for p in hub_folder.glob("*.py")}
    fast_paths = {
        "fast_generation.py",
        "session_modules.py",
        "decoder_steps.py",
        "decoding_cache.py",
        "search.py",
        "weight_stamps.py",
        "packing.py",
        "screened_argmax.py",
        "draft_decoding.py",
        "quantization.py",
        "pooled_tails.py",
        "text_checks.py",
    }
    assert {"pipeline_zhen.py", "hardware.py", *fast_paths} <= shipped


def test_make_hub_ready_completes_a_save_pretrained_folder(tiny_checkpoint, tmp_path):
    folder = tmp_path / "plain"
    shutil.copytree(tiny_checkpoint, folder)
    for path in [*folder.glob("*.py"), folder / "README.md"]:  # a checkpoint saved before some code files existed
        path.unlink(missing_ok=True)
    config = json.loads((folder / "config.json").read_text())
    del config["custom_pipelines"]
    (folder / "config.json").write_text(json.dumps(config))
    missing = hub.missing_hub_files(folder)
    assert "README.md is missing" in missing
    assert "config.json has no custom_pipelines entry for 'translation'" in missing
    assert {f"{name} is missing" for name in CODE_FILES} <= set(missing)
    hub.make_hub_ready(folder, repo_id="me/zhen-tiny")
    assert hub.missing_hub_files(folder) == []
    assert {path.name for path in folder.glob("*.py")} == set(CODE_FILES)
    assert 'model="me/zhen-tiny"' in (folder / "README.md").read_text()


def test_make_hub_ready_refuses_a_folder_without_a_checkpoint(tmp_path):
    with pytest.raises(ValueError, match="not a saved zhen checkpoint: config.json is missing"):
        hub.make_hub_ready(tmp_path)


REMOTE_SCRIPT = """
import json, sys
sys.modules["zhen"] = None  # zhen is installed in this venv; make sure nothing can import it
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline
folder, texts = sys.argv[1], json.loads(sys.stdin.read())
tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)
tokenizer.src_lang = "en"
inputs = tokenizer(texts, return_tensors="pt", padding=True)
ids = model.generate(**inputs, forced_bos_token_id=tokenizer.get_lang_id("zh"), max_new_tokens=20)
translator = pipeline("translation", model=folder, trust_remote_code=True, src_lang="en", tgt_lang="zh")
print(json.dumps({
    "modules": [type(model).__module__, type(tokenizer).__module__, type(translator).__module__],
    "ids": ids.tolist(),
    "pipeline": translator(texts),
}))
"""


def test_folder_loads_and_translates_without_zhen(hub_folder, tiny_model, tiny_tokenizer, tiny_pairs, run_without_zhen):
    texts = [en for en, _ in tiny_pairs[:3]]
    remote = run_without_zhen(REMOTE_SCRIPT, hub_folder, texts)
    tiny_tokenizer.src_lang = "en"
    inputs = tiny_tokenizer(texts, return_tensors="pt", padding=True)
    expected = tiny_model.generate(**inputs, forced_bos_token_id=5, max_new_tokens=20)
    assert remote["ids"] == expected.tolist()
    local = translate(texts, tiny_model, tiny_tokenizer, tgt_lang="zh")
    assert remote["pipeline"] == [{"translation_text": text} for text in local]


class FakeHfApi:
    calls = []

    def __init__(self, token=None):
        self.calls.append(("init", token))

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs))
        return type("Commit", (), {"commit_url": "https://hub.example/commit/1"})()


def test_push_uploads_a_complete_folder(hub_folder, monkeypatch):
    FakeHfApi.calls = []
    monkeypatch.setattr(hub, "HfApi", FakeHfApi)
    url = hub.push_to_hub(hub_folder, "me/zhen-tiny", private=True, token="hf_x", commit_message="v1")
    assert url == "https://hub.example/commit/1"
    assert FakeHfApi.calls[0] == ("init", "hf_x")
    assert FakeHfApi.calls[1] == (
        "create_repo",
        "me/zhen-tiny",
        {"private": True, "exist_ok": True, "repo_type": "model"},
    )
    upload = FakeHfApi.calls[2][1]
    assert (upload["folder_path"], upload["repo_id"], upload["commit_message"]) == (
        str(hub_folder),
        "me/zhen-tiny",
        "v1",
    )


def test_push_refuses_an_incomplete_folder(tiny_checkpoint, monkeypatch, tmp_path):
    FakeHfApi.calls = []
    monkeypatch.setattr(hub, "HfApi", FakeHfApi)
    folder = tmp_path / "incomplete"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / "pipeline_zhen.py").unlink()
    with pytest.raises(ValueError, match="not a complete zhen Hub repository: .*pipeline_zhen.py is missing"):
        hub.push_to_hub(folder, "me/zhen-tiny")
    assert FakeHfApi.calls == []
