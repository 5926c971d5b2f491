# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Cross-attention heatmaps: which source tokens the decoder looked at while writing each target token.

[`cross_attention`] translates a sentence greedily, then runs the model once more on the generated sequence with
eager attention and `output_attentions=True` (SDPA and flash attention do not return attention weights), and returns
the cross-attention between generated and source tokens, averaged over layers and heads or for one of them.
[`plot_cross_attention`] draws it with matplotlib. Chinese labels need a font with CJK glyphs: [`find_cjk_font`] looks
for Noto Sans CJK, Source Han Sans, WenQuanYi, ... (on Debian/Ubuntu: `apt-get install fonts-noto-cjk`) and the plot
falls back to matplotlib's default font, with a warning, when there is none.
"""

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from .translation import load_model_and_tokenizer, resolve_languages


CJK_FONT_FAMILIES = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "Noto Serif CJK SC",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Heiti SC",
    "AR PL UMing CN",
)


@dataclass
class CrossAttention:
    """Cross-attention of one translation.

    Args:
        weights (`torch.Tensor` of shape `(target_length, source_length)`):
            Row `i` is the attention over the source while predicting `target_tokens[i]`; rows sum to 1.
        source_tokens (`list[str]`): Readable source tokens, language code and `</s>` included.
        target_tokens (`list[str]`): Readable generated tokens: the language code, the translation, `</s>`.
        translation (`str`): The decoded translation.
    """

    weights: torch.Tensor
    source_tokens: list[str]
    target_tokens: list[str]
    translation: str


def token_labels(tokenizer, ids) -> list[str]:
    """
    Readable text of each token: the token's own text, with a leading space shown as `▁` and line breaks and tabs
    escaped; byte-fallback tokens as `<0xE4>`; special tokens as themselves (`__zh__`, `</s>`).
    """
    labels = []
    for token in tokenizer.convert_ids_to_tokens([int(i) for i in ids]):
        if token.startswith(" "):
            token = "▁" + token[1:]
        labels.append(token.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") or "∅")
    return labels


@torch.inference_mode()
def cross_attention(
    model,
    tokenizer=None,
    text: str = "",
    *,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    layer: int | None = None,
    head: int | None = None,
    max_new_tokens: int | None = None,
) -> CrossAttention:
    """
    Translate `text` greedily and return the decoder's cross-attention over the source.

    Args:
        model, tokenizer: A loaded model and tokenizer, or a checkpoint folder (tokenizer defaults to it).
        text (`str`): One sentence.
        src_lang (`str`, *optional*), tgt_lang (`str`): The direction; `tgt_lang` is required.
        layer (`int`, *optional*): Decoder layer (0-based, negative counts from the end); default: mean over layers.
        head (`int`, *optional*): Attention head (0-based); default: mean over heads.
        max_new_tokens (`int`, *optional*): Generation length limit (default as in `zhen.translate`).

    Returns:
        [`CrossAttention`].
    """
    from .pipeline_zhen import default_max_new_tokens

    src_lang, tgt_lang = resolve_languages(src_lang, tgt_lang)
    model, tokenizer = load_model_and_tokenizer(model, tokenizer)
    inputs = tokenizer._build_translation_inputs([text], return_tensors="pt", src_lang=src_lang, tgt_lang=tgt_lang)
    forced_bos = inputs.pop("forced_bos_token_id")
    inputs = inputs.to(model.device)
    length = max_new_tokens or default_max_new_tokens(
        inputs["input_ids"].shape[-1], model.config, model.generation_config
    )
    was_training, implementation = model.training, model.config._attn_implementation
    model.eval()
    try:
        generated = model.generate(
            **inputs, forced_bos_token_id=forced_bos, num_beams=1, do_sample=False, max_new_tokens=length
        )
        model.set_attn_implementation("eager")
        outputs = model(**inputs, decoder_input_ids=generated[:, :-1], output_attentions=True)
    finally:
        model.set_attn_implementation(implementation)
        model.train(was_training)
    weights = _select(torch.stack(outputs.cross_attentions)[:, 0], layer, head)  # (layers, heads, tgt, src)
    return CrossAttention(
        weights=weights.float().cpu(),
        source_tokens=token_labels(tokenizer, inputs["input_ids"][0]),
        target_tokens=token_labels(tokenizer, generated[0, 1:]),
        translation=tokenizer.decode(generated[0], skip_special_tokens=True),
    )


def _select(attentions: torch.Tensor, layer: int | None, head: int | None) -> torch.Tensor:
    num_layers, num_heads = attentions.shape[:2]
    if layer is not None:
        if not -num_layers <= layer < num_layers:
            raise ValueError(
                f"layer={layer} is out of range: the decoder has {num_layers} layers (0-{num_layers - 1})."
            )
        attentions = attentions[layer : layer + 1 or None]
    if head is not None:
        if not -num_heads <= head < num_heads:
            raise ValueError(f"head={head} is out of range: each layer has {num_heads} heads (0-{num_heads - 1}).")
        attentions = attentions[:, head : head + 1 or None]
    return attentions.mean(dim=(0, 1))


def find_cjk_font() -> str | None:
    """Family name of an installed font with Chinese glyphs that matplotlib can use, or `None`."""
    from matplotlib import font_manager

    installed = {font.name for font in font_manager.fontManager.ttflist}
    for family in CJK_FONT_FAMILIES:
        if family in installed:
            return family
    for name in sorted(installed):  # any other CJK font
        if any(key in name for key in ("CJK", "Han Sans", "Han Serif", "WenQuanYi", "Hei", "Ming")):
            return name
    return None


def plot_cross_attention(attention: CrossAttention, path: str | os.PathLike, *, title: str | None = None) -> str:
    """
    Draw `attention` as a heatmap (source tokens across, target tokens down) and save it to `path` (PNG, or any
    format matplotlib infers from the extension).

    Returns:
        The path written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    font = find_cjk_font()
    if font is None:
        warnings.warn(
            "No font with Chinese glyphs found, so Chinese tokens will show as boxes. Install one, e.g. "
            "`apt-get install fonts-noto-cjk` (Debian/Ubuntu) or Noto Sans CJK from https://notofonts.github.io/cjk/.",
            stacklevel=2,
        )
    rc = {"font.family": "sans-serif", "font.sans-serif": [font, "DejaVu Sans"] if font else ["DejaVu Sans"]}
    source, target = attention.source_tokens, attention.target_tokens
    with plt.rc_context(rc), warnings.catch_warnings():
        if font is None:  # said once above, rather than once per missing glyph
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        figure, axes = plt.subplots(figsize=(max(4.0, 0.45 * len(source) + 2), max(3.0, 0.4 * len(target) + 1.5)))
        image = axes.imshow(attention.weights.numpy(), cmap="viridis", aspect="auto", vmin=0.0)
        axes.set_xticks(range(len(source)), labels=source, rotation=60, ha="right")
        axes.set_yticks(range(len(target)), labels=target)
        axes.set_xlabel("source tokens")
        axes.set_ylabel("generated tokens")
        axes.set_title(title or attention.translation)
        figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
        figure.tight_layout()
        figure.savefig(path, dpi=150)
        plt.close(figure)
    return str(path)


def plot_attention(
    model,
    tokenizer=None,
    text: str = "",
    path: str | os.PathLike = "attention.png",
    *,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    layer: int | None = None,
    head: int | None = None,
) -> CrossAttention:
    """[`cross_attention`] of `text`, drawn to `path` by [`plot_cross_attention`]; returns the attention."""
    attention = cross_attention(model, tokenizer, text, src_lang=src_lang, tgt_lang=tgt_lang, layer=layer, head=head)
    which = ", ".join(
        part
        for part in (
            f"layer {layer}" if layer is not None else "mean over layers",
            f"head {head}" if head is not None else "mean over heads",
        )
    )
    plot_cross_attention(attention, path, title=f"{attention.translation}\n({which})")
    return attention


__all__ = [
    "CrossAttention",
    "cross_attention",
    "find_cjk_font",
    "plot_attention",
    "plot_cross_attention",
    "token_labels",
]


def plot_training_curves(history: list[dict], path: str | Path) -> None:
    """Training and validation loss, and validation BLEU per set and direction, against optimizer steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [h for h in history if h.get("type") == "train"]
    evals = [h for h in history if h.get("type") == "eval"]
    fig, (loss_ax, bleu_ax) = plt.subplots(1, 2, figsize=(11, 4))
    loss_ax.plot([h["step"] for h in train], [h["loss"] for h in train], label="training loss (smoothed labels)")
    for key in sorted({k for h in evals for k in h if k.endswith("/loss")}):
        loss_ax.plot([h["step"] for h in evals], [h.get(key) for h in evals], marker="o", label=f"{key} (NLL)")
    loss_ax.set(xlabel="step", ylabel="loss per target token", title="Loss")
    loss_ax.legend(fontsize=8)
    for key in sorted({k for h in evals for k in h if k.endswith("/bleu")}):
        bleu_ax.plot(
            [h["step"] for h in evals], [h.get(key) for h in evals], marker="o", label=key.removesuffix("/bleu")
        )
    bleu_ax.set(xlabel="step", ylabel="BLEU", title="Validation BLEU")
    if bleu_ax.lines:
        bleu_ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
