"""Tests of `zhen.visualization`: readable token labels, cross-attention from an eager rerun, and a PNG whose Chinese
labels have glyphs."""

import warnings

import pytest
import torch

from zhen import visualization
from zhen.visualization import CrossAttention, cross_attention, find_cjk_font, plot_cross_attention, token_labels


def test_token_labels_are_readable(tiny_tokenizer):
    ids = tiny_tokenizer("Hello 😀\n我", add_special_tokens=True)["input_ids"]
    labels = token_labels(tiny_tokenizer, ids)
    assert labels[0] == "__en__" and labels[-1] == "</s>"
    assert "<0xF0>" in labels  # the emoji is spelled in byte-fallback pieces
    assert "▁H" in labels and "我" in labels


def test_token_labels_escape_spaces_and_line_breaks():
    class Tokenizer:
        def convert_ids_to_tokens(self, ids):
            return [" world", "\n\t", "", "<0xE4>"]

    assert token_labels(Tokenizer(), [0, 1, 2, 3]) == ["▁world", "\\n\\t", "∅", "<0xE4>"]


def test_cross_attention_of_a_translation(tiny_model, tiny_tokenizer, tiny_pairs):
    en, zh = tiny_pairs[3]
    attention = cross_attention(tiny_model, tiny_tokenizer, en, tgt_lang="zh")
    assert attention.translation == zh
    assert attention.source_tokens == token_labels(tiny_tokenizer, tiny_tokenizer(en)["input_ids"])
    assert attention.target_tokens[0] == "__zh__" and attention.target_tokens[-1] == "</s>"
    assert attention.weights.shape == (len(attention.target_tokens), len(attention.source_tokens))
    torch.testing.assert_close(attention.weights.sum(-1), torch.ones(len(attention.target_tokens)))
    assert tiny_model.config._attn_implementation == "sdpa"  # the eager rerun is undone


def test_layer_and_head_selection(tiny_model, tiny_tokenizer, tiny_pairs):
    text = tiny_pairs[5][1]
    mean = cross_attention(tiny_model, tiny_tokenizer, text, tgt_lang="en").weights
    parts = [
        cross_attention(tiny_model, tiny_tokenizer, text, tgt_lang="en", layer=layer, head=head).weights
        for layer in range(2)
        for head in range(4)
    ]
    torch.testing.assert_close(torch.stack(parts).mean(0), mean)
    assert not torch.allclose(parts[0], parts[1])
    last = cross_attention(tiny_model, tiny_tokenizer, text, tgt_lang="en", layer=-1).weights
    torch.testing.assert_close(last, torch.stack(parts[4:]).mean(0))
    with pytest.raises(ValueError, match="layer=2 is out of range: the decoder has 2 layers"):
        cross_attention(tiny_model, tiny_tokenizer, text, tgt_lang="en", layer=2)
    with pytest.raises(ValueError, match="head=4 is out of range"):
        cross_attention(tiny_model, tiny_tokenizer, text, tgt_lang="en", head=4)


def fake_attention() -> CrossAttention:
    weights = torch.softmax(torch.randn(3, 4), -1)
    return CrossAttention(weights, ["__en__", "▁Hi", ".", "</s>"], ["__zh__", "你好", "。"], "你好。")


@pytest.mark.skipif(find_cjk_font() is None, reason="no CJK font installed (apt-get install fonts-noto-cjk)")
def test_png_has_chinese_glyphs(tmp_path):
    path = tmp_path / "attention.png"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plot_cross_attention(fake_attention(), path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [w for w in caught if "missing from font" in str(w.message)]


def test_missing_cjk_font_gives_one_clear_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(visualization, "find_cjk_font", lambda: None)
    with pytest.warns(UserWarning) as caught:
        plot_cross_attention(fake_attention(), tmp_path / "boxes.png")
    assert [str(w.message) for w in caught if "fonts-noto-cjk" in str(w.message)]
    assert not [w for w in caught if "missing from font" in str(w.message)]  # not one per missing glyph
    assert (tmp_path / "boxes.png").stat().st_size > 0
