# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Exporting a zhen model to ONNX, and translating with the exported graphs on onnxruntime.

[`export_onnx`] writes three graphs with `torch.onnx.export(..., dynamo=True)`, in the layout Optimum uses for Marian
and other encoder-decoder models, so that tools written for that layout find what they expect:

- `encoder_model.onnx`: `input_ids`, `attention_mask` -> `last_hidden_state`;
- `decoder_model.onnx`: `encoder_attention_mask`, `input_ids`, `encoder_hidden_states` -> `logits`,
  `present.{i}.decoder.key`, `present.{i}.decoder.value`, `present.{i}.encoder.key`, `present.{i}.encoder.value`;
- `decoder_with_past_model.onnx`: `encoder_attention_mask`, `input_ids` (one token per row),
  `past_key_values.{i}.decoder.key/value`, `past_key_values.{i}.encoder.key/value` -> `logits`,
  `present.{i}.decoder.key`, `present.{i}.decoder.value`.

Batch and sequence axes are dynamic (`batch_size`, `encoder_sequence_length`, `decoder_sequence_length`,
`past_decoder_sequence_length`); keys and values are `(batch_size, heads, length, head_dim)`. The folder also holds
`config.json`, `generation_config.json` and the tokenizer files. The decoder graph runs the first step (`<s>`) and
returns the cross-attention keys/values of the source, which every later step of `decoder_with_past_model.onnx` reads.

The graphs are float32 and computed with eager attention (SDPA's `is_causal` shortcut does not export with dynamic
shapes); [`compare_with_pytorch`] checks each against the PyTorch model, since an export can be silently wrong (the
TorchScript exporter, `dynamo=False`, gives an encoder off by 1-2 on zhen models).

[`OnnxTranslator`] translates with the three graphs on onnxruntime: greedy and beam search over token ids, forcing
the target language code first and stopping at `</s>`, with the same token ids as `model.generate` (tested for every
position type and norm placement). It needs no PyTorch at run time, only `numpy`, `onnxruntime` and, for
[`OnnxTranslator.translate`], the tokenizer. The same graphs run wherever onnxruntime does: servers (C, C++, C#,
Java, Python), mobile apps (onnxruntime-mobile) and the browser (onnxruntime-web); a program in another language
tokenizes with `tokenizer.json` (`[source code] tokens </s>`) and writes the loop of [`OnnxTranslator.generate`].
"""

import copy
import json
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .pipeline_zhen import default_max_new_tokens, max_new_tokens_limit, max_source_tokens


ENCODER_FILE = "encoder_model.onnx"
DECODER_FILE = "decoder_model.onnx"
DECODER_WITH_PAST_FILE = "decoder_with_past_model.onnx"
ONNX_FILES = (ENCODER_FILE, DECODER_FILE, DECODER_WITH_PAST_FILE)
# Code files a folder needs for AutoConfig / AutoTokenizer with trust_remote_code where zhen is not installed.
CODE_FILES = ("configuration_zhen.py", "tokenization_zhen.py")
# Graphs above this many bytes of weights keep them in a separate `.onnx.data` file (protobuf's 2 GB limit).
EXTERNAL_DATA_BYTES = 1_800_000_000
# Example sizes for tracing: all different, so that no two dynamic axes are taken to be equal.
EXAMPLE_BATCH, EXAMPLE_SOURCE, EXAMPLE_TARGET, EXAMPLE_PAST = 2, 7, 3, 5


def cache_names(prefix: str, num_layers: int, cross: bool = True) -> list[str]:
    """`{prefix}.{i}.decoder.key`, `.decoder.value` (and `.encoder.key`, `.encoder.value`) for each layer: Optimum's
    names for self- and cross-attention keys/values, in the order the graphs take and return them."""
    sides = ("decoder", "encoder") if cross else ("decoder",)
    return [f"{prefix}.{i}.{side}.{kind}" for i in range(num_layers) for side in sides for kind in ("key", "value")]


# ---------------------------------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------------------------------


def _onnx_modules():
    """The wrappers that give the model plain-tensor inputs and outputs; defined on first use, to import torch late."""
    import torch
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    from .modeling_zhen import CACHE_FIELD

    def flatten(cache, cross: bool) -> list:
        tensors = []
        for i, layer in enumerate(cache.self_attention_cache.layers):
            tensors += [layer.keys, layer.values]
            if cross:
                cross_layer = cache.cross_attention_cache.layers[i]
                tensors += [cross_layer.keys, cross_layer.values]
        return tensors

    class OnnxEncoder(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.encoder = model.get_encoder()

        def forward(self, input_ids, attention_mask):
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    class OnnxDecoder(torch.nn.Module):
        """The first decoder step(s), without a cache: logits and every layer's self- and cross-attention cache."""

        def __init__(self, model):
            super().__init__()
            self.decoder, self.lm_head = model.get_decoder(), model.get_output_embeddings()

        def forward(self, encoder_attention_mask, input_ids, encoder_hidden_states):
            outputs = self.decoder(
                input_ids=input_ids,
                encoder_hidden_states=encoder_hidden_states,
                encoder_attention_mask=encoder_attention_mask,
                use_cache=True,
            )
            return self.lm_head(outputs.last_hidden_state), *flatten(getattr(outputs, CACHE_FIELD), cross=True)

    class OnnxDecoderWithPast(torch.nn.Module):
        """One decoder step over a cache given as tensors (built into Transformers' `EncoderDecoderCache`): logits and
        the grown self-attention cache (the cross-attention one does not change)."""

        def __init__(self, model):
            super().__init__()
            self.decoder, self.lm_head = model.get_decoder(), model.get_output_embeddings()

        def forward(self, encoder_attention_mask, input_ids, *past_key_values):
            layers = [past_key_values[i : i + 4] for i in range(0, len(past_key_values), 4)]
            cache = EncoderDecoderCache(
                DynamicCache([(key, value) for key, value, _, _ in layers]),
                DynamicCache([(key, value) for _, _, key, value in layers]),
            )
            outputs = self.decoder(
                input_ids=input_ids,
                encoder_attention_mask=encoder_attention_mask,
                cache=cache,
                use_cache=True,
            )
            return self.lm_head(outputs.last_hidden_state), *flatten(getattr(outputs, CACHE_FIELD), cross=False)

    return OnnxEncoder, OnnxDecoder, OnnxDecoderWithPast


def export_onnx(
    model,
    output_dir,
    tokenizer=None,
    *,
    opset_version: int | None = None,
    check: bool = True,
    atol: float = 1e-3,
) -> Path:
    """
    Export a zhen model to ONNX: `encoder_model.onnx`, `decoder_model.onnx` and `decoder_with_past_model.onnx` (see
    the module docstring), plus its config, generation config and tokenizer, in `output_dir`.

    Args:
        model (`str`, `os.PathLike` or `ZhenForConditionalGeneration`):
            A checkpoint folder or Hub id, or a loaded model (left unchanged: a float32 copy is exported).
        output_dir (`str` or `os.PathLike`): Where to write; created if needed, existing files overwritten.
        tokenizer (*optional*): The tokenizer or its folder; defaults to the model's folder.
        opset_version (`int`, *optional*): ONNX opset; defaults to `torch.onnx.export`'s.
        check (`bool`, *optional*, defaults to `True`):
            Run the graphs on onnxruntime against PyTorch ([`compare_with_pytorch`]) and raise if they differ.
        atol (`float`, *optional*, defaults to 1e-3): Largest absolute difference `check` accepts.

    Returns:
        `Path` of `output_dir`.

    Raises:
        `ValueError` if `check` finds an output that differs from PyTorch's by more than `atol`.
    """
    import torch

    from .translation import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(model, tokenizer)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    export_model = _export_copy(model)
    config = export_model.config
    external_data = sum(p.numel() for p in export_model.parameters()) * 4 > EXTERNAL_DATA_BYTES
    encoder, decoder, decoder_with_past = (wrapper(export_model).eval() for wrapper in _onnx_modules())
    examples = _example_inputs(export_model)
    options = dict(dynamo=True, external_data=external_data, opset_version=opset_version, verbose=False)
    batch, source = {0: "batch_size"}, {0: "batch_size", 1: "encoder_sequence_length"}
    with torch.no_grad(), warnings.catch_warnings():
        # The exporter notes that inputs sharing an axis name share its constraints, which is what the names say.
        warnings.filterwarnings("ignore", message="# The axis name", category=UserWarning)
        torch.onnx.export(
            encoder,
            (examples["input_ids"], examples["attention_mask"]),
            output_dir / ENCODER_FILE,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_shapes={"input_ids": source, "attention_mask": source},
            **options,
        )
        torch.onnx.export(
            decoder,
            (examples["attention_mask"], examples["decoder_input_ids"], examples["encoder_hidden_states"]),
            output_dir / DECODER_FILE,
            input_names=["encoder_attention_mask", "input_ids", "encoder_hidden_states"],
            output_names=["logits", *cache_names("present", config.decoder_layers)],
            dynamic_shapes={
                "encoder_attention_mask": source,
                "input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
                "encoder_hidden_states": source,
            },
            **options,
        )
        past_names = cache_names("past_key_values", config.decoder_layers)
        past_axes = tuple(
            {0: "batch_size", 2: "past_decoder_sequence_length" if ".decoder." in name else "encoder_sequence_length"}
            for name in past_names
        )
        torch.onnx.export(
            decoder_with_past,
            (examples["attention_mask"], examples["next_input_ids"], *examples["past_key_values"]),
            output_dir / DECODER_WITH_PAST_FILE,
            input_names=["encoder_attention_mask", "input_ids", *past_names],
            output_names=["logits", *cache_names("present", config.decoder_layers, cross=False)],
            dynamic_shapes={"encoder_attention_mask": source, "input_ids": batch, "past_key_values": past_axes},
            **options,
        )
    _save_companions(export_model, tokenizer, output_dir)
    if check:
        differences = compare_with_pytorch(export_model, output_dir)
        failed = {name: diff for name, diff in differences.items() if not diff <= atol}
        if failed:
            raise ValueError(f"The ONNX graphs in {output_dir} differ from the PyTorch model by {failed} (> {atol}).")
    return output_dir


def _export_copy(model):
    """A float32 copy in eval mode with eager attention: SDPA's `is_causal` shortcut is a data-dependent Python
    branch that `torch.export` cannot trace with dynamic sequence lengths."""
    import torch

    export_model = copy.deepcopy(model).to(device="cpu", dtype=torch.float32).eval()
    export_model.set_attn_implementation("eager")
    return export_model


def _example_inputs(model) -> dict:
    """Inputs to trace with: a padded source, a few target tokens, and the cache that the first decoder step makes."""
    import torch

    _, decoder, _ = (wrapper(model).eval() for wrapper in _onnx_modules())
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    input_ids = torch.randint(6, vocab, (EXAMPLE_BATCH, EXAMPLE_SOURCE), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, -2:] = 0
    decoder_input_ids = torch.randint(6, vocab, (EXAMPLE_BATCH, EXAMPLE_PAST), generator=generator)
    with torch.no_grad():
        encoder_hidden_states = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)[0]
        past_key_values = decoder(attention_mask, decoder_input_ids, encoder_hidden_states)[1:]
    return dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        encoder_hidden_states=encoder_hidden_states,
        decoder_input_ids=decoder_input_ids[:, :EXAMPLE_TARGET],
        next_input_ids=torch.randint(6, vocab, (EXAMPLE_BATCH, 1), generator=generator),
        past_key_values=past_key_values,
    )


def _save_companions(model, tokenizer, output_dir: Path) -> None:
    """config.json, generation_config.json, the tokenizer and the code files that AutoTokenizer needs without zhen."""
    model.config.save_pretrained(output_dir)
    model.generation_config.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    for name in CODE_FILES:
        shutil.copyfile(Path(__file__).parent / name, output_dir / name)


def compare_with_pytorch(model, folder) -> dict[str, float]:
    """
    Largest absolute difference between each ONNX graph in `folder` (on onnxruntime) and `model` (PyTorch, float32),
    on inputs other than those the export traced with (another batch size and other lengths, padding included).

    Returns:
        `{"encoder": ..., "decoder": ..., "decoder_with_past": ...}`: the largest difference over each graph's
        outputs (logits, hidden states, keys and values).
    """
    import torch

    model = _export_copy(model)
    _, decoder, decoder_with_past = (wrapper(model).eval() for wrapper in _onnx_modules())
    sessions = _sessions(Path(folder), providers=["CPUExecutionProvider"])
    generator = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    input_ids = torch.randint(6, vocab, (3, 9), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, -4:] = 0
    target = torch.randint(6, vocab, (3, 4), generator=generator)
    next_token = torch.randint(6, vocab, (3, 1), generator=generator)
    with torch.no_grad():
        hidden = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)[0]
        first = decoder(attention_mask, target, hidden)
        step = decoder_with_past(attention_mask, next_token, *first[1:])
    layers = model.config.decoder_layers
    feeds = {
        "encoder": {"input_ids": input_ids, "attention_mask": attention_mask},
        "decoder": {"encoder_attention_mask": attention_mask, "input_ids": target, "encoder_hidden_states": hidden},
        "decoder_with_past": {
            "encoder_attention_mask": attention_mask,
            "input_ids": next_token,
            **dict(zip(cache_names("past_key_values", layers), first[1:])),
        },
    }
    expected = {"encoder": (hidden,), "decoder": first, "decoder_with_past": step}
    differences = {}
    for name, session in sessions.items():
        outputs = session.run(None, {key: value.numpy() for key, value in feeds[name].items()})
        differences[name] = max(float(np.abs(out - ref.numpy()).max()) for out, ref in zip(outputs, expected[name]))
    return differences


def _sessions(folder: Path, providers=None, session_options=None) -> dict:
    import onnxruntime

    files = {"encoder": ENCODER_FILE, "decoder": DECODER_FILE, "decoder_with_past": DECODER_WITH_PAST_FILE}
    missing = [file for file in files.values() if not (folder / file).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a zhen ONNX export: {', '.join(missing)} missing (zhen-export-onnx).")
    return {
        name: onnxruntime.InferenceSession(
            str(folder / file), sess_options=session_options, providers=providers or ["CPUExecutionProvider"]
        )
        for name, file in files.items()
    }


# ---------------------------------------------------------------------------------------------------------------------
# Translation on onnxruntime
# ---------------------------------------------------------------------------------------------------------------------


class OnnxTranslator:
    """
    Greedy and beam-search translation with the graphs that [`export_onnx`] wrote, on onnxruntime.

    [`generate`] takes and returns token ids like `model.generate(input_ids, attention_mask,
    forced_bos_token_id=...)` (float32 graphs give the same ids; tested); [`translate`] takes and returns text.

    Args:
        folder (`str` or `os.PathLike`): An export of [`export_onnx`] / `zhen-export-onnx`.
        providers (`list`, *optional*): onnxruntime execution providers; defaults to the CPU.
        session_options (`onnxruntime.SessionOptions`, *optional*): e.g. thread counts.

    Example:

    ```python
    >>> from zhen.onnx_export import OnnxTranslator
    >>> translator = OnnxTranslator("zhen-small-onnx")
    >>> translator.translate(["I love nature."], src_lang="en", tgt_lang="zh", num_beams=4)
    ['我爱大自然。']
    ```
    """

    def __init__(self, folder, *, providers=None, session_options=None):
        self.folder = Path(folder)
        sessions = _sessions(self.folder, providers, session_options)
        self.encoder, self.decoder, self.decoder_with_past = (sessions[name] for name in sessions)
        self.config = SimpleNamespace(**_read_json(self.folder / "config.json"))
        generation_file = self.folder / "generation_config.json"
        self.generation_config = SimpleNamespace(**(_read_json(generation_file) if generation_file.is_file() else {}))
        self._tokenizer = None

    @property
    def tokenizer(self):
        """The export's tokenizer (`ZhenTokenizerFast`), loaded on first use."""
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.folder)
        return self._tokenizer

    def generate(
        self,
        input_ids,
        attention_mask=None,
        *,
        forced_bos_token_id: int,
        num_beams: int | None = None,
        max_new_tokens: int | None = None,
        length_penalty: float | None = None,
        early_stopping: bool | str | None = None,
    ) -> np.ndarray:
        """
        Translate a tokenized batch, like `model.generate` with the same arguments.

        Args:
            input_ids, attention_mask (`np.ndarray` of shape `(batch, source_length)`): The tokenized source.
            forced_bos_token_id (`int`): The target language code, forced as the first generated token.
            num_beams (`int`, *optional*): 1 for greedy search; defaults to the generation config's.
            max_new_tokens (`int`, *optional*):
                At most this many generated tokens (the language code included); defaults to the source-relative
                budget of `zhen.translate` (`max_length_ratio` x source tokens + `max_length_offset`), and never
                more than the position table holds.
            length_penalty, early_stopping: Beam search's `log p / length**length_penalty` and stopping rule (`True`,
                `False` or `"never"`), with Transformers' semantics; default to the generation config's.

        Returns:
            `np.ndarray` of shape `(batch, 1 + generated_length)`: `<s>`, the language code, the translation, `</s>`,
            then padding for rows that ended earlier.
        """
        input_ids = np.asarray(input_ids, dtype=np.int64)
        attention_mask = np.ones_like(input_ids) if attention_mask is None else np.asarray(attention_mask, np.int64)
        max_length = 1 + self._max_new_tokens(max_new_tokens, int(attention_mask.sum(-1).max()))
        (hidden,) = self.encoder.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
        num_beams = num_beams or getattr(self.generation_config, "num_beams", None) or 1
        if num_beams > 1:
            hidden, attention_mask = np.repeat(hidden, num_beams, 0), np.repeat(attention_mask, num_beams, 0)
        step = _DecoderSteps(self, hidden, attention_mask)
        tokens = self._special_tokens(forced_bos_token_id, max_length)
        if num_beams == 1:
            return _greedy_search(step, len(input_ids), **tokens)
        if length_penalty is None:
            length_penalty = getattr(self.generation_config, "length_penalty", None)
            length_penalty = 1.0 if length_penalty is None else length_penalty
        if early_stopping is None:
            early_stopping = getattr(self.generation_config, "early_stopping", None) or False
        return _beam_search(step, len(input_ids), num_beams, length_penalty, early_stopping, **tokens)

    def translate(
        self,
        texts: str | Sequence[str],
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        *,
        batch_size: int = 32,
        **generate_kwargs,
    ) -> str | list[str]:
        """
        Translate `texts` (a string or a list of strings) into `tgt_lang`, in batches of `batch_size`; empty texts
        give `""`. `generate_kwargs` go to [`generate`] (`num_beams`, `max_new_tokens`, ...).

        Returns:
            A string for a string, else a list of strings in input order.
        """
        from .translation import resolve_languages

        src_lang, tgt_lang = resolve_languages(src_lang, tgt_lang)
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        tokenizer = self.tokenizer
        tokenizer.src_lang = src_lang
        limit = max_source_tokens(self.config)
        truncation = {"truncation": True, "max_length": limit} if limit else {}
        code = tokenizer.get_lang_id(tgt_lang)
        results = [""] * len(texts)
        todo = [i for i, text in enumerate(texts) if text.strip()]
        for start in range(0, len(todo), batch_size):
            rows = todo[start : start + batch_size]
            batch = tokenizer([texts[i] for i in rows], padding=True, return_tensors="np", **truncation)
            output = self.generate(
                batch["input_ids"], batch["attention_mask"], forced_bos_token_id=code, **generate_kwargs
            )
            for i, text in zip(rows, tokenizer.batch_decode(output, skip_special_tokens=True)):
                results[i] = text
        return results[0] if single else results

    def _max_new_tokens(self, max_new_tokens: int | None, source_length: int) -> int:
        limit = max_new_tokens_limit(self.config)
        if max_new_tokens is None:
            return default_max_new_tokens(source_length, self.config, self.generation_config)
        return max_new_tokens if limit is None else min(max_new_tokens, limit)

    def _special_tokens(self, forced_bos_token_id: int, max_length: int) -> dict:
        config, generation = self.config, self.generation_config
        eos = getattr(generation, "eos_token_id", None) or config.eos_token_id
        pad = getattr(generation, "pad_token_id", None)
        return dict(
            start=getattr(generation, "decoder_start_token_id", None) or config.decoder_start_token_id,
            eos=eos[0] if isinstance(eos, list) else eos,
            pad=config.pad_token_id if pad is None else pad,
            forced_bos=forced_bos_token_id,
            max_length=max_length,
        )


class _DecoderSteps:
    """The decoder of an [`OnnxTranslator`] one token at a time: the first step through `decoder_model.onnx`, which
    also returns the cross-attention keys/values of the source, the others through `decoder_with_past_model.onnx`."""

    def __init__(self, translator: OnnxTranslator, encoder_hidden_states, attention_mask):
        layers = translator.config.decoder_layers
        self.translator = translator
        self.encoder_hidden_states, self.attention_mask = encoder_hidden_states, attention_mask
        self.past_names = cache_names("past_key_values", layers)  # the order decoder_model.onnx returns them in
        self.self_past_names = cache_names("past_key_values", layers, cross=False)
        self.past = None

    def __call__(self, tokens: np.ndarray) -> np.ndarray:
        """Logits of the next token for each row, given the last token of each row, `(rows,)`."""
        feed = {"encoder_attention_mask": self.attention_mask, "input_ids": tokens[:, None].astype(np.int64)}
        if self.past is None:
            outputs = self.translator.decoder.run(None, {**feed, "encoder_hidden_states": self.encoder_hidden_states})
            self.past = dict(zip(self.past_names, outputs[1:]))
        else:
            outputs = self.translator.decoder_with_past.run(None, {**feed, **self.past})
            self.past.update(zip(self.self_past_names, outputs[1:]))
        return outputs[0][:, -1].astype(np.float32)

    def reorder(self, rows: np.ndarray) -> None:
        """Make row `i` continue the history of row `rows[i]` (beam search). The cross-attention keys/values stay:
        the beams of a sentence share its source."""
        self.past.update({name: self.past[name][rows] for name in self.self_past_names})


def _greedy_search(step: _DecoderSteps, batch: int, start, eos, pad, forced_bos, max_length) -> np.ndarray:
    """Argmax decoding; rows that produced `</s>` continue with padding until all have, as in `generate`."""
    sequences = np.full((batch, max_length), start, dtype=np.int64)
    unfinished = np.ones(batch, dtype=bool)
    for cur_len in range(1, max_length):
        logits = step(sequences[:, cur_len - 1])
        tokens = np.full(batch, forced_bos) if cur_len == 1 else logits.argmax(-1)
        tokens = np.where(unfinished, tokens, pad)
        unfinished &= tokens != eos
        sequences[:, cur_len] = tokens
        if not unfinished.any():
            return sequences[:, : cur_len + 1]
    return sequences


def _beam_search(step: _DecoderSteps, batch: int, num_beams: int, length_penalty: float, early_stopping,
                 start, eos, pad, forced_bos, max_length) -> np.ndarray:  # fmt: skip
    """Transformers' vectorised beam search (`GenerationMixin._beam_search`), step for step, as
    `zhen.search.beam_search` does it in PyTorch: keep the top `2 * num_beams` continuations, continue the
    best `num_beams` unfinished ones, move finished ones into a `num_beams`-slot set scored by
    `log p / length**length_penalty`, and stop by the same heuristic."""
    B, K = batch, num_beams
    keep = 2 * K
    is_top_k = (np.arange(keep) < K)[None]
    fill = pad or eos  # Transformers' `pad_token_id or eos_token_id[0]`: </s> where the pad id is 0
    running = np.full((B, K, max_length), fill, dtype=np.int64)
    running[:, :, 0] = start
    finished = running.copy()
    running_scores = np.zeros((B, K), dtype=np.float32)
    running_scores[:, 1:] = -1e9  # only the first beam's continuations count at the first step
    finished_scores = np.full((B, K), -1e9, dtype=np.float32)
    finished_lengths = np.zeros((B, K), dtype=np.int64)
    is_finished = np.zeros((B, K), dtype=bool)
    can_improve = np.ones((B, 1), dtype=bool)
    row_offset = np.arange(B)[:, None] * K

    for cur_len in range(1, max_length):
        logits = step(running[:, :, cur_len - 1].reshape(-1))
        if cur_len == 1:
            log_probs = np.full_like(logits, -np.inf)
            log_probs[:, forced_bos] = 0
        else:
            log_probs = _log_softmax(logits)
        vocab = log_probs.shape[-1]
        log_probs = (log_probs.reshape(B, K, vocab) + running_scores[:, :, None]).reshape(B, K * vocab)

        top_scores, top_indices = _topk(log_probs, keep)
        top_beams, top_tokens = top_indices // vocab, top_indices % vocab
        top_sequences = np.take_along_axis(running, top_beams[:, :, None], axis=1)
        top_sequences[:, :, cur_len] = top_tokens
        ends = top_tokens == eos
        if cur_len + 1 >= max_length:
            ends[:] = True

        continuing_scores = top_scores + ends.astype(np.float32) * np.float32(-1.0e9)
        best = _topk(continuing_scores, K)[1]
        running = np.take_along_axis(top_sequences, best[:, :, None], axis=1)
        running_scores = np.take_along_axis(continuing_scores, best, axis=1)
        parent_rows = (np.take_along_axis(top_beams, best, axis=1) + row_offset).reshape(-1)

        just_finished = ends & is_top_k
        scores = top_scores / np.float32(cur_len**length_penalty)
        full = np.all(is_finished, axis=-1, keepdims=True) & (early_stopping is True)
        for excluded in (full, ~can_improve, ~just_finished):
            scores = scores + excluded.astype(np.float32) * np.float32(-1.0e9)
        merged_scores = np.concatenate([finished_scores, scores], axis=1)
        slots = _topk(merged_scores, K)[1]
        finished_scores = np.take_along_axis(merged_scores, slots, axis=1)
        finished = np.take_along_axis(np.concatenate([finished, top_sequences], axis=1), slots[:, :, None], axis=1)
        lengths = np.concatenate([finished_lengths, np.full_like(top_tokens, cur_len)], axis=1)
        finished_lengths = np.take_along_axis(lengths, slots, axis=1)
        is_finished = np.take_along_axis(np.concatenate([is_finished, just_finished], axis=1), slots, axis=1)

        best_length = max_length - 1 if early_stopping == "never" and length_penalty > 0.0 else cur_len
        best_running = running_scores[:, :1] / np.float32(best_length**length_penalty)
        worst_finished = np.where(is_finished, finished_scores.min(axis=1, keepdims=True), np.float32(-1.0e9))
        can_improve = can_improve & np.any(best_running > worst_finished, axis=-1, keepdims=True)
        if not (can_improve.any() and not (is_finished.all() and early_stopping is True) and not ends.all()):
            break
        step.reorder(parent_rows)

    return finished[:, 0, : 1 + int(finished_lengths[:, 0].max())]


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def _topk(scores: np.ndarray, k: int, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The `k` largest scores of each row and their indices, best first; ties go to the lower index. In a long row
    they lie in the `k` chunks with the largest maxima, so only those are searched: `argpartition` over whole rows
    of beams x vocabulary is otherwise most of the beam search's time."""
    rows, width = scores.shape
    ranked = np.maximum(scores, np.finfo(scores.dtype).min)  # -inf scores rank above the padding below
    if width >= 4 * k * chunk:
        padded = np.pad(ranked, ((0, 0), (0, -width % chunk)), constant_values=-np.inf)
        best_chunks = np.argpartition(-padded.reshape(rows, -1, chunk).max(-1), k - 1, axis=-1)[:, :k]
        candidates = (best_chunks[:, :, None] * chunk + np.arange(chunk)).reshape(rows, -1)
        values = np.take_along_axis(padded, candidates, axis=-1)
    else:
        candidates, values = np.broadcast_to(np.arange(width), scores.shape), ranked
    top = np.take_along_axis(candidates, np.argpartition(-values, k - 1, axis=-1)[:, :k], axis=-1)
    top = np.sort(top, axis=-1)  # in index order, so that the stable sort breaks ties by index
    indices = np.take_along_axis(top, np.argsort(-np.take_along_axis(ranked, top, -1), -1, kind="stable"), -1)
    return np.take_along_axis(scores, indices, axis=-1), indices


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


__all__ = ["OnnxTranslator", "cache_names", "compare_with_pytorch", "export_onnx"]
