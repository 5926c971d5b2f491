# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""zhen model configuration."""

from typing import Any, ClassVar

from transformers.activations import ACT2FN
from transformers.configuration_utils import PreTrainedConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS


POSITION_EMBEDDING_TYPES = ("sinusoidal", "learned", "rope")
INIT_METHODS = ("normal", "xavier")
LEGACY_ROPE_DEFAULT = {"rope_type": "default", "rope_theta": 10000.0}
NUM_SPECIAL_TOKENS = 6  # <pad> <s> </s> <unk> __en__ __zh__, see tokenization_zhen.py

# Named sizes. `tiny` is for tests, `small` trains on a laptop CPU, `base` is transformer-base (Vaswani et al., 2017).
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(
        d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=256, dropout=0.0,
        init_std=0.1,  # 0.02 suits wide models; at d_model 64 it leaves attention near-uniform and slow to train
    ),
    "small": dict(  # a deep encoder and a shallow decoder: most of the quality, and fast greedy decoding
        d_model=256, encoder_layers=6, decoder_layers=3, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_position_embeddings=512, dropout=0.1,
    ),
    "base": dict(
        d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8, decoder_attention_heads=8,
        encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=1024, dropout=0.1,
    ),
}  # fmt: skip


class ZhenConfig(PreTrainedConfig):
    r"""
    Configuration of a zhen encoder-decoder Transformer ([`ZhenModel`], [`ZhenForConditionalGeneration`]).

    Field names follow Marian and BART. Defaults give a transformer-base sized, pre-norm model with sinusoidal positions
    and one embedding matrix shared by the encoder input, the decoder input and the LM head.

    Args:
        vocab_size (`int`, *optional*, defaults to 32000):
            Size of the shared English–Chinese vocabulary.
        d_model (`int`, *optional*, defaults to 512):
            Width of the embeddings and of every layer.
        encoder_layers / decoder_layers (`int`, *optional*, defaults to 6):
            Number of layers in each stack.
        encoder_attention_heads / decoder_attention_heads (`int`, *optional*, defaults to 8):
            Attention heads per layer; `d_model` must be divisible by both.
        encoder_ffn_dim / decoder_ffn_dim (`int`, *optional*, defaults to 2048):
            Inner width of the feed-forward blocks.
        dropout (`float`, *optional*, defaults to 0.1):
            Dropout on embeddings and on every residual branch.
        attention_dropout (`float`, *optional*, defaults to 0.0):
            Dropout on attention probabilities.
        activation_dropout (`float`, *optional*, defaults to 0.0):
            Dropout after the feed-forward activation.
        activation_function (`str`, *optional*, defaults to `"relu"`):
            Any key of `transformers.activations.ACT2FN` (`"relu"`, `"gelu"`, `"silu"`, ...).
        max_position_embeddings (`int`, *optional*, defaults to 1024):
            Length of the position table for `"sinusoidal"` and `"learned"` positions. RoPE has no table, so longer
            inputs still run; it is then only the length the model was sized for.
        position_embedding_type (`str`, *optional*, defaults to `"sinusoidal"`):
            `"sinusoidal"` (fixed, as in "Attention Is All You Need" and Marian), `"learned"` (a trainable table) or
            `"rope"` (rotary embeddings on queries and keys of both self-attentions, none in cross-attention).
        rope_parameters (`dict`, *optional*):
            RoPE settings of a `"rope"` model, held the Transformers 5 way: `{"rope_type": "default", "rope_theta":
            10000.0}` by default; any type of `transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS` works, e.g.
            `{"rope_type": "dynamic", "factor": 4.0}` or `"yarn"` for inputs longer than `max_position_embeddings`.
            Legacy `rope_theta=` and `rope_scaling=` keywords are folded in here. `None` for the other position types.
        normalize_before (`bool`, *optional*, defaults to `True`):
            Pre-norm (LayerNorm before each sub-layer, plus a final LayerNorm on each stack) if `True`, post-norm
            (LayerNorm after each residual addition, as in the original Transformer and Marian) if `False`.
        scale_embedding (`bool`, *optional*, defaults to `True`):
            Multiply token embeddings by `sqrt(d_model)`.
        tie_word_embeddings (`bool`, *optional*, defaults to `True`):
            One matrix for encoder input, decoder input and LM head. `False` gives the three their own weights.
        label_smoothing (`float`, *optional*, defaults to 0.0):
            Label smoothing of the cross-entropy the model computes when `labels` are given.
        init_std (`float`, *optional*, defaults to 0.02):
            Standard deviation of the normal initialiser of linear and embedding weights (`init_method="normal"`).
        init_method (`str`, *optional*, defaults to `"normal"`):
            `"normal"`: every linear and embedding weight from N(0, `init_std`), as BART and Marian. `"xavier"`: as
            fairseq's Transformer, Xavier-uniform linear weights and embeddings from N(0, d_model^-0.5). (Xavier over
            the fused self-attention projection gives each of query, key and value fairseq's gain-1/√2 bound.)
        use_cache (`bool`, *optional*, defaults to `True`):
            Whether the decoder returns its key/value cache.
        pad_token_id, bos_token_id, eos_token_id, decoder_start_token_id (`int`, *optional*):
            Special token ids; the defaults (0, 1, 2, 1) match [`ZhenTokenizerFast`]. Generation starts from `<s>`
            and the target language code is forced next.

    Example:

    ```python
    >>> from zhen import ZhenConfig, ZhenForConditionalGeneration
    >>> config = ZhenConfig.from_preset("tiny", vocab_size=1000, position_embedding_type="rope")
    >>> model = ZhenForConditionalGeneration(config)
    ```
    """

    model_type = "zhen"
    keys_to_ignore_at_inference = ["cache", "past_key_values"]  # Transformers >= 5.24, < 5.24
    attribute_map: ClassVar[dict[str, str]] = {
        "hidden_size": "d_model",
        "num_attention_heads": "encoder_attention_heads",
        "num_hidden_layers": "encoder_layers",
    }

    vocab_size: int = 32000
    d_model: int = 512
    encoder_layers: int = 6
    decoder_layers: int = 6
    encoder_attention_heads: int = 8
    decoder_attention_heads: int = 8
    encoder_ffn_dim: int = 2048
    decoder_ffn_dim: int = 2048
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    activation_function: str = "relu"
    max_position_embeddings: int = 1024
    position_embedding_type: str = "sinusoidal"
    rope_parameters: dict | None = None
    normalize_before: bool = True
    scale_embedding: bool = True
    tie_word_embeddings: bool = True
    label_smoothing: float = 0.0
    init_std: float = 0.02
    init_method: str = "normal"
    use_cache: bool = True
    pad_token_id: int | None = 0
    bos_token_id: int | None = 1
    eos_token_id: int | None = 2
    decoder_start_token_id: int | None = 1
    is_encoder_decoder: bool = True

    def __post_init__(self, **kwargs):
        rope_given = self.rope_parameters or kwargs.get("rope_scaling") or kwargs.get("rope_theta")
        super().__post_init__(**kwargs)
        if self.position_embedding_type != "rope":
            if rope_given not in (None, {}, LEGACY_ROPE_DEFAULT, LEGACY_ROPE_DEFAULT["rope_theta"]):
                # (configs saved by zhen 0.1 carried the default RoPE settings whatever their position type)
                raise ValueError(
                    f"ZhenConfig.rope_parameters={rope_given!r} is invalid: RoPE settings apply only with "
                    f"position_embedding_type='rope', not {self.position_embedding_type!r}."
                )
            self.rope_parameters = None
        self._check_values()

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "ZhenConfig":
        """Build the named preset (`"tiny"`, `"small"` or `"base"`), with any field overridden by keyword."""
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {sorted(PRESETS)}.")
        return cls(**{**PRESETS[name], **overrides})

    def _check_values(self):
        def fail(field, allowed):
            raise ValueError(f"ZhenConfig.{field}={getattr(self, field)!r} is invalid: {allowed}.")

        for field in (
            "vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
            "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings",
        ):  # fmt: skip
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                fail(field, "it must be a positive integer")
        for field in ("encoder_attention_heads", "decoder_attention_heads"):
            if self.d_model % getattr(self, field):
                fail(field, f"d_model={self.d_model} must be divisible by the number of heads")
        for field in ("dropout", "attention_dropout", "activation_dropout"):
            if not 0.0 <= getattr(self, field) < 1.0:
                fail(field, "a probability in [0, 1) is required")
        if not 0.0 <= self.label_smoothing < 1.0:
            fail("label_smoothing", "a value in [0, 1) is required")
        if self.activation_function not in ACT2FN:
            fail("activation_function", f"use one of transformers' ACT2FN names, e.g. {sorted(ACT2FN)[:12]}")
        if self.init_method not in INIT_METHODS:
            fail("init_method", f"choose one of {INIT_METHODS}")
        if self.position_embedding_type not in POSITION_EMBEDDING_TYPES:
            fail("position_embedding_type", f"choose one of {POSITION_EMBEDDING_TYPES}")
        if self.position_embedding_type == "rope":
            self._check_rope()
        if self.vocab_size < NUM_SPECIAL_TOKENS:
            fail("vocab_size", f"the vocabulary needs room for the {NUM_SPECIAL_TOKENS} special tokens")
        for field in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
            value = getattr(self, field)
            if value is not None and not 0 <= value < self.vocab_size:
                fail(field, f"a token id in [0, vocab_size={self.vocab_size}) is required")

    def _check_rope(self):
        for field in ("encoder_attention_heads", "decoder_attention_heads"):
            head_dim = self.d_model // getattr(self, field)
            if head_dim % 2:
                raise ValueError(
                    f"ZhenConfig.{field}={getattr(self, field)!r} is invalid with position_embedding_type='rope': "
                    f"the head dimension d_model/heads={head_dim} must be even to rotate pairs of features."
                )
        check_rope_parameters(self)


def check_rope_parameters(config: ZhenConfig) -> None:
    """Fail clearly on RoPE settings a model cannot be built from (also when set after the config was made)."""
    rope = config.rope_parameters or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default" and rope_type not in ROPE_INIT_FUNCTIONS:
        raise ValueError(
            f"ZhenConfig.rope_parameters={rope!r} is invalid: rope_type must be 'default' or one of "
            f"{sorted(ROPE_INIT_FUNCTIONS)}."
        )
    theta = config.default_theta if rope.get("rope_theta") is None else rope["rope_theta"]
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise ValueError(f"ZhenConfig.rope_parameters={rope!r} is invalid: rope_theta must be a number > 0.")
    config.validate_rope()


__all__ = ["ZhenConfig", "PRESETS"]
