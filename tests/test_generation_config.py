"""Tests of the generation config that zhen exports carry: no pinned `max_new_tokens`, so that the lengths users pass
(`Seq2SeqTrainer`'s `generation_max_length`, `max_length` in `generate`) apply, and a `max_length` that keeps a bare
`generate()` within the position table."""

import json
import shutil

import pytest
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    DataCollatorForSeq2Seq,
    GenerationConfig,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
)
from transformers.testing_utils import CaptureLogger
from transformers.utils import logging

from zhen import ZhenConfig, ZhenForConditionalGeneration, hub
from zhen.data import load_sample
from zhen.finetuning import tokenize_direction
from zhen.hub import generation_config_for


generation_logger = logging.get_logger("transformers.generation.utils")


pytestmark = pytest.mark.usefixtures("module_accelerator_state")


def test_exported_generation_config_leaves_the_length_to_the_user(tiny_model):
    config = generation_config_for(tiny_model.config, num_beams=4)
    assert config.max_new_tokens is None
    assert config.max_length == 256 == tiny_model.config.max_position_embeddings
    assert (config.max_length_ratio, config.max_length_offset, config.num_beams) == (1.5, 10, 4)


def test_bare_generate_stops_within_the_position_table(tiny_tokenizer):
    torch.manual_seed(0)
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=len(tiny_tokenizer))).eval()
    model.generation_config = generation_config_for(model.config, num_beams=1)
    tiny_tokenizer.src_lang = "en"
    inputs = tiny_tokenizer(["Hello."], return_tensors="pt")
    # An untrained model that may not end: generation must stop at the table's end, not fail past it.
    output = model.generate(**inputs, forced_bos_token_id=5, bad_words_ids=[[tiny_tokenizer.eos_token_id]])
    assert output.shape == (1, 256)


def evaluate_with_generation_max_length(model, tokenizer, output_dir, max_length: int):
    pairs = load_sample("train").select(range(8))
    args = Seq2SeqTrainingArguments(
        output_dir=str(output_dir),
        predict_with_generate=True,
        generation_max_length=max_length,
        per_device_eval_batch_size=8,
        use_cpu=True,
        report_to="none",
    )
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    trainer = Seq2SeqTrainer(model=model, args=args, processing_class=tokenizer, data_collator=collator)
    with CaptureLogger(generation_logger) as captured:
        predictions = trainer.predict(tokenize_direction(pairs, tokenizer, "en", "zh")).predictions
    return predictions, captured.out


def test_seq2seq_trainer_generation_max_length_applies_without_warnings(tiny_checkpoint, tiny_tokenizer, tmp_path):
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_checkpoint)
    model.generation_config = generation_config_for(model.config, num_beams=1)
    pad = tiny_tokenizer.pad_token_id
    predictions, log = evaluate_with_generation_max_length(model, tiny_tokenizer, tmp_path, max_length=4)
    # Trainer pads the predictions to the generation config's max_length; nothing was generated past 4 tokens.
    assert (predictions[:, 4:] == pad).all() and (predictions[:, 3] != pad).any() and "max_new_tokens" not in log
    # Negative control: a pinned max_new_tokens (what exports used to carry) overrides it, with a warning.
    model.generation_config.max_new_tokens = 255
    predictions, log = evaluate_with_generation_max_length(model, tiny_tokenizer, tmp_path, max_length=4)
    assert (predictions[:, 4:] != pad).any() and "Both `max_new_tokens` (=255) and `max_length`(=4)" in log


def test_make_hub_ready_drops_a_pinned_max_new_tokens(tiny_checkpoint, tmp_path):
    folder = tmp_path / "old-export"
    shutil.copytree(tiny_checkpoint, folder)
    GenerationConfig(
        decoder_start_token_id=1, eos_token_id=2, pad_token_id=0, num_beams=4, max_new_tokens=255
    ).save_pretrained(folder)
    hub.make_hub_ready(folder)
    saved = json.loads((folder / "generation_config.json").read_text())
    assert "max_new_tokens" not in saved
    assert (saved["max_length"], saved["num_beams"], saved["max_length_ratio"], saved["max_length_offset"]) == (
        256,
        4,
        1.5,
        10,
    )
