"""Tests of `zhen.evaluation`: sacreBLEU scores with the right tokenizer per target language, and evaluate_model."""

import pytest
import sacrebleu

from zhen.data import load_parallel
from zhen.evaluation import evaluate_model, parallel_columns, score


def test_identical_translations_score_100():
    result = score(["我爱大自然。", "今天几号？"], ["我爱大自然。", "今天几号？"], "zh")
    assert result["bleu"] == pytest.approx(100) and result["chrf"] == pytest.approx(100)
    assert result["sentences"] == 2 and result["brevity_penalty"] == pytest.approx(1)


def test_chinese_targets_use_the_zh_tokenizer():
    hypotheses, references = ["我哥哥喜欢玩电脑游戏。"], ["我哥哥喜欢玩游戏。"]
    result = score(hypotheses, references, "zh")
    assert "tok:zh" in result["bleu_signature"]
    assert result["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references], tokenize="zh").score)
    # With 13a each Chinese sentence is one "word", so any difference would give 0: the zh tokenizer must be used.
    assert sacrebleu.corpus_bleu(hypotheses, [references], tokenize="13a").score == 0
    assert result["bleu"] > 30


def test_english_targets_use_13a_and_chrf_has_a_signature():
    hypotheses, references = ["The cat sat on the mat."], ["The cat sat on a mat."]
    result = score(hypotheses, references, "en-US")
    assert "tok:13a" in result["bleu_signature"] and "nc:6" in result["chrf_signature"]
    assert result["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)
    assert result["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references]).score)


def test_mismatched_lengths_and_unknown_language_are_errors():
    with pytest.raises(ValueError, match="2 hypotheses for 1 references"):
        score(["a", "b"], ["a"], "en")
    with pytest.raises(ValueError, match="Unknown language code 'de'"):
        score(["a"], ["a"], "de")


@pytest.mark.parametrize(("src", "tgt"), [("en", "zh"), ("zh", "en")])
def test_evaluate_model_on_memorised_pairs(tiny_model, tiny_tokenizer, tiny_pairs, src, tgt):
    result, hypotheses = evaluate_model(tiny_model, tiny_tokenizer, tiny_pairs, src, tgt, return_hypotheses=True)
    assert result["bleu"] > 80 and result["chrf"] > 80
    assert (result["src_lang"], result["tgt_lang"], result["sentences"]) == (src, tgt, len(tiny_pairs))
    assert f"tok:{'zh' if tgt == 'zh' else '13a'}" in result["bleu_signature"]
    references = [pair[0 if tgt == "en" else 1] for pair in tiny_pairs]
    assert sum(h == r for h, r in zip(hypotheses, references)) >= 14


def test_evaluate_model_reads_a_dataset_and_limits(tiny_checkpoint, tiny_test_file):
    pairs = load_parallel(tiny_test_file)
    result = evaluate_model(str(tiny_checkpoint), None, pairs, tgt_lang="zh", limit=5)
    assert result["sentences"] == 5 and result["src_lang"] == "en" and result["bleu"] > 50


def test_parallel_columns_accepts_pairs_records_and_columns():
    expected = {"en": ["Hi.", "Bye."], "zh": ["你好。", "再见。"]}
    assert parallel_columns([("Hi.", "你好。"), ("Bye.", "再见。")]) == expected
    assert parallel_columns([{"en": "Hi.", "zh": "你好。"}, {"en": "Bye.", "zh": "再见。"}]) == expected
    assert parallel_columns(expected, limit=1) == {"en": ["Hi."], "zh": ["你好。"]}
    with pytest.raises(ValueError, match=r"no \['zh'\] column"):
        parallel_columns({"en": ["Hi."], "fr": ["Salut."]})
    with pytest.raises(ValueError, match="empty"):
        parallel_columns([])
