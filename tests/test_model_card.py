"""Tests of the model card: written with `huggingface_hub.ModelCard`, its metadata (with the `model-index` the Hub
shows as evaluation results) parses back, and its text says what the model is for, where its data came from under
which licence, and how each score was computed, in words rather than Python reprs."""

import pytest
from huggingface_hub import ModelCard

from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.hub import card_metrics, count_parameters, data_sources, render_model_card, training_sections
from zhen.training_config import TrainingConfig


BLEU_SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:zh|smooth:exp|version:2.6.0"
TRAINER_EVAL = {  # what ZhenTrainer.evaluate returns, as the export receives it
    "step": 1261,
    "tatoeba/en-zh/bleu": 24.04,
    "tatoeba/en-zh/chrf": 21.51,
    "tatoeba/en-zh/sentences": 200,
    "tatoeba/en-zh/signature": BLEU_SIGNATURE,
    "tatoeba/zh-en/bleu": 18.123,
    "tatoeba/zh-en/chrf": 37.9,
    "tatoeba/zh-en/sentences": 200,
    "tatoeba/zh-en/signature": BLEU_SIGNATURE.replace("tok:zh", "tok:13a"),
}
SHARED_DATA = ["../shared/data/tatoeba/train.jsonl.gz", "../shared/data/news/train.jsonl.gz"]


@pytest.fixture(scope="module")
def trained_card(tiny_model):
    config = TrainingConfig(train_files=SHARED_DATA, model_overrides={"dropout": 0.2, "d_model": 64}, preset="tiny")
    summary = {"train_pairs": 54100, "train_examples": 108184, "cleaning": "dropped 12 pairs longer than 400 chars"}
    return render_model_card(
        tiny_model.config.to_dict(),
        card_metrics(TRAINER_EVAL),
        repo_id="me/zhen-small",
        extra_sections=training_sections(config, summary),
    )


def test_metadata_and_evaluation_results_parse_back(trained_card):
    data = ModelCard(trained_card).data
    assert data.language == ["en", "zh"] and data.license == "apache-2.0"
    assert (data.library_name, data.pipeline_tag) == ("transformers", "translation")
    assert {"translation", "zhen", "custom_code"} <= set(data.tags)
    assert data.model_name == "zhen-small"
    results = {(r.dataset_config, r.metric_type): r for r in data.eval_results}
    assert set(results) == {(d, m) for d in ("en-zh", "zh-en") for m in ("bleu", "chrf")}
    bleu = results["en-zh", "bleu"]
    assert (bleu.task_type, bleu.dataset_type, bleu.dataset_split) == ("translation", "tatoeba", "validation")
    assert bleu.dataset_name == "tatoeba (validation, step 1261)"
    assert (bleu.metric_value, bleu.metric_args) == (24.04, {"signature": BLEU_SIGNATURE})
    assert results["zh-en", "bleu"].metric_value == 18.12 and results["zh-en", "chrf"].metric_value == 37.9


def test_text_has_use_limits_data_licences_and_signed_scores(trained_card, tiny_model):
    text = ModelCard(trained_card).text
    for heading in ("## Intended use and limitations", "## How to use", "## Evaluation", "## Training data",
                    "## Training", "## Licence"):  # fmt: skip
        assert f"\n{heading}\n" in text, heading
    assert "short, everyday sentences" in text and "legal, medical" in text and "numbers" in text
    assert "CC-BY 2.0 FR" in text and "Attribution: www.manythings.org/anki and tatoeba.org" in text
    assert "WMT" in text and "UN Parallel Corpus v1.0" in text
    signature = BLEU_SIGNATURE.replace("|", "\\|")
    assert f"| en-zh | tatoeba (validation, step 1261) | 200 | 24.04 | 21.51 | `{signature}` |" in text
    assert f"Parameters: 0.2 M ({tiny_model.num_parameters():,})" in text
    assert "the `tiny` preset with d_model 64, dropout 0.2" in text
    assert "{'" not in text and '{"' not in text.replace('[{"translation_text"', "")  # no Python dicts
    assert 'pipeline("translation", model="me/zhen-small"' in text
    assert "does not translate usefully" not in text


@pytest.mark.parametrize("repo_id", [None, "model", "runs/small/"])
def test_examples_never_load_a_local_folder_name(tiny_model, repo_id):
    card = render_model_card(tiny_model.config.to_dict(), repo_id=repo_id)
    assert 'model="your-name/zhen-model"' in card and ModelCard(card).data.eval_results is None
    assert "Not recorded with this export" in card  # no training data named: the publisher is asked to


def test_low_scores_are_called_what_they_are(tiny_model):
    metrics = {"en-zh": {"bleu": 0.4, "chrf": 4.0, "test_set": "Tatoeba valid", "bleu_signature": BLEU_SIGNATURE}}
    card = render_model_card(tiny_model.config.to_dict(), metrics)
    assert "does not translate usefully yet" in card and "best BLEU below is 0.4" in card
    (bleu, _) = ModelCard(card).data.eval_results
    assert (bleu.dataset_name, bleu.dataset_type, bleu.dataset_split) == ("Tatoeba valid", "tatoeba-valid", "test")


def test_data_sources_name_licences_or_ask_for_them():
    lines = data_sources([*SHARED_DATA, "/data/tatoeba/more.tsv", "mine.jsonl"])
    assert len(lines) == 3  # Tatoeba once, the news mix, and the unknown file
    assert lines[0].endswith("Attribution: www.manythings.org/anki and tatoeba.org.")
    assert lines[2].startswith("`mine.jsonl`: its licence is not recorded here")
    (sample,) = data_sources(["zhen sample corpus (zhen/sample_data)"])
    assert "written by the zhen project" in sample and "CC0 1.0" in sample


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
def test_parameter_count_matches_the_model(position_embedding_type):
    config = ZhenConfig.from_preset("tiny", vocab_size=300, position_embedding_type=position_embedding_type)
    assert count_parameters(config.to_dict()) == ZhenForConditionalGeneration(config).num_parameters()
