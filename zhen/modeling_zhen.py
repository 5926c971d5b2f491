# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""PyTorch zhen model: an encoder-decoder Transformer for English⇄Chinese translation ("Attention Is All You Need").

Reads top to bottom: positions → attention → layers → stacks → models, in the vocabulary of Transformers' Marian and
BART. One class serves every variant the config allows: sinusoidal, learned or rotary positions; pre- or post-norm;
eager, sdpa, flash or flex attention through the attention interface; the `EncoderDecoderCache` of Transformers.

This file is the plain model and travels with every checkpoint as Hub custom code. The speed work lives beside it and
plugs in through Transformers' own mechanisms (a registered attention function, swapped modules, a loss the trainer
chooses): `fast_training.py` for training, `fast_generation.py` for decoding; without them this model is complete.
"""

import copy
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache, DynamicCache, EncoderDecoderCache
from transformers.generation import GenerationMixin
from transformers.masking_utils import create_bidirectional_mask, create_causal_mask
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import (
    BaseModelOutput,
    BaseModelOutputWithPastAndCrossAttentions,
    Seq2SeqLMOutput,
    Seq2SeqModelOutput,
)
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS, dynamic_rope_update
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, PreTrainedModel, slice_logits_to_keep
from transformers.processing_utils import Unpack
from transformers.utils import TransformersKwargs, can_return_tuple, is_torchdynamo_compiling, logging
from transformers.utils.generic import merge_with_config_defaults
from transformers.utils.output_capturing import OutputRecorder, capture_outputs

from .configuration_zhen import ZhenConfig, check_rope_parameters


logger = logging.get_logger(__name__)

# Written into every saved config.json so that the checkpoint loads through all three Auto classes as Hub custom code.
AUTO_MAP = {
    "AutoConfig": "configuration_zhen.ZhenConfig",
    "AutoModel": "modeling_zhen.ZhenModel",
    "AutoModelForSeq2SeqLM": "modeling_zhen.ZhenForConditionalGeneration",
}
# The `translation` pipeline (Transformers 5 removed its own) and the decoder it translates with, copied beside the
# model code when a model is saved.
PIPELINE_FILES = (
    "pipeline_zhen.py", "fast_generation.py", "session_modules.py", "decoder_steps.py", "decoding_cache.py",
    "search.py", "layer_steps.py", "packing.py", "screened_argmax.py", "draft_decoding.py", "pooled_tails.py",
    "weight_stamps.py", "quantization.py", "hardware.py", "text_checks.py",
)  # fmt: skip
# Every code file a saved checkpoint holds: those its config.json and tokenizer_config.json name, and the pipeline's.
CODE_FILES = ("configuration_zhen.py", "modeling_zhen.py", "tokenization_zhen.py", *PIPELINE_FILES)
CUSTOM_PIPELINES = {
    "translation": {
        "impl": "pipeline_zhen.ZhenTranslationPipeline",
        "pt": ["AutoModelForSeq2SeqLM"],
        "tf": [],
        "type": "text",
    }
}


# Transformers 5.24 renamed the cache argument and output field `past_key_values` to `cache`. zhen is written with the
# new name and also takes the old one, so that a checkpoint's code runs under Transformers 5.23 and later.
CACHE_FIELD = "cache" if "cache" in Seq2SeqLMOutput.__dataclass_fields__ else "past_key_values"


def cache_argument(cache: Cache | None, kwargs: dict) -> Cache | None:
    """The cache passed as `cache`, or under its pre-5.24 name `past_key_values` (removed from `kwargs`)."""
    legacy = kwargs.pop("past_key_values", None)
    return cache if cache is not None else legacy


def shift_tokens_right(input_ids: torch.Tensor, pad_token_id: int, decoder_start_token_id: int) -> torch.Tensor:
    """Shift labels one token to the right to make decoder inputs; `-100` (ignored labels) becomes padding."""
    shifted = input_ids.new_zeros(input_ids.shape)
    shifted[:, 1:] = input_ids[:, :-1]
    shifted[:, 0] = decoder_start_token_id
    return shifted.masked_fill_(shifted == -100, pad_token_id)


# --------------------------------------------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------------------------------------------


class ZhenSinusoidalPositionalEmbedding(nn.Module):
    """Fixed sinusoidal positions of "Attention Is All You Need", laid out as Marian and fairseq do: the sines of all
    frequencies in the first half of the features, the cosines in the second half."""

    weight: torch.Tensor

    def __init__(self, num_positions: int, embedding_dim: int):
        super().__init__()
        self.num_positions, self.embedding_dim = num_positions, embedding_dim
        # Not persistent: the table is a function of its shape, so checkpoints need not carry it.
        self.register_buffer("weight", self.create_weight(), persistent=False)

    def create_weight(self) -> torch.Tensor:
        positions = torch.arange(self.num_positions, dtype=torch.float64)[:, None]
        exponents = torch.arange(0, self.embedding_dim, 2, dtype=torch.float64) / self.embedding_dim
        angles = positions / 10000**exponents  # (num_positions, ceil(dim / 2))
        table = torch.cat([angles.sin(), angles[:, : self.embedding_dim // 2].cos()], dim=-1)
        return table.float()

    def forward(self, position_ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(position_ids, self.weight)


# Adapted from transformers.models.t5gemma.modeling_t5gemma.T5GemmaRotaryEmbedding (per-stack head dimension)
class ZhenRotaryEmbedding(nn.Module):
    """Rotary position embedding (Su et al., 2021) in the non-interleaved ("rotate half") layout of Llama. Every RoPE
    type of Transformers works (`config.rope_parameters["rope_type"]`: default, linear, dynamic, yarn, ...). Returns
    the cosines and sines for `position_ids`, which [`apply_rotary_pos_emb`] applies to queries and keys."""

    inv_freq: torch.Tensor

    def __init__(self, config: ZhenConfig, head_dim: int):
        super().__init__()
        check_rope_parameters(config)
        # Transformers' RoPE functions read the head dimension from the config, and encoder and decoder may differ.
        self.config = copy.copy(config)
        self.config.head_dim = head_dim
        given = {key: value for key, value in (config.rope_parameters or {}).items() if value is not None}
        self.config.rope_parameters = {"rope_theta": config.default_theta, **given}
        self.config.standardize_rope_params()
        self.rope_type = self.config.rope_parameters["rope_type"]
        self.max_seq_len_cached = self.original_max_seq_len = config.max_position_embeddings
        rope_init_fn = self.compute_default_rope_parameters
        if self.rope_type != "default":
            rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
        inv_freq, self.attention_scaling = rope_init_fn(self.config)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("original_inv_freq", inv_freq.clone(), persistent=False)

    @staticmethod
    def compute_default_rope_parameters(config, device=None, **kwargs) -> tuple[torch.Tensor, float]:
        base, dim = config.rope_parameters["rope_theta"], config.head_dim
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device, torch.float) / dim))
        return inv_freq, 1.0

    @torch.no_grad()
    @dynamic_rope_update
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)  # (batch, seq, head_dim)
        cos, sin = emb.cos() * self.attention_scaling, emb.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


# Copied from transformers.models.llama.modeling_llama.rotate_half
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


# Adapted from transformers.models.llama.modeling_llama.apply_rotary_pos_emb
def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    """Rotate queries and keys `(batch, heads, seq, head_dim)` by the angles of their positions."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


# --------------------------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------------------------


# Adapted from transformers.models.bart.modeling_bart.eager_attention_forward (softmax in float32)
def eager_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Unpack[TransformersKwargs],
):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value).transpose(1, 2).contiguous()
    return attn_output, attn_weights


class ZhenAttention(nn.Module):
    """Multi-headed attention from "Attention Is All You Need". Self-attention projects queries, keys and values with
    one fused matrix; cross-attention projects queries from the decoder and keys and values, fused, from the encoder
    output, once per `generate` call: later steps read them from the cache."""

    def __init__(self, config: ZhenConfig, num_heads: int, is_cross_attention=False, is_causal=False, layer_idx=None):
        super().__init__()
        self.config = config
        self.num_heads = num_heads
        self.head_dim = config.d_model // num_heads
        self.scaling = self.head_dim**-0.5
        self.dropout = config.attention_dropout
        self.is_cross_attention = is_cross_attention
        self.is_causal = is_causal
        self.layer_idx = layer_idx
        if is_cross_attention:
            self.q_proj = nn.Linear(config.d_model, config.d_model)
            self.kv_proj = nn.Linear(config.d_model, 2 * config.d_model)
        else:
            self.qkv_proj = nn.Linear(config.d_model, 3 * config.d_model)
        self.out_proj = nn.Linear(config.d_model, config.d_model)

    def split_heads(self, projected: torch.Tensor, parts: int) -> tuple[torch.Tensor, ...]:
        """(batch, seq, parts * d_model) -> `parts` tensors of shape (batch, heads, seq, head_dim), views of
        `projected` (split, whose backward concatenates the parts' gradients straight into the projection's layout)."""
        return tuple(
            part.view(*part.shape[:-1], self.num_heads, self.head_dim).transpose(1, 2)
            for part in projected.split(projected.shape[-1] // parts, dim=-1)
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: Cache | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.is_cross_attention:
            (query_states,) = self.split_heads(self.q_proj(hidden_states), 1)
            key_states, value_states = self.source_keys_and_values(key_value_states, cache)
        else:
            query_states, key_states, value_states = self.split_heads(self.qkv_proj(hidden_states), 3)
            if position_embeddings is not None:
                query_states, key_states = apply_rotary_pos_emb(query_states, key_states, *position_embeddings)
            if cache is not None:
                self_attention_cache = getattr(cache, "self_attention_cache", cache)
                key_states, value_states = self_attention_cache.update(key_states, value_states, self.layer_idx)

        attention_interface: Callable = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=self.dropout if self.training else 0.0,
            scaling=self.scaling,
            **kwargs,
        )
        attn_output = attn_output.reshape(*hidden_states.shape[:-1], -1).contiguous()
        return self.out_proj(attn_output), attn_weights

    def source_keys_and_values(self, encoder_hidden_states, cache) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of the encoder output, projected once and then read from the cross-attention cache."""
        if cache is not None and cache.is_updated.get(self.layer_idx):
            layer = cache.cross_attention_cache.layers[self.layer_idx]
            return layer.keys, layer.values
        key_states, value_states = self.split_heads(self.kv_proj(encoder_hidden_states), 2)
        if cache is not None:
            key_states, value_states = cache.cross_attention_cache.update(key_states, value_states, self.layer_idx)
            cache.is_updated[self.layer_idx] = True
        return key_states, value_states


# --------------------------------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------------------------------


class ZhenMLP(nn.Module):
    """The position-wise feed-forward block: `fc2(dropout(activation(fc1(x))))`."""

    def __init__(self, config: ZhenConfig, ffn_dim: int):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, ffn_dim)
        self.activation_fn = ACT2FN[config.activation_function]
        self.activation_dropout = nn.Dropout(config.activation_dropout)
        self.fc2 = nn.Linear(ffn_dim, config.d_model)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.activation_dropout(self.activation_fn(self.fc1(hidden_states))))


class ZhenEncoderLayer(GradientCheckpointingLayer):
    """Self-attention and feed-forward, each in a residual branch with dropout. Pre-norm (`normalize_before`) computes
    `x + f(norm(x))`, post-norm `norm(x + f(x))` as the original Transformer and Marian do."""

    def __init__(self, config: ZhenConfig, layer_idx: int | None = None):
        super().__init__()
        self.normalize_before = config.normalize_before
        self.self_attn = ZhenAttention(config, config.encoder_attention_heads, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.mlp = ZhenMLP(config, config.encoder_ffn_dim)
        self.final_layer_norm = nn.LayerNorm(config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states, attention_mask=attention_mask, position_embeddings=position_embeddings, **kwargs
        )
        hidden_states = residual + self.dropout(hidden_states)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)

        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = residual + self.dropout(self.mlp(hidden_states))
        if not self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)

        if hidden_states.dtype == torch.float16 and not self.normalize_before:
            # Post-norm fp16 activations can overflow; clamp as BART and Marian do.
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


class ZhenDecoderLayer(GradientCheckpointingLayer):
    """Causal self-attention, cross-attention over the encoder output, and feed-forward, each in a residual branch
    (pre- or post-norm as in [`ZhenEncoderLayer`])."""

    def __init__(self, config: ZhenConfig, layer_idx: int | None = None):
        super().__init__()
        heads = config.decoder_attention_heads
        self.normalize_before = config.normalize_before
        self.self_attn = ZhenAttention(config, heads, is_causal=True, layer_idx=layer_idx)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.encoder_attn = ZhenAttention(config, heads, is_cross_attention=True, layer_idx=layer_idx)
        self.encoder_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.mlp = ZhenMLP(config, config.decoder_ffn_dim)
        self.final_layer_norm = nn.LayerNorm(config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = True,
        **kwargs: Unpack[TransformersKwargs],
    ) -> torch.Tensor:
        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states,
            attention_mask=attention_mask,
            position_embeddings=position_embeddings,
            cache=cache,
            **kwargs,
        )
        hidden_states = residual + self.dropout(hidden_states)
        if not self.normalize_before:
            hidden_states = self.self_attn_layer_norm(hidden_states)

        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.encoder_attn_layer_norm(hidden_states)
        hidden_states, _ = self.encoder_attn(
            hidden_states,
            key_value_states=encoder_hidden_states,
            attention_mask=encoder_attention_mask,
            cache=cache,
            **kwargs,
        )
        hidden_states = residual + self.dropout(hidden_states)
        if not self.normalize_before:
            hidden_states = self.encoder_attn_layer_norm(hidden_states)

        residual = hidden_states
        if self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        hidden_states = residual + self.dropout(self.mlp(hidden_states))
        if not self.normalize_before:
            hidden_states = self.final_layer_norm(hidden_states)
        return hidden_states


# --------------------------------------------------------------------------------------------------------------
# Stacks
# --------------------------------------------------------------------------------------------------------------


class ZhenPreTrainedModel(PreTrainedModel):
    config: ZhenConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["ZhenEncoderLayer", "ZhenDecoderLayer"]
    _skip_keys_device_placement = ["cache", "past_key_values"]
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _supports_attention_backend = True
    _can_compile_fullgraph = True

    @torch.no_grad()
    def _init_weights(self, module: nn.Module):
        super()._init_weights(module)  # also the rotary frequencies, from `compute_default_rope_parameters`
        if isinstance(module, ZhenSinusoidalPositionalEmbedding):
            init.copy_(module.weight, module.create_weight())
        if self.config.init_method != "xavier":
            return
        if isinstance(module, nn.Linear):  # over the fused (3 d, d) matrix: fairseq's bound for q, k, v (gain 1/√2)
            init.xavier_uniform_(module.weight)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=self.config.d_model**-0.5)
            if module.padding_idx is not None:
                init.zeros_(module.weight[module.padding_idx])

    @classmethod
    def from_pretrained(cls, *args, strict: bool = True, **kwargs):
        """`PreTrainedModel.from_pretrained`, refusing a checkpoint whose weights do not match its config (missing or
        unexpected weights, as after editing `config.json` by hand) unless `strict=False`."""
        return_info = kwargs.pop("output_loading_info", False)
        model, info = super().from_pretrained(*args, output_loading_info=True, **kwargs)
        problems = {name: sorted(info[name]) for name in ("missing_keys", "unexpected_keys") if info.get(name)}
        if strict and problems:
            details = "; ".join(f"{name.replace('_', ' ')}: {keys[:6]}" for name, keys in problems.items())
            raise ValueError(
                f"The weights of {args[0] if args else 'this checkpoint'} do not match its configuration ({details}). "
                "Its config.json was edited or the weights are from another model: restore the checkpoint's own "
                "config.json, or pass strict=False to initialise what is missing and ignore what is unexpected."
            )
        return (model, info) if return_info else model

    def save_pretrained(self, save_directory, *args, **kwargs):
        """`PreTrainedModel.save_pretrained`, writing a complete Hub repository: the code of the model and of the
        `translation` pipeline beside the weights, and both in `config.json`."""
        pipeline_code = [Path(__file__).with_name(name) for name in PIPELINE_FILES]
        has_pipeline = all(path.is_file() for path in pipeline_code)
        self.config.auto_map = {**AUTO_MAP, **(getattr(self.config, "auto_map", None) or {})}
        if has_pipeline:
            self.config.custom_pipelines = CUSTOM_PIPELINES
        super().save_pretrained(save_directory, *args, **kwargs)
        if has_pipeline and Path(save_directory).is_dir():
            for path in pipeline_code:
                shutil.copyfile(path, Path(save_directory) / path.name)

    def _resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of=None, mean_resizing=True):
        embeddings = super()._resize_token_embeddings(new_num_tokens, pad_to_multiple_of, mean_resizing)
        decoder = self.get_decoder()
        if decoder.embed_tokens.weight.shape[0] != embeddings.weight.shape[0]:  # untied decoder input embeddings
            decoder.embed_tokens = self._get_resized_embeddings(
                decoder.embed_tokens, embeddings.weight.shape[0], mean_resizing=mean_resizing
            )
        return embeddings


def _capturing_cuda_graph() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


class ZhenStack(ZhenPreTrainedModel):
    """What encoder and decoder share: token embeddings, positions, a stack of layers, and the final LayerNorm that a
    pre-norm stack needs."""

    def __init__(self, config: ZhenConfig, layer_class: type, num_layers: int, num_heads: int):
        super().__init__(config)
        self.dropout = nn.Dropout(config.dropout)
        self.embed_scale = math.sqrt(config.d_model) if config.scale_embedding else 1.0
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model, config.pad_token_id)
        self.position_embedding_type = config.position_embedding_type
        if config.position_embedding_type != "rope" and config.rope_parameters:
            raise ValueError(
                f"ZhenConfig.rope_parameters={config.rope_parameters!r} is set, but RoPE settings apply only with "
                f"position_embedding_type='rope', not {config.position_embedding_type!r}."
            )
        if config.position_embedding_type == "sinusoidal":
            self.embed_positions = ZhenSinusoidalPositionalEmbedding(config.max_position_embeddings, config.d_model)
        elif config.position_embedding_type == "learned":
            self.embed_positions = nn.Embedding(config.max_position_embeddings, config.d_model)
        else:
            self.rotary_emb = ZhenRotaryEmbedding(config, head_dim=config.d_model // num_heads)
        self.layers = nn.ModuleList([layer_class(config, layer_idx=i) for i in range(num_layers)])
        self.layer_norm = nn.LayerNorm(config.d_model) if config.normalize_before else nn.Identity()
        self.gradient_checkpointing = False
        self.post_init()

    def embed(self, input_ids, inputs_embeds, position_ids) -> tuple[torch.Tensor, tuple | None]:
        """Scaled token embeddings plus absolute positions; or, with RoPE, the scaled token embeddings and the rotary
        `(cos, sin)` that self-attention applies to its queries and keys."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Pass exactly one of `input_ids` and `inputs_embeds`.")
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        hidden_states = inputs_embeds * self.embed_scale
        position_embeddings = None
        if self.position_embedding_type == "rope":
            position_embeddings = self.rotary_emb(hidden_states, position_ids)
        else:
            self.check_positions(position_ids)
            hidden_states = hidden_states + self.embed_positions(position_ids).to(hidden_states.dtype)
        return self.dropout(hidden_states), position_embeddings

    def check_positions(self, position_ids: torch.Tensor) -> None:
        """A clear error instead of an index error when the input is longer than the position table."""
        if is_torchdynamo_compiling() or position_ids.numel() == 0 or _capturing_cuda_graph():
            return  # nothing may wait for the GPU while it compiles or captures
        longest = int(position_ids.max()) + 1
        if longest > self.config.max_position_embeddings:
            raise ValueError(
                f"Sequence of {longest} positions is longer than max_position_embeddings="
                f"{self.config.max_position_embeddings} of this {self.position_embedding_type} position table. "
                "Truncate the input (e.g. tokenizer(..., truncation=True, max_length=...)), limit generation "
                "length, or use a model with position_embedding_type='rope'."
            )


class ZhenEncoder(ZhenStack):
    """Stack of [`ZhenEncoderLayer`]s over the source tokens."""

    _can_record_outputs = {
        "hidden_states": OutputRecorder(ZhenEncoderLayer, num_hidden_layers_key="encoder_layers"),
        "attentions": OutputRecorder(ZhenAttention, index=1, layer_name="self_attn"),
    }

    def __init__(self, config: ZhenConfig):
        super().__init__(config, ZhenEncoderLayer, config.encoder_layers, config.encoder_attention_heads)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutput:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`):
            Source token ids, `[lang code] tokens </s>` as [`ZhenTokenizerFast`] makes them.
        attention_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
            1 for real tokens, 0 for padding.
        position_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`, *optional*):
            Positions of the tokens. By default they count real tokens only, so left and right padding give the same
            result.
        """
        seq_len = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        device = (input_ids if input_ids is not None else inputs_embeds).device
        if position_ids is None and attention_mask is not None:
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        elif position_ids is None:
            position_ids = torch.arange(seq_len, device=device)[None]
        hidden_states, position_embeddings = self.embed(input_ids, inputs_embeds, position_ids)
        attention_mask = create_bidirectional_mask(
            config=self.config, inputs_embeds=hidden_states, attention_mask=attention_mask
        )
        for layer in self.layers:
            hidden_states = layer(hidden_states, attention_mask, position_embeddings, **kwargs)
        return BaseModelOutput(last_hidden_state=self.layer_norm(hidden_states))


class ZhenDecoder(ZhenStack):
    """Stack of [`ZhenDecoderLayer`]s: causal self-attention over the target, cross-attention over the source."""

    _can_record_outputs = {
        "hidden_states": OutputRecorder(ZhenDecoderLayer, num_hidden_layers_key="decoder_layers"),
        "attentions": OutputRecorder(ZhenAttention, index=1, layer_name="self_attn"),
        "cross_attentions": OutputRecorder(ZhenAttention, index=1, layer_name="encoder_attn"),
    }

    def __init__(self, config: ZhenConfig):
        super().__init__(config, ZhenDecoderLayer, config.decoder_layers, config.decoder_attention_heads)

    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        encoder_hidden_states: torch.Tensor | None = None,
        encoder_attention_mask: torch.Tensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> BaseModelOutputWithPastAndCrossAttentions:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`):
            Decoder input ids: `<s>`, the target language code, then the target so far.
        position_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Positions of the target tokens; by default they continue from the cache.
        encoder_hidden_states (`torch.Tensor` of shape `(batch_size, sequence_length, d_model)`):
            Output of the encoder, attended to by every layer's cross-attention.
        encoder_attention_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
            Source padding mask.
        cache (`EncoderDecoderCache`, *optional*):
            Self-attention keys/values of earlier steps and the cross-attention keys/values of the source (before
            Transformers 5.24: `past_key_values`, also accepted).
        """
        cache = cache_argument(cache, kwargs)
        if use_cache and cache is None:
            cache = EncoderDecoderCache(DynamicCache(config=self.config), DynamicCache(config=self.config))
        embeds_or_ids = input_ids if input_ids is not None else inputs_embeds
        batch_size, seq_len = embeds_or_ids.shape[:2]
        past_length = cache.get_seq_length() if cache is not None else 0
        if position_ids is None:
            position_ids = (torch.arange(seq_len, device=embeds_or_ids.device) + past_length)[None]
        if attention_mask is None and not is_torchdynamo_compiling():
            attention_mask = torch.ones(batch_size, past_length + seq_len, device=embeds_or_ids.device)
        hidden_states, position_embeddings = self.embed(input_ids, inputs_embeds, position_ids)
        self_attention_cache = getattr(cache, "self_attention_cache", cache)
        causal_mask = create_causal_mask(self.config, hidden_states, attention_mask, self_attention_cache)
        encoder_attention_mask = create_bidirectional_mask(
            config=self.config,
            inputs_embeds=hidden_states,
            attention_mask=encoder_attention_mask,
            encoder_hidden_states=encoder_hidden_states,
        )
        for layer in self.layers:
            hidden_states = layer(
                hidden_states,
                causal_mask,
                encoder_hidden_states,  # positional, so that gradient checkpointing sees it
                encoder_attention_mask=encoder_attention_mask,
                position_embeddings=position_embeddings,
                cache=cache,
                use_cache=use_cache,
                **kwargs,
            )
        return BaseModelOutputWithPastAndCrossAttentions(
            last_hidden_state=self.layer_norm(hidden_states), **{CACHE_FIELD: cache}
        )


# --------------------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------------------


class ZhenModel(ZhenPreTrainedModel):
    """The bare zhen encoder-decoder, returning the decoder's last hidden states (no LM head)."""

    # With `tie_word_embeddings=False` Transformers ignores this map and every embedding keeps its own weight.
    _tied_weights_keys = {"decoder.embed_tokens.weight": "encoder.embed_tokens.weight"}

    def __init__(self, config: ZhenConfig):
        super().__init__(config)
        self.encoder = ZhenEncoder(config)
        self.decoder = ZhenDecoder(config)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding):
        self.encoder.embed_tokens = value
        if self.config.tie_word_embeddings:
            self.decoder.embed_tokens = value

    def get_encoder(self):
        return self.encoder

    def get_decoder(self):
        return self.decoder

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_position_ids: torch.LongTensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqModelOutput:
        r"""
        input_ids (`torch.LongTensor` of shape `(batch_size, sequence_length)`):
            Source token ids from [`ZhenTokenizerFast`]: `[src lang code] tokens </s>`.
        decoder_input_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            `<s> [tgt lang code] tokens`; built from `labels` by [`ZhenForConditionalGeneration`] when omitted.
        decoder_attention_mask (`torch.Tensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Target padding mask, combined with the causal mask.
        decoder_position_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Positions of the target tokens; by default they continue from the cache.
        encoder_outputs (`BaseModelOutput` or `tuple`, *optional*):
            Precomputed encoder output; the encoder is skipped when given.

        Example:

        ```python
        >>> import torch
        >>> from zhen import ZhenConfig, ZhenModel
        >>> model = ZhenModel(ZhenConfig.from_preset("tiny", vocab_size=100))
        >>> out = model(input_ids=torch.tensor([[4, 10, 11, 2]]), decoder_input_ids=torch.tensor([[1, 5, 12]]))
        >>> list(out.last_hidden_state.shape)
        [1, 3, 64]
        ```
        """
        cache = cache_argument(cache, kwargs)
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                inputs_embeds=inputs_embeds,
                **kwargs,
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(
                last_hidden_state=encoder_outputs[0],
                hidden_states=encoder_outputs[1] if len(encoder_outputs) > 1 else None,
                attentions=encoder_outputs[2] if len(encoder_outputs) > 2 else None,
            )
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            position_ids=decoder_position_ids,
            encoder_hidden_states=encoder_outputs.last_hidden_state,
            encoder_attention_mask=attention_mask,
            cache=cache,
            inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        return Seq2SeqModelOutput(
            last_hidden_state=decoder_outputs.last_hidden_state,
            **{CACHE_FIELD: getattr(decoder_outputs, CACHE_FIELD)},
            decoder_hidden_states=decoder_outputs.hidden_states,
            decoder_attentions=decoder_outputs.attentions,
            cross_attentions=decoder_outputs.cross_attentions,
            encoder_last_hidden_state=encoder_outputs.last_hidden_state,
            encoder_hidden_states=encoder_outputs.hidden_states,
            encoder_attentions=encoder_outputs.attentions,
        )


class ZhenForConditionalGeneration(ZhenPreTrainedModel, GenerationMixin):
    """zhen encoder-decoder with a language-modelling head, for translation with `generate()`.

    The target language is chosen by forcing its code as the first generated token:
    `model.generate(**inputs, forced_bos_token_id=tokenizer.convert_tokens_to_ids("__zh__"))`, or simply
    `zhen.translate(...)`, which does it for you.
    """

    _tied_weights_keys = {"lm_head.weight": "model.encoder.embed_tokens.weight"}

    def __init__(self, config: ZhenConfig):
        super().__init__(config)
        self.model = ZhenModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.post_init()

    def get_encoder(self):
        return self.model.encoder

    def get_decoder(self):
        return self.model.decoder

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        decoder_input_ids: torch.LongTensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        decoder_position_ids: torch.LongTensor | None = None,
        encoder_outputs: tuple[torch.Tensor] | BaseModelOutput | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        decoder_inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs: Unpack[TransformersKwargs],
    ) -> Seq2SeqLMOutput:
        r"""
        decoder_input_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            `<s> [tgt lang code] tokens`; built from `labels` when omitted.
        decoder_attention_mask (`torch.Tensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Target padding mask, combined with the causal mask.
        decoder_position_ids (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Positions of the target tokens; by default they continue from the cache.
        encoder_outputs (`BaseModelOutput` or `tuple`, *optional*):
            Precomputed encoder output; the encoder is skipped when given.
        labels (`torch.LongTensor` of shape `(batch_size, target_sequence_length)`, *optional*):
            Target ids `[tgt lang code] tokens </s>`, with `-100` where no loss is wanted (padding). The loss is the
            cross-entropy with `config.label_smoothing`, summed over labelled tokens and divided by their number, or
            by `num_items_in_batch` when Trainer passes it under gradient accumulation.
        logits_to_keep (`int` or `torch.Tensor`, *optional*, defaults to 0):
            The target positions to compute logits for: the last `logits_to_keep` (0: all), or these indices.

        Example:

        ```python
        >>> import torch
        >>> from zhen import ZhenConfig, ZhenForConditionalGeneration
        >>> model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=100))
        >>> out = model(input_ids=torch.tensor([[4, 10, 11, 2]]), labels=torch.tensor([[5, 12, 13, 2]]))
        >>> out.loss.shape, list(out.logits.shape)
        (torch.Size([]), [1, 4, 100])
        ```
        """
        if labels is not None:
            use_cache = False
            if decoder_input_ids is None and decoder_inputs_embeds is None:
                decoder_input_ids = self.prepare_decoder_input_ids_from_labels(labels)
        num_items_in_batch = kwargs.pop("num_items_in_batch", None)
        cache = cache_argument(cache, kwargs)
        outputs: Seq2SeqModelOutput = self.model(
            input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=decoder_attention_mask,
            decoder_position_ids=decoder_position_ids,
            encoder_outputs=encoder_outputs,
            cache=cache,
            inputs_embeds=inputs_embeds,
            decoder_inputs_embeds=decoder_inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        logits = self.lm_head(slice_logits_to_keep(outputs.last_hidden_state, logits_to_keep))
        loss = None
        if labels is not None:
            loss = translation_loss(logits, labels, self.config.label_smoothing, num_items_in_batch)
        return Seq2SeqLMOutput(
            loss=loss,
            logits=logits,
            **{CACHE_FIELD: getattr(outputs, CACHE_FIELD)},
            decoder_hidden_states=outputs.decoder_hidden_states,
            decoder_attentions=outputs.decoder_attentions,
            cross_attentions=outputs.cross_attentions,
            encoder_last_hidden_state=outputs.encoder_last_hidden_state,
            encoder_hidden_states=outputs.encoder_hidden_states,
            encoder_attentions=outputs.encoder_attentions,
        )

    def prepare_decoder_input_ids_from_labels(self, labels: torch.Tensor) -> torch.Tensor:
        return shift_tokens_right(labels, self.config.pad_token_id, self.config.decoder_start_token_id)


def translation_loss(logits, labels, label_smoothing: float = 0.0, num_items_in_batch=None) -> torch.Tensor:
    """Label-smoothed cross-entropy summed over the labelled (not -100) tokens and divided by their number, or by
    `num_items_in_batch`: Trainer passes the count over all accumulated micro-batches, so that gradient accumulation
    gives the full batch's gradient instead of growing with the number of steps."""
    labels = labels.to(logits.device)
    loss = nn.functional.cross_entropy(
        logits.float().flatten(0, -2),
        labels.flatten(),
        ignore_index=-100,
        reduction="sum",
        label_smoothing=label_smoothing,
    )
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum().clamp(min=1)
    if torch.is_tensor(num_items_in_batch):
        num_items_in_batch = num_items_in_batch.to(loss.device)
    return loss / num_items_in_batch


__all__ = ["ZhenPreTrainedModel", "ZhenModel", "ZhenForConditionalGeneration"]
