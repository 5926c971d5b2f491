"""Tests of the ONNX export: the three graphs (Optimum's layout) run on onnxruntime with the PyTorch model's numbers,
and `OnnxTranslator` generates exactly the token ids of `model.generate`, greedy and beam search, for each position
type and both norm placements. One export per configuration for the whole module (10-35 s each), on one worker under
`pytest -n` (`--dist loadfile`). The configurations other than the command line's have one layer each side, which
halves their export; the first still has caches of several layers."""

import copy

import numpy as np
import onnxruntime
import pytest
import torch

from zhen import ZhenConfig
from zhen.commands.export_onnx import main as export_onnx_command
from zhen.onnx_export import OnnxTranslator, cache_names, compare_with_pytorch, export_onnx
from zhen.translation import translate


ONE_LAYER = dict(encoder_layers=1, decoder_layers=1)
CONFIGS = {
    "sinusoidal-pre-norm": None,  # the session's tiny_model, exported through the command line
    "learned-post-norm": dict(position_embedding_type="learned", normalize_before=False, **ONE_LAYER),
    "rope-pre-norm": dict(position_embedding_type="rope", normalize_before=True, **ONE_LAYER),
}


@pytest.fixture(scope="module", params=list(CONFIGS))
def exported(request, tiny_model, tiny_checkpoint, tiny_tokenizer, memorize, tmp_path_factory):
    """`(model, folder, translator)`: a trained tiny model, its ONNX export and an `OnnxTranslator` on it."""
    folder = tmp_path_factory.mktemp(f"onnx-{request.param}")
    overrides = CONFIGS[request.param]
    if overrides is None:
        model = tiny_model
        export_onnx_command([str(tiny_checkpoint), str(folder)])
    else:
        config = ZhenConfig.from_preset("tiny", vocab_size=len(tiny_tokenizer), **overrides)
        model = memorize(config)
        export_onnx(model, folder, tiny_tokenizer)  # checks the graphs against PyTorch
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    return model, folder, OnnxTranslator(folder, session_options=options)


@pytest.fixture
def sources(tiny_tokenizer, tiny_pairs):
    """A padded batch of English sources and one of Chinese ones, as PyTorch tensors."""
    batches = {}
    for lang, column in (("en", 0), ("zh", 1)):
        tiny_tokenizer.src_lang = lang
        texts = [pair[column] for pair in tiny_pairs[:5]] + ["Where is the nearest bank?"]
        batches[lang] = tiny_tokenizer(texts, padding=True, return_tensors="pt")
    tiny_tokenizer.src_lang = "en"
    return batches


def test_folder_has_optimums_layout(exported):
    model, folder, translator = exported
    layers = model.config.decoder_layers
    names = {
        session: ([i.name for i in getattr(translator, session).get_inputs()], [o.name for o in outputs])
        for session in ("encoder", "decoder", "decoder_with_past")
        for outputs in [getattr(translator, session).get_outputs()]
    }
    assert names["encoder"] == (["input_ids", "attention_mask"], ["last_hidden_state"])
    assert names["decoder"] == (
        ["encoder_attention_mask", "input_ids", "encoder_hidden_states"],
        ["logits", *cache_names("present", layers)],
    )
    assert names["decoder_with_past"] == (
        ["encoder_attention_mask", "input_ids", *cache_names("past_key_values", layers)],
        ["logits", *cache_names("present", layers, cross=False)],
    )
    assert translator.encoder.get_inputs()[0].shape == ["batch_size", "encoder_sequence_length"]
    assert translator.decoder.get_inputs()[1].shape == ["batch_size", "decoder_sequence_length"]
    past = translator.decoder_with_past.get_inputs()[2]
    assert (past.name, past.shape[0], past.shape[2]) == (
        "past_key_values.0.decoder.key",
        "batch_size",
        "past_decoder_sequence_length",
    )
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (folder / name).is_file(), name


def test_graphs_compute_what_pytorch_computes(exported):
    model, folder, _ = exported
    differences = compare_with_pytorch(model, folder)
    assert set(differences) == {"encoder", "decoder", "decoder_with_past"}
    assert max(differences.values()) < 1e-4, differences
    # The check has teeth: a slightly different model is caught.
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.get_encoder().layers[0].mlp.fc1.weight.add_(0.05)
    assert compare_with_pytorch(other, folder)["encoder"] > 1e-3


def assert_same_ids(model, translator, batch, forced_bos_token_id, **generate_kwargs):
    expected = model.generate(**batch, forced_bos_token_id=forced_bos_token_id, **generate_kwargs).numpy()
    ids = translator.generate(
        batch["input_ids"].numpy(),
        batch["attention_mask"].numpy(),
        forced_bos_token_id=forced_bos_token_id,
        **generate_kwargs,
    )
    np.testing.assert_array_equal(ids, expected)
    return ids


def test_greedy_search_gives_generates_token_ids(exported, sources, tiny_tokenizer):
    model, _, translator = exported
    ids = assert_same_ids(model, translator, sources["en"], 5, num_beams=1, max_new_tokens=24)
    assert (ids[:, 1] == 5).all() and (ids == tiny_tokenizer.eos_token_id).any(-1).all()  # forced code, all ended
    assert_same_ids(model, translator, sources["zh"], 4, num_beams=1, max_new_tokens=24)
    assert_same_ids(model, translator, sources["en"], 5, num_beams=1, max_new_tokens=4)  # cut by the length


@pytest.mark.parametrize(
    "length_penalty, early_stopping", [(1.0, False), (1.0, True), (0.0, "never"), (2.0, False), (-1.0, True)]
)
def test_beam_search_gives_generates_token_ids(exported, sources, length_penalty, early_stopping):
    model, _, translator = exported
    options = dict(num_beams=3, max_new_tokens=24, length_penalty=length_penalty, early_stopping=early_stopping)
    assert_same_ids(model, translator, sources["en"], 5, **options)
    assert_same_ids(model, translator, sources["zh"], 4, **options)
    assert_same_ids(model, translator, sources["en"], 5, **{**options, "max_new_tokens": 5})


def test_translate_texts_like_zhen_translate(exported, tiny_tokenizer, tiny_pairs):
    model, _, translator = exported
    texts = ["", *(en for en, _ in tiny_pairs[:4]), "  "]
    expected = translate(texts, model, tiny_tokenizer, tgt_lang="zh", num_beams=2)
    assert translator.translate(texts, tgt_lang="zh", num_beams=2, batch_size=3) == expected
    assert expected[0] == expected[-1] == "" and all(expected[1:-1])
    zh = tiny_pairs[0][1]
    assert translator.translate(zh, src_lang="zh", tgt_lang="en") == translate(zh, model, tiny_tokenizer, tgt_lang="en")
