# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Reading, cleaning and arranging English–Chinese parallel corpora as 🤗 Datasets.

The training pipeline goes through four steps, each a function of this module:

1. [`load_parallel`] reads local files (JSON Lines, TSV, Parquet, optionally gzip'ed) or a Hub dataset into a
   `datasets.Dataset` with exactly two string columns, `"en"` and `"zh"`.
2. [`clean_pairs`] strips whitespace and drops empty, over-long, badly proportioned and duplicate pairs, optionally
   converting the Chinese side to Simplified script first, and returns a [`CleaningReport`].
3. [`make_directions`] turns pairs into translation examples (`src_text`, `tgt_text`, `src_lang`, `tgt_lang`) for one
   or both directions.
4. [`prepare_data`] does all of it for a training run (a `zhen.training_config.TrainingConfig`): it loads the
   training and validation sets, cleans them, trains the tokenizer if none is given, and tokenizes the examples,
   cached on disk under the run's output folder.

[`load_sample`] gives the small corpus shipped with the package, used when the trainer gets no data.
[`check_language_columns`] tells swapped English and Chinese columns apart by script.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import datasets
import numpy as np
from transformers import AutoTokenizer

from .checkpointing import replace_directory, write_json_atomic
from .text_checks import lone_surrogate
from .tokenization_zhen import ZhenTokenizerFast
from .tokenizer_training import train_tokenizer
from .training_config import TrainingConfig, named_files


logger = logging.getLogger(__name__)

SAMPLE_DATA_DIR = Path(__file__).parent / "sample_data"
SAMPLE_SPLITS = {"train": "train.jsonl", "validation": "valid.jsonl"}
FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".tsv": "tsv", ".txt": "tsv", ".parquet": "parquet"}
DIRECTIONS = ("en-zh", "zh-en", "both")
PAIR_FEATURES = datasets.Features({"en": datasets.Value("string"), "zh": datasets.Value("string")})

# Length ratios of very short sentences are noise ("Hi." / "你好！"), so only longer pairs are checked.
RATIO_MIN_UNITS = 10
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_LENGTH_UNIT = re.compile(rf"[{_HAN}]|[^\W_{_HAN}]+")
_WORD_OR_HAN = re.compile(rf"[{_HAN}]|[^\W\d_{_HAN}]+")  # a Han character, or a word of other letters
_HAN_CHARACTER = re.compile(rf"[{_HAN}]")

# Telling the columns' languages apart: the share of Han characters among the words and Han characters of a sample.
LANGUAGE_SAMPLE_SIZE = 500
_MIN_LANGUAGE_UNITS = 50  # below this, too little text to tell
_CHINESE_SHARE, _NOT_CHINESE_SHARE = 0.5, 0.2
# Words a TSV header line is made of ("english<TAB>chinese", "source<TAB>target", "en_text<TAB>zh_text", ...).
_HEADER_WORDS = {
    "en", "zh", "eng", "zho", "chi", "cmn", "english", "chinese", "mandarin", "simplified", "traditional", "source",
    "target", "src", "tgt", "text", "texts", "sentence", "sentences", "translation", "lang", "language", "input",
    "output", "英文", "中文", "英语", "汉语", "原文", "译文",
}  # fmt: skip

_SKIP_HINT = "Fix or remove it, or pass --skip-malformed (skip_malformed=True) to skip malformed lines."
_LANGUAGE_CHECK_HINT = "pass --no-language-check (check_languages=False) if the file is right"
_COLUMN_HINT = "Set --en-column/--zh-column (en_column=/zh_column=) to the names your data uses."
_MAX_EXAMPLES = 5


class CorpusError(ValueError):
    """A parallel corpus that cannot be read: missing file, unsupported format, missing column or malformed line."""


@dataclass
class LoadReport:
    """What [`load_parallel`] read.

    Args:
        pairs (`int`): Pairs in the returned dataset.
        skipped (`int`): Malformed lines skipped (only non-zero with `skip_malformed=True`).
        skipped_per_file (`dict[str, int]`): `skipped`, broken down by file (files with skips only).
        examples (`list[str]`): The first few skipped lines, as `"<file>, line <n>: <problem>"`.
    """

    pairs: int = 0
    skipped: int = 0
    skipped_per_file: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"Loaded {self.pairs:,} pairs, skipped {self.skipped:,} malformed lines."]
        lines += [f"  {path}: {count:,} skipped" for path, count in self.skipped_per_file.items()]
        lines += [f"  e.g. {example}" for example in self.examples]
        return "\n".join(lines)


@dataclass
class CleaningReport:
    """How many pairs each rule of [`clean_pairs`] dropped. Rules apply in field order; a pair counts once.

    Args:
        total (`int`): Pairs before cleaning.
        empty (`int`): Pairs with a side that is empty (or missing) after stripping whitespace.
        too_long (`int`): Pairs with a side over `max_chars` characters or over `max_length` units of `length_fn`.
        bad_ratio (`int`): Pairs whose sides' lengths differ by more than `max_ratio` (see [`length_units`]).
        duplicate (`int`): Repeats of an earlier identical (en, zh) pair.
        simplified (`int`): Pairs whose Chinese side OpenCC changed (`simplify=True`); these are kept, not dropped.
    """

    total: int = 0
    empty: int = 0
    too_long: int = 0
    bad_ratio: int = 0
    duplicate: int = 0
    simplified: int = 0

    @property
    def dropped(self) -> int:
        return self.empty + self.too_long + self.bad_ratio + self.duplicate

    @property
    def kept(self) -> int:
        return self.total - self.dropped

    def __str__(self) -> str:
        rows = [("empty side", self.empty), ("too long", self.too_long), ("length ratio", self.bad_ratio)]
        rows += [("duplicate", self.duplicate), ("dropped", self.dropped), ("kept", self.kept), ("total", self.total)]
        width = max(len("pairs"), len(f"{self.total:,}"))
        lines = [f"{'rule':<13} {'pairs':>{width}} {'share':>7}"]
        for name, count in rows:
            lines.append(f"{name:<13} {count:>{width},} {100 * count / max(self.total, 1):6.1f}%")
        if self.simplified:
            lines.append(f"(Chinese side converted to Simplified in {self.simplified:,} pairs)")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------------------
# Loading


def load_parallel(
    files: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    *,
    dataset: str | None = None,
    dataset_config: str | None = None,
    split: str = "train",
    en_column: str = "en",
    zh_column: str = "zh",
    skip_malformed: bool = False,
    return_report: bool = False,
    check_languages: bool = True,
) -> datasets.Dataset | tuple[datasets.Dataset, LoadReport]:
    """Load English–Chinese sentence pairs from local files or a Hub dataset.

    Local files are read by extension, with `.gz` read transparently, and several files are concatenated in order:

    - `.jsonl`, `.json`: JSON Lines, one object per line, e.g. `{"en": "Hello.", "zh": "你好。"}`.
    - `.tsv`, `.txt`: tab-separated `en<TAB>zh`, exactly two fields per line. If the first line contains both column
      names (e.g. `en<TAB>zh`, or `id<TAB>en<TAB>zh<TAB>source`) it is a header: the columns are taken by name and
      every line must have as many fields as the header. A first line that names the two languages another way
      (`English<TAB>Chinese`, `zh<TAB>en`, `中文<TAB>英文`) is a header too, and said so in a warning; one made of
      other header words (`source<TAB>target`) is an error, since it does not say which column is which. Custom
      column names require a header, except `en_column="zh", zh_column="en"`, which swaps the two columns of a file
      without one. Fields are taken verbatim (no quoting).
    - `.parquet`: a table with the two columns.

    Blank lines are ignored. The columns are looked up at the top level first, then inside a nested `translation`
    column (the Hub layout of e.g. `wmt/wmt19`: `{"translation": {"en": ..., "zh": ...}}`). A file (or dataset) must
    hold at least one pair. Unless `check_languages=False`, each file's columns are checked on a sample: an English
    column that is mostly Chinese beside a Chinese column that is not (swapped columns) is an error, other
    mismatches a warning (see [`check_language_columns`]).

    Args:
        files (`str`, `os.PathLike` or a sequence of them, *optional*):
            Local corpus file(s). Exactly one of `files` and `dataset` must be given.
        dataset (`str`, *optional*):
            Name (or local folder) of a dataset for `datasets.load_dataset`, e.g. `"wmt/wmt19"`.
        dataset_config (`str`, *optional*):
            Its configuration, e.g. `"zh-en"`.
        split (`str`, *optional*, defaults to `"train"`):
            Its split; slicing syntax such as `"train[:10000]"` works.
        en_column (`str`, *optional*, defaults to `"en"`), zh_column (`str`, *optional*, defaults to `"zh"`):
            Names of the English and Chinese columns.
        skip_malformed (`bool`, *optional*, defaults to `False`):
            Skip and count malformed lines (invalid JSON or UTF-8, wrong number of TSV fields, a missing or
            non-string value) of local files instead of raising. The count is logged and given in the report.
        return_report (`bool`, *optional*, defaults to `False`):
            Also return a [`LoadReport`].
        check_languages (`bool`, *optional*, defaults to `True`):
            Check that the English column is English and the Chinese one Chinese (by their share of Han characters).

    Returns:
        `datasets.Dataset` with string columns `"en"` and `"zh"`, or `(dataset, LoadReport)` if `return_report`.

    Raises:
        [`CorpusError`] (a `ValueError`): for a missing file, an unsupported extension, missing columns, a file
        without pairs, swapped columns, or a malformed line (naming file and line) when `skip_malformed` is off.

    Example:

    ```python
    >>> from zhen.data import load_parallel
    >>> ds = load_parallel(["train.jsonl.gz", "extra.tsv"])
    >>> ds = load_parallel(dataset="wmt/wmt19", dataset_config="zh-en", split="train[:100000]")
    ```
    """
    if (files is None) == (dataset is None):
        raise ValueError("Pass exactly one of `files` and `dataset` (the bundled sample corpus is `load_sample()`).")
    if dataset is not None:
        pairs = _load_hub(dataset, dataset_config, split, en_column, zh_column)
        source = f"Dataset {dataset!r} ({split})"
        if len(pairs) == 0:
            raise CorpusError(f"{source} holds no sentence pairs; check the split and the dataset configuration.")
        if check_languages:
            step = max(1, len(pairs) // LANGUAGE_SAMPLE_SIZE)
            sample = pairs.select(range(0, len(pairs), step))
            check_language_columns(sample["en"], sample["zh"], source, en_column, zh_column)
        report = LoadReport(pairs=len(pairs))
    else:
        pairs, report = _load_files(_as_paths(files), en_column, zh_column, skip_malformed, check_languages)
    return (pairs, report) if return_report else pairs


def _as_paths(files) -> list[Path]:
    paths = [Path(files)] if isinstance(files, (str, os.PathLike)) else [Path(path) for path in files]
    if not paths:
        raise CorpusError("`files` is empty: give at least one corpus file.")
    for path in paths:
        _format_of(path)
        if not path.is_file():
            raise CorpusError(f"Corpus file not found: {path}")
    return paths


def _format_of(path: Path) -> str:
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    suffix = suffixes[0].lower() if suffixes else ""
    if suffix not in FORMATS:
        supported = ", ".join(FORMATS)
        raise CorpusError(f"Unsupported corpus file {path}: supported extensions are {supported}, optionally + .gz.")
    return FORMATS[suffix]


def _load_files(paths, en_column, zh_column, skip_malformed, check_languages) -> tuple[datasets.Dataset, LoadReport]:
    en, zh, report = [], [], LoadReport()
    readers = {"jsonl": _read_jsonl, "tsv": _read_tsv, "parquet": _read_parquet}
    for path in paths:
        format_ = _format_of(path)
        unit = "row" if format_ == "parquet" else "line"
        items = readers[format_](path, en_column, zh_column)
        start = len(en)
        _collect(items, path, unit, skip_malformed, en, zh, report)
        if len(en) == start:
            skipped = report.skipped_per_file.get(str(path), 0)
            why = f"all {skipped:,} {unit}s with text are malformed" if skipped else f"it has no {unit}s with text"
            raise CorpusError(f"{path} holds no sentence pairs: {why}. Check the file, or leave it out.")
        if check_languages:
            step = max(1, (len(en) - start) // LANGUAGE_SAMPLE_SIZE)
            check_language_columns(en[start::step], zh[start::step], path, en_column, zh_column)
    report.pairs = len(en)
    if report.skipped:
        logger.warning("%s", report)
    return datasets.Dataset.from_dict({"en": en, "zh": zh}, features=PAIR_FEATURES), report


class _Malformed(NamedTuple):
    line: int
    problem: str


def _collect(items, path, unit, skip_malformed, en, zh, report) -> None:
    for item in items:
        if isinstance(item, _Malformed):
            message = f"{path}, {unit} {item.line}: {item.problem}"
            if not skip_malformed:
                raise CorpusError(f"{message}. {_SKIP_HINT}")
            report.skipped += 1
            report.skipped_per_file[str(path)] = report.skipped_per_file.get(str(path), 0) + 1
            if len(report.examples) < _MAX_EXAMPLES:
                report.examples.append(message)
            continue
        en.append(item[0])
        zh.append(item[1])


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _read_jsonl(path, en_column, zh_column) -> Iterator[tuple[str, str] | _Malformed]:
    nested = None
    with _open_binary(path) as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)  # bytes in: decodes UTF-8 and skips a BOM
            except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
                yield _Malformed(number, f"invalid JSON ({error})")
                continue
            if not isinstance(record, dict):
                yield _Malformed(number, f"expected a JSON object, found {type(record).__name__}")
                continue
            if nested is None:
                nested = _is_nested(record, en_column, zh_column, path)
            yield _pair_or_problem(record, number, en_column, zh_column, nested)


def _read_tsv(path, en_column, zh_column) -> Iterator[tuple[str, str] | _Malformed]:
    columns, n_fields = (0, 1), 2
    with _open_binary(path) as lines:
        for number, line in enumerate(lines, 1):
            try:
                text = line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                yield _Malformed(number, f"invalid UTF-8 ({error})")
                continue
            fields = text.split("\t")
            if number == 1:
                fields[0] = fields[0].removeprefix("\ufeff")
                if en_column in fields and zh_column in fields:
                    columns, n_fields = (fields.index(en_column), fields.index(zh_column)), len(fields)
                    continue
                header_columns = _language_header(path, fields, en_column, zh_column)
                if header_columns is not None:
                    columns = header_columns
                    continue
                if (en_column, zh_column) == ("zh", "en"):
                    columns = (1, 0)
                elif (en_column, zh_column) != ("en", "zh"):
                    raise _missing_columns(path, fields, en_column, zh_column, "first line (header)")
            if not text.strip():
                continue
            if len(fields) != n_fields:
                yield _Malformed(number, f"expected {n_fields} tab-separated fields, found {len(fields)}")
                continue
            yield fields[columns[0]], fields[columns[1]]


def _language_header(path, fields: list[str], en_column: str, zh_column: str) -> tuple[int, int] | None:
    """The (English, Chinese) columns of a two-field first line that is a header naming the languages another way
    (`English<TAB>Chinese`); `None` if the line is not a header. A header that does not say which column is which
    (`source<TAB>target`) is an error."""
    words = [re.split(r"[\s_.-]+", field.strip().lower()) for field in fields]
    if len(fields) != 2 or not all(any(w) and all(word in _HEADER_WORDS for word in w if word) for w in words):
        return None
    languages = [_header_language(w) for w in words]
    if sorted(filter(None, languages)) != ["en", "zh"]:
        raise CorpusError(
            f"{path}, line 1 ({chr(9).join(fields)!r}) looks like a header, not a sentence pair, and does not say "
            f"which column is English. Name the columns (--en-column {fields[0]} --zh-column {fields[1]}, or the "
            f"other way round; en_column=/zh_column= in Python), or remove the line."
        )
    columns = (languages.index("en"), languages.index("zh"))
    if (en_column, zh_column) == ("zh", "en"):
        columns = columns[::-1]
    logger.warning(
        "%s: line 1 (%r) is a header; reading column %d as English and column %d as Chinese.",
        path, chr(9).join(fields), columns[0] + 1, columns[1] + 1,
    )  # fmt: skip
    return columns


def _header_language(words: list[str]) -> str | None:
    from .tokenization_zhen import normalize_lang

    found = set()
    for word in words:
        try:
            found.add(normalize_lang(word))
        except ValueError:
            pass
    return found.pop() if len(found) == 1 else None


def _read_parquet(path, en_column, zh_column) -> Iterator[tuple[str, str] | _Malformed]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pa.BufferReader(gzip.decompress(path.read_bytes())) if path.suffix == ".gz" else path
    table = pq.read_table(source)
    names = table.column_names
    if en_column in names and zh_column in names:
        en, zh = table.column(en_column).to_pylist(), table.column(zh_column).to_pylist()
        records = ({en_column: e, zh_column: z} for e, z in zip(en, zh))
        nested = False
    else:
        fields = table.schema.field("translation").type if "translation" in names else None
        nested_names = [f.name for f in fields] if isinstance(fields, pa.StructType) else []
        if en_column not in nested_names or zh_column not in nested_names:
            raise _missing_columns(path, names + [f"translation.{n}" for n in nested_names], en_column, zh_column)
        records = ({"translation": record} for record in table.column("translation").to_pylist())
        nested = True
    for number, record in enumerate(records, 1):
        yield _pair_or_problem(record, number, en_column, zh_column, nested)


def _is_nested(record: dict, en_column: str, zh_column: str, path) -> bool:
    """Tell the flat layout from the nested `translation` one, from a file's first record."""
    if en_column in record and zh_column in record:
        return False
    nested = record.get("translation")
    if isinstance(nested, dict) and en_column in nested and zh_column in nested:
        return True
    found = list(record) + ([f"translation.{key}" for key in nested] if isinstance(nested, dict) else [])
    raise _missing_columns(path, found, en_column, zh_column, "first record")


def _pair_or_problem(record: dict, number: int, en_column, zh_column, nested: bool) -> tuple[str, str] | _Malformed:
    if nested:
        record = record.get("translation")
        if not isinstance(record, dict):
            return _Malformed(number, "'translation' is missing or not an object")
    en, zh = record.get(en_column), record.get(zh_column)
    if isinstance(en, str) and isinstance(zh, str):
        for name, text in ((en_column, en), (zh_column, zh)):
            if lone_surrogate(text) is not None:
                return _Malformed(number, f"{name!r} holds a lone surrogate (a broken \\u escape), not valid Unicode")
        return en, zh
    name = zh_column if isinstance(en, str) else en_column
    if name not in record:
        return _Malformed(number, f"{name!r} is missing")
    value = record[name]
    return _Malformed(number, f"{name!r} is {'null' if value is None else type(value).__name__}, not a string")


def _missing_columns(source, found, en_column, zh_column, where="") -> CorpusError:
    where = f" ({where})" if where else ""
    return CorpusError(
        f"{source} has no columns {en_column!r} and {zh_column!r}; found{where}: {list(found)}. {_COLUMN_HINT}"
    )


def _load_hub(name, config, split, en_column, zh_column) -> datasets.Dataset:
    pairs = datasets.load_dataset(name, config, split=split)
    if not isinstance(pairs, datasets.Dataset):
        raise CorpusError(f"load_dataset({name!r}) gave a {type(pairs).__name__}; pass one split, e.g. 'train'.")
    columns = pairs.column_names
    if en_column not in columns or zh_column not in columns:
        nested = _nested_languages(pairs.features.get("translation"))
        if en_column not in nested or zh_column not in nested:
            found = columns + [f"translation.{language}" for language in nested]
            raise _missing_columns(f"Dataset {name!r}", found, en_column, zh_column)
        pairs = pairs.select_columns(["translation"]).flatten()
        en_column, zh_column = f"translation.{en_column}", f"translation.{zh_column}"
    pairs = pairs.select_columns([en_column, zh_column])
    renames = {old: new for old, new in ((en_column, "en"), (zh_column, "zh")) if old != new}
    return pairs.rename_columns(renames) if renames else pairs


def _nested_languages(feature) -> list[str]:
    if isinstance(feature, datasets.Translation):
        return list(feature.languages)
    return list(feature) if isinstance(feature, dict) else []


# --------------------------------------------------------------------------------------------------------------------
# Languages of the columns


def han_share(texts: Iterable[str]) -> tuple[float, int]:
    """The share of Han characters among the words and Han characters of `texts`, and how many of those there are.

    Each Han character counts once and so does each word of other letters (numbers do not count), so English text
    scores 0, Chinese text close to 1 even with English names in it (`"我用 Python 写代码"`: 5 of 6)."""
    han = units = 0
    for text in texts:
        found = _WORD_OR_HAN.findall(text or "")
        units += len(found)
        han += sum(1 for unit in found if _HAN_CHARACTER.fullmatch(unit))
    return (han / units if units else 0.0), units


def check_language_columns(en: Sequence[str], zh: Sequence[str], source, en_column="en", zh_column="zh") -> None:
    """
    Check that the English side of parallel text is not Chinese and the Chinese side is, by [`han_share`].

    Raises:
        [`CorpusError`] when the columns look swapped (the English side mostly Chinese, the Chinese side hardly),
        naming the fix. Other mismatches (no Chinese on either side, Chinese on both) are logged as warnings.
    """
    en_share, en_units = han_share(en)
    zh_share, zh_units = han_share(zh)
    if min(en_units, zh_units) < _MIN_LANGUAGE_UNITS:
        return
    shares = (
        f"Han characters make up {en_share:.0%} of the {en_column!r} column and {zh_share:.0%} of the {zh_column!r} "
        f"column in {len(en):,} sampled pairs"
    )
    if en_share >= _CHINESE_SHARE and zh_share < _NOT_CHINESE_SHARE:
        raise CorpusError(
            f"{source}: the English and Chinese columns look swapped ({shares}). Swap the column names "
            f"(--en-column {zh_column} --zh-column {en_column}; en_column={zh_column!r}, zh_column={en_column!r} in "
            f"Python), or {_LANGUAGE_CHECK_HINT}."
        )
    if zh_share < _NOT_CHINESE_SHARE:
        logger.warning("%s: the Chinese column holds little Chinese (%s). Is it the right column?", source, shares)
    elif en_share >= _CHINESE_SHARE:
        logger.warning("%s: the English column is mostly Chinese (%s). Is it the right column?", source, shares)


# --------------------------------------------------------------------------------------------------------------------
# Sample corpus


def sample_corpus_path(split: str = "train") -> Path:
    """Path of a split (`"train"` or `"validation"`) of the sample corpus shipped with zhen (JSON Lines)."""
    if split not in SAMPLE_SPLITS:
        raise ValueError(f"Unknown sample split {split!r}; choose from {list(SAMPLE_SPLITS)}.")
    return SAMPLE_DATA_DIR / SAMPLE_SPLITS[split]


def load_sample(split: str | None = None) -> datasets.Dataset | datasets.DatasetDict:
    """Load the sample corpus shipped with zhen: a few hundred everyday English–Chinese pairs written by the project.

    Args:
        split (`str`, *optional*):
            `"train"` or `"validation"`; by default both, as a `datasets.DatasetDict`.
    """
    if split is not None:
        return load_parallel(sample_corpus_path(split))
    return datasets.DatasetDict({name: load_parallel(sample_corpus_path(name)) for name in SAMPLE_SPLITS})


# --------------------------------------------------------------------------------------------------------------------
# Cleaning

_KEEP, _EMPTY, _TOO_LONG, _BAD_RATIO, _DUPLICATE = range(5)


def length_units(text: str) -> int:
    """Length of `text` in units comparable across English and Chinese.

    A Han character is one unit, and so is each run of other letters or digits (a word or a number), so English text
    counts words and Chinese text counts characters plus any embedded Latin words and numbers. Punctuation, symbols
    and emoji do not count. Chinese typically has 1.3–1.5 units per English unit.
    """
    return len(_LENGTH_UNIT.findall(text))


def clean_pairs(
    pairs: datasets.Dataset,
    *,
    max_chars: int | None = None,
    max_ratio: float | None = 3.0,
    max_length: int | None = None,
    length_fn: Callable[[list[str]], list[int]] | None = None,
    drop_duplicates: bool = True,
    simplify: bool = False,
    num_proc: int | None = None,
    batch_size: int = 1000,
) -> tuple[datasets.Dataset, CleaningReport]:
    """Strip whitespace from both sides and drop pairs unfit for training.

    Rules, in order (a dropped pair counts under the first rule that drops it):

    1. empty: a side is empty after stripping (or `None`).
    2. too long: a side has more than `max_chars` characters, or more than `max_length` units as measured by
       `length_fn` (e.g. tokens).
    3. length ratio: the longer side has more than `max_ratio` times the [`length_units`] of the shorter one.
       Pairs whose longer side has fewer than `RATIO_MIN_UNITS` (10) units are exempt.
    4. duplicate: the same (en, zh) pair, after stripping (and simplifying), appeared before; the first is kept.

    Args:
        pairs (`datasets.Dataset`): Dataset with columns `"en"` and `"zh"`; other columns are kept.
        max_chars (`int`, *optional*): Character limit per side; no limit by default.
        max_ratio (`float`, *optional*, defaults to 3.0): Length-ratio limit; `None` disables the rule.
        max_length (`int`, *optional*): Limit per side on `length_fn`'s measure. Needs `length_fn`.
        length_fn (`Callable[[list[str]], list[int]]`, *optional*):
            Batched length measure, e.g. `lambda texts: [len(ids) for ids in tokenizer(texts)["input_ids"]]`.
        drop_duplicates (`bool`, *optional*, defaults to `True`): Apply rule 4.
        simplify (`bool`, *optional*, defaults to `False`):
            Convert the Chinese side to Simplified with OpenCC `t2s` before the rules (so that Traditional and
            Simplified copies of a pair count as duplicates).
        num_proc (`int`, *optional*): Processes for `datasets.Dataset.map`.
        batch_size (`int`, *optional*, defaults to 1000): Batch size for `datasets.Dataset.map`.

    Returns:
        `(datasets.Dataset, CleaningReport)`: the cleaned pairs, in their original order, and the counts.
    """
    if (max_length is None) != (length_fn is None):
        raise ValueError("`max_length` and `length_fn` go together: pass both or neither.")
    if len(pairs) == 0:
        return pairs, CleaningReport()
    limits = {"max_chars": max_chars, "max_ratio": max_ratio, "max_length": max_length, "length_fn": length_fn}
    flagged = pairs.map(
        _flag_batch,
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        fn_kwargs={**limits, "simplify": simplify},
        desc="Cleaning pairs",
    )
    keep, report = _select_kept(flagged, drop_duplicates)
    if len(keep) < len(flagged):
        flagged = flagged.select(keep)
    return flagged.remove_columns(["_flag", "_simplified"]), report


def _flag_batch(batch, *, max_chars, max_ratio, max_length, length_fn, simplify) -> dict:
    en = [(text or "").strip() for text in batch["en"]]
    zh = [(text or "").strip() for text in batch["zh"]]
    simplified = [False] * len(zh)
    if simplify:
        converted = _simplify_texts(zh)
        simplified = [new != old for new, old in zip(converted, zh)]
        zh = converted
    flags = [_flag(e, z, max_chars, max_ratio) for e, z in zip(en, zh)]
    if length_fn is not None:
        for i, (e_length, z_length) in enumerate(zip(length_fn(en), length_fn(zh))):
            if flags[i] != _EMPTY and max(e_length, z_length) > max_length:
                flags[i] = _TOO_LONG
    return {"en": en, "zh": zh, "_flag": flags, "_simplified": simplified}


def _flag(en: str, zh: str, max_chars: int | None, max_ratio: float | None) -> int:
    if not en or not zh:
        return _EMPTY
    if max_chars is not None and max(len(en), len(zh)) > max_chars:
        return _TOO_LONG
    if max_ratio is not None:
        shorter, longer = sorted((length_units(en), length_units(zh)))
        if longer >= RATIO_MIN_UNITS and longer > max_ratio * shorter:
            return _BAD_RATIO
    return _KEEP


def _select_kept(flagged: datasets.Dataset, drop_duplicates: bool) -> tuple[list[int], CleaningReport]:
    counts, keep, seen, index, simplified = [0] * 5, [], set(), 0, 0
    for batch in flagged.select_columns(["en", "zh", "_flag", "_simplified"]).iter(batch_size=10_000):
        simplified += sum(batch["_simplified"])
        for en, zh, flag in zip(batch["en"], batch["zh"], batch["_flag"]):
            if flag == _KEEP and drop_duplicates:
                # Hashes instead of the strings keep memory small; the odds of a collision (which would drop one
                # pair) are about 1 in 60,000 even at 25M pairs.
                key = hash((en, zh))
                flag = _DUPLICATE if key in seen else _KEEP
                seen.add(key)
            counts[flag] += 1
            if flag == _KEEP:
                keep.append(index)
            index += 1
    report = CleaningReport(
        total=len(flagged),
        empty=counts[_EMPTY],
        too_long=counts[_TOO_LONG],
        bad_ratio=counts[_BAD_RATIO],
        duplicate=counts[_DUPLICATE],
        simplified=simplified,
    )
    return keep, report


# --------------------------------------------------------------------------------------------------------------------
# Script conversion


@lru_cache(maxsize=1)
def _t2s_converter():
    """OpenCC `t2s`, built once per process, and the characters it can change (`None` if unknown)."""
    from opencc import OpenCC  # opencc-python-reimplemented

    converter = OpenCC("t2s")
    return converter, _changeable_characters(converter)


def _changeable_characters(converter) -> frozenset[str] | None:
    # The pure-Python converter is slow, and much text (all Simplified text) has nothing to convert. A text holding
    # no character that some dictionary entry changes comes out unchanged, so it can skip the converter.
    changeable = set()
    for _, _, table in getattr(converter, "dict_cache", {}).values():
        for key, value in table.items():
            if len(key) != len(value):
                changeable.update(key)
            else:
                changeable.update(a for a, b in zip(key, value) if a != b)
    return frozenset(changeable) or None


def _simplify_texts(texts: Iterable[str]) -> list[str]:
    converter, changeable = _t2s_converter()
    if changeable is None:
        return [converter.convert(text) if text else text for text in texts]
    return [text if not text or changeable.isdisjoint(text) else converter.convert(text) for text in texts]


def simplify_chinese(text: str) -> str:
    """Convert Chinese text to Simplified script with OpenCC `t2s` (Simplified text is left as is)."""
    return _simplify_texts([text])[0]


def _simplify_batch(batch, column: str) -> dict:
    return {column: _simplify_texts(batch[column])}


def to_simplified(
    pairs: datasets.Dataset, *, column: str = "zh", num_proc: int | None = None, batch_size: int = 1000
) -> datasets.Dataset:
    """Convert the Chinese column of `pairs` to Simplified script with OpenCC `t2s`.

    Args:
        pairs (`datasets.Dataset`): The dataset.
        column (`str`, *optional*, defaults to `"zh"`): The column to convert.
        num_proc (`int`, *optional*): Processes for `datasets.Dataset.map` (each builds its converter once).
        batch_size (`int`, *optional*, defaults to 1000): Batch size for `datasets.Dataset.map`.
    """
    return pairs.map(
        _simplify_batch,
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        fn_kwargs={"column": column},
        desc="Converting to Simplified Chinese",
    )


# --------------------------------------------------------------------------------------------------------------------
# Directions


def make_directions(pairs: datasets.Dataset, directions: str | Sequence[str] = ("en-zh", "zh-en")) -> datasets.Dataset:
    """Turn (en, zh) pairs into translation examples for the given direction(s).

    Args:
        pairs (`datasets.Dataset`): Dataset with columns `"en"` and `"zh"`.
        directions (`str` or sequence of `str`, *optional*, defaults to both):
            Any of `"en-zh"`, `"zh-en"` and `"both"` (which means `"en-zh"` and `"zh-en"`).

    Returns:
        `datasets.Dataset` with columns `src_text`, `tgt_text`, `src_lang` and `tgt_lang` (`"en"` or `"zh"`), and any
        other columns of `pairs`: all pairs in the first direction, then all in the second. Shuffle before training.
    """
    names = [directions] if isinstance(directions, str) else list(directions)
    unknown = [name for name in names if name not in DIRECTIONS]
    if unknown or not names:
        raise ValueError(f"Unknown translation direction(s) {unknown}; valid directions are {list(DIRECTIONS)}.")
    expanded = [name for d in names for name in (("en-zh", "zh-en") if d == "both" else (d,))]
    parts = [_one_direction(pairs, *name.split("-")) for name in dict.fromkeys(expanded)]
    return parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)


def _one_direction(pairs: datasets.Dataset, src: str, tgt: str) -> datasets.Dataset:
    return pairs.map(
        _direction_batch,
        batched=True,
        remove_columns=["en", "zh"],  # other columns (a training pair's `corpus`) stay
        fn_kwargs={"src": src, "tgt": tgt},
        desc=f"Making {src}-{tgt} examples",
    )


def _direction_batch(batch, src: str, tgt: str) -> dict:
    size = len(batch[src])
    return {"src_text": batch[src], "tgt_text": batch[tgt], "src_lang": [src] * size, "tgt_lang": [tgt] * size}


def _simplify_chinese_targets_batch(batch) -> dict:
    targets = batch["tgt_text"]
    chinese = [i for i, lang in enumerate(batch["tgt_lang"]) if lang == "zh"]
    for i, text in zip(chinese, _simplify_texts([targets[i] for i in chinese])):
        targets[i] = text
    return {"tgt_text": targets}


def simplify_chinese_targets(examples: datasets.Dataset, num_proc: int | None = None) -> datasets.Dataset:
    """Convert the Chinese *targets* of translation examples (from [`make_directions`]) to Simplified script, so that
    a model's `zh` output is consistently Simplified. Chinese sources are left as they are: the model should still
    read Traditional input."""
    return examples.map(
        _simplify_chinese_targets_batch, batched=True, num_proc=num_proc, desc="Simplifying Chinese targets"
    )


# --------------------------------------------------------------------------------------------------------------------
# A training run's data

TOKENIZER_DIR, CACHE_DIR = "tokenizer", "cache"  # in a run's output folder: the tokenizer it trained, its data cache


def load_or_train_tokenizer(config: TrainingConfig, train_pairs, accelerator, output_dir: Path) -> ZhenTokenizerFast:
    """The given tokenizer, the one an interrupted run trained, or a new one trained on the training pairs.

    Only the main process decides and trains; every process then passes the same barrier and loads the result."""
    trained_here = output_dir / TOKENIZER_DIR
    if config.tokenizer is None and accelerator.is_main_process and not trained_here.is_dir():
        logger.info("Training a %d-token tokenizer on %s pairs", config.vocab_size, f"{len(train_pairs):,}")
        tokenizer = train_tokenizer(
            train_pairs, vocab_size=config.vocab_size, min_frequency=config.tokenizer_min_frequency
        )
        tmp = trained_here.with_name(f".{TOKENIZER_DIR}.tmp")
        tokenizer.save_pretrained(tmp)
        replace_directory(tmp, trained_here)
    accelerator.wait_for_everyone()
    config.tokenizer = config.tokenizer or str(trained_here)
    return AutoTokenizer.from_pretrained(config.tokenizer)


@dataclass
class TrainingData:
    train: datasets.Dataset  # input_ids, labels, src_len, tgt_len
    valid: dict[str, datasets.Dataset]  # per validation set: tokenized examples, for the loss
    valid_pairs: dict[str, datasets.Dataset]  # per validation set: en/zh text, for BLEU
    summary: dict = field(default_factory=dict)


def load_run_pairs(config: TrainingConfig) -> tuple[datasets.Dataset, dict[str, datasets.Dataset], dict]:
    """Raw training pairs and named validation pair sets, with what was loaded from where."""
    load = dict(en_column=config.en_column, zh_column=config.zh_column, skip_malformed=config.skip_malformed)
    load["check_languages"] = config.language_check
    summary = {}
    if config.uses_sample_data:
        train, valid = load_sample("train"), {"sample": load_sample("validation")}
        summary["train_source"] = "zhen sample corpus (zhen/sample_data)"
    elif config.dataset:
        train = load_parallel(
            dataset=config.dataset, dataset_config=config.dataset_config, split=config.train_split, **load
        )
        valid = {}
        if config.valid_split and not config.valid_files:
            valid["valid"] = load_parallel(
                dataset=config.dataset, dataset_config=config.dataset_config, split=config.valid_split, **load
            )
        summary["train_source"] = f"{config.dataset} ({config.dataset_config}, {config.train_split})"
    else:
        train, skipped = load_corpora(named_files(config.train_files, "train"), load)
        summary["train_source"] = ", ".join(config.train_files)
        summary["malformed_lines_skipped"] = skipped
        valid = {}
    for name, path in named_files(config.valid_files or [], "valid").items():
        valid[name] = load_parallel(path, **load)
    if not valid:
        split = train.train_test_split(test_size=min(config.valid_size, len(train) // 10), seed=config.seed)
        train, valid = split["train"], {"heldout": split["test"]}
        summary["validation"] = f"{len(valid['heldout'])} pairs held out from the training data"
    return train, valid, summary


def load_corpora(files: dict[str, str], load: dict) -> tuple[datasets.Dataset, int]:
    """The pairs of every named training file, with a `corpus` column (the file's position in `files`) that
    `train_weights` samples by; returns them and the number of malformed lines skipped."""
    parts, skipped = [], 0
    for corpus, path in enumerate(files.values()):
        pairs, report = load_parallel(path, return_report=True, **load)
        parts.append(pairs.add_column("corpus", [corpus] * len(pairs)))
        skipped += report.skipped
    return datasets.concatenate_datasets(parts), skipped


def drop_empty(pairs: datasets.Dataset) -> datasets.Dataset:
    """Validation pairs are kept as they are, except pairs with an empty side."""
    return clean_pairs(pairs, max_ratio=None, drop_duplicates=False)[0]


def clean_training_pairs(config: TrainingConfig, train: datasets.Dataset) -> tuple[datasets.Dataset, str]:
    train, report = clean_pairs(
        train, max_chars=config.max_chars, max_ratio=config.max_length_ratio, num_proc=config.num_proc
    )
    return train, str(report)


def to_examples(config: TrainingConfig, pairs: datasets.Dataset, directions: str | None = None) -> datasets.Dataset:
    examples = make_directions(pairs, directions or config.directions)
    if config.simplify_chinese:
        examples = simplify_chinese_targets(examples, num_proc=config.num_proc)
    return examples


def tokenize_batch(batch, tokenizer, lang_ids: dict[str, int], eos: int) -> dict:
    """`[src code] source </s>` and `[tgt code] target </s>`, as `tokenizer(text, text_target=...)` lays them out."""
    # split_special_tokens: "<s>" or "__zh__" in a sentence is text, not a control token
    sources = tokenizer(batch["src_text"], add_special_tokens=False, split_special_tokens=True)["input_ids"]
    targets = tokenizer(batch["tgt_text"], add_special_tokens=False, split_special_tokens=True)["input_ids"]
    input_ids = [[lang_ids[lang], *ids, eos] for lang, ids in zip(batch["src_lang"], sources)]
    labels = [[lang_ids[lang], *ids, eos] for lang, ids in zip(batch["tgt_lang"], targets)]
    return {
        "input_ids": input_ids,
        "labels": labels,
        "src_len": [len(ids) for ids in input_ids],
        "tgt_len": [len(ids) for ids in labels],
    }


def tokenize_examples(config: TrainingConfig, examples, tokenizer) -> tuple[datasets.Dataset, int]:
    """Tokenize and drop examples longer than the length limits; returns the dataset and how many were dropped."""
    lang_ids = {lang: tokenizer.get_lang_id(lang) for lang in ("en", "zh")}
    tokenized = examples.map(
        tokenize_batch,
        batched=True,
        num_proc=config.num_proc,
        remove_columns=[name for name in examples.column_names if name != "corpus"],
        fn_kwargs={"tokenizer": tokenizer, "lang_ids": lang_ids, "eos": tokenizer.eos_token_id},
        desc="Tokenizing",
    )
    lengths_ok = (np.asarray(tokenized["src_len"]) <= config.max_source_length) & (
        np.asarray(tokenized["tgt_len"]) <= config.max_target_length
    )
    keep = np.flatnonzero(lengths_ok)
    return (tokenized.select(keep) if len(keep) < len(tokenized) else tokenized), int((~lengths_ok).sum())


def cache_key(config: TrainingConfig, tokenizer) -> str:
    def file_id(path):
        stat = Path(path).stat()
        return [str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns]

    sources = [file_id(p) for p in named_files(config.train_files or [], "train").values()]
    sources += [file_id(p) for p in named_files(config.valid_files or [], "valid").values()]
    relevant = {
        key: getattr(config, key)
        for key in (
            "dataset", "dataset_config", "train_split", "valid_split", "en_column", "zh_column", "skip_malformed",
            "directions", "simplify_chinese", "max_chars", "max_length_ratio", "max_source_length",
            "max_target_length", "valid_size", "seed",
        )
    }  # fmt: skip
    relevant["sources"] = sources
    relevant["layout"] = 2  # 2: training examples carry their corpus
    if config.uses_sample_data:
        relevant["sample"] = [file_id(sample_corpus_path(split)) for split in ("train", "validation")]
    relevant["tokenizer"] = hashlib.sha256(tokenizer.backend_tokenizer.to_str().encode()).hexdigest()
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def prepare_data(config: TrainingConfig, accelerator, output_dir: Path) -> tuple[TrainingData, ZhenTokenizerFast]:
    """Load, clean, tokenize (training the tokenizer first if none is given), cached under `output_dir/cache`.

    The main process of `accelerator` (an `accelerate.Accelerator`) does the work; the others wait and read its
    cache."""
    with accelerator.main_process_first():
        train_pairs, valid_pairs, summary = load_run_pairs(config)
        train_pairs, cleaning = clean_training_pairs(config, train_pairs)
        valid_pairs = {name: drop_empty(pairs) for name, pairs in valid_pairs.items()}
    tokenizer = load_or_train_tokenizer(config, train_pairs, accelerator, output_dir)
    cache = output_dir / CACHE_DIR / cache_key(config, tokenizer)
    with accelerator.main_process_first():
        if (cache / "summary.json").is_file():
            summary = json.loads((cache / "summary.json").read_text())
            train = datasets.load_from_disk(str(cache / "train"))
            valid = {name: datasets.load_from_disk(str(cache / "valid" / name)) for name in summary["valid_sets"]}
        else:
            train, dropped = tokenize_examples(config, to_examples(config, train_pairs), tokenizer)
            valid = {
                name: tokenize_examples(config, to_examples(config, pairs), tokenizer)[0]
                for name, pairs in valid_pairs.items()
            }
            summary.update(
                cleaning=cleaning,
                train_pairs=len(train_pairs),
                train_examples=len(train),
                dropped_too_many_tokens=dropped,
                valid_sets={name: len(p) for name, p in valid_pairs.items()},
            )
            if accelerator.is_main_process:
                train.save_to_disk(str(cache / "train"))
                for name, ds in valid.items():
                    ds.save_to_disk(str(cache / "valid" / name))
                write_json_atomic(cache / "summary.json", summary)
    return TrainingData(train, valid, valid_pairs, summary), tokenizer
