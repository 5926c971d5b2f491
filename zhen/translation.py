# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Translating text with a zhen checkpoint: [`translate`] and [`load_model_and_tokenizer`].

The target language code is always forced as the first generated token. A model that is not told which language to
write picks one on its own, or loops (untagged opus-mt en–zh models answer "你好你好…"), so a missing target language
is an error rather than a default.
"""

import contextlib
import os
from collections.abc import Callable, Iterable

import torch
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
from transformers.utils import logging

from . import hardware
from .fast_generation import (
    FastDecoder,
    decoding_model,
    decoding_weights,
    default_batch_size,
    refuse_generate_in_open_session,
    unsupported_options,
)
from .layer_steps import submodules
from .modeling_zhen import ZhenForConditionalGeneration
from .pipeline_zhen import default_max_new_tokens, max_new_tokens_limit
from .pipeline_zhen import max_source_tokens as model_max_source_tokens
from .safe_io import is_clearly_a_path
from .text_checks import check_text
from .tokenization_zhen import normalize_lang


logger = logging.get_logger(__name__)

DEFAULT_BATCH_SIZE = hardware.DEFAULT_BATCH_SIZE


def load_model_and_tokenizer(model, tokenizer=None, *, device=None, dtype=None, int8: bool = False):
    """
    Load a zhen model and its tokenizer, or pass through ones already loaded.

    Args:
        model (`str`, `os.PathLike` or `PreTrainedModel`):
            A checkpoint folder or Hub id, or a loaded model.
        tokenizer (`str`, `os.PathLike` or `ZhenTokenizerFast`, *optional*):
            A tokenizer folder or Hub id, or a loaded tokenizer. Defaults to the model's folder.
        device (`str` or `torch.device`, *optional*):
            Where to put a model loaded from a path (a loaded model stays where it is). Defaults to the CPU.
        dtype (`str` or `torch.dtype`, *optional*):
            dtype of a model loaded from a path. Defaults to float32, whatever the checkpoint holds: zhen's decoding
            sessions choose each machine's precision from float32 weights (bf16 copies where the CPU or GPU computes
            bf16 natively, [`zhen.fast_generation.session_weights`]), and a checkpoint saved in bf16 or fp16 would
            otherwise decode several times slower on a CPU without bf16 instructions. `"auto"` keeps the
            checkpoint's dtype (half the memory of a bf16 checkpoint in float32).
        int8 (`bool`, *optional*, defaults to `False`):
            Return an int8 copy of the model ([`zhen.quantization.quantize_dynamic`]) for fast CPU inference: about
            1.5x the float32 speed of zhen's decoder, at a BLEU cost that `benchmarks/bleu_int8.py` measures.

    Returns:
        `(model, tokenizer)`.

    Raises:
        `FileNotFoundError` for a local path that does not exist (a string that can only be a path, or one that is
        not a valid Hub id); `OSError` for a Hub id that cannot be loaded; `ValueError` for a folder that is not a
        zhen checkpoint, a tokenizer without zhen's language codes, or `int8` with a model that is not on the CPU.
    """
    if isinstance(model, (str, os.PathLike)):
        if tokenizer is None:
            tokenizer = model
        path = _checked_checkpoint_path(model)
        model = _from_pretrained(AutoModelForSeq2SeqLM, path, dtype=dtype or torch.float32)
        if device is not None:
            model.to(device)
        model.eval()
    if int8:
        if model.device.type != "cpu":
            raise ValueError(
                f"int8 inference runs on the CPU; the model is on {model.device}. Use device='cpu' (--device cpu)."
            )
        from .quantization import quantize_dynamic

        model = quantize_dynamic(model)
    if tokenizer is None:
        raise ValueError("With a loaded model, pass its tokenizer too (a folder, Hub id or loaded tokenizer).")
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = _from_pretrained(AutoTokenizer, _checked_checkpoint_path(tokenizer, "tokenizer_config.json"))
    if not hasattr(tokenizer, "get_lang_id"):
        raise ValueError(
            f"{type(tokenizer).__name__} is not a zhen tokenizer (it has no language codes). Load the tokenizer saved "
            "with the checkpoint (AutoTokenizer.from_pretrained(folder) after `import zhen`)."
        )
    return model, tokenizer


def _checked_checkpoint_path(path, required_file: str = "config.json") -> str:
    """`path` if it is a checkpoint folder or a Hub model id; a clear error for a path that names no checkpoint.

    A local folder wins over a Hub id of the same name. Anything that can only be a path (`./x`, `/x`, `~/x`, `a/b/c`,
    an existing file) and is not a folder is reported as missing; any other string must be a valid Hub repo id."""
    path = str(path)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, required_file)):
            raise ValueError(
                f"{path} is not a zhen checkpoint: it has no {required_file}. Point to the folder that zhen-train, "
                "zhen-finetune or save_pretrained wrote (model.safetensors, config.json, tokenizer files)."
            )
        return path
    if is_clearly_a_path(path):
        raise FileNotFoundError(f"No checkpoint folder at {path}: check the path (it must be a folder, not a file).")
    try:
        validate_repo_id(path)
    except HFValidationError:
        raise FileNotFoundError(
            f"No checkpoint folder at {path}, and {path!r} is not a Hub model id (owner/name) either: check the path."
        ) from None
    return path


def _from_pretrained(loader, path: str, **kwargs):
    """`loader.from_pretrained(path)`, with an error that says whether a folder or a Hub id was tried."""
    try:
        return loader.from_pretrained(path, **kwargs)
    except OSError as error:
        if os.path.isdir(path):
            raise
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise OSError(
            f"There is no checkpoint folder {path} here, and the Hub model {path!r} could not be loaded "
            f"({first_line}). Check the path or the Hub id; offline (HF_HUB_OFFLINE=1), only models already in the "
            "Hugging Face cache load."
        ) from error


def resolve_languages(src_lang: str | None, tgt_lang: str | None) -> tuple[str, str]:
    """
    Normalise a translation direction to `("en", "zh")` or `("zh", "en")`.

    `tgt_lang` is required; `src_lang` defaults to the other language. Aliases such as `"zh-CN"` are accepted.
    """
    if tgt_lang is None:
        raise ValueError(
            "The target language is required: pass tgt_lang='zh' or tgt_lang='en' (--tgt on the command line). zhen "
            "always forces the target language code, since a model left to choose may write the wrong language."
        )
    tgt_lang = normalize_lang(tgt_lang)
    src_lang = normalize_lang(src_lang) if src_lang is not None else ("zh" if tgt_lang == "en" else "en")
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang and tgt_lang are both {src_lang!r}; zhen translates between 'en' and 'zh'.")
    return src_lang, tgt_lang


def translate(
    texts: str | Iterable[str],
    model,
    tokenizer=None,
    *,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    num_beams: int | None = None,
    batch_size: int | None = None,
    max_new_tokens: int | None = None,
    max_source_tokens: int | None = None,
    progress: bool = False,
    on_truncate: Callable[[int, int, int], None] | None = None,
    streams: int | None = None,
    **generate_kwargs,
) -> str | list[str]:
    """
    Translate texts between English and Chinese with a zhen model.

    Texts are sorted by length and translated in batches, and the translations come back in input order. Empty or
    whitespace-only texts give `""` without running the model. The model runs on its own device and dtype, in
    `torch.inference_mode()` and eval mode (its training mode is restored afterwards, so a trainer can call this for
    validation); the tokenizer's `src_lang`/`tgt_lang` are restored too.

    Args:
        texts (`str` or iterable of `str`):
            What to translate. A single string gives a single string back.
        model (`str`, `os.PathLike` or `PreTrainedModel`):
            A checkpoint folder or Hub id, or a loaded model.
        tokenizer (`str`, `os.PathLike` or `ZhenTokenizerFast`, *optional*):
            Defaults to the model's folder; required with a loaded model.
        src_lang (`str`, *optional*):
            Source language, `"en"` or `"zh"` (aliases such as `"en-US"` accepted). Defaults to the language that is
            not `tgt_lang`.
        tgt_lang (`str`):
            Target language, `"en"` or `"zh"`. Required: its code is forced as the first generated token.
        num_beams (`int`, *optional*):
            Beam size; defaults to the checkpoint's generation config (greedy if it sets none).
        batch_size (`int`, *optional*):
            Texts per batch (with beam search, `num_beams` decoder rows each). Lower it to bound memory: each stream's
            caches grow with batch size x beams x output length. Defaults to 64; for greedy search in zhen's float32
            or bf16 session on a CPU (`zhen.fast_generation.session_weights`: not an int8 model) up to 128, while
            each stream still gets four batches ([`zhen.fast_generation.default_batch_size`]).
        max_new_tokens (`int`, *optional*):
            Most tokens to generate per text. Defaults, per batch, to `1.5 * longest source + 10`, at most 512. Never
            more than the decoder's position table holds.
        max_source_tokens (`int`, *optional*):
            Longest source in tokens (language code and `</s>` included); longer texts are truncated, keeping their
            start. Defaults to the model's position table (`max_position_embeddings`), none for RoPE models.
        progress (`bool`, *optional*, defaults to `False`):
            Show a tqdm progress bar over batches.
        on_truncate (`Callable[[int, int, int], None]`, *optional*):
            Called as `on_truncate(index, num_tokens, limit)` for each truncated text instead of logging a warning.
        streams (`int`, *optional*):
            Batches decoded at once, each in its own thread with its share of PyTorch's threads
            ([`zhen.fast_generation.FastDecoder.generate_batches`]: greedy search decodes the tails of a stream's
            batches together, [`zhen.pooled_tails`]), never more than there are batches: a few texts decode in one
            batch with all threads. Defaults to [`zhen.hardware.decoding_streams`]: on a CPU one per thread, at most
            4; on a GPU 1. Each stream keeps its own caches. Options that only `model.generate` implements decode one
            batch at a time. Where this thread has a `FastDecoder` session open for the model, the call decodes in it
            (its session weights made once for many calls).
        generate_kwargs:
            Passed to `model.generate`, e.g. `no_repeat_ngram_size=3`, `length_penalty=1.0`, `do_sample=True`.

    Returns:
        `str` for a string input, else `list[str]` in input order.

    Example:

    ```python
    >>> import zhen
    >>> zhen.translate("I love nature.", model="zhen-small", tgt_lang="zh")
    '我爱大自然。'
    >>> zhen.translate(["你好。", "谢谢！"], model="zhen-small", tgt_lang="en", num_beams=4)
    ['Hello.', 'Thank you!']
    ```
    """
    single = isinstance(texts, str)
    texts = [texts] if single else list(texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{index}] is of type {type(text).__name__}, not a string: {text!r}")
        check_text(text, f"texts[{index}]")
    src_lang, tgt_lang = resolve_languages(src_lang, tgt_lang)
    if "forced_bos_token_id" in generate_kwargs:
        raise ValueError("Choose the output language with `tgt_lang`, not `forced_bos_token_id`.")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    if streams is not None and streams < 1:
        raise ValueError(f"streams must be at least 1, got {streams}.")
    if generate_kwargs.get("num_return_sequences", 1) != 1:
        raise ValueError("translate returns one translation per text; call model.generate for several.")
    model, tokenizer = load_model_and_tokenizer(model, tokenizer)

    todo = [index for index, text in enumerate(texts) if text.strip()]
    ids = _encode_sources(tokenizer, [texts[i] for i in todo], src_lang, tgt_lang)
    limit = max_source_tokens or model_max_source_tokens(model.config)
    for position, index in enumerate(todo):
        if limit is not None and len(ids[position]) > limit:
            (on_truncate or _warn_truncated)(index, len(ids[position]), limit)
            ids[position] = ids[position][: limit - 1] + [tokenizer.eos_token_id]

    generate_kwargs["forced_bos_token_id"] = tokenizer.get_lang_id(tgt_lang)
    if num_beams is not None:
        generate_kwargs["num_beams"] = num_beams
    outputs = [""] * len(texts)
    fast = isinstance(model, ZhenForConditionalGeneration) and not unsupported_options(model, **generate_kwargs)
    open_session = FastDecoder.open_in_this_thread(model)
    was_training = model.training
    # bf16 weights on a CPU that emulates bf16 decode through a float32 copy; not kept for a model in training
    decoded = decoding_model(model, keep=not was_training) if fast and open_session is None else model
    streams = streams or hardware.decoding_streams(model.device)
    if batch_size is None and not fast:
        batch_size = DEFAULT_BATCH_SIZE
    elif batch_size is None:
        weights = decoding_weights(decoded)
        beams = generate_kwargs.get("num_beams") or model.generation_config.num_beams or 1
        batch_size = default_batch_size(weights, len(todo), streams, beams, model.device)
    order = sorted(range(len(todo)), key=lambda position: -len(ids[position]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    in_training = any(module.training for module in submodules(model))
    if in_training:  # `eval()` sets every module again, which a call of one short text would pay each time
        model.eval()

    def inputs(batch: list[int]) -> dict:
        """`generate`'s arguments for a batch."""
        batch_ids = [ids[position] for position in batch]
        lengths = _length_kwargs(batch_ids, max_new_tokens, generate_kwargs, model.config, model.generation_config)
        padded = tokenizer.pad({"input_ids": batch_ids}, return_tensors="pt").to(model.device)
        return {**padded, **generate_kwargs, **lengths}

    def translate_batch(batch: list[int]) -> list[str]:
        return _generate(model, tokenizer, inputs(batch))

    if not fast:
        refuse_generate_in_open_session(model, **generate_kwargs)
    # A model in training (a validation pass) will change: its session copies of the weights are not kept.
    own_session = FastDecoder(decoded, keep_copies=not was_training) if fast and not open_session else None
    session = contextlib.nullcontext(open_session) if own_session is None else own_session
    try:
        with torch.inference_mode(), session as decoder:
            if decoder is None:
                results = map(translate_batch, batches)
            else:  # greedy search decodes the tails of several batches together ([`zhen.pooled_tails`])
                outputs_ids = decoder.generate_batches([inputs(batch) for batch in batches], streams)
                results = (tokenizer.batch_decode(output_ids, skip_special_tokens=True) for output_ids in outputs_ids)
            if progress:
                from tqdm.auto import tqdm

                results = tqdm(results, total=len(batches), desc=f"Translating {src_lang}→{tgt_lang}", unit="batch")
            for batch, translations in zip(batches, results):
                for position, translation in zip(batch, translations):
                    outputs[todo[position]] = translation
    finally:
        if in_training:
            model.train(was_training)
    return outputs[0] if single else outputs


def _encode_sources(tokenizer, texts, src_lang, tgt_lang) -> list[list[int]]:
    """Token ids `[src code] tokens </s>` of each text, untruncated; the tokenizer's languages are left as found."""
    saved = tokenizer.src_lang, tokenizer.tgt_lang
    try:
        tokenizer.src_lang, tokenizer.tgt_lang = src_lang, tgt_lang
        # split_special_tokens: "<s>" or "__zh__" in a text is text, not a control token
        return tokenizer(texts, add_special_tokens=True, split_special_tokens=True)["input_ids"] if texts else []
    finally:
        tokenizer.src_lang, tokenizer.tgt_lang = saved


def _warn_truncated(index: int, num_tokens: int, limit: int) -> None:
    logger.warning(
        f"Text {index} has {num_tokens} tokens, more than the {limit} the model reads; only its start was translated."
    )


def _length_kwargs(batch_ids, max_new_tokens, generate_kwargs, config, generation_config) -> dict:
    if "max_length" in generate_kwargs:
        return {}
    if max_new_tokens is None:
        return {"max_new_tokens": default_max_new_tokens(max(map(len, batch_ids)), config, generation_config)}
    limit = max_new_tokens_limit(config)
    if limit is not None and max_new_tokens > limit:
        logger.warning_once(f"max_new_tokens={max_new_tokens} is capped at {limit}, what the position table holds.")
        max_new_tokens = limit
    return {"max_new_tokens": max_new_tokens}


def _generate(model, tokenizer, inputs: dict) -> list[str]:
    """Decode with `model.generate`, for options zhen's lean decoder does not implement (sampling, repetition
    penalties, `synced_gpus`, ...)."""
    if "max_new_tokens" in inputs:
        inputs.setdefault("max_length", None)  # the checkpoint's max_length would compete with it
    return tokenizer.batch_decode(model.generate(**inputs), skip_special_tokens=True)


__all__ = ["load_model_and_tokenizer", "resolve_languages", "translate"]
