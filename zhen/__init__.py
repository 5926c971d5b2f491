# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""zhen: an English⇄Chinese encoder-decoder Transformer native to Hugging Face Transformers.

Importing zhen registers its classes with the Auto classes, so `AutoConfig`, `AutoModel`, `AutoModelForSeq2SeqLM` and
`AutoTokenizer` load zhen checkpoints, and marks them for custom-code sharing, so a saved checkpoint carries its own
code and loads with `trust_remote_code=True` where zhen is not installed.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM, AutoTokenizer

from .configuration_zhen import PRESETS, ZhenConfig
from .modeling_zhen import ZhenForConditionalGeneration, ZhenModel, ZhenPreTrainedModel
from .pipeline_zhen import ZhenTranslationPipeline
from .tokenization_zhen import ZhenTokenizerFast, normalize_lang
from .translation import translate


__version__ = "0.1.0"

AutoConfig.register(ZhenConfig.model_type, ZhenConfig, exist_ok=True)
AutoModel.register(ZhenConfig, ZhenModel, exist_ok=True)
AutoModelForSeq2SeqLM.register(ZhenConfig, ZhenForConditionalGeneration, exist_ok=True)
AutoTokenizer.register(ZhenConfig, tokenizer_class=ZhenTokenizerFast, exist_ok=True)

ZhenConfig.register_for_auto_class()
ZhenModel.register_for_auto_class("AutoModel")
ZhenForConditionalGeneration.register_for_auto_class("AutoModelForSeq2SeqLM")

__all__ = [
    "PRESETS",
    "ZhenConfig",
    "ZhenPreTrainedModel",
    "ZhenModel",
    "ZhenForConditionalGeneration",
    "ZhenTokenizerFast",
    "ZhenTranslationPipeline",
    "normalize_lang",
    "translate",
]
