"""Tests of `zhen.tokenizer_training` and the `zhen-train-tokenizer` command."""

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import datasets
import pytest

from zhen.commands.train_tokenizer import main
from zhen.data import load_parallel
from zhen.tokenization_zhen import RESERVED_TOKENS, ZhenTokenizerFast, normalize_text
from zhen.tokenizer_training import (
    balance_weights,
    choose_alphabet,
    compactness,
    format_report,
    is_han,
    split_languages,
    token_script,
    train_tokenizer,
    vocabulary_share,
)


REPO = Path(__file__).resolve().parents[1]
SHARED_TRAIN = Path("/work/shared/data/tatoeba/train.jsonl.gz")

PLACES = [("Beijing", "北京"), ("Shanghai", "上海"), ("the school", "学校"), ("the station", "火车站"), ("home", "家")]
TIMES = [("today", "今天"), ("tomorrow", "明天"), ("yesterday", "昨天"), ("on Sunday", "星期天")]
PEOPLE = [
    ("My father", "我爸爸"),
    ("Our teacher", "我们的老师"),
    ("Tom", "汤姆"),
    ("Mary", "玛丽"),
    ("Everyone", "大家"),
]
PAIRS = [
    {"en": f"{who} went to {where} {when}.", "zh": f"{who_zh}{when_zh}去了{where_zh}。"}
    for who, who_zh in PEOPLE
    for where, where_zh in PLACES
    for when, when_zh in TIMES
]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "train.jsonl"
    path.write_text("".join(json.dumps(pair, ensure_ascii=False) + "\n" for pair in PAIRS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained(corpus_file):
    start = time.perf_counter()
    tokenizer = train_tokenizer(load_parallel(corpus_file), vocab_size=600, show_progress=False)
    return tokenizer, time.perf_counter() - start


def test_training_gives_a_working_tokenizer_in_seconds(trained):
    tokenizer, seconds = trained
    assert seconds < 10
    assert isinstance(tokenizer, ZhenTokenizerFast)
    for pair in PAIRS[:20]:
        encoded = tokenizer(pair["en"], text_target=pair["zh"])
        assert tokenizer.decode(encoded["input_ids"], skip_special_tokens=True) == pair["en"]
        assert tokenizer.decode(encoded["labels"], skip_special_tokens=True) == pair["zh"]


def test_vocabulary_has_both_languages(trained):
    tokenizer, _ = trained
    vocab = tokenizer.get_vocab()
    assert len(tokenizer) <= 600
    assert sorted(vocab.values()) == list(range(len(vocab)))
    assert [vocab[token] for token in RESERVED_TOKENS] == list(range(len(RESERVED_TOKENS)))
    corpus_chars = Counter(char for pair in PAIRS for char in pair["zh"] if is_han(char))
    assert set(corpus_chars) <= set(vocab)  # every Chinese character of the corpus is a token, not bytes
    assert {" went", " tomorrow", "北京", "上海"} <= set(vocab)


def test_vocabulary_share(trained):
    tokenizer, _ = trained
    share = vocabulary_share(tokenizer)
    assert list(share) == ["latin", "han", "other", "byte/special"]
    assert sum(share.values()) == pytest.approx(1)
    assert share["byte/special"] == pytest.approx(len(RESERVED_TOKENS) / len(tokenizer))
    assert share["latin"] > 0.05 and share["han"] > 0.05


def test_token_script():
    assert [token_script(t) for t in [" Hello", "中国", " 15", "，", "<0xE4>", "</s>", "é"]] == [
        "latin",
        "han",
        "other",
        "other",
        "byte/special",
        "byte/special",
        "latin",
    ]


def test_compactness_against_character_baseline(trained):
    tokenizer, _ = trained
    figures = compactness(tokenizer, PAIRS)
    assert figures["unk_tokens"] == 0 and figures["byte_token_share"] == 0
    assert figures["en_tokens_per_word"] < figures["en_chars_per_word"] / 2
    assert figures["zh_tokens_per_char"] < figures["zh_chars_per_char"] == 1
    assert figures["zh_bytes_per_char"] == pytest.approx(3, abs=0.1)
    report = format_report(tokenizer, PAIRS, seconds=1.5)
    assert "han" in report and "tokens per word" in report and "tokens per character" in report


@pytest.mark.skipif(not SHARED_TRAIN.is_file(), reason="shared Tatoeba data not available")
def test_common_chinese_characters_are_single_tokens_on_real_data():
    pairs = load_parallel(SHARED_TRAIN).select(range(5000))
    tokenizer = train_tokenizer(pairs, vocab_size=4000, show_progress=False)
    for char in "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年":
        assert tokenizer.tokenize(char) == [char]
    figures = compactness(tokenizer, pairs)
    assert figures["zh_tokens_per_char"] < 0.9 and figures["en_tokens_per_word"] < 2
    share = vocabulary_share(tokenizer)
    assert 0.25 < share["han"] < 0.75 and 0.2 < share["latin"] < 0.7


def test_tiny_vocab_and_plain_texts():
    texts = ["Hello there, general Kenobi!", "你好，将军。", "Hello again.", "又见面了，你好。"] * 5
    tokenizer = train_tokenizer(texts, vocab_size=300, show_progress=False)
    assert len(tokenizer) <= 300
    for text in texts[:4] + ["🤖 Unseen 字符 ∰"]:
        assert tokenizer.decode(tokenizer.encode(text), skip_special_tokens=True) == normalize_text(text)


def test_split_languages_accepts_corpus_forms():
    expected = (["Hi.", "Bye."], ["你好。", "再见。"])
    records = [{"en": "Hi.", "zh": "你好。"}, {"en": "Bye.", "zh": "再见。"}]
    assert split_languages(records) == expected
    assert split_languages([("Hi.", "你好。"), ["Bye.", "再见。"]]) == expected
    assert split_languages(datasets.Dataset.from_list(records)) == expected
    assert split_languages({"en": ["Hi.", "Bye."], "zh": ["你好。", "再见。"]}) == expected
    assert split_languages(["Hi.", "你好。", "Bye.", "再见。"]) == expected
    with pytest.raises(ValueError, match=r"no \['zh'\] column"):
        split_languages(datasets.Dataset.from_list([{"en": "Hi.", "chinese": "你好。"}]))
    with pytest.raises(TypeError, match="not a single string"):
        split_languages("Hi.")
    with pytest.raises(TypeError, match="Cannot read 42"):
        split_languages([42])


def test_balance_weights():
    en, zh = ["a" * 90], ["中" * 10]  # 90 bytes and characters against 30 bytes and 10 characters
    assert balance_weights(en, zh, "bytes") == (1.0, 3.0)
    assert balance_weights(en, zh, "chars") == (1.0, 9.0)
    assert balance_weights(zh, en, "chars") == (9.0, 1.0)
    assert balance_weights(en, zh, None) == (1.0, 1.0)
    assert balance_weights(en, [], "bytes") == (1.0, 1.0)
    with pytest.raises(ValueError, match="balance must be"):
        balance_weights(en, zh, "words")


def test_choose_alphabet():
    counts = Counter({"a": 90, "b": 9, "c": 1})
    assert choose_alphabet(counts, 0.9, max_size=10) == ["a"]
    assert choose_alphabet(counts, 0.99, max_size=10) == ["a", "b"]
    assert choose_alphabet(counts, 1.0, max_size=10) == ["a", "b", "c"]
    assert choose_alphabet(counts, 1.0, max_size=1) == ["a"]


@pytest.mark.parametrize(
    "kwargs, message",
    [({"vocab_size": 262}, "leaves no room"), ({"character_coverage": 0}, "character_coverage"), ({}, "no text")],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_tokenizer([] if message == "no text" else PAIRS, show_progress=False, **kwargs)


def test_cli_needs_data(capsys):
    with pytest.raises(SystemExit):
        main(["--output-dir", "out"])
    assert "give training files" in capsys.readouterr().err


def test_cli_subprocess(corpus_file, tmp_path):
    output_dir = tmp_path / "tokenizer"
    command = [
        sys.executable,
        str(REPO / "scripts" / "train_tokenizer.py"),
        str(corpus_file),
        "--files",
        str(corpus_file),
        "--vocab-size",
        "500",
        "--output-dir",
        str(output_dir),
        "--no-progress",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "Loaded 200 pairs" in result.stdout
    for expected in ("latin", "han", "byte/special", "tokens per word", "tokens per character", "Saved to"):
        assert expected in result.stdout
    tokenizer = ZhenTokenizerFast.from_pretrained(output_dir)
    assert len(tokenizer) <= 500
    assert tokenizer.decode(tokenizer.encode("Tom went home."), skip_special_tokens=True) == "Tom went home."
