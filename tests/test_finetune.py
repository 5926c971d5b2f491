"""Tests of `zhen.finetuning`: gradient accumulation equals the full batch, loss falls, the target language is forced
per eval set, metrics are sacreBLEU, and the result reloads through the Auto classes."""

import json

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, EvalPrediction

from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
from zhen.data import load_sample
from zhen.finetuning import ZhenSeq2SeqTrainer, directions_of, finetune, make_compute_metrics, tokenize_direction
from zhen.hub import missing_hub_files


pytestmark = pytest.mark.usefixtures("module_accelerator_state")


def one_step_update(checkpoint, tokenizer, train, batch_size, accumulation, label_smoothing, tmp_path):
    from transformers import Seq2SeqTrainingArguments

    model = AutoModelForSeq2SeqLM.from_pretrained(checkpoint)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path / f"ga{accumulation}"),
        per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation,
        max_steps=1,
        learning_rate=1.0,
        optim="sgd",
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        label_smoothing_factor=label_smoothing,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = ZhenSeq2SeqTrainer(
        model=model,
        args=args,
        train_dataset=train,
        processing_class=tokenizer,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100),
    )
    trainer.train()
    return {name: p.detach() - before[name] for name, p in model.named_parameters()}


@pytest.fixture(scope="module")
def four_examples(tiny_tokenizer):
    """Four pairs whose targets differ in length, so that a mean of per-batch means would weigh tokens unequally."""
    pairs = load_sample("train").select([0, 3, 20, 41])
    return tokenize_direction(pairs, tiny_tokenizer, "en", "zh")


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_gradient_accumulation_gives_the_full_batch_update(
    tiny_checkpoint, tiny_tokenizer, four_examples, label_smoothing, tmp_path
):
    lengths = {len(labels) for labels in four_examples["labels"]}
    assert len(lengths) > 2
    full = one_step_update(tiny_checkpoint, tiny_tokenizer, four_examples, 4, 1, label_smoothing, tmp_path)
    accumulated = one_step_update(tiny_checkpoint, tiny_tokenizer, four_examples, 2, 2, label_smoothing, tmp_path)
    assert max(update.abs().max().item() for update in full.values()) > 1e-3
    for name in full:
        torch.testing.assert_close(accumulated[name], full[name], rtol=1e-4, atol=1e-6, msg=name)


def test_the_accumulation_check_would_catch_a_mean_loss(
    tiny_checkpoint, tiny_tokenizer, four_examples, monkeypatch, tmp_path
):
    """Negative control: a loss that ignores `num_items_in_batch` (a plain mean per micro-batch) changes the update."""
    from zhen import modeling_zhen

    loss = modeling_zhen.translation_loss
    monkeypatch.setattr(modeling_zhen, "translation_loss", lambda logits, labels, smoothing, n=None: loss(
        logits, labels, smoothing))  # fmt: skip
    full = one_step_update(tiny_checkpoint, tiny_tokenizer, four_examples, 4, 1, 0.0, tmp_path)
    accumulated = one_step_update(tiny_checkpoint, tiny_tokenizer, four_examples, 2, 2, 0.0, tmp_path)
    assert max((accumulated[name] - full[name]).abs().max().item() for name in full) > 1e-3


@pytest.fixture(scope="module")
def finetuned(tiny_checkpoint, tiny_test_file, tmp_path_factory):
    folder = tmp_path_factory.mktemp("finetune")
    train_file = folder / "train.jsonl"
    new_pairs = load_sample("train").select(range(16, 48))
    train_file.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in new_pairs))
    trainer, metrics = finetune(
        str(tiny_checkpoint),
        train_file,
        folder / "out",
        eval_files=tiny_test_file,
        direction="both",
        max_length=40,  # also the generation length for evaluation: keeps the test fast
        max_steps=16,
        per_device_train_batch_size=8,
        learning_rate=3e-3,
        label_smoothing_factor=0.1,
        logging_steps=1,
        use_cpu=True,
    )
    return trainer, metrics, folder / "out"


def test_finetuning_lowers_the_loss_and_reports_bleu_per_direction(finetuned):
    trainer, metrics, _ = finetuned
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 16 and np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.3
    for direction in ("en-zh", "zh-en"):
        assert {f"eval_{direction}_{name}" for name in ("bleu", "chrf", "loss")} <= metrics.keys()
        assert 0 <= metrics[f"eval_{direction}_bleu"] <= 100


def test_finetuned_folder_reloads_with_auto_classes_and_is_hub_ready(finetuned, tiny_pairs):
    _, _, folder = finetuned
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert isinstance(model, ZhenForConditionalGeneration) and isinstance(tokenizer, ZhenTokenizerFast)
    assert missing_hub_files(folder) == []
    card = ModelCard.load(folder / "README.md")
    assert "| en-zh | test.jsonl | 16 |" in card.text and "`nrefs:1\\|case:mixed" in card.text
    assert "## Training data" in card.text and "Fine-tuned from" in card.text
    results = {(r.dataset_config, r.metric_type): r.metric_args for r in card.data.eval_results}
    assert results["zh-en", "bleu"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert model.generation_config.max_new_tokens is None and model.generation_config.max_length == 256


def test_evaluation_forces_each_eval_sets_target_language(finetuned, monkeypatch):
    trainer, _, _ = finetuned
    forced = []
    generate = trainer.model.generate

    def spy(*args, **kwargs):
        forced.append(kwargs.get("forced_bos_token_id"))
        return generate(*args, **kwargs)

    monkeypatch.setattr(trainer.model, "generate", spy)
    trainer.evaluate(eval_dataset=trainer.eval_dataset["en-zh"])
    assert forced and set(forced) == {5}
    forced.clear()
    trainer.evaluate(eval_dataset=trainer.eval_dataset["zh-en"])
    assert forced and set(forced) == {4}


def test_compute_metrics_scores_with_the_target_language_tokenizer(tiny_tokenizer):
    compute_metrics = make_compute_metrics(tiny_tokenizer)
    tiny_tokenizer.src_lang, tiny_tokenizer.tgt_lang = "en", "zh"
    labels = tiny_tokenizer(text_target=["我想买一本书。", "今天几号？"], padding=True)["input_ids"]
    labels = np.where(np.array(labels) == 0, -100, np.array(labels))
    predictions = np.where(labels == -100, 0, labels)
    assert compute_metrics(EvalPrediction(predictions, labels)) == {
        "bleu": pytest.approx(100),
        "chrf": pytest.approx(100),
    }
    mixed = labels.copy()
    mixed[1, 0] = tiny_tokenizer.get_lang_id("en")
    with pytest.raises(ValueError, match="one translation direction"):
        compute_metrics(EvalPrediction(predictions, mixed))


def test_directions():
    assert directions_of("both") == [("en", "zh"), ("zh", "en")]
    assert directions_of("zh-en") == [("zh", "en")]
    with pytest.raises(ValueError, match="Unknown direction"):
        directions_of("en-fr")
