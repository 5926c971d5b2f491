"""Tests for zhen.data: reading parallel corpora, cleaning, script conversion, directions and the sample corpus."""

import gzip
import json
import logging
import re

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zhen.data import (
    CorpusError,
    LoadReport,
    _simplify_texts,
    _t2s_converter,
    clean_pairs,
    length_units,
    load_parallel,
    load_sample,
    make_directions,
    sample_corpus_path,
    simplify_chinese,
    to_simplified,
)


PAIRS = [("Hello.", "你好。"), ("Where is the bank?", "银行在哪里？"), ("I like tea.", "我喜欢喝茶。")]


def write_jsonl(path, records, *, compress=False):
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def as_pairs(ds):
    return list(zip(ds["en"], ds["zh"]))


def pairs_dataset(pairs, **extra_columns):
    return datasets.Dataset.from_dict({"en": [e for e, _ in pairs], "zh": [z for _, z in pairs], **extra_columns})


# ---------------------------------------------------------------------------------------------------------------------
# Formats


@pytest.mark.parametrize("name,compress", [("c.jsonl", False), ("c.jsonl.gz", True), ("c.json", False)])
def test_jsonl(tmp_path, name, compress):
    path = write_jsonl(tmp_path / name, [{"en": e, "zh": z} for e, z in PAIRS], compress=compress)
    ds = load_parallel(path)
    assert ds.column_names == ["en", "zh"]
    assert as_pairs(ds) == PAIRS


def test_jsonl_ignores_blank_lines_bom_and_extra_keys(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"en": "a", "zh": "\xe4\xb8\x80", "id": 1}\n\n   \n{"en": "b", "zh": "\xe4\xba\x8c"}\n'
    )
    assert as_pairs(load_parallel(path)) == [("a", "一"), ("b", "二")]


def test_tsv_without_header(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("".join(f"{e}\t{z}\r\n" for e, z in PAIRS) + "\n", encoding="utf-8")
    assert as_pairs(load_parallel(path)) == PAIRS


def test_txt_gz_is_tab_separated(tmp_path):
    path = tmp_path / "c.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(f"{e}\t{z}\n" for e, z in PAIRS))
    assert as_pairs(load_parallel(path)) == PAIRS


def test_tsv_header_selects_columns_by_name(tmp_path):
    path = tmp_path / "c.tsv"
    lines = ["id\tchinese\tsource\tenglish"] + [f"{i}\t{z}\tweb\t{e}" for i, (e, z) in enumerate(PAIRS)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert as_pairs(load_parallel(path, en_column="english", zh_column="chinese")) == PAIRS


def test_tsv_default_header_is_skipped_even_after_a_bom(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("\ufeffzh\ten\n" + "".join(f"{z}\t{e}\n" for e, z in PAIRS), encoding="utf-8")
    assert as_pairs(load_parallel(path)) == PAIRS


def test_tsv_custom_columns_need_a_header(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("Hello.\t你好。\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"'english'.*found.*'Hello\.'.*--en-column"):
        load_parallel(path, en_column="english", zh_column="chinese")


@pytest.mark.parametrize("compress", [False, True])
def test_parquet(tmp_path, compress):
    table = pa.table({"id": [1, 2, 3], "en": [e for e, _ in PAIRS], "zh": [z for _, z in PAIRS]})
    path = tmp_path / "c.parquet"
    pq.write_table(table, path)
    if compress:
        gz_path = tmp_path / "c.parquet.gz"
        gz_path.write_bytes(gzip.compress(path.read_bytes()))
        path = gz_path
    assert as_pairs(load_parallel(path)) == PAIRS


def test_nested_translation_column_jsonl(tmp_path):
    path = write_jsonl(tmp_path / "wmt.jsonl", [{"translation": {"en": e, "zh": z}} for e, z in PAIRS])
    assert as_pairs(load_parallel(path)) == PAIRS


def test_nested_translation_column_parquet(tmp_path):
    path = tmp_path / "wmt.parquet"
    pq.write_table(pa.table({"translation": [{"zh": z, "en": e} for e, z in PAIRS]}), path)
    assert as_pairs(load_parallel(path)) == PAIRS


def test_custom_column_names(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"source": e, "target": z} for e, z in PAIRS])
    ds = load_parallel(path, en_column="source", zh_column="target")
    assert ds.column_names == ["en", "zh"]
    assert as_pairs(ds) == PAIRS


def test_several_files_are_concatenated_in_order(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [{"en": "a", "zh": "一"}])
    second = tmp_path / "b.tsv"
    second.write_text("b\t二\nc\t三\n", encoding="utf-8")
    assert as_pairs(load_parallel([str(first), second])) == [("a", "一"), ("b", "二"), ("c", "三")]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pairs=st.lists(
        st.tuples(
            *[st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\t\r\n"), min_size=1)] * 2
        ).filter(lambda pair: "".join(pair).strip()),
        min_size=1,  # a file without pairs is an error (tests/test_safety.py)
        max_size=8,
    )
)
def test_jsonl_and_tsv_round_trip(tmp_path, pairs):
    jsonl = write_jsonl(tmp_path / "p.jsonl", [{"en": e, "zh": z} for e, z in pairs])
    tsv = tmp_path / "p.tsv"
    tsv.write_text("en\tzh\n" + "".join(f"{e}\t{z}\n" for e, z in pairs), encoding="utf-8")
    assert as_pairs(load_parallel(jsonl, check_languages=False)) == pairs  # random text has no language
    assert as_pairs(load_parallel(tsv, check_languages=False)) == pairs


# ---------------------------------------------------------------------------------------------------------------------
# Errors


BAD_LINES = [
    ('{"en": "a", "zh": "一"', "invalid JSON"),
    ('["a", "一"]', "expected a JSON object"),
    ('{"en": "a", "zh": null}', "'zh' is null"),
    ('{"en": 3, "zh": "三"}', "'en' is int"),
    ('{"en": "a"}', "'zh' is missing"),
]


@pytest.mark.parametrize("bad_line,problem", BAD_LINES)
def test_malformed_jsonl_line_names_file_and_line(tmp_path, bad_line, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"en": "a", "zh": "一"}\n\n' + bad_line + '\n{"en": "b", "zh": "二"}\n', encoding="utf-8")
    with pytest.raises(CorpusError) as error:
        load_parallel(path)
    message = str(error.value)
    assert f"{path}, line 3: {problem}" in message
    assert "--skip-malformed" in message


def test_invalid_utf8_is_malformed(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_bytes("a\t一\n".encode() + b"b\t\xff\xfe\n")
    with pytest.raises(CorpusError, match=r"bad\.tsv, line 2: invalid UTF-8"):
        load_parallel(path)


def test_wrong_tsv_field_count(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("a\t一\nb\t二\tx\nc\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"bad\.tsv, line 2: expected 2 tab-separated fields, found 3"):
        load_parallel(path)


def test_null_in_parquet_names_row(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"en": ["a", None], "zh": ["一", "二"]}), path)
    with pytest.raises(CorpusError, match=r"bad\.parquet, row 2: 'en' is null"):
        load_parallel(path)


def test_skip_malformed_skips_and_counts(tmp_path, caplog):
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text("\n".join(['{"en": "a", "zh": "一"}'] + [line for line, _ in BAD_LINES]) + "\n", encoding="utf-8")
    tsv = tmp_path / "bad.tsv"
    tsv.write_text("b\t二\nc\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="zhen.data"):
        ds, report = load_parallel([jsonl, tsv], skip_malformed=True, return_report=True)
    assert as_pairs(ds) == [("a", "一"), ("b", "二")]
    assert isinstance(report, LoadReport)
    assert (report.pairs, report.skipped) == (2, 6)
    assert report.skipped_per_file == {str(jsonl): 5, str(tsv): 1}
    assert report.examples[0].startswith(f"{jsonl}, line 2: invalid JSON")
    assert "skipped 6 malformed lines" in caplog.text and "bad.tsv: 1 skipped" in caplog.text


def test_clean_files_report_nothing_skipped(tmp_path, caplog):
    path = write_jsonl(tmp_path / "c.jsonl", [{"en": e, "zh": z} for e, z in PAIRS])
    with caplog.at_level(logging.WARNING, logger="zhen.data"):
        _, report = load_parallel(path, skip_malformed=True, return_report=True)
    assert (report.pairs, report.skipped) == (3, 0)
    assert "skipped" not in caplog.text


def test_missing_column_lists_found_columns(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"english": "a", "chinese": "一"}])
    with pytest.raises(CorpusError) as error:
        load_parallel(path)
    message = str(error.value)
    assert "'english'" in message and "'chinese'" in message
    assert "--en-column" in message and "--zh-column" in message


def test_missing_column_is_an_error_even_when_skipping(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"source": ["a"], "target": ["一"]}), path)
    with pytest.raises(CorpusError, match=r"found: \['source', 'target'\]"):
        load_parallel(path, skip_malformed=True)


def test_missing_file_names_path(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"en": "a", "zh": "一"}])
    with pytest.raises(CorpusError, match="not found: .*nowhere.jsonl"):
        load_parallel([good, tmp_path / "nowhere.jsonl"])


def test_unknown_extension_lists_supported(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("a,一\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"c\.csv.*\.jsonl.*\.tsv.*\.parquet"):
        load_parallel(path)


def test_files_and_dataset_are_exclusive(tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        load_parallel()
    with pytest.raises(ValueError, match="exactly one"):
        load_parallel(tmp_path / "c.jsonl", dataset="wmt/wmt19")


# ---------------------------------------------------------------------------------------------------------------------
# Hub datasets


def fake_load_dataset(monkeypatch, ds):
    calls = []

    def load_dataset(path, name=None, *, split=None):
        calls.append((path, name, split))
        return ds

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_hub_nested_translation(monkeypatch):
    features = datasets.Features({"translation": datasets.Translation(languages=["zh", "en"])})
    hub = datasets.Dataset.from_dict({"translation": [{"en": e, "zh": z} for e, z in PAIRS]}, features=features)
    calls = fake_load_dataset(monkeypatch, hub)
    ds = load_parallel(dataset="wmt/wmt19", dataset_config="zh-en", split="validation")
    assert calls == [("wmt/wmt19", "zh-en", "validation")]
    assert ds.column_names == ["en", "zh"]
    assert as_pairs(ds) == PAIRS


def test_hub_flat_custom_columns(monkeypatch):
    hub = datasets.Dataset.from_dict(
        {"id": [0, 1, 2], "source": [e for e, _ in PAIRS], "target": [z for _, z in PAIRS]}
    )
    fake_load_dataset(monkeypatch, hub)
    ds = load_parallel(dataset="someone/corpus", en_column="source", zh_column="target")
    assert ds.column_names == ["en", "zh"]
    assert as_pairs(ds) == PAIRS


def test_hub_missing_columns(monkeypatch):
    hub = datasets.Dataset.from_dict({"translation": [{"de": "Hallo.", "en": "Hello."}]})
    fake_load_dataset(monkeypatch, hub)
    with pytest.raises(CorpusError, match=r"'someone/corpus'.*translation\.de.*--en-column"):
        load_parallel(dataset="someone/corpus")


def test_hub_dataset_dict_asks_for_a_split(monkeypatch):
    fake_load_dataset(monkeypatch, datasets.DatasetDict({"train": pairs_dataset(PAIRS)}))
    with pytest.raises(CorpusError, match="split"):
        load_parallel(dataset="someone/corpus", split=None)


def test_real_load_dataset_on_a_local_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "corpus").mkdir()
    write_jsonl(tmp_path / "corpus" / "train.jsonl", [{"translation": {"en": e, "zh": z}} for e, z in PAIRS])
    assert as_pairs(load_parallel(dataset=str(tmp_path / "corpus"))) == PAIRS


# ---------------------------------------------------------------------------------------------------------------------
# Cleaning


def test_clean_pairs_each_rule_drops_what_it_should():
    long_en = "word " * 15
    pairs = [
        ("  Hello.  ", "\t你好。 "),  # kept, stripped
        ("", "空的。"),  # empty
        ("   ", "空白。"),  # empty after strip
        ("x" * 101, "太长了。"),  # too long (en)
        ("Too long.", "长" * 101),  # too long (zh)
        (long_en, "短句。"),  # ratio: 15 English words vs 2 Han characters
        ("Hi.", "你好你好你好你好你好你好你好你好你好你好"),  # ratio: 1 word vs 20 characters
        ("Hello.", "你好。"),  # duplicate of the first after stripping
        ("Thanks.", "谢谢。"),  # kept
    ]
    cleaned, report = clean_pairs(pairs_dataset(pairs), max_chars=100, max_ratio=3.0)
    assert as_pairs(cleaned) == [("Hello.", "你好。"), ("Thanks.", "谢谢。")]
    assert (report.total, report.empty, report.too_long, report.bad_ratio, report.duplicate) == (9, 2, 2, 2, 1)
    assert (report.dropped, report.kept) == (7, 2)
    text = str(report)
    assert re.search(r"length ratio\s+2\s+22\.2%", text)
    assert re.search(r"kept\s+2\s+22\.2%", text)


def test_clean_pairs_options_can_be_switched_off():
    pairs = [("Hello.", "你好。"), ("Hello.", "你好。"), ("word " * 30, "短句。"), (None, "没有英文。")]
    cleaned, report = clean_pairs(pairs_dataset(pairs), max_ratio=None, drop_duplicates=False)
    assert len(cleaned) == 3
    assert (report.empty, report.bad_ratio, report.duplicate) == (1, 0, 0)


def test_ratio_rule_exempts_short_pairs():
    pairs = [("Run.", "你用跑的。"), ("It is a privilege to meet you.", "幸会。")]
    cleaned, report = clean_pairs(pairs_dataset(pairs), max_ratio=2.0)
    assert report.bad_ratio == 0 and len(cleaned) == 2


def test_length_units():
    assert length_units("I have 2 cats, Tom's!") == 6  # I, have, 2, cats, Tom, s
    assert length_units("我有2只猫（Tom）。") == 6
    assert length_units("🙌 …") == 0


def test_clean_pairs_length_fn_and_extra_columns():
    pairs = [("one two three", "一二三"), ("one two three four five", "一二三四五"), ("one", "一二三四五六")]

    def count_words_or_characters(texts):
        return [len(t.split()) if " " in t else len(t) for t in texts]

    ds = pairs_dataset(pairs, source=["a", "b", "c"])
    cleaned, report = clean_pairs(ds, max_length=4, length_fn=count_words_or_characters, max_ratio=None)
    assert as_pairs(cleaned) == [("one two three", "一二三")]
    assert cleaned["source"] == ["a"]
    assert report.too_long == 2
    with pytest.raises(ValueError, match="together"):
        clean_pairs(ds, max_length=4)


def test_clean_pairs_keeps_order_and_first_duplicate():
    pairs = [(f"s{i % 5}", f"句{i % 5}") for i in range(20)]
    cleaned, report = clean_pairs(pairs_dataset(pairs))
    assert as_pairs(cleaned) == pairs[:5]
    assert report.duplicate == 15


# ---------------------------------------------------------------------------------------------------------------------
# Simplified Chinese


def test_simplify_chinese():
    assert simplify_chinese("這隻狐狸") == "这只狐狸"
    assert simplify_chinese("这只狐狸") == "这只狐狸"


def test_to_simplified_converts_only_the_chinese_column():
    ds = pairs_dataset([("The fox.", "這隻狐狸。"), ("Books.", "書"), ("Tea.", "茶")])
    assert as_pairs(to_simplified(ds)) == [("The fox.", "这只狐狸。"), ("Books.", "书"), ("Tea.", "茶")]


def test_fast_path_matches_the_converter():
    texts = [
        "這隻狐狸和這隻熊一起生活了。",
        "他学了两个小时。",
        "著名的乾隆皇帝",
        "頭髮",
        "後面有人",
        "乾淨",
        "我們在這裡",
        "",
        "Hello 世界 123",
        "一干二净",
        "皇后",
        "湯姆希望瑪麗別死。",
    ]
    converter, _ = _t2s_converter()
    assert _simplify_texts(texts) == [converter.convert(text) for text in texts]


def test_clean_pairs_simplify_merges_script_duplicates():
    ds = pairs_dataset([("The fox.", "這隻狐狸。"), ("The fox.", "这只狐狸。"), ("Tea.", "茶。")])
    cleaned, report = clean_pairs(ds, simplify=True)
    assert as_pairs(cleaned) == [("The fox.", "这只狐狸。"), ("Tea.", "茶。")]
    assert (report.simplified, report.duplicate) == (1, 1)
    assert "Simplified in 1 pairs" in str(report)


# ---------------------------------------------------------------------------------------------------------------------
# Directions


def test_make_directions_both_ways():
    ds = make_directions(pairs_dataset(PAIRS[:2]))
    assert ds.column_names == ["src_text", "tgt_text", "src_lang", "tgt_lang"]
    assert ds.to_list() == [
        {"src_text": "Hello.", "tgt_text": "你好。", "src_lang": "en", "tgt_lang": "zh"},
        {"src_text": "Where is the bank?", "tgt_text": "银行在哪里？", "src_lang": "en", "tgt_lang": "zh"},
        {"src_text": "你好。", "tgt_text": "Hello.", "src_lang": "zh", "tgt_lang": "en"},
        {"src_text": "银行在哪里？", "tgt_text": "Where is the bank?", "src_lang": "zh", "tgt_lang": "en"},
    ]
    assert make_directions(pairs_dataset(PAIRS), "both").to_list() == make_directions(pairs_dataset(PAIRS)).to_list()


def test_make_directions_one_way():
    ds = make_directions(pairs_dataset(PAIRS), "zh-en")
    assert ds["src_text"] == [z for _, z in PAIRS]
    assert set(ds["src_lang"]) == {"zh"} and set(ds["tgt_lang"]) == {"en"}


@pytest.mark.parametrize("directions", ["en2zh", ["en-zh", "fr-en"], []])
def test_make_directions_rejects_unknown(directions):
    with pytest.raises(ValueError, match=r"valid directions are \['en-zh', 'zh-en', 'both'\]"):
        make_directions(pairs_dataset(PAIRS), directions)


# ---------------------------------------------------------------------------------------------------------------------
# Sample corpus


@pytest.fixture(scope="module")
def sample():
    return load_sample()


def test_sample_corpus_loads(sample):
    assert set(sample) == {"train", "validation"}
    assert 550 <= len(sample["train"]) <= 700 and 40 <= len(sample["validation"]) <= 80
    assert sample_corpus_path("validation").name == "valid.jsonl"
    assert as_pairs(load_sample("train")) == as_pairs(sample["train"])
    with pytest.raises(ValueError, match="validation"):
        sample_corpus_path("test")


def test_sample_corpus_is_clean_and_simplified(sample):
    for split in sample.values():
        _, report = clean_pairs(split, simplify=True)
        assert report.dropped == 0 and report.simplified == 0


def test_sample_corpus_punctuation_and_uniqueness(sample):
    everything = as_pairs(sample["train"]) + as_pairs(sample["validation"])
    for en, zh in everything:
        assert en == en.strip() and zh == zh.strip()
        assert en[-1] in ".?!" and zh[-1] in "。？！", (en, zh)
        assert not re.search(r"[,.?!;:]", zh), zh
        assert not re.search(r"[，。？！；：]", en), en
    assert len({en for en, _ in everything}) == len(everything)
    assert len({zh for _, zh in everything}) == len(everything)


def test_sample_validation_uses_training_vocabulary(sample):
    def words(text):
        return set(re.findall(r"[a-z']+", text.lower()))

    en_vocab = set().union(*map(words, sample["train"]["en"]))
    zh_vocab = set("".join(sample["train"]["zh"]))
    for en, zh in as_pairs(sample["validation"]):
        assert words(en) <= en_vocab, en
        assert set(zh) <= zh_vocab, zh
