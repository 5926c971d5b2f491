"""Issue 16, silent wrong results from text: special-token strings in user text stay text in every path that encodes
it (tokenizer, reloaded tokenizer, training, fine-tuning, translation), and parallel files whose columns are swapped,
whose header looks like a sentence pair, which hold no pairs or broken Unicode are reported."""

import json
import logging

import datasets
import pytest
from transformers import AutoTokenizer

from zhen.commands import train as train_command
from zhen.data import CorpusError, check_language_columns, han_share, load_parallel, tokenize_batch
from zhen.finetuning import tokenize_direction
from zhen.tokenization_zhen import SPECIAL_TOKENS, normalize_text
from zhen.translation import _encode_sources


USER_TEXTS = [
    "Type <unk> here",
    "a<s>b",
    "use __zh__ please",
    "<s>deleted</s> in HTML, <pad> and __en__ too",
    "__zh__",
    "</s>",
    "中文里的<s>标签</s>和__en__",
]
SPECIAL_IDS = set(range(len(SPECIAL_TOKENS)))  # <pad> <s> </s> <unk> __en__ __zh__


def assert_text_only(ids: list[int]) -> None:
    assert not SPECIAL_IDS & set(ids), ids


# --- tokenizer --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", USER_TEXTS)
def test_special_token_strings_in_text_are_text(tiny_tokenizer, text):
    ids = tiny_tokenizer(text)["input_ids"]
    assert ids[0] == tiny_tokenizer.get_lang_id("en") and ids[-1] == tiny_tokenizer.eos_token_id  # the template's
    assert_text_only(ids[1:-1])
    assert tiny_tokenizer.decode(ids, skip_special_tokens=True) == normalize_text(text)
    labels = tiny_tokenizer("x", text_target=text)["labels"]
    assert labels[0] == tiny_tokenizer.get_lang_id("zh") and labels[-1] == tiny_tokenizer.eos_token_id
    assert_text_only(labels[1:-1])
    assert_text_only(tiny_tokenizer.encode(text, add_special_tokens=False))
    assert "<s>" not in tiny_tokenizer.tokenize("a<s>b")


def test_the_behaviour_survives_save_and_reload(tiny_tokenizer, tmp_path):
    tiny_tokenizer.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["split_special_tokens"] is True
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    for text in USER_TEXTS:
        assert reloaded(text)["input_ids"] == tiny_tokenizer(text)["input_ids"]


def test_real_special_tokens_are_still_dropped_when_decoding(tiny_tokenizer):
    text_ids = tiny_tokenizer.encode("a<s>b", add_special_tokens=False)
    generated = [tiny_tokenizer.bos_token_id, tiny_tokenizer.get_lang_id("zh"), *text_ids, 2, 0, 0]
    assert tiny_tokenizer.decode(generated, skip_special_tokens=True) == "a<s>b"
    assert tiny_tokenizer.decode(generated).startswith("<s>__zh__")


def test_special_tokens_can_still_be_parsed_on_request(tiny_tokenizer):
    ids = tiny_tokenizer("a<s>b", split_special_tokens=False)["input_ids"]
    assert tiny_tokenizer.bos_token_id in ids[1:-1]


# --- the paths that encode training and translation text ------------------------------------------------------------


def test_training_tokenization_keeps_special_strings_as_text(tiny_tokenizer):
    tiny_tokenizer.split_special_tokens = False  # even a tokenizer set to parse them, as an older one was
    try:
        batch = {"src_text": USER_TEXTS, "tgt_text": USER_TEXTS[::-1], "src_lang": ["en"] * 7, "tgt_lang": ["zh"] * 7}
        lang_ids = {lang: tiny_tokenizer.get_lang_id(lang) for lang in ("en", "zh")}
        tokenized = tokenize_batch(batch, tiny_tokenizer, lang_ids, tiny_tokenizer.eos_token_id)
    finally:
        tiny_tokenizer.split_special_tokens = True
    for ids in tokenized["input_ids"] + tokenized["labels"]:
        assert_text_only(ids[1:-1])
    assert tiny_tokenizer.decode(tokenized["input_ids"][1], skip_special_tokens=True) == "a<s>b"


def test_finetuning_tokenization_keeps_special_strings_as_text(tiny_tokenizer):
    pairs = datasets.Dataset.from_dict({"en": USER_TEXTS, "zh": USER_TEXTS[::-1]})
    tiny_tokenizer.split_special_tokens = False
    try:
        tokenized = tokenize_direction(pairs, tiny_tokenizer, "en", "zh")
    finally:
        tiny_tokenizer.split_special_tokens = True
        tiny_tokenizer.src_lang, tiny_tokenizer.tgt_lang = "en", "zh"
    for ids in list(tokenized["input_ids"]) + list(tokenized["labels"]):
        assert_text_only(ids[1:-1])


def test_translation_sources_keep_special_strings_as_text(tiny_tokenizer):
    tiny_tokenizer.split_special_tokens = False
    try:
        ids = _encode_sources(tiny_tokenizer, USER_TEXTS, "en", "zh")
    finally:
        tiny_tokenizer.split_special_tokens = True
    for row in ids:
        assert row[0] == tiny_tokenizer.get_lang_id("en") and row[-1] == tiny_tokenizer.eos_token_id
        assert_text_only(row[1:-1])


# --- columns and headers --------------------------------------------------------------------------------------------

EN = [f"I have {n} red apples and a small dog." for n in range(30)]
ZH = [f"我有{n}个红苹果和一只小狗。" for n in range(30)]


def write_jsonl(path, en, zh):
    path.write_text("".join(json.dumps({"en": e, "zh": z}, ensure_ascii=False) + "\n" for e, z in zip(en, zh)))
    return path


def test_han_share():
    assert han_share(["I like tea."])[0] == 0 and han_share(["我喜欢茶。"])[0] == 1
    assert han_share(["我用 Python 写代码"]) == (5 / 6, 6)  # an English word in Chinese text counts once
    assert han_share(["2024年3月15日"]) == (1.0, 3)  # numbers do not count


def test_swapped_columns_are_an_error_with_the_fix(tmp_path):
    swapped = write_jsonl(tmp_path / "train.jsonl", ZH, EN)
    with pytest.raises(CorpusError) as error:
        load_parallel(swapped)
    message = str(error.value)
    assert message.startswith(f"{swapped}: the English and Chinese columns look swapped (Han characters make up 100%")
    assert "--en-column zh --zh-column en" in message and "--no-language-check" in message
    fixed = load_parallel(swapped, en_column="zh", zh_column="en")
    assert fixed["en"] == EN and fixed["zh"] == ZH
    assert load_parallel(swapped, check_languages=False)["en"] == ZH


def test_swapped_columns_of_a_tsv_without_header_can_be_named(tmp_path):
    swapped = tmp_path / "train.tsv"
    swapped.write_text("".join(f"{z}\t{e}\n" for e, z in zip(EN, ZH)), encoding="utf-8")
    with pytest.raises(CorpusError, match="look swapped"):
        load_parallel(swapped)
    assert load_parallel(swapped, en_column="zh", zh_column="en")["en"] == EN


def test_zhen_train_stops_on_swapped_columns(tmp_path, capsys):
    swapped = write_jsonl(tmp_path / "train.jsonl", ZH, EN)
    with pytest.raises(SystemExit) as exit_info:
        train_command.main(["--train-files", str(swapped), "--output-dir", str(tmp_path / "run"), "--preset", "tiny",
                            "--mixed-precision", "no"])  # fmt: skip
    assert exit_info.value.code == 2
    assert "the English and Chinese columns look swapped" in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_column_without_its_language_is_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="zhen.data"):
        check_language_columns(EN, EN, "both.jsonl")
        check_language_columns(ZH, ZH, "both-zh.jsonl")
    assert "both.jsonl: the Chinese column holds little Chinese" in caplog.text
    assert "both-zh.jsonl: the English column is mostly Chinese" in caplog.text
    caplog.clear()
    check_language_columns(["Hi."], ["嗨"], "tiny.jsonl")  # too little text to tell
    assert caplog.text == ""


@pytest.mark.parametrize("header", ["english\tchinese", "English\tChinese", "EN\tZH", "中文\t英文", "zh_text\ten_text"])
def test_a_header_naming_the_languages_is_a_header(tmp_path, caplog, header):
    chinese_first = header.lower().startswith(("中文", "zh"))
    path = tmp_path / "train.tsv"
    rows = [f"{z}\t{e}" if chinese_first else f"{e}\t{z}" for e, z in zip(EN, ZH)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="zhen.data"):
        pairs = load_parallel(path)
    assert pairs["en"] == EN and pairs["zh"] == ZH  # the header did not become a pair
    assert f"line 1 ({header!r}) is a header" in caplog.text


@pytest.mark.parametrize("header", ["source\ttarget", "src\ttgt", "text\ttranslation"])
def test_a_header_that_does_not_name_the_languages_is_an_error(tmp_path, header):
    path = tmp_path / "train.tsv"
    path.write_text(header + "\n" + "".join(f"{e}\t{z}\n" for e, z in zip(EN, ZH)), encoding="utf-8")
    first, second = header.split("\t")
    with pytest.raises(CorpusError) as error:
        load_parallel(path)
    assert f"line 1 ({header!r}) looks like a header, not a sentence pair" in str(error.value)
    assert f"--en-column {first} --zh-column {second}" in str(error.value)
    pairs = load_parallel(path, en_column=first, zh_column=second)
    assert pairs["en"] == EN and len(pairs) == len(EN)


def test_an_ordinary_first_line_is_not_a_header(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("Source code.\t源代码。\nText\t文本\n" + "".join(f"{e}\t{z}\n" for e, z in zip(EN, ZH)))
    assert load_parallel(path)["en"][:2] == ["Source code.", "Text"]


@pytest.mark.parametrize("content", ["", "\n\n  \n"])
def test_a_file_without_pairs_is_an_error(tmp_path, content):
    path = tmp_path / "empty.tsv"
    path.write_text(content)
    with pytest.raises(CorpusError, match=rf"{path} holds no sentence pairs: it has no lines with text"):
        load_parallel(path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(CorpusError, match=r"bad.jsonl holds no sentence pairs: all 1 lines with text are malformed"):
        load_parallel(bad, skip_malformed=True)


def test_a_lone_surrogate_in_json_is_a_malformed_line(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"en": "Hi.", "zh": "你好。"}\n{"en": "broken \\ud800", "zh": "坏"}\n')
    with pytest.raises(CorpusError, match=r"train\.jsonl, line 2: 'en' holds a lone surrogate"):
        load_parallel(path)
    assert load_parallel(path, skip_malformed=True)["en"] == ["Hi."]
