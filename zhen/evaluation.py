# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Scoring translations with sacreBLEU: [`score`] for hypotheses against references, [`evaluate_model`] to translate
a test set and score it.

BLEU is computed with sacreBLEU's `zh` tokenizer for Chinese targets (each Chinese character is a word; the default
`13a` tokenizer would see a whole Chinese sentence as one word) and `13a` for English targets. chrF (character
6-grams, sacreBLEU defaults) needs no tokenizer. Every score comes with its sacreBLEU signature, so that numbers can be
compared only where they were computed the same way.
"""

from collections.abc import Iterable, Mapping, Sequence

from sacrebleu.metrics import BLEU, CHRF

from .tokenization_zhen import normalize_lang
from .translation import resolve_languages, translate


BLEU_TOKENIZERS = {"zh": "zh", "en": "13a"}


def score(hypotheses: Sequence[str], references: Sequence[str], tgt_lang: str) -> dict:
    """
    Corpus BLEU and chrF of `hypotheses` against one reference each.

    Args:
        hypotheses (`Sequence[str]`): The system's translations.
        references (`Sequence[str]`): One reference translation per hypothesis.
        tgt_lang (`str`): Their language, `"en"` or `"zh"`; picks BLEU's tokenizer (`13a` or `zh`).

    Returns:
        `dict` with `bleu` and `chrf` (0–100), `bleu_signature` and `chrf_signature` (sacreBLEU signature strings, e.g.
        `nrefs:1|case:mixed|eff:no|tok:zh|smooth:exp|version:2.6.0`), `brevity_penalty`, `length_ratio` and
        `sentences`.

    Example:

    ```python
    >>> from zhen.evaluation import score
    >>> score(["我爱大自然。"], ["我爱大自然。"], tgt_lang="zh")["bleu"]
    100.00000000000004
    ```
    """
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(f"Got {len(hypotheses)} hypotheses for {len(references)} references; they must pair up.")
    bleu = BLEU(tokenize=BLEU_TOKENIZERS[normalize_lang(tgt_lang)])
    chrf = CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": bleu_score.score,
        "chrf": chrf_score.score,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "brevity_penalty": bleu_score.bp,
        "length_ratio": bleu_score.ratio,
        "sentences": len(hypotheses),
    }


def evaluate_model(
    model,
    tokenizer,
    pairs,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    *,
    num_beams: int | None = None,
    batch_size: int | None = None,
    max_new_tokens: int | None = None,
    limit: int | None = None,
    return_hypotheses: bool = False,
    progress: bool = False,
    **generate_kwargs,
) -> dict | tuple[dict, list[str]]:
    """
    Translate the `src_lang` side of parallel `pairs` into `tgt_lang` and [`score`] it against the `tgt_lang` side.

    Args:
        model, tokenizer:
            As for [`zhen.translate`]: loaded objects, or a checkpoint folder (tokenizer `None` = the same folder).
        pairs:
            A `datasets.Dataset` or mapping with `"en"` and `"zh"` columns (what `zhen.data.load_parallel` returns),
            or a sequence of `(en, zh)` pairs or `{"en": ..., "zh": ...}` records.
        src_lang (`str`, *optional*), tgt_lang (`str`):
            The direction; `tgt_lang` is required, `src_lang` defaults to the other language.
        num_beams, batch_size, max_new_tokens, generate_kwargs:
            Passed to [`zhen.translate`].
        limit (`int`, *optional*):
            Score only the first `limit` pairs.
        return_hypotheses (`bool`, *optional*, defaults to `False`):
            Also return the translations.
        progress (`bool`, *optional*, defaults to `False`):
            Show a progress bar.

    Returns:
        The [`score`] dict plus `src_lang` and `tgt_lang`; with `return_hypotheses`, `(scores, hypotheses)`.
    """
    src_lang, tgt_lang = resolve_languages(src_lang, tgt_lang)
    columns = parallel_columns(pairs, limit)
    hypotheses = translate(
        columns[src_lang],
        model,
        tokenizer,
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        num_beams=num_beams,
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        progress=progress,
        **generate_kwargs,
    )
    scores = {**score(hypotheses, columns[tgt_lang], tgt_lang), "src_lang": src_lang, "tgt_lang": tgt_lang}
    return (scores, hypotheses) if return_hypotheses else scores


def parallel_columns(pairs, limit: int | None = None) -> dict[str, list[str]]:
    """`{"en": [...], "zh": [...]}` from a dataset, a mapping of columns, or a sequence of pairs or records."""
    if hasattr(pairs, "column_names") or isinstance(pairs, Mapping):
        names = getattr(pairs, "column_names", None) or list(pairs.keys())
        missing = {"en", "zh"} - set(names)
        if missing:
            raise ValueError(f"The test set has no {sorted(missing)} column (found {names}); it needs 'en' and 'zh'.")
        columns = {lang: list(pairs[lang][:limit]) for lang in ("en", "zh")}
    else:
        records = _first(pairs, limit)
        columns = {"en": [], "zh": []}
        for record in records:
            en, zh = (record["en"], record["zh"]) if isinstance(record, Mapping) else record
            columns["en"].append(en)
            columns["zh"].append(zh)
    if not columns["en"]:
        raise ValueError("The test set is empty.")
    return columns


def _first(items: Iterable, limit: int | None) -> list:
    items = list(items)
    return items if limit is None else items[:limit]


__all__ = ["BLEU_TOKENIZERS", "evaluate_model", "parallel_columns", "score"]
