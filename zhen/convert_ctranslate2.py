# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Export zhen checkpoints to CTranslate2, the C++ inference engine (`pip install "zhen-transformer[bench]"`).

Importing this module registers a `ZhenConfig` loader with CTranslate2's Transformers converter, which picks loaders
by config class name, so both of these work:

```python
from zhen.convert_ctranslate2 import convert
convert("checkpoints/zhen-base", "zhen-base-ct2", quantization="int8")
```

```bash
zhen-export-ct2 checkpoints/zhen-base zhen-base-ct2 --quantization int8
```

Every variant zhen's config allows maps onto CTranslate2's Transformer spec: pre- or post-norm (`pre_norm`, with the
final LayerNorm of pre-norm stacks), sinusoidal or learned position tables (exported as the table itself, so the layout
cannot drift), RoPE in the non-interleaved "rotate half" layout on both self-attentions and none on cross-attention
(`rotary_dim=0`, `rotary_interleave=False`), the fused `qkv_proj`/`kv_proj` projections as they are, tied or separate
embeddings. Translate with the target language code as a one-token prefix, `target_prefix=[["__zh__"]]`, or with
`CTranslate2Generator` here, which takes and returns token ids like `model.generate`. Greedy outputs equal the PyTorch
model's (`tests/test_ctranslate2.py`); so do beam outputs with `length_penalty=0`, while with a length penalty
CTranslate2 ranks finished hypotheses by GNMT's `((5 + length) / 6) ** length_penalty`, not Transformers'
`length ** length_penalty`, and may pick a different one.
"""

import copy
import os
from collections.abc import Callable

import torch

from .safe_io import CT2_FILES, atomic_directory, check_output_folder, check_replaceable_folder, is_ctranslate2_export


try:
    import ctranslate2
    from ctranslate2.converters.transformers import ModelLoader, TransformersConverter, register_loader
    from ctranslate2.specs import attention_spec, common_spec, transformer_spec
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'zhen.convert_ctranslate2 needs CTranslate2: pip install "zhen-transformer[bench]" (or ctranslate2).'
    ) from error


_ACTIVATIONS = {
    "relu": common_spec.Activation.RELU,
    "gelu": common_spec.Activation.GELU,
    "gelu_new": common_spec.Activation.GELUTanh,
    "gelu_pytorch_tanh": common_spec.Activation.GELUTanh,
    "gelu_fast": common_spec.Activation.GELUTanh,
    "silu": common_spec.Activation.SWISH,
    "swish": common_spec.Activation.SWISH,
}
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>", "__en__", "__zh__"]  # ids 0-5, see tokenization_zhen.py


class _PlaceholderVocabulary:
    """Token strings for a model saved without a tokenizer (benchmarks, tests): zhen's special tokens, then `<id>`."""

    bos_token, eos_token, unk_token = "<s>", "</s>", "<unk>"

    def __init__(self, vocab_size: int):
        self.tokens = SPECIAL_TOKENS + [f"<{i}>" for i in range(len(SPECIAL_TOKENS), vocab_size)]

    def get_vocab(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(self.tokens)}

    def convert_ids_to_tokens(self, index: int) -> str:
        return self.tokens[index]


def _rotary_options(config) -> dict:
    """RoPE on both self-attentions, non-interleaved; of the RoPE types only CTranslate2's own (default, linear)."""
    rope = config.rope_parameters or {}
    options = dict(rotary_dim=0, rotary_interleave=False, rotary_base=rope.get("rope_theta") or config.default_theta)
    rope_type = rope.get("rope_type", "default")
    if rope_type == "linear":
        options.update(rotary_scaling_type=attention_spec.RotaryScalingType.Linear,
                       rotary_scaling_factor=float(rope["factor"]))  # fmt: skip
    elif rope_type != "default":
        raise NotImplementedError(
            f"CTranslate2 has no RoPE of type {rope_type!r}; export a model with rope_type 'default' or 'linear'."
        )
    return options


@register_loader("ZhenConfig")
class ZhenLoader(ModelLoader):
    """Builds a CTranslate2 `TransformerSpec` from a [`ZhenForConditionalGeneration`]."""

    @property
    def architecture_name(self):
        return "AutoModelForSeq2SeqLM"  # zhen registers itself there when imported

    def get_model_spec(self, model):
        config = model.config
        if config.activation_function not in _ACTIVATIONS:
            raise NotImplementedError(f"CTranslate2 has no activation {config.activation_function!r}")
        if config.encoder_attention_heads != config.decoder_attention_heads:
            raise NotImplementedError("CTranslate2's Transformer spec has one head count for encoder and decoder")
        rope = config.position_embedding_type == "rope"
        rotary = _rotary_options(config) if rope else {}
        common = dict(pre_norm=config.normalize_before, activation=_ACTIVATIONS[config.activation_function])
        encoder = transformer_spec.TransformerEncoderSpec(
            config.encoder_layers, config.encoder_attention_heads, **common, **rotary
        )
        decoder = transformer_spec.TransformerDecoderSpec(
            config.decoder_layers, config.decoder_attention_heads, **common, **rotary
        )
        spec = transformer_spec.TransformerSpec(encoder, decoder)
        self.set_stack(spec.encoder, model.model.encoder)
        self.set_stack(spec.decoder, model.model.decoder)
        self.set_linear(spec.decoder.projection, model.lm_head)
        return spec

    def set_stack(self, spec, stack):
        spec.scale_embeddings = stack.embed_scale
        self.set_embeddings(
            spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings, stack.embed_tokens
        )
        if stack.position_embedding_type != "rope":
            spec.position_encodings.encodings = stack.embed_positions.weight
        if isinstance(stack.layer_norm, torch.nn.LayerNorm):
            self.set_layer_norm(spec.layer_norm, stack.layer_norm)
        for layer_spec, layer in zip(spec.layer, stack.layers):
            self.set_linear(layer_spec.self_attention.linear[0], layer.self_attn.qkv_proj)
            self.set_linear(layer_spec.self_attention.linear[1], layer.self_attn.out_proj)
            self.set_layer_norm(layer_spec.self_attention.layer_norm, layer.self_attn_layer_norm)
            if hasattr(layer, "encoder_attn"):
                self.set_linear(layer_spec.attention.linear[0], layer.encoder_attn.q_proj)
                self.set_linear(layer_spec.attention.linear[1], layer.encoder_attn.kv_proj)
                self.set_linear(layer_spec.attention.linear[2], layer.encoder_attn.out_proj)
                self.set_layer_norm(layer_spec.attention.layer_norm, layer.encoder_attn_layer_norm)
            self.set_linear(layer_spec.ffn.linear_0, layer.mlp.fc1)
            self.set_linear(layer_spec.ffn.linear_1, layer.mlp.fc2)
            self.set_layer_norm(layer_spec.ffn.layer_norm, layer.final_layer_norm)

    def get_vocabulary(self, model, tokenizer):
        """The tokenizer's tokens by id, then a placeholder `<unused_i>` for each embedding row past them (`zhen-train`
        rounds the vocabulary up to a multiple of 8; those rows are never targets)."""
        tokens = super().get_vocabulary(model, tokenizer)
        vocab_size = model.config.vocab_size
        if len(tokens) > vocab_size:
            raise ValueError(
                f"The tokenizer has {len(tokens)} tokens but the model only {vocab_size} embeddings: this tokenizer "
                "does not belong to this model. Save the model with the tokenizer it was trained with."
            )
        return tokens + [f"<unused_{i}>" for i in range(len(tokens), vocab_size)]

    def set_vocabulary(self, spec, tokens):
        spec.register_source_vocabulary(tokens)
        spec.register_target_vocabulary(tokens)

    def set_config(self, config, model, tokenizer):
        config.bos_token = tokenizer.bos_token
        config.eos_token = tokenizer.eos_token
        config.unk_token = tokenizer.unk_token
        config.decoder_start_token = tokenizer.convert_ids_to_tokens(model.config.decoder_start_token_id)
        config.layer_norm_epsilon = model.model.encoder.layers[0].final_layer_norm.eps


class _InMemoryConverter(TransformersConverter):
    """CTranslate2's converter fed with an already loaded model (and tokenizer, or placeholder tokens)."""

    def __init__(self, model, tokenizer=None):
        super().__init__("<in memory>")
        self.model, self.tokenizer = model, tokenizer or _PlaceholderVocabulary(model.config.vocab_size)

    def _load(self):
        model = self.model if self.model.dtype == torch.float32 else copy.deepcopy(self.model).float()
        with torch.no_grad():
            return ZhenLoader()(model, self.tokenizer)


def convert(model, output_dir: str, quantization: str | None = None, tokenizer=None, force: bool = False) -> str:
    """Write a CTranslate2 model directory for a zhen checkpoint.

    The export is written to a temporary folder next to `output_dir` and renamed into place when complete, so a
    failed conversion leaves an existing `output_dir` as it was.

    Args:
        model: a checkpoint directory (with its tokenizer) or Hub id, or a loaded [`ZhenForConditionalGeneration`].
        output_dir: where to write `model.bin`, `config.json` and the vocabularies. It may not be the checkpoint
            folder, lie inside it or contain it, even with `force`.
        quantization: CTranslate2 weight type: `None` (keep float32), `"int8"`, `"int8_float32"`, `"int16"`,
            `"bfloat16"`, `"float16"`, ...; the compute type can still be chosen when loading.
        tokenizer: token strings for an in-memory model; without one, placeholder tokens `<6>`, `<7>`, ... are
            used, which suits `translate_ids`.
        force: replace an existing `output_dir` that holds an earlier CTranslate2 export. A folder holding anything
            else (a checkpoint, other files) is never replaced.

    Raises:
        [`zhen.safe_io.UnsafeOutputError`] (a `ValueError`) for an `output_dir` that overlaps the checkpoint, holds
        other files, or holds an export while `force` is off.
    """
    if isinstance(model, (str, os.PathLike)):
        check_output_folder(output_dir, [model], flag="The CTranslate2 output folder")
        converter = TransformersConverter(str(model))
    else:
        converter = _InMemoryConverter(model, tokenizer)
    check_replaceable_folder(
        output_dir,
        force,
        allowed=CT2_FILES,
        required="model.bin",
        what="a CTranslate2 export",
        flag="--force (force=True)",
        looks_right=is_ctranslate2_export,
    )
    with atomic_directory(output_dir) as staging:
        converter.convert(str(staging), quantization=quantization)
    return str(output_dir)


class CTranslate2Generator:
    """A converted model behind zhen's `generate` interface: token ids in, token ids out.

    `generate` returns what greedy `model.generate` returns: `(batch, 1 + length)` ids starting with the decoder start
    token, then the forced language code and the translation, `</s>`, and padding. Threads default to torch's count.
    """

    def __init__(self, model_dir: str, compute_type: str = "default", device: str = "cpu", **translator_kwargs):
        import json

        threads = torch.get_num_threads()
        translator_kwargs.setdefault("intra_threads", threads)
        try:
            self.translator = ctranslate2.Translator(
                str(model_dir), device=device, compute_type=compute_type, **translator_kwargs
            )
        finally:  # CTranslate2 sets the OpenMP threads PyTorch shares to its `intra_threads`: give PyTorch its own back
            torch.set_num_threads(threads)
        with open(os.path.join(model_dir, "config.json")) as f:
            config = json.load(f)
        with open(os.path.join(model_dir, "shared_vocabulary.json")) as f:
            self.tokens = json.load(f)
        self.index = {token: i for i, token in enumerate(self.tokens)}
        self.start_id = self.index[config["decoder_start_token"]]
        self.pad_id = self.index.get("<pad>", 0)

    def generate(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        forced_bos_token_id: int | None = None,
        num_beams: int = 1,
        max_new_tokens: int = 64,
        min_new_tokens: int = 0,
        length_penalty: float = 1.0,
        asynchronous: bool = False,
    ) -> torch.LongTensor | Callable[[], torch.LongTensor]:
        """The ids; with `asynchronous=True`, at once a function that waits for them (batches submitted one after
        another run in parallel on a translator with `inter_threads > 1`)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        source = [[self.tokens[i] for i in row[mask.bool()].tolist()] for row, mask in zip(input_ids, attention_mask)]
        prefix = None if forced_bos_token_id is None else [[self.tokens[forced_bos_token_id]]] * len(source)
        results = self.translator.translate_batch(
            source,
            target_prefix=prefix,
            beam_size=num_beams,
            max_decoding_length=max_new_tokens,
            min_decoding_length=min_new_tokens,
            length_penalty=length_penalty,
            return_end_token=True,
            asynchronous=asynchronous,
        )
        if asynchronous:
            return lambda: self._ids([result.result() for result in results])
        return self._ids(results)

    def _ids(self, results) -> torch.LongTensor:
        rows = [[self.start_id] + [self.index[t] for t in result.hypotheses[0]] for result in results]
        width = max(map(len, rows))
        return torch.tensor([row + [self.pad_id] * (width - len(row)) for row in rows])


__all__ = ["convert", "CTranslate2Generator", "ZhenLoader"]
