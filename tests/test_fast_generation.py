"""`zhen.fast_generation` must return exactly what `model.generate` returns: greedy and beam search, every position
type x norm placement, padded batches, min/max lengths, beam-search options, a trained model whose translations end on
their own; with MKL-packed weights and without (forced with `zhen.hardware`); never with stale weights; under bf16
autocast as on a CPU with native bf16; and leaving the model exactly as it found it."""

import contextlib
import copy
import gc
import io
import itertools
import math
import threading
import weakref

import pytest
import torch

from zhen import (
    ZhenConfig,
    ZhenForConditionalGeneration,
    decoder_steps,
    decoding_cache,
    fast_generation,
    hardware,
    layer_steps,
    quantization,
    search,
)
from zhen.decoder_steps import DecoderSteps
from zhen.decoding_cache import LineageCache, StaticDecodingCache, Workspace, row_index
from zhen.fast_generation import (
    FastDecoder,
    decoding_model,
    decoding_weights,
    forget_session_copies,
    generate,
    session_weights,
    unsupported_options,
)
from zhen.packing import pack_sources, unpack
from zhen.search import BeamSearch, argmax, top_continuations, topk
from zhen.session_modules import Bf16Linear, Bf16ReluMLP, PackedLinear


PAD, EOS, EN, ZH = 0, 2, 4, 5
VARIANTS = list(itertools.product(["sinusoidal", "learned", "rope"], [True, False]))
NO_ONEDNN_BF16 = "oneDNN cannot multiply bf16 on this CPU (it needs AVX-512 BW/VL/DQ or AVX-NE-CONVERT)"


def tiny_model(seed=0, vocab_size=600, **overrides) -> ZhenForConditionalGeneration:
    torch.manual_seed(seed)
    return ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=vocab_size, **overrides)).eval()


def waiting_thread(target, *args) -> threading.Thread:
    """`target(*args)` started in another thread, asserted to be still waiting half a second later (for a session to
    close)."""
    thread = threading.Thread(target=target, args=args)
    thread.start()
    thread.join(timeout=0.5)
    assert thread.is_alive()
    return thread


def padded_sources(vocab_size=600, lengths=(9, 7, 4, 2, 9), seed=0):
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths) + 2
    input_ids = torch.full((len(lengths), width), PAD)
    for row, n in enumerate(lengths):
        input_ids[row, : n + 2] = torch.cat(
            [torch.tensor([EN]), torch.randint(6, vocab_size, (n,), generator=generator), torch.tensor([EOS])]
        )
    return input_ids, input_ids.ne(PAD).long()


# How the decoder runs: the plain steps with the model's weights, float32 weights packed by oneDNN or by MKL, or the
# static-shape steps that a GPU captures as CUDA graphs (run eagerly here). On a CPU a session runs the layers as one
# program compiled by TorchScript by default; "python-layers" runs that program in Python, "module-layers" runs the
# layers through their modules' forwards, as on a GPU.
# "matmul-attention": attention's products as batched matmuls, where a CPU without FBGEMM takes them.
SESSIONS = {"plain": dict(weights="plain"), "packed": dict(weights="packed"), "packed-mkl": dict(weights="packed"),
            "static-shapes": dict(weights="plain", cuda_graphs=True),
            "python-layers": dict(weights="plain", script_layers=False),
            "module-layers": dict(weights="plain", inline_layers=False),
            "static-shapes-module-layers": dict(weights="plain", cuda_graphs=True, inline_layers=False),
            "matmul-attention": dict(weights="plain")}  # fmt: skip
# "packed": float32 weights packed by oneDNN; "packed-mkl": by MKL (`zhen.hardware`: `float32_packing`).
MACHINES = {"packed": dict(float32_packing="onednn"), "packed-mkl": dict(float32_packing="mkl"),
            "matmul-attention": dict(fbgemm="off")}  # fmt: skip


def assert_same_as_generate(model, input_ids, attention_mask, session="plain", **kwargs):
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False, **kwargs)
    if session == "plain":
        actual = generate(model, input_ids, attention_mask, **kwargs)
    else:
        with hardware.forced(**MACHINES.get(session, {})), FastDecoder(model, **SESSIONS[session]) as decoder:
            actual = decoder.generate(input_ids, attention_mask, **kwargs)
    assert actual.shape == expected.shape and torch.equal(actual, expected), f"{kwargs}\n{expected}\n{actual}"


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("num_beams", [1, 4])
@pytest.mark.parametrize("session", SESSIONS)
def test_equals_generate_for_every_variant(position_embedding_type, normalize_before, num_beams, session):
    if session == "packed-mkl" and hardware.detected().mkl_packing == "off":
        pytest.skip("this PyTorch build has no MKL")
    if session == "packed" and hardware.detected().onednn_packing == "off":
        pytest.skip("this PyTorch build has no oneDNN")
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    input_ids, attention_mask = padded_sources()
    for min_new_tokens, max_new_tokens in [(0, 10), (10, 10), (3, 14)]:
        assert_same_as_generate(
            model, input_ids, attention_mask, session=session, forced_bos_token_id=ZH, num_beams=num_beams,
            max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens,
        )  # fmt: skip


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
def test_encoder_on_packed_sources_equals_the_padded_encoder(position_embedding_type, normalize_before, monkeypatch):
    """On a CPU the session's encoder runs on the real tokens alone (packed into one row); where packing does not pay
    (a GPU, forced here) on the padded batch. Both are the model's own encoder output at every real token."""
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    input_ids, attention_mask = padded_sources()
    keep = attention_mask.bool()
    with torch.inference_mode():
        expected = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        with FastDecoder(model, weights="plain") as decoder:
            packed = decoder.encode(input_ids, attention_mask)
            monkeypatch.setattr(hardware, "packing_pays", lambda device: False)
            padded = decoder.encode(input_ids, attention_mask)
    torch.testing.assert_close(packed[keep], expected[keep])
    torch.testing.assert_close(padded, expected)
    assert not packed[~keep].any()


@pytest.mark.parametrize("early_stopping", [False, True, "never"])
@pytest.mark.parametrize("length_penalty", [1.0, 0.0, 2.0, -0.5])
def test_beam_search_options_equal_generate(early_stopping, length_penalty):
    """A 12-token vocabulary makes hypotheses end early and often, which exercises the finished-beam bookkeeping; in a
    batch, where finished sentences are dropped, and one sentence a call, where the search ends instead."""
    for seed in range(3):
        model = tiny_model(seed, vocab_size=12, position_embedding_type="rope")
        input_ids, attention_mask = padded_sources(vocab_size=12, seed=seed)
        for num_beams, num_return_sequences in [(2, 1), (4, 1), (4, 3)]:
            assert_same_as_generate(
                model, input_ids, attention_mask, forced_bos_token_id=ZH, num_beams=num_beams, max_new_tokens=10,
                length_penalty=length_penalty, early_stopping=early_stopping,
                num_return_sequences=num_return_sequences,
            )  # fmt: skip
    for row in range(len(input_ids)):
        assert_same_as_generate(
            model, input_ids[row : row + 1], attention_mask[row : row + 1], forced_bos_token_id=ZH, num_beams=4,
            max_new_tokens=10, length_penalty=length_penalty, early_stopping=early_stopping,
        )  # fmt: skip


def test_defaults_and_unforced_start_equal_generate():
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    assert_same_as_generate(model, input_ids, attention_mask)  # generation_config defaults: greedy, 20 tokens
    assert_same_as_generate(model, input_ids, attention_mask, min_new_tokens=30)  # runs to the default maximum
    assert_same_as_generate(model, input_ids, attention_mask, num_beams=3, max_new_tokens=6)
    assert_same_as_generate(model, input_ids[:1], None, forced_bos_token_id=ZH, max_new_tokens=5)


@pytest.mark.parametrize("forced", [{"forced_bos_token_id": ZH}, {}])
def test_beam_search_runs_its_shared_first_steps_once_per_sentence(forced, monkeypatch):
    """Up to the first token chosen, the beams of a sentence have one history: the decoder runs one row per sentence
    for those steps (two with a forced language code, else one), then every beam, with `generate`'s tokens."""
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    rows, step = [], DecoderSteps.step

    def counting_step(self, tokens, position):
        rows.append(len(tokens))
        return step(self, tokens, position)

    monkeypatch.setattr(DecoderSteps, "step", counting_step)
    for max_new_tokens in (1, 2, 6):
        rows.clear()
        assert_same_as_generate(model, input_ids, attention_mask, num_beams=3, max_new_tokens=max_new_tokens, **forced)
        shared = min(2 if forced else 1, max_new_tokens)
        assert rows[:shared] == [5] * shared and set(rows[shared:]) <= {15}, (max_new_tokens, rows)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_trained_model_translations_equal_generate(tiny_model, tiny_tokenizer, tiny_pairs, num_beams):
    """On a model that really translates, outputs end on `</s>` at different lengths: padding and stopping count."""
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    tiny_tokenizer.src_lang = "en"
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), num_beams=num_beams, max_new_tokens=40)
    assert_same_as_generate(tiny_model, batch["input_ids"], batch["attention_mask"], **kwargs)
    out = generate(tiny_model, batch["input_ids"], batch["attention_mask"], **kwargs)
    texts = tiny_tokenizer.batch_decode(out, skip_special_tokens=True)
    assert sum(text == zh for text, (_, zh) in zip(texts, tiny_pairs)) >= len(tiny_pairs) - 2


@pytest.mark.parametrize("num_beams,num_return_sequences", [(1, 1), (4, 1), (4, 4), (3, 2)])
@pytest.mark.parametrize("early_stopping", [False, True])
@pytest.mark.parametrize("direction", ["en-zh", "zh-en"])
@pytest.mark.parametrize("session", ["plain", "static-shapes"])
def test_finished_sentences_leave_the_batch_and_translations_stay_those_of_generate(
    tiny_model,
    tiny_tokenizer,
    tiny_pairs,
    num_beams,
    num_return_sequences,
    early_stopping,
    direction,
    session,
    monkeypatch,
):
    """Sentences of very different lengths: the decoder drops the rows of finished sentences as it goes (at least
    once, checked), and every sentence still gets exactly what `generate` gives it."""
    source, target = direction.split("-")
    texts = [pair[0 if source == "en" else 1] for pair in tiny_pairs]
    texts = sorted(texts, key=len)[::3] + sorted(texts, key=len)[-3:]  # short and long ones in one batch
    tiny_tokenizer.src_lang = source
    batch = tiny_tokenizer(texts, padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id(target), num_beams=num_beams, max_new_tokens=40)
    if num_beams > 1:
        kwargs.update(num_return_sequences=num_return_sequences, early_stopping=early_stopping)
    kept, keep = [], DecoderSteps.keep

    def counting_keep(self, sentences, length):
        kept.append(len(sentences))
        return keep(self, sentences, length)

    monkeypatch.setattr(DecoderSteps, "keep", counting_keep)
    assert_same_as_generate(tiny_model, batch["input_ids"], batch["attention_mask"], session, **kwargs)
    assert kept and min(kept) < len(texts), "no finished sentence left the batch"


@pytest.mark.parametrize("num_beams", [1, 4])
def test_bfloat16_model_runs_and_mostly_agrees(num_beams):
    """A bf16 model's caches are bf16: its beams' values are gathered through the pointers, not summed as rows."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=8, min_new_tokens=8, num_beams=num_beams)
    reference = generate(model, input_ids, attention_mask, **kwargs)
    out = generate(model.to(torch.bfloat16), input_ids, attention_mask, **kwargs)
    assert out.shape == reference.shape and (out == reference).float().mean() > 0.5


def test_unsupported_generation_options_are_refused():
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    assert unsupported_options(model, do_sample=False, use_cache=True, num_beams=2, max_length=9) == []
    assert unsupported_options(model, do_sample=True, top_k=5) == ["do_sample", "top_k"]
    with pytest.raises(NotImplementedError, match="top_k"):
        generate(model, input_ids, attention_mask, top_k=5)
    assert_same_as_generate(model, input_ids, attention_mask, max_length=7, use_cache=True)  # neutral values pass
    model.generation_config.no_repeat_ngram_size = 3
    assert unsupported_options(model) == ["no_repeat_ngram_size"]
    with pytest.raises(NotImplementedError, match="no_repeat_ngram_size"):
        generate(model, input_ids, attention_mask)


def test_position_table_overflow_raises_clear_error():
    model = tiny_model(vocab_size=40, max_position_embeddings=8)
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        generate(model, torch.tensor([[EN, 7, EOS]]), max_new_tokens=12)


def test_argmax_and_topk_equal_torch():
    torch.manual_seed(0)
    for width in (300, 1000, 16000, 16003):
        for rows in (1, search.FEW_ROWS_ARGMAX + 1, 37):  # PyTorch's own argmax, then the chunks'
            scores = torch.randn(rows, width)
            assert torch.equal(argmax(scores), scores.argmax(-1))
            ties = torch.randint(0, 4, (rows, width)).float()  # many equal maxima: the first one wins
            assert torch.equal(argmax(ties), ties.argmax(-1))
        scores = torch.randn(37, width)
        for k in (2, 8):
            values, indices = topk(scores, k)
            expected = torch.topk(scores, k)
            assert torch.equal(values, expected.values) and torch.equal(indices, expected.indices)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("vocab", [600, 16000, 16003])
def test_top_continuations_equal_topk_over_every_beams_sums(vocab, shared):
    """Beam search's top continuations, found without adding each beam's score to all its log-probabilities, are the
    top-k of those sums over every beam of a sentence: the same values, beams and tokens (in the first steps one row
    of log-probabilities a sentence stands for all its beams)."""
    generator = torch.Generator().manual_seed(0)
    batch, beams, k = 5, 4, 8
    log_probs = torch.log_softmax(torch.randn(batch * (1 if shared else beams), vocab, generator=generator) * 3, -1)
    log_probs[:, 7] = log_probs[:, 9]  # a tie within a beam
    running_scores = torch.randn(batch, beams, generator=generator)
    if shared:
        running_scores[:, 1:] = -1e9
    values, top_beams, tokens = top_continuations(log_probs.clone(), running_scores, k)
    rows = log_probs.repeat_interleave(beams, 0) if shared else log_probs
    expected = torch.topk((rows.view(batch, beams, vocab) + running_scores[:, :, None]).view(batch, -1), k)
    assert torch.equal(values, expected.values)
    assert torch.equal(top_beams * vocab + tokens, expected.indices)


def test_beam_search_over_a_vocabulary_of_many_chunks_equals_generate():
    """Top continuations are found from chunk maxima where the vocabulary has enough chunks (the models of the other
    tests have too few)."""
    model = tiny_model(vocab_size=4000)
    input_ids, attention_mask = padded_sources(vocab_size=4000)
    for session in ("plain", "python-layers", "module-layers"):
        assert_same_as_generate(model, input_ids, attention_mask, session=session, forced_bos_token_id=ZH, num_beams=4,
                                max_new_tokens=12, min_new_tokens=3)  # fmt: skip


@pytest.mark.parametrize("packing", ["onednn", "mkl"])
def test_packed_linear_equals_linear_and_leaves_other_inputs_to_it(packing, monkeypatch):
    """Packed once by oneDNN or MKL: float32 products equal to `nn.Linear`'s within float32 rounding, for any number
    of rows (MKL's packing is made for one number of rows and used for all)."""
    monkeypatch.setattr(layer_steps, "FEW_ROW_MACS", 0)  # every product through the packing
    if getattr(hardware.detected(), f"{packing}_packing") == "off":
        pytest.skip(f"this PyTorch build cannot pack with {packing}")
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 300)
    with hardware.forced(float32_packing=packing):
        packed = PackedLinear(linear)
    assert (packed.onednn is not None, packed.mkl is not None) == (packing == "onednn", packing == "mkl")
    with torch.inference_mode():
        for rows in (32, 5, 1, 64, 200):
            x = torch.randn(rows, 64)
            torch.testing.assert_close(packed(x), linear(x), rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(packed(x[:, None]), linear(x[:, None]), rtol=1e-5, atol=1e-6)
        many = torch.randn(1000, 64)  # a batch's source, once
        torch.testing.assert_close(packed(many), linear(many), rtol=1e-5, atol=1e-6)
        with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast (the bf16 crash of issue 15): nn.Linear's
            assert packed(x).dtype == torch.bfloat16
        assert PackedLinear(torch.nn.Linear(64, 300).bfloat16())(x.bfloat16()).dtype == torch.bfloat16


@pytest.mark.skipif(hardware.detected().onednn_packing == "off", reason="this PyTorch build has no oneDNN")
@torch.inference_mode()
@pytest.mark.parametrize("mkl_few_rows", ["on", "off"])
def test_few_row_float32_products_go_to_mkl_and_the_rest_to_onednns_packing(monkeypatch, mkl_few_rows):
    """Where MKL runs its own code for the CPU (Intel's), a oneDNN call costs more than a one-sentence step's product:
    products of up to `FEW_ROW_MACS` multiply-adds multiply by the weight as it is (`nn.Linear`'s own product,
    exactly), larger ones by oneDNN's packing; the same in the session's Python linears and in the layers' program.
    Elsewhere (`mkl_few_rows` off) every product is oneDNN's."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 300)
    monkeypatch.setattr(layer_steps, "FEW_ROW_MACS", 4 * 64 * 300)
    with hardware.forced(onednn_packing="on", float32_packing="onednn", mkl_few_rows=mkl_few_rows):
        packed = PackedLinear(linear)
    product = layer_steps.product_of(packed)
    few = 4 if mkl_few_rows == "on" else 0
    assert product.few_rows == packed.few_rows == few
    onednn = torch.ops.mkldnn._linear_pointwise
    for rows in (1, 4, 5, 32):
        x = torch.randn(rows, 1, 64)
        expected = linear(x) if rows <= few else onednn(x, packed.onednn, linear.bias, "none", [], "")
        assert torch.equal(packed(x), expected) and torch.equal(product.project(x), expected), rows
        assert product.in_float32(x) == (rows <= few), rows  # a feed-forward block fuses ReLU into oneDNN's only


@pytest.mark.parametrize("few_row_macs", [0, 1 << 40])
@pytest.mark.parametrize("num_beams", [1, 4])
def test_float32_sessions_equal_generate_whichever_library_multiplies(few_row_macs, num_beams, monkeypatch):
    """Every product of the session through oneDNN's packing (0, or MKL's few-row products off), or every one through
    MKL (a bound no step reaches)."""
    if hardware.detected().onednn_packing == "off":
        pytest.skip("this PyTorch build has no oneDNN")
    monkeypatch.setattr(layer_steps, "FEW_ROW_MACS", few_row_macs)
    machine = dict(cpu_bf16="emulated", float32_packing="onednn", mkl_few_rows="on" if few_row_macs else "off")
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    kwargs = dict(forced_bos_token_id=ZH, num_beams=num_beams, max_new_tokens=10)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False, **kwargs)
    for script_layers in (True, False):
        with hardware.forced(**machine), FastDecoder(model, script_layers=script_layers) as decoder:
            assert decoder.weights == "packed"
            assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), expected), script_layers


def test_batches_of_different_sizes_in_turn_equal_generate():
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    for rows in (slice(0, 5), slice(0, 2), slice(0, 5), slice(3, 4)):
        for num_beams in (1, 3):
            assert_same_as_generate(model, input_ids[rows], attention_mask[rows], forced_bos_token_id=ZH,
                                    num_beams=num_beams, max_new_tokens=8)  # fmt: skip


@pytest.mark.parametrize("session", ["plain", "static-shapes"])
def test_one_session_reuses_its_memory_and_batches_in_turn_equal_generate(session):
    """A session keeps its caches' memory from batch to batch ([`Workspace`]): what the last batch left there (longer
    sources, more rows, another search) must never show in the next batch's tokens."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources(lengths=(9, 7, 4, 2, 9, 3, 8))
    turns = []
    for rows, num_beams in [(slice(0, 7), 4), (slice(2, 4), 1), (slice(0, 5), 3), (slice(3, 4), 4), (slice(0, 7), 4),
                            (slice(5, 7), 1)]:  # fmt: skip
        width = int(attention_mask[rows].sum(1).max())  # shorter and longer sources in turn
        batch = dict(input_ids=input_ids[rows, :width], attention_mask=attention_mask[rows, :width],
                     forced_bos_token_id=ZH, num_beams=num_beams, max_new_tokens=9)  # fmt: skip
        turns.append((batch, model.generate(**batch, do_sample=False)))
    with FastDecoder(model, **SESSIONS[session]) as decoder:
        for turn, (batch, expected) in enumerate(turns):
            assert torch.equal(decoder.generate(**batch), expected), turn
            if turn == 0:
                memory = {name: kept.data_ptr() for name, kept in decoder.workspace.kept.items()}
        assert {name: kept.data_ptr() for name, kept in decoder.workspace.kept.items() if name in memory} == memory
    assert decoder.workspaces == {}  # given back with the session


def test_workspace_grows_by_doubling_and_keeps_names_apart():
    workspace = Workspace()
    first = workspace.empty("a", (2, 3), torch.float32, "cpu")
    assert workspace.empty("a", (3, 2), torch.float32, "cpu").data_ptr() == first.data_ptr()  # fits: same memory
    assert workspace.empty("b", (2, 3), torch.float32, "cpu").data_ptr() != first.data_ptr()
    assert workspace.empty("a", (7,), torch.float32, "cpu").shape == (7,) and workspace.kept["a"].numel() == 12
    assert workspace.empty("a", (2,), torch.bfloat16, "cpu").dtype == torch.bfloat16
    source = torch.randn(4, 5).t()
    copied = workspace.copy("c", source, torch.bfloat16)
    assert copied.is_contiguous() and torch.equal(copied, source.bfloat16())


# --- never stale, whatever changes the weights ------------------------------------------------------------------


def translate_ids(model, input_ids, attention_mask, weights="auto"):
    """What `zhen.translate` does: one decoding session (session weights for the machine) over the batches."""
    with FastDecoder(model, weights=weights) as decoder:
        return decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8, num_beams=2)


def expected_ids(model, input_ids, attention_mask):
    return model.generate(input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH,
                          max_new_tokens=8, num_beams=2)  # fmt: skip


@pytest.mark.parametrize("weights", ["packed", "bf16", "plain"])
@pytest.mark.parametrize("change", ["fused-adamw", "no-grad-edit", "load-state-dict"])
def test_never_serves_stale_weights(weights, change):
    """Translate, change the weights (fused AdamW, which does not bump the tensors' version counters; an in-place
    edit under `torch.no_grad()`; `load_state_dict`), translate again: the output is the changed model's."""
    if weights == "packed" and hardware.detected().mkl_packing == "off":
        pytest.skip("this PyTorch build has no MKL")
    model = tiny_model(vocab_size=60)
    input_ids, attention_mask = padded_sources(vocab_size=60)
    before = translate_ids(model, input_ids, attention_mask, weights)
    if change == "fused-adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.05, fused=True)
        for _ in range(5):
            model.train()
            model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids.masked_fill(
                attention_mask == 0, -100)).loss.backward()  # fmt: skip
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
    elif change == "no-grad-edit":
        with torch.no_grad():
            for parameter in model.model.decoder.parameters():
                parameter.mul_(-1.5)
    else:
        model.load_state_dict(tiny_model(seed=7, vocab_size=60).state_dict())
    after = translate_ids(model, input_ids, attention_mask, weights)
    expected = expected_ids(model, input_ids, attention_mask)
    if weights == "bf16":  # bf16 weights round: the changed model's tokens nearly everywhere, not the old ones
        assert (after == expected).float().mean() > 0.8 and (after != before).any()
    else:
        assert torch.equal(after, expected) and not torch.equal(after, before)


def session_lm_head(model, weights, **session):
    """The module a session of `model` multiplies its LM head by, and the ids it translates to."""
    input_ids, attention_mask = padded_sources(vocab_size=60)
    with FastDecoder(model, weights=weights, **session) as decoder:
        ids = decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8, num_beams=2)
        return model.lm_head, ids


EDITS = {  # a change of the LM head's weight by `noise`, and whether PyTorch's version counter sees it
    "in-place": lambda head, noise: head.weight.add_(noise),
    "in-place-through-data": lambda head, noise: head.weight.data.add_(noise),  # not counted: the sample shows it
    "new-data": lambda head, noise: setattr(head.weight, "data", head.weight.data + noise),
    "new-parameter": lambda head, noise: setattr(head, "weight", torch.nn.Parameter(head.weight + noise)),
}


@pytest.mark.parametrize("weights", ["packed", "bf16"])
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_session_copies_are_kept_until_the_weights_change(weights, edit):
    """Later sessions reuse a model's session copies (no copy made again, the same ids); any change of a weight makes
    them again, with the changed weight: in place (counted by PyTorch or not), new `.data`, a new parameter."""
    if weights == "packed" and hardware.detected().mkl_packing == "off" == hardware.detected().onednn_packing:
        pytest.skip("this PyTorch build packs with neither oneDNN nor MKL")
    model = tiny_model(vocab_size=60, tie_word_embeddings=False)
    first, ids = session_lm_head(model, weights)
    again, same_ids = session_lm_head(model, weights)
    assert again is first and torch.equal(same_ids, ids)
    with torch.no_grad():
        EDITS[edit](model.lm_head, torch.randn(model.lm_head.weight.shape, generator=torch.Generator().manual_seed(1)))
    changed, changed_ids = session_lm_head(model, weights)
    fresh_ids = session_lm_head(model, weights, keep_copies=False)[1]  # copies made anew from the changed weight
    assert changed is not first and torch.equal(changed_ids, fresh_ids)
    assert changed_ids.shape != ids.shape or not torch.equal(changed_ids, ids)


def test_a_model_loaded_under_inference_mode_decodes_in_sessions_that_see_its_changes():
    """Tensors made under `torch.inference_mode()` have no version counter: their sample alone tells a change."""
    with torch.inference_mode():
        model = tiny_model(vocab_size=60, tie_word_embeddings=False)
    first, ids = session_lm_head(model, "packed")
    assert session_lm_head(model, "packed")[0] is first
    with torch.inference_mode():
        model.lm_head.weight.mul_(-1.0)
    changed, changed_ids = session_lm_head(model, "packed")
    assert changed is not first and torch.equal(changed_ids, session_lm_head(model, "packed", keep_copies=False)[1])


def test_session_copies_follow_the_machine_and_can_be_dropped():
    model = tiny_model(vocab_size=60)
    first, _ = session_lm_head(model, "bf16")
    with hardware.forced(onednn_packing="off"):
        unpacked, _ = session_lm_head(model, "bf16")  # another machine's copy: made again
    assert unpacked is not first and not unpacked.packed
    again, _ = session_lm_head(model, "bf16")
    assert again is not unpacked and again.packed == first.packed
    fast_generation.forget_session_copies(model)
    assert session_lm_head(model, "bf16")[0] is not again
    without_keeping, _ = session_lm_head(model, "bf16", keep_copies=False)  # drops the kept one too
    assert not fast_generation._COPIES.get(model) and session_lm_head(model, "bf16")[0] is not without_keeping


def test_a_model_keeps_only_its_last_sessions_copies():
    model = tiny_model(vocab_size=60, tie_word_embeddings=False)
    session_lm_head(model, "bf16")
    old_head = model.lm_head
    model.lm_head = torch.nn.Linear(old_head.in_features, old_head.out_features, bias=False)
    session_lm_head(model, "bf16")
    kept = fast_generation._COPIES[model]
    assert model.lm_head in kept and old_head not in kept


def test_session_copies_go_with_their_model():
    model = tiny_model(vocab_size=60)
    session_lm_head(model, "bf16")
    assert model in fast_generation._PLANS  # and the swaps kept for its next session
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None and all(owner is not None for owner in fast_generation._COPIES.keys())


def session_swaps(model, weights="bf16", **session) -> tuple[list, torch.Tensor]:
    """What a session of `model` swapped in, `(parent, name, original, replacement)` each, and the ids it decodes."""
    input_ids, attention_mask = padded_sources(vocab_size=60)
    with FastDecoder(model, weights=weights, **session) as decoder:
        swaps = [(parent, name, original, parent._modules[name]) for parent, name, original in decoder.swapped]
        ids = decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8, num_beams=2)
    return swaps, ids


@pytest.mark.parametrize("weights", ["bf16", "packed", "plain"])
def test_a_models_next_session_swaps_in_the_last_ones_modules_without_choosing_them(weights, monkeypatch):
    model = tiny_model(vocab_size=60)
    swaps, ids = session_swaps(model, weights)
    for choosing in ("swap_in_lean_modules", "swap_in_session_linears"):
        monkeypatch.setattr(FastDecoder, choosing, lambda *args: pytest.fail("the kept swaps were chosen again"))
    again, same_ids = session_swaps(model, weights)
    assert len(again) == len(swaps) and all(a[3] is b[3] for a, b in zip(again, swaps)) and torch.equal(same_ids, ids)
    assert all(parent._modules[name] is original for parent, name, original, _ in swaps)  # given back


MODEL_CHANGES = {  # a change after which a session must choose its swaps again
    "a linear replaced": lambda model: setattr(
        model.model.decoder.layers[0].mlp, "fc1", torch.nn.Linear(*model.model.decoder.layers[0].mlp.fc1.weight.T.shape)
    ),
    "a weight edited through .data": lambda model: model.model.decoder.layers[0].mlp.fc2.weight.data.mul_(-1.0),
    "a dropout set training": lambda model: model.model.decoder.layers[0].mlp.activation_dropout.train(),
    "another kind of weights": lambda model: "packed",
    "another machine": lambda model: hardware.forced(onednn_packing="off", mkl_packing="off"),
}


@pytest.mark.parametrize("change", sorted(MODEL_CHANGES))
def test_a_session_chooses_its_swaps_again_where_the_model_or_the_session_changed(change, monkeypatch):
    """The swaps a session makes after any change are those a session of a model never decoded before makes: the
    same kinds of modules, made from the model's own modules as they are now, and the same ids."""
    model = tiny_model(vocab_size=60)
    session_swaps(model)
    changed = MODEL_CHANGES[change](model)
    weights = changed if isinstance(changed, str) else "bf16"
    with changed if isinstance(changed, contextlib.AbstractContextManager) else contextlib.nullcontext():
        chosen = []
        for choosing in ("swap_in_lean_modules", "swap_in_session_linears"):
            own = getattr(FastDecoder, choosing)
            monkeypatch.setattr(FastDecoder, choosing, lambda self, *a, own=own: chosen.append(own) or own(self, *a))
        swaps, ids = session_swaps(model, weights)
        monkeypatch.undo()
        assert chosen
        unseen = copy.deepcopy(model)  # a model no session has decoded with
        unseen_swaps, unseen_ids = session_swaps(unseen, weights)
    describe = [(name, type(replacement), type(original)) for _, name, original, replacement in swaps]
    assert describe == [(name, type(replacement), type(original)) for _, name, original, replacement in unseen_swaps]
    assert torch.equal(ids, unseen_ids)
    for _, _, original, replacement in swaps:
        linear = getattr(replacement, "linear", None)
        assert linear is None or linear is original


@pytest.mark.parametrize("weights", ["packed", "plain"])
def test_another_checkpoint_loaded_into_the_same_process_is_not_served_the_first_ones_weights(tmp_path, weights):
    """A new model may reuse the memory of a deleted one; nothing of the first may be used for the second."""
    if weights == "packed" and hardware.detected().mkl_packing == "off":
        pytest.skip("this PyTorch build has no MKL")
    input_ids, attention_mask = padded_sources(vocab_size=60)
    for seed in (1, 2):
        tiny_model(seed=seed, vocab_size=60).save_pretrained(tmp_path / str(seed))
    first = ZhenForConditionalGeneration.from_pretrained(tmp_path / "1").eval()
    translate_ids(first, input_ids, attention_mask, weights)
    del first
    second = ZhenForConditionalGeneration.from_pretrained(tmp_path / "2").eval()
    expected = expected_ids(second, input_ids, attention_mask)
    assert torch.equal(translate_ids(second, input_ids, attention_mask, weights), expected)


@pytest.mark.parametrize("cpu_bf16", ["native", "emulated"])
@pytest.mark.parametrize("mkl_packing", ["on", "off"])
@pytest.mark.parametrize("onednn_packing", ["on", "off"])
def test_bf16_autocast_decoding_runs_on_every_cpu(cpu_bf16, mkl_packing, onednn_packing):
    """Validation during bf16 training translates under bf16 autocast; on a CPU with native bf16 the packed float32
    weights met bf16 activations and crashed. Every branch must run and agree with `model.generate` under the same
    autocast on nearly every token (bf16 rounds differently in the two attention implementations)."""
    if mkl_packing == "on" and hardware.detected().mkl_packing == "off":
        pytest.skip("this PyTorch build has no MKL")
    if onednn_packing == "on" and hardware.detected().onednn_packing == "off":
        pytest.skip("this PyTorch build has no oneDNN")
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    machine = dict(cpu_bf16=cpu_bf16, mkl_packing=mkl_packing, onednn_packing=onednn_packing)
    with hardware.forced(**machine), torch.autocast("cpu", dtype=torch.bfloat16):
        out = translate_ids(model, input_ids, attention_mask)
        reference = expected_ids(model, input_ids, attention_mask)
    assert out.shape[0] == reference.shape[0] and (out[:, :2] == reference[:, :2]).all()


def test_the_model_is_left_as_it_was_also_after_an_error():
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    linear_types = [type(m) for m in model.modules()]
    with pytest.raises(ValueError, match="num_return_sequences"):
        with FastDecoder(model, weights="packed") as decoder:
            assert model.config._attn_implementation == "zhen_decoding"
            decoder.generate(input_ids, attention_mask, num_beams=2, num_return_sequences=3)
    assert model.config._attn_implementation == "sdpa"
    assert [type(m) for m in model.modules()] == linear_types
    assert_same_as_generate(model, input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=6)


def test_sessions_from_two_threads_take_turns():
    import threading

    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH,
                              max_new_tokens=6)  # fmt: skip
    results = []

    def work():
        with FastDecoder(model) as decoder:
            results.append(decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=6))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(torch.equal(r, expected) for r in results)


@pytest.mark.parametrize("attn_implementation", ["sdpa", "eager"])
@pytest.mark.parametrize("packing", [True, False])
def test_streams_decode_batches_at_once_as_generate_does(attn_implementation, packing, monkeypatch):
    """Two threads of one session decode at once (one encoding while the other decodes): each batch's tokens are
    those of `model.generate`, each thread keeps its own memory and PyTorch threads, and results come in order."""
    import threading

    monkeypatch.setattr(hardware, "packing_pays", lambda device: packing)
    decoding_attention = fast_generation.decoding_attention
    encoder_layers_decoding = []

    def only_for_the_decoder(module, *args, **kwargs):  # the encoder attends with its own implementation
        encoder_layers_decoding.extend([module] if not (module.is_causal or module.is_cross_attention) else [])
        return decoding_attention(module, *args, **kwargs)

    monkeypatch.setattr(fast_generation, "decoding_attention", only_for_the_decoder)
    model = tiny_model(vocab_size=40)
    model.set_attn_implementation(attn_implementation)
    input_ids, attention_mask = padded_sources(vocab_size=40, lengths=(9, 7, 4, 2, 9, 3, 8, 5))
    slices = (slice(0, 3), slice(3, 8), slice(1, 6), slice(6, 8))
    batches = [(rows, num_beams) for rows in slices for num_beams in (1, 3)]
    expected = [model.generate(input_ids=input_ids[rows], attention_mask=attention_mask[rows], forced_bos_token_id=ZH,
                               num_beams=num_beams, max_new_tokens=7) for rows, num_beams in batches]  # fmt: skip
    both_running = threading.Barrier(2, timeout=60)
    seen = []

    def decode(batch):
        rows, num_beams = batch
        seen.append((threading.get_ident(), torch.get_num_threads()))
        if len(seen) <= 2:
            both_running.wait()  # the first two batches run at once
        return decoder.generate(input_ids[rows], attention_mask[rows], forced_bos_token_id=ZH, num_beams=num_beams,
                                max_new_tokens=7)  # fmt: skip

    threads = torch.get_num_threads()
    with FastDecoder(model) as decoder:
        results = list(decoder.map(decode, batches, streams=2))
        assert len(decoder.workspaces) == 2
    assert all(torch.equal(result, wanted) for result, wanted in zip(results, expected)) and not encoder_layers_decoding
    assert len({ident for ident, _ in seen}) == 2 and {count for _, count in seen} == {max(1, threads // 2)}
    assert torch.get_num_threads() == threads and model.config._attn_implementation == attn_implementation


def test_there_are_no_more_streams_than_batches():
    seen = []

    def record(batch):
        seen.append((batch, threading.get_ident(), torch.get_num_threads()))
        return batch

    threads = torch.get_num_threads()
    assert list(fast_generation.in_streams(record, [7], streams=4)) == [7]  # one batch: here, with every thread
    assert seen == [(7, threading.get_ident(), threads)]
    seen.clear()
    assert list(fast_generation.in_streams(record, [1, 2], streams=4)) == [1, 2]  # two streams, half the threads each
    assert {count for _, _, count in seen} == {max(1, threads // 2)}
    assert threading.get_ident() not in {thread for _, thread, _ in seen}
    seen.clear()
    assert list(fast_generation.in_streams(record, iter([1, 2]), streams=4)) == [1, 2]  # unsized: as asked
    assert {count for _, _, count in seen} == {max(1, threads // 4)}
    assert torch.get_num_threads() == threads


def test_an_error_in_a_stream_reaches_the_caller_and_leaves_the_model_as_it_was():
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)

    def decode(batch):
        if batch == 1:
            raise RuntimeError("batch 1 failed")
        return decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=4)

    with FastDecoder(model) as decoder:
        with pytest.raises(RuntimeError, match="batch 1 failed"):
            list(decoder.map(decode, range(4), streams=2))
    assert model.config._attn_implementation == "sdpa"
    assert_same_as_generate(model, input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=4)


def test_decoding_streams_follow_the_device_and_the_threads():
    threads = torch.get_num_threads()
    try:
        for count, streams in [(1, 1), (2, 2), (3, 3), (16, hardware.MAX_DECODING_STREAMS)]:
            torch.set_num_threads(count)
            assert hardware.decoding_streams("cpu") == streams
            assert hardware.decoding_streams("cuda") == 1
    finally:
        torch.set_num_threads(threads)


# --- session weights for the machine ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "machine,expected",
    [(dict(cpu_bf16="native"), "bf16"), (dict(cpu_bf16="emulated", mkl_packing="on"), "packed"),
     (dict(cpu_bf16="emulated", mkl_packing="off", onednn_packing="on"), "packed"),
     (dict(cpu_bf16="emulated", mkl_packing="off", onednn_packing="off"), "plain")],
)  # fmt: skip
def test_session_weights_follow_the_machine(machine, expected):
    model = tiny_model(vocab_size=40)
    with hardware.forced(**machine):
        assert session_weights(model) == expected
        assert session_weights(tiny_model(vocab_size=40).bfloat16()) == "plain"  # bf16 weights: as they are
        with FastDecoder(model) as decoder:
            assert decoder.weights == expected
            kinds = {type(m) for m in model.modules()}
            assert (Bf16Linear in kinds) == (expected == "bf16") and (PackedLinear in kinds) == (expected == "packed")
            encoder_kinds = {type(m) for m in model.get_encoder().modules()}  # the encoder's products too
            assert (Bf16ReluMLP in encoder_kinds) == (expected == "bf16")
    assert not {Bf16Linear, Bf16ReluMLP, PackedLinear} & {type(m) for m in model.modules()}


@pytest.mark.parametrize("cpu_bf16", ["emulated", "native"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_bf16_model_on_a_cpu_without_bf16_instructions_is_told_to_load_in_float32(cpu_bf16, dtype, monkeypatch):
    """Its session multiplies the bf16 weights as they are, several times slower there than a float32 session: the
    user hears how to load it (once a process), and it still decodes."""
    warned = []
    monkeypatch.setattr(
        fast_generation, "logger", type("Recorder", (), {"warning_once": lambda self, m: warned.append(m)})()
    )
    model = tiny_model(vocab_size=40).to(dtype)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    with hardware.forced(cpu_bf16=cpu_bf16), FastDecoder(model) as decoder:
        decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=3)
    expected = cpu_bf16 == "emulated" and dtype == torch.bfloat16
    assert len(warned) == expected and all("dtype=torch.float32" in message for message in warned)
    with hardware.forced(cpu_bf16=cpu_bf16), FastDecoder(model, weights="plain"):
        assert len(warned) == expected  # asked for by name: the user chose
    int8 = quantization.quantize_dynamic(tiny_model(vocab_size=40))  # its LM head's `weight` is a method
    with hardware.forced(cpu_bf16=cpu_bf16), FastDecoder(int8) as decoder:
        decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=3)
    assert len(warned) == expected


@pytest.mark.parametrize("cpu_bf16", ["emulated", "native"])
def test_a_bf16_model_decodes_through_a_float32_copy_where_the_cpu_emulates_bf16(cpu_bf16):
    """The front ends' model ([`decoding_model`]): a float32 copy of the same values, in eval mode, kept while the
    weights stay as they are and made again when they change; the model itself where bf16 is native or the weights
    are float32."""
    model = tiny_model(vocab_size=40).bfloat16().train()
    with hardware.forced(cpu_bf16=cpu_bf16):
        twin = decoding_model(model)
        float32_model = tiny_model(vocab_size=40)
        assert decoding_model(float32_model) is float32_model
        if cpu_bf16 == "native":
            assert twin is model and decoding_weights(model) == "plain"
            return
        assert twin is not model and not twin.training and model.training
        assert {p.dtype for p in twin.parameters()} == {torch.float32}
        for (name, weight), (_, copied) in zip(model.named_parameters(), twin.named_parameters()):
            assert torch.equal(copied, weight.float()), name
        assert twin.generation_config is model.generation_config
        assert decoding_model(model) is twin and decoding_weights(model) == session_weights(twin) != "plain"
        assert decoding_model(model, keep=False) is twin  # kept before: used
        with torch.no_grad():
            model.get_encoder().layers[0].mlp.fc1.weight.mul_(2)
        changed = decoding_model(model)
        assert changed is not twin and torch.equal(
            changed.get_encoder().layers[0].mlp.fc1.weight, model.get_encoder().layers[0].mlp.fc1.weight.float()
        )
        forget_session_copies(model)
        unkept = decoding_model(model, keep=False)
        assert unkept is not changed and decoding_model(model, keep=False) is not unkept


@pytest.mark.parametrize("small_weight", [0, layer_steps.BF16_SMALL_WEIGHT])
@pytest.mark.parametrize("onednn_packing", ["on", "off"])
def test_bf16_linear_multiplies_in_bf16_and_returns_float32(onednn_packing, small_weight, monkeypatch):
    """Exactly the plain bf16 product, packed or not; but a product of few rows by a small weight: the float32
    weight's own (`nn.Linear`'s), as the layers' program has it. With gradients enabled (a training step during a
    session), the weight's own product and its gradient."""
    if onednn_packing == "on" and not hardware.detected().packs_bf16():
        pytest.skip(NO_ONEDNN_BF16)
    monkeypatch.setattr(layer_steps, "BF16_SMALL_WEIGHT", small_weight)
    torch.manual_seed(0)
    for linear in (torch.nn.Linear(64, 300), torch.nn.Linear(64, 300, bias=False)):
        with hardware.forced(onednn_packing=onednn_packing, mkl_few_rows="on"):
            session_linear = Bf16Linear(linear)
        product = layer_steps.product_of(session_linear)
        assert session_linear.packed == (onednn_packing == "on")
        assert session_linear.few_rows == (layer_steps.BF16_FEW_ROW_MACS // (64 * 300) if small_weight else 0)
        bias = None if linear.bias is None else linear.bias.bfloat16()
        x = torch.randn(300, 64)
        session_linear(x).sum().backward()
        torch.testing.assert_close(linear.weight.grad, x.sum(0).expand(300, 64))
        linear.weight.grad = None
        for x in (torch.randn(8, 64), torch.randn(5, 1, 64), torch.randn(300, 64)):  # decoding rows, beams, many rows
            with torch.no_grad():  # as a session decodes
                y = session_linear(x)
            assert y.dtype == torch.float32 and y.shape == (*x.shape[:-1], 300)
            assert torch.equal(product.project(x), y)
            if x.numel() // 64 <= session_linear.few_rows:
                assert torch.equal(y, linear(x))
                continue
            # packed or not, exactly the plain bf16 product
            assert torch.equal(y, torch.nn.functional.linear(x.bfloat16(), linear.weight.bfloat16(), bias).float())
            torch.testing.assert_close(y, linear(x), rtol=2e-2, atol=2e-2)
        with torch.autocast("cpu", dtype=torch.bfloat16):  # under autocast: the module's own product
            assert torch.equal(session_linear(x), linear(x))


def test_a_bf16_sessions_float32_products_are_of_small_weights_and_as_many_rows_as_a_drafted_check():
    """The rows a bf16 session multiplies by a float32 weight: none for a weight over `BF16_SMALL_WEIGHT` elements;
    for the largest small one, the rows a drafted greedy search checks in a pass, so that its check multiplies as
    the steps it stands for do."""
    from zhen.draft_decoding import MAX_DRAFT_TOKENS

    small, few_rows = layer_steps.BF16_SMALL_WEIGHT, layer_steps.few_rows
    with hardware.forced(mkl_few_rows="on"):
        assert few_rows(torch.empty(small + 1), bf16=True) == 0
        assert few_rows(torch.empty(small), bf16=True) >= MAX_DRAFT_TOKENS + 1
        assert few_rows(torch.empty(small // 4), bf16=True) == 4 * few_rows(torch.empty(small), bf16=True)
        assert few_rows(torch.empty(small + 1), bf16=False) == layer_steps.FEW_ROW_MACS // (small + 1)
    with hardware.forced(mkl_few_rows="off"):  # where MKL runs code for other CPUs: none
        assert few_rows(torch.empty(small), bf16=True) == few_rows(torch.empty(small), bf16=False) == 0


@pytest.mark.parametrize("mkl_few_rows", ["on", "off"])
@pytest.mark.parametrize("decoder_limit", [0, 1 << 40])
def test_a_bf16_session_multiplies_few_rows_in_float32_only_for_a_small_decoder_where_mkl_is_fast(
    decoder_limit, mkl_few_rows, monkeypatch
):
    """A decoder over `BF16_FLOAT32_DECODER` weights (whose float32 weights a step would read from memory), or a
    machine where MKL runs code for other CPUs (`mkl_few_rows` off: the AMD EPYCs): every product in bf16, in the
    session's linears and in the layers' program; the same translations as a session that multiplies no weight in
    float32."""
    monkeypatch.setattr(layer_steps, "BF16_FLOAT32_DECODER", decoder_limit)
    machine = dict(mkl_few_rows=mkl_few_rows)
    in_float32 = bool(decoder_limit) and mkl_few_rows == "on"
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=8, num_beams=2)
    with hardware.forced(**machine), FastDecoder(model, weights="bf16") as decoder:
        linears = [m for m in model.modules() if isinstance(m, Bf16Linear)]
        expected = [layer_steps.few_rows(m.linear.weight, bf16=True) if in_float32 else 0 for m in linears]
        assert [m.few_rows for m in linears] == expected and any(expected) == in_float32
        layer = decoder.layer_steps(script=False).layers[0]
        assert (layer.q_proj.plain is not None) == in_float32
        out = decoder.generate(input_ids[:1], **kwargs), decoder.generate(input_ids, attention_mask, **kwargs)
    monkeypatch.setattr(layer_steps, "BF16_SMALL_WEIGHT", 0)  # no weight is small
    with hardware.forced(**machine), FastDecoder(model, weights="bf16") as decoder:
        bf16 = decoder.generate(input_ids[:1], **kwargs), decoder.generate(input_ids, attention_mask, **kwargs)
    if not in_float32:
        assert all(torch.equal(a, b) for a, b in zip(out, bf16))
    monkeypatch.undo()
    monkeypatch.setattr(layer_steps, "BF16_FLOAT32_DECODER", (1 << 40) - decoder_limit)
    with hardware.forced(**machine), FastDecoder(model, weights="bf16"):  # kept copies follow the session's rule
        in_float32 = not decoder_limit and mkl_few_rows == "on"
        assert any(m.few_rows for m in model.modules() if isinstance(m, Bf16Linear)) == in_float32


@pytest.mark.parametrize("onednn_packing", ["on", "off"])
def test_bf16_relu_mlp_equals_its_two_session_linears_and_relu(onednn_packing):
    """ReLU fused into fc1's bf16 product, its bf16 output fed to fc2: exactly what the two `Bf16Linear`s and a float32
    ReLU between them give (ReLU commutes with rounding to bf16); the model's own MLP under autocast."""
    if onednn_packing == "on" and not hardware.detected().packs_bf16():
        pytest.skip(NO_ONEDNN_BF16)
    model = tiny_model(vocab_size=40)
    mlp = model.get_decoder().layers[0].mlp
    with hardware.forced(onednn_packing=onednn_packing):
        fused, fc1, fc2 = Bf16ReluMLP(mlp), Bf16Linear(mlp.fc1), Bf16Linear(mlp.fc2)
    with torch.inference_mode():
        for x in (torch.randn(8, 1, mlp.fc1.in_features), torch.randn(300, mlp.fc1.in_features)):
            assert torch.equal(fused(x), fc2(fc1(x).relu()))
            if x.numel() // x.shape[-1] <= fc1.few_rows:  # few rows: the float32 weights' own products
                assert torch.equal(fused(x), mlp(x))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert torch.equal(fused(x), mlp(x))


@pytest.mark.parametrize("activation_function", ["relu", "gelu"])
def test_bf16_session_fuses_relu_mlps_only_and_decodes_as_without_fusion(activation_function, monkeypatch):
    model = tiny_model(activation_function=activation_function)
    input_ids, attention_mask = padded_sources()
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=12, num_beams=3)
    with FastDecoder(model, weights="bf16") as decoder:
        fused = {type(m) for m in model.modules()} >= {Bf16ReluMLP}
        out = decoder.generate(input_ids, attention_mask, **kwargs)
    assert fused == (activation_function == "relu")
    monkeypatch.setattr(fast_generation, "is_relu_mlp", lambda module: False)
    fast_generation.forget_session_copies(model)  # and the swaps kept for its next session, made by the rule before
    with FastDecoder(model, weights="bf16") as decoder:
        assert Bf16ReluMLP not in {type(m) for m in model.modules()}
        assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), out)
    assert Bf16ReluMLP not in {type(m) for m in model.modules()}


@pytest.mark.skipif(not hardware.detected().packs_bf16(), reason=NO_ONEDNN_BF16)
@pytest.mark.parametrize("num_beams", [1, 3])
def test_packed_bf16_session_decodes_exactly_as_the_unpacked_one(num_beams):
    """Packed or not (no oneDNN packing, or a oneDNN that cannot multiply bf16 here), the same tokens."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    ids = {}
    for machine in (dict(), dict(onednn_packing="off"), dict(onednn_bf16="off")):
        with hardware.forced(**machine), FastDecoder(model, weights="bf16") as decoder:
            assert all(m.packed == (not machine) for m in model.modules() if isinstance(m, Bf16Linear))
            ids[str(machine)] = decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8,
                                                 num_beams=num_beams)  # fmt: skip
    assert torch.equal(ids["{}"], ids["{'onednn_packing': 'off'}"])
    assert torch.equal(ids["{}"], ids["{'onednn_bf16': 'off'}"])


@pytest.mark.parametrize("num_beams", [1, 3])
def test_a_bf16_session_runs_where_onednn_cannot_multiply_bf16(num_beams):
    """On an AVX2 CPU (AMD Zen 3) oneDNN refuses to pack bf16 weights: a bf16 session forced there (`cpu_bf16`
    native: tests, `ZHEN_HARDWARE`) multiplies its bf16 copies as they are, and decodes as `generate` under autocast
    on nearly every token."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    with hardware.forced(cpu_bf16="native", onednn_bf16="off"), FastDecoder(model) as decoder:
        linears = [m for m in model.modules() if isinstance(m, Bf16Linear)]
        assert decoder.weights == "bf16" and linears and not any(m.packed for m in linears)
        out = decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8, num_beams=num_beams)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        reference = model.generate(input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH, max_new_tokens=8,
                                   num_beams=num_beams, do_sample=False)  # fmt: skip
    assert out.shape[0] == reference.shape[0] and (out[:, :3] == reference[:, :3]).all()


def test_bf16_session_translates_a_trained_model_as_float32_does(tiny_model, tiny_tokenizer, tiny_pairs):
    """On a model that really translates, bf16 session weights change (nearly) no translation."""
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=40)
    texts = {}
    for weights in ("plain", "bf16"):
        with FastDecoder(tiny_model, weights=weights) as decoder:
            ids = decoder.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
        texts[weights] = tiny_tokenizer.batch_decode(ids, skip_special_tokens=True)
    assert sum(a == b for a, b in zip(texts["plain"], texts["bf16"])) >= len(tiny_pairs) - 1


@pytest.mark.parametrize("source_dtype", [torch.float32, torch.bfloat16])
def test_source_keys_and_values_are_held_in_the_layout_and_dtype_attention_reads(source_dtype):
    """Cross-attention reads the source's keys/values every step: they are stored in the dtype attention computes in,
    whether they come in that dtype (a float32 session) or not (a bf16 session), heads apart: the values contiguous,
    the keys by dimension (each head's keys transposed, contiguous), the rows `row_sums` takes."""
    keys_values = torch.randn(3, 7, 2, 4, 8).permute(2, 0, 3, 1, 4).to(source_dtype)  # as `split_heads` gives them
    cache = StaticDecodingCache([(keys_values[0], keys_values[1])], torch.float32)
    keys, values = cache.layers[0].keys, cache.layers[0].values
    assert keys.transpose(-1, -2).is_contiguous() and values.is_contiguous()
    for stored, given in [(keys, keys_values[0]), (values, keys_values[1])]:
        assert stored.dtype == torch.float32 and torch.equal(stored, given.float())


@pytest.mark.parametrize("moved", ["none", "few", "most", "all"])
def test_cache_reorder_gives_each_row_its_parents_history(moved):
    """The static-shape steps' cache (a CUDA graph reads it in place) copies the rows whose history changes: row `i`
    is left with exactly row `rows[i]`'s history up to `length` (later positions are written before they are
    read)."""
    generator = torch.Generator().manual_seed(0)
    rows, length = 12, 5
    cache = StaticDecodingCache([], torch.float32)
    cache.keys = [torch.randn(rows, 2, 8, 3, generator=generator) for _ in range(2)]
    cache.values = [torch.randn(rows, 2, 8, 3, generator=generator) for _ in range(2)]
    before = [t[:, :, :length].clone() for t in cache.keys + cache.values]
    parents = torch.arange(rows)
    if moved == "few":
        parents[[1, 6, 7]] = torch.tensor([0, 7, 6])  # a swap, and a row taking another's history
    elif moved in ("most", "all"):
        parents = torch.randperm(rows, generator=generator) if moved == "most" else (parents + 1) % rows
        parents[:2] = torch.tensor([3, 3])  # two rows continue the same parent
    for _ in range(2):
        cache.reorder(parents, length)
        expected = [t[parents] for t in before]
        assert all(torch.equal(a[:, :, :length], b) for a, b in zip(cache.keys + cache.values, expected))
        before = expected


def lineage_cache(sentences, beams, max_length, heads=2, head_dim=3, seed=0):
    """A [`LineageCache`] of one layer, its caches filled with distinct values (unwritten slots too)."""
    source = torch.zeros(sentences, heads, 4, head_dim)
    cache = LineageCache([(source, source)], torch.float32, beams=beams)
    cache.allocate(sentences * beams, max_length)
    cache.allocate_layers(heads, head_dim, torch.float32, torch.device("cpu"))
    generator = torch.Generator().manual_seed(seed)
    for tensor in (*cache.keys, *cache.values):
        tensor.copy_(torch.randn(tensor.shape, generator=generator))
    return cache


def histories(cache, tensor, length):
    """Each row's history `(rows, heads, length, head_dim)`, read through the cache's pointers."""
    per_sentence = cache.rows // cache.sentences
    sentence = torch.arange(cache.rows) // per_sentence
    positions = torch.arange(length)
    return tensor[sentence[:, None], :, positions, cache.origins[:, :length]].transpose(1, 2)


def test_a_lineage_cache_gives_each_row_its_parents_history_and_moves_no_keys():
    """Beam search's reorders, from the shared first steps (one row per sentence, in the first slot) to sentences
    leaving the batch: every row reads exactly the history it would read had its parents' rows been copied, and the
    keys and values stay where they were written."""
    sentences, beams, max_length = 3, 4, 9
    cache = lineage_cache(sentences, beams, max_length)
    cache.allocate(sentences, max_length)  # beam search's first steps: one row per sentence
    keys, values = cache.keys[0].clone(), cache.values[0].clone()
    expected = [histories(cache, t, 2) for t in (keys, values)]  # written by the shared steps, in the first slot
    assert torch.equal(expected[0], keys[:, :, :2, 0])
    cache.expand(torch.arange(sentences).repeat_interleave(beams), 2)
    expected = [e.repeat_interleave(beams, 0) for e in expected]
    generator = torch.Generator().manual_seed(1)
    sentence_of_row, slot_of_row = torch.arange(sentences * beams) // beams, torch.arange(sentences * beams) % beams
    for length in range(3, 8):
        assert all(torch.equal(histories(cache, t, length - 1), e) for t, e in zip((keys, values), expected))
        # the step writes each row's keys at `length - 1`, in its own slot; then beam search picks the parents
        own = [t[sentence_of_row, :, length - 1, slot_of_row] for t in (keys, values)]
        expected = [torch.cat([e, o[:, :, None]], 2) for e, o in zip(expected, own)]
        parents = torch.randint(0, beams, (sentences * beams,), generator=generator) + sentence_of_row * beams
        cache.reorder(parents, length)
        expected = [e[parents] for e in expected]
        assert all(torch.equal(histories(cache, t, length), e) for t, e in zip((keys, values), expected))
    assert torch.equal(cache.keys[0], keys) and torch.equal(cache.values[0], values)  # nothing moved
    rows = torch.tensor([4, 5, 6, 7])  # the second sentence's beams stay
    cache.keep(rows, torch.tensor([1]), 7)
    assert all(torch.equal(histories(cache, t, 7), e[rows]) for t, e in zip((cache.keys[0], cache.values[0]), expected))


@pytest.mark.parametrize("row_sums", [True, False])
@pytest.mark.parametrize("shared", [True, False])
def test_attention_over_a_lineage_cache_equals_attention_over_each_rows_copied_history(row_sums, shared):
    """Scores picked from each sentence's block of beams and values summed through the pointers (row sums, or
    gathered for matmuls) give what attention over each row's own copy of its history gives."""
    sentences, beams, length, max_length = 3, 4, 5, 8
    cache = lineage_cache(sentences, beams, max_length)
    if shared:
        cache.allocate(sentences, max_length)
    else:
        parents = torch.randint(0, beams, (sentences * beams,), generator=torch.Generator().manual_seed(2))
        cache.reorder(parents + torch.arange(sentences).repeat_interleave(beams) * beams, length - 1)
    query = torch.randn(cache.rows, 2, 1, 3)
    decoding_cache.DECODING.row_sums = row_sums
    try:
        columns, value_rows = cache.history(length)
        assert (value_rows is not None) == row_sums
        keys, values = cache.keys[0][:, :, :length], cache.values[0][:, :, :length]
        actual = layer_steps.attend_history(query, keys, values, 0.5, columns, value_rows)
    finally:
        decoding_cache.DECODING.row_sums = False
    own_keys, own_values = histories(cache, cache.keys[0], length), histories(cache, cache.values[0], length)
    expected = torch.softmax(query @ own_keys.transpose(-1, -2) * 0.5, -1) @ own_values
    torch.testing.assert_close(actual, expected.transpose(1, 2))


@pytest.mark.parametrize("num_beams", [1, 4])
def test_a_model_without_end_of_sentence_or_padding_tokens_decodes_to_max_new_tokens(num_beams):
    """No `</s>` and no pad id in the generation config: nothing finishes, every row runs to `max_new_tokens`."""
    model = tiny_model()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = None
    input_ids, attention_mask = padded_sources()
    assert_same_as_generate(model, input_ids, attention_mask, num_beams=num_beams, max_new_tokens=6,
                            forced_bos_token_id=ZH)  # fmt: skip


def test_a_session_drops_eval_dropout_calls_and_keeps_training_dropout():
    model = tiny_model(vocab_size=40, dropout=0.1, activation_dropout=0.1)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    dropouts = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert dropouts
    with FastDecoder(model, weights="plain"):
        assert not any(isinstance(m, torch.nn.Dropout) for m in model.modules())
    assert [m for m in model.modules() if isinstance(m, torch.nn.Dropout)] == dropouts
    assert_same_as_generate(model, input_ids, attention_mask, session="packed", forced_bos_token_id=ZH, num_beams=2)
    model.train()
    with FastDecoder(model, weights="plain"):
        assert [m for m in model.modules() if isinstance(m, torch.nn.Dropout)] == dropouts


@pytest.mark.parametrize("queries", [1, 3])
def test_row_sums_equal_the_matmuls_of_attention_over_the_caches_they_fit(queries):
    cache = torch.randn(4, 2, 9, 8)  # (rows, heads, positions allocated, head_dim), written up to 5 positions
    source_keys = torch.randn(4, 2, 8, 6)  # (batch, heads, head_dim, source): the source's keys by dimension
    weights, query = torch.randn(4, 2, queries, 5), torch.randn(4, 2, queries, 8)
    decoding_cache.DECODING.row_sums = True
    try:
        for left, table in [(weights, cache[:, :, :5]), (query, source_keys), (weights[:3], cache[:3, :, :5])]:
            rows = row_index(table, queries)
            assert rows is not None and layer_steps.rows_fit(table)
            torch.testing.assert_close(layer_steps.multiply(left, table, rows), left @ table)
        assert row_index(cache[:, :, :5].transpose(-1, -2), queries) is None  # rows across positions: not rows
        assert row_index(cache[:, :, :5].double(), queries) is None
        decoding_cache.DECODING.row_sums = False
        assert row_index(cache[:, :, :5], queries) is None
    finally:
        decoding_cache.DECODING.row_sums = False


@pytest.mark.parametrize("fbgemm", ["on", "off"])
@pytest.mark.parametrize("inline_layers", [True, False])
def test_sessions_attend_by_row_sums_where_the_cpu_has_fbgemm(fbgemm, inline_layers, monkeypatch):
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    found = []
    for module in (fast_generation, decoder_steps):  # the layers' forwards and their program
        monkeypatch.setattr(module, "row_index", lambda *args: found.append(row_index(*args)) or found[-1])
    with hardware.forced(fbgemm=fbgemm), FastDecoder(model, weights="plain", inline_layers=inline_layers) as decoder:
        assert decoder.attends_by_row_sums == (fbgemm == "on")
        actual = decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, num_beams=3, max_new_tokens=6)
    assert found and any(rows is not None for rows in found) == (fbgemm == "on")
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH,
                              num_beams=3, max_new_tokens=6)  # fmt: skip
    assert torch.equal(actual, expected)
    found.clear()  # one sentence's greedy search: a row a step, whose attention matmuls take faster
    with hardware.forced(fbgemm=fbgemm), FastDecoder(model, weights="plain", inline_layers=inline_layers) as decoder:
        decoder.generate(input_ids[:1, :5], forced_bos_token_id=ZH, max_new_tokens=6)
        assert found and all(rows is None for rows in found)
        decoder.generate(input_ids[:1, :5], forced_bos_token_id=ZH, num_beams=2, max_new_tokens=6)
    assert any(rows is not None for rows in found) == (fbgemm == "on")


def test_the_row_indices_kept_for_row_sums_stay_few():
    for length in range(1, 3 * decoding_cache.MAX_ROW_INDICES):
        index, offsets = decoding_cache._row_index(4, 2, length, 200, torch.device("cpu"))
        assert len(decoding_cache._ROW_INDEX) <= decoding_cache.MAX_ROW_INDICES
    assert index.view(4, 2, -1)[3, 1].tolist() == list(range(600, 600 + length))
    assert offsets.tolist() == list(range(0, 8 * length, length))


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("weights", ["plain", "packed", "bf16", "int8", "int8-onednn", "int8-amx"])
@pytest.mark.parametrize("row_sums", [True, False])
def test_the_layers_as_one_program_compute_exactly_what_their_forwards_compute(
    position_embedding_type, normalize_before, weights, row_sums, monkeypatch
):
    """Bit for bit, step after step (the beams reordered between steps), compiled by TorchScript and in Python, in
    every session a CPU opens, with attention's products as row sums and as matmuls; int8 also with every product
    packed for oneDNN (whose fused ReLU PyTorch leaves out), and with the steps' rows sent to oneDNN as on AMX
    (`RowDispatchedLinear`); int8 activations quantized to 7 bits, and to 8 where the kernels sum them exactly."""
    from zhen import quantization
    from zhen.quantization import pack_for, quantize_dynamic

    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    if weights.startswith("int8"):
        monkeypatch.setattr(quantization, "MANY_ROWS", 1 if weights == "int8-amx" else quantization.MANY_ROWS)
        monkeypatch.setattr(quantization, "WIDE_WEIGHT", 1 if weights == "int8-amx" else quantization.WIDE_WEIGHT)
        full_range = "off" if weights == "int8" else "on"  # PyTorch's 7-bit activations, the 8 bits of VNNI and AMX
        with hardware.forced(amx_int8="on" if weights == "int8-amx" else "off", int8_full_range=full_range):
            model = quantize_dynamic(model)
        for linear in model.modules():
            if weights == "int8-onednn" and isinstance(linear, torch.ao.nn.quantized.dynamic.Linear):
                pack_for(linear, "onednn")
        weights = "plain"
    input_ids, attention_mask = padded_sources()
    decoding_cache.DECODING.row_sums = row_sums
    try:
        with torch.inference_mode(), FastDecoder(model, weights=weights) as decoder:
            ways = {"scripted": (True, True), "python": (True, False), "modules": (False, False)}
            runs = {  # each in memory of its own: none reads a cache another wrote
                name: decoder.decoder_steps(
                    input_ids, attention_mask, 2, 8, inline_layers=inline, script_layers=script, workspace=Workspace()
                )  # fmt: skip
                for name, (inline, script) in ways.items()
            }
            assert isinstance(runs["scripted"].layer_steps, torch.jit.ScriptModule)
            assert type(runs["python"].layer_steps) is layer_steps.DecoderLayerSteps
            assert runs["modules"].layer_steps is None
            runs["modules"].position_table = None  # the model's own `embed`, against the others' `embed_step`
            generator = torch.Generator().manual_seed(0)
            tokens = torch.randint(6, 600, (len(input_ids) * 2, 6), generator=generator)
            for position in range(tokens.shape[1]):
                expected = runs["modules"].step(tokens[:, position], position)
                for name in ("scripted", "python"):
                    assert torch.equal(runs[name].step(tokens[:, position], position), expected), (name, position)
                parents = torch.randint(0, 2, (len(input_ids), 2), generator=generator)  # as beam search reorders
                for run in runs.values():
                    run.reorder((parents + 2 * torch.arange(len(input_ids))[:, None]).view(-1), position + 1)
    finally:
        decoding_cache.DECODING.row_sums = False


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
def test_a_step_embeds_its_tokens_as_the_decoder_does(position_embedding_type):
    """A step's embedding (two table lookups) is bit for bit the decoder's `embed` at that position; RoPE, dropout
    (a model in training) and embeddings of another kind go through `embed` itself."""
    model = tiny_model(position_embedding_type=position_embedding_type)
    decoder = model.get_decoder()
    table = decoder_steps.step_position_table(decoder)
    assert (table is None) == (position_embedding_type == "rope")
    input_ids, attention_mask = padded_sources()
    tokens = torch.randint(6, 600, (len(input_ids),), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode(), FastDecoder(model) as session:
        steps = session.decoder_steps(input_ids, attention_mask, 1, 12)
        for position in (0, 5, 11):
            expected, rotary = decoder.embed(tokens[:, None], None, torch.full((1, 1), position))
            if table is not None:
                assert rotary is None and torch.equal(steps.embed_step(tokens, position), expected)
    model.train()
    assert decoder_steps.step_position_table(decoder) is None
    model.eval()
    decoder.embed_tokens.max_norm = 1.0
    assert decoder_steps.step_position_table(decoder) is None


ACTIVATION_KINDS = {"relu": "relu", "gelu": "gelu", "silu": "silu", "swish": "silu", "gelu_new": None}


@pytest.mark.parametrize("activation", ACTIVATION_KINDS)
@pytest.mark.parametrize("weights", ["plain", "bf16", "int8"])
def test_every_activation_decodes_as_generate_as_one_program_where_it_knows_it(activation, weights):
    """The program knows ReLU, GELU and SiLU; with another activation (or a module kind it does not know) the layers'
    forwards run. Either way the session translates as one that runs the layers' forwards."""
    from zhen.quantization import quantize_dynamic

    model = tiny_model(activation_function=activation)
    if weights == "int8":
        model, weights = quantize_dynamic(model), "plain"
    input_ids, attention_mask = padded_sources()
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=8)
    with FastDecoder(model, weights=weights) as decoder:
        program = decoder.layer_steps(script=True)
        assert (program is None) == (ACTIVATION_KINDS[activation] is None)
        if program is not None:
            assert program.layers[0].mlp.activation == ACTIVATION_KINDS[activation]
        actual = [decoder.generate(input_ids, attention_mask, num_beams=beams, **kwargs) for beams in (1, 3)]
    with FastDecoder(model, weights=weights, inline_layers=False) as decoder:
        expected = [decoder.generate(input_ids, attention_mask, num_beams=beams, **kwargs) for beams in (1, 3)]
    assert all(torch.equal(a, e) for a, e in zip(actual, expected))


def bound_copies(model) -> list[torch.Tensor]:
    """The session copies of weights bound into the program kept for `model`."""
    shape, program = layer_steps._KEPT[model]
    return [layer_steps._submodule(program, name).getattr(attribute) for name, _, _, weights in shape
            for attribute, kind in weights if kind == "tensor"]  # fmt: skip


def test_a_models_later_sessions_bind_their_weights_into_the_program_compiled_for_it():
    """Compiling takes longer than translating a sentence: it happens once per model and session structure. Each later
    session binds its own weight copies into the program (bit-identical to the layers' forwards, never the last
    session's weights); the program holds them while the model keeps its copies, and lets them go with them."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=8, num_beams=2)
    programs = []
    for weights, scale in [("bf16", 1.0), ("bf16", -1.5), ("packed", 1.0), ("bf16", 1.0)]:
        with torch.no_grad():
            for parameter in model.model.decoder.parameters():
                parameter.mul_(scale)
        with FastDecoder(model, weights=weights) as decoder:
            programs.append(decoder.layer_steps(script=True))
            actual = decoder.generate(input_ids, attention_mask, **kwargs)
        with FastDecoder(model, weights=weights, inline_layers=False) as decoder:
            assert torch.equal(actual, decoder.generate(input_ids, attention_mask, **kwargs))
        assert layer_steps._KEPT[model][1] is programs[-1] and all(copy.numel() for copy in bound_copies(model))
    assert programs[0] is programs[1] and programs[1] is not programs[2] and programs[2] is not programs[3]
    fast_generation.forget_session_copies(model)
    assert bound_copies(model) and all(copy.numel() == 0 for copy in bound_copies(model))
    with FastDecoder(model, weights="bf16", keep_copies=False) as decoder:
        assert decoder.layer_steps(script=True) is programs[3] and all(copy.numel() for copy in bound_copies(model))
    assert all(copy.numel() == 0 for copy in bound_copies(model))


@pytest.mark.parametrize("weights", ["packed", "bf16", "int8"])
def test_a_later_session_of_an_unchanged_model_reuses_its_layer_steps(weights, monkeypatch):
    """Opening a session costs a walk over the model, not building and binding the layer steps again (more than a
    step of one sentence): a model's later sessions take the steps of the last where the decoder is made of the same
    modules and weights, and build them anew, with the new weights, where one of them changed."""
    from zhen.quantization import quantize_dynamic

    model = tiny_model(vocab_size=60)
    if weights == "int8":
        model, weights = quantize_dynamic(model), "plain"
    input_ids, attention_mask = padded_sources(vocab_size=60)
    built, build = [], layer_steps.decoder_layer_steps
    monkeypatch.setattr(layer_steps, "decoder_layer_steps", lambda decoder: built.append(1) or build(decoder))

    def session():
        with FastDecoder(model, weights=weights, script_layers=True) as decoder:
            return decoder.layer_steps(script=True), decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH,
                                                                      max_new_tokens=6)  # fmt: skip

    first, ids = session()
    again, same_ids = session()
    assert again is first and len(built) == 1 and torch.equal(same_ids, ids)
    fc1 = model.model.decoder.layers[0].mlp.fc1
    with torch.no_grad():
        if weights == "plain":  # int8: packed again with other values
            fc1.set_weight_bias(torch.quantize_per_tensor(torch.randn(fc1.weight().shape), 0.05, 0, torch.qint8), None)
        else:
            fc1.weight.mul_(-2.0)
    _, changed_ids = session()
    with FastDecoder(model, weights=weights, inline_layers=False) as decoder:  # the layers' forwards
        expected = decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=6)
    assert len(built) == 2 and torch.equal(changed_ids, expected)


@pytest.mark.parametrize("script_layers", [True, False])
def test_the_compiled_program_runs_under_torchscripts_plain_interpreter(script_layers, monkeypatch):
    """TorchScript's optimizing executor re-profiles at every new shape, and a decoding step's cache grows every step:
    the compiled program runs with optimization off (a setting of the thread); the program in Python needs none."""
    settings = []
    plain_interpreter = torch.jit.optimized_execution

    def recording(should_optimize):
        settings.append(should_optimize)
        return plain_interpreter(should_optimize)

    monkeypatch.setattr(torch.jit, "optimized_execution", recording)
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    with FastDecoder(model, weights="plain", script_layers=script_layers) as decoder:
        decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=4, min_new_tokens=4)
    assert settings == ([False] * 5 if script_layers else [])  # the encoder's program, then a step for each new token


def test_the_compiled_programs_run_as_one_graph_with_their_module_calls_inlined():
    """The decoder's and the encoder's programs are compiled with every module call inlined (no call frame per module
    in the interpreter), and compute what the layers' forwards compute."""
    model = tiny_model(vocab_size=40)
    input_ids = torch.tensor([[7, 8, 9, 10, 11, 2]])  # one text: the encoder's program runs too
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=6, min_new_tokens=6)
    with FastDecoder(model, inline_layers=False) as decoder:
        expected = decoder.generate(input_ids, **kwargs)
    with FastDecoder(model, script_layers=True) as decoder:
        actual = decoder.generate(input_ids, **kwargs)
        programs = [decoder.layer_steps(script=True), decoder.encoder_steps(input_ids.device)]
    assert torch.equal(actual, expected)
    for program in programs:
        assert isinstance(program, torch.jit.ScriptModule) and "prim::CallMethod" not in str(program.graph)


@pytest.mark.parametrize("pass_available", [True, False])
def test_inlining_leaves_the_calls_where_this_pytorch_lacks_the_pass(pass_available, monkeypatch):
    class Double(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 2 * x

    class Twice(torch.nn.Module):  # a class of this test's own: TorchScript shares a compiled class's graph
        def __init__(self):
            super().__init__()
            self.inner = Double()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(self.inner(x))

    if not pass_available:
        monkeypatch.delattr(torch._C, "_jit_pass_inline")
    program = torch.jit.script(Twice())
    assert "prim::CallMethod" in str(program.graph)
    layer_steps.inline(program)
    assert ("prim::CallMethod" in str(program.graph)) is not pass_available
    assert torch.equal(program(torch.ones(2)), torch.full((2,), 4.0))


def test_the_program_kept_for_a_model_goes_with_it():
    import gc
    import weakref

    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    with FastDecoder(model, script_layers=True) as decoder:
        decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=4)
    assert model in layer_steps._KEPT
    alive = weakref.ref(model)
    del model, decoder
    gc.collect()
    assert alive() is None


def compiled_programs(monkeypatch) -> list[str]:
    """The names of the layers' programs TorchScript compiles from now on (in this test)."""
    compiled, scripted = [], layer_steps.scripted
    monkeypatch.setattr(layer_steps, "scripted", lambda steps, owner: compiled.append(type(steps).__name__)
                        or scripted(steps, owner))  # fmt: skip
    return compiled


def test_a_models_first_calls_run_the_layers_programs_in_python_until_compiling_pays(monkeypatch):
    """Compiling the layers' programs takes longer than translating a few texts: by default a model's calls run them in
    Python (the same operations, the same tokens) until they have decoded for `SCRIPT_AFTER_SECONDS`; from then on its
    sessions compile and run them, the encoder's for one text as well as the decoder's."""
    compiled = compiled_programs(monkeypatch)
    monkeypatch.setattr(fast_generation, "SCRIPT_AFTER_SECONDS", 3600.0)
    model = tiny_model(vocab_size=60)
    input_ids, attention_mask = padded_sources(vocab_size=60)
    one = input_ids[:1, :4]  # no padding: the encoder's program runs too

    def calls():
        with FastDecoder(model) as decoder:
            return [
                decoder.generate(one, forced_bos_token_id=ZH, max_new_tokens=6),
                decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=6, num_beams=3),
            ]

    in_python = calls()
    decoded = fast_generation._SCRIPTING[model]
    assert compiled == [] and 0 < decoded < 3600 and not fast_generation.scripting_due(model)
    monkeypatch.setattr(fast_generation, "SCRIPT_AFTER_SECONDS", decoded)  # as if compiling cost this much
    compiled_calls = calls()
    assert sorted(compiled) == ["DecoderLayerSteps", "EncoderSteps"] and fast_generation._SCRIPTING[model] == decoded
    assert all(torch.equal(a, b) for a, b in zip(compiled_calls, in_python))
    assert isinstance(layer_steps._KEPT[model][1], torch.jit.ScriptModule)


@pytest.mark.parametrize("script_layers", [True, False])
def test_a_sessions_own_choice_of_compiling_holds_from_its_first_call(script_layers, monkeypatch):
    compiled = compiled_programs(monkeypatch)
    monkeypatch.setattr(fast_generation, "SCRIPT_AFTER_SECONDS", math.inf if script_layers else 0.0)
    model = tiny_model(vocab_size=60)
    one = padded_sources(vocab_size=60)[0][:1, :4]
    with FastDecoder(model, script_layers=script_layers) as decoder:
        decoder.generate(one, forced_bos_token_id=ZH, max_new_tokens=4)
    assert sorted(compiled) == (["DecoderLayerSteps", "EncoderSteps"] if script_layers else [])


@pytest.mark.parametrize("batches,at_once", [(1, False), (4, False), (5, True), ("unsized", True)])
def test_batches_decoded_side_by_side_compile_the_programs_at_once_where_each_stream_has_several(
    batches, at_once, monkeypatch
):
    """Two streams run side by side in Python contend for the GIL (TorchScript's interpreter lets go of it), which a
    long run pays for more than for compiling: where each of two streams has more than
    `SCRIPT_AT_ONCE_BATCHES_PER_STREAM` batches to decode (or their number is unknown), the programs are compiled from
    the first call; fewer batches run in Python until the model has decoded for `SCRIPT_AFTER_SECONDS`, as one
    stream's do; a single batch runs in the caller's thread."""
    compiled = compiled_programs(monkeypatch)
    monkeypatch.setattr(fast_generation, "SCRIPT_AFTER_SECONDS", 3600.0)
    model = tiny_model(vocab_size=60)
    input_ids, attention_mask = padded_sources(vocab_size=60, lengths=(9, 7, 4, 2, 9, 6, 3, 8, 5, 7))
    pairs = [(input_ids[i : i + 2], attention_mask[i : i + 2]) for i in range(0, 10, 2)]
    chosen = iter(pairs[:2]) if batches == "unsized" else pairs[:batches]
    with FastDecoder(model, weights="plain") as decoder:
        decode = lambda batch: decoder.generate(*batch, forced_bos_token_id=ZH, max_new_tokens=4)  # noqa: E731
        list(decoder.map(decode, chosen, streams=2))
    assert sorted(compiled) == (["DecoderLayerSteps", "EncoderSteps"] if at_once else [])
    monkeypatch.setattr(fast_generation, "SCRIPT_AFTER_SECONDS", 0.0)  # the seconds rule, as for one stream
    with FastDecoder(model, weights="plain") as decoder:
        list(decoder.map(decode, pairs[:2], streams=2))
    assert "DecoderLayerSteps" in compiled


@pytest.mark.parametrize("rows", [1, 5, 64, 300])
def test_weights_packed_for_mkl_run_in_the_layers_program(rows):
    """MKL's packing in the layers' program: its products are the session linear's (bit for bit), ReLU after."""
    if hardware.detected().mkl_packing == "off":
        pytest.skip("this PyTorch build has no MKL")
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 96)
    with hardware.forced(float32_packing="mkl"):
        packed = PackedLinear(linear)
    product = layer_steps.product_of(packed)
    x = torch.randn(rows, 1, 64)
    with torch.inference_mode():
        assert type(product) is layer_steps.MklProduct and torch.equal(product.project(x), packed(x))
        assert torch.equal(product.multiply(x, True), packed(x).relu())
    model = tiny_model()
    with hardware.forced(float32_packing="mkl"), FastDecoder(model, weights="packed") as decoder:
        program = decoder.layer_steps(script=True)
        assert isinstance(program, torch.jit.ScriptModule) and "MklProduct" in str(program.layers[0].qkv_proj)


def test_where_torchscript_cannot_compile_the_program_runs_in_python(monkeypatch):
    def cannot(module):
        raise RuntimeError("no TorchScript here")

    monkeypatch.setattr(torch.jit, "script", cannot)
    monkeypatch.setattr(layer_steps, "_SCRIPTING_FAILED", False)
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    with pytest.warns(UserWarning, match="no TorchScript here"), FastDecoder(model) as decoder:
        assert type(decoder.layer_steps(script=True)) is layer_steps.DecoderLayerSteps
    assert layer_steps._SCRIPTING_FAILED
    with FastDecoder(model) as decoder:  # not tried again, no second warning
        assert type(decoder.layer_steps(script=True)) is layer_steps.DecoderLayerSteps
    for num_beams in (1, 4):
        assert_same_as_generate(model, input_ids, attention_mask, session="packed", forced_bos_token_id=ZH,
                                num_beams=num_beams, max_new_tokens=8)  # fmt: skip


def test_a_session_runs_the_layers_modules_where_hooks_or_training_need_them():
    """Forward hooks run only in module calls, and inline layers leave out dropout: with either, a session runs the
    layers through their forwards (and the hooks see every step)."""
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=6, min_new_tokens=6)
    assert decoder_steps.inline_layers_work(model)
    with FastDecoder(model) as decoder:
        expected = decoder.generate(input_ids, attention_mask, **kwargs)
    calls = []
    handle = model.get_decoder().layers[1].register_forward_hook(lambda *args: calls.append(1))
    assert not decoder_steps.inline_layers_work(model)
    with FastDecoder(model) as decoder:
        assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), expected)
    handle.remove()
    assert len(calls) == 6 and decoder_steps.inline_layers_work(model)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda *args: None)
    try:
        assert not decoder_steps.inline_layers_work(model)
    finally:
        handle.remove()
    model.get_decoder().train()
    assert not decoder_steps.inline_layers_work(model)


@pytest.mark.parametrize("device,expected", [("cpu", True), ("meta", False)])
def test_sessions_inline_the_layers_on_a_cpu_only_by_default(device, expected):
    model = tiny_model(vocab_size=40).to(device)
    assert FastDecoder(model).inline_layers is expected
    assert FastDecoder(model, inline_layers=not expected).inline_layers is not expected


class SubclassedModel(ZhenForConditionalGeneration):
    """A user's subclass, defined in a module (this test file) without the modeling file's functions."""


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_a_subclass_defined_elsewhere_decodes_with_its_modeling_files_functions(attn_implementation):
    """Eager attention (the encoder) comes from the modeling file of the model's class or of the first of its bases
    that has one: zhen's, or a checkpoint's Hub custom code copy; the layers as one program rotate by RoPE as the
    modeling file beside them does."""
    torch.manual_seed(0)
    config = ZhenConfig.from_preset("tiny", vocab_size=600, position_embedding_type="rope")
    model = SubclassedModel._from_config(config, attn_implementation=attn_implementation).eval()
    input_ids, attention_mask = padded_sources()
    assert FastDecoder(model).inline_layers
    assert_same_as_generate(model, input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=8)
    with pytest.raises(AttributeError, match="no_such_function"):
        fast_generation.modeling_function(model, "no_such_function")


def test_a_second_session_in_the_same_thread_raises_instead_of_waiting_forever():
    """A session holds its model's lock: a second one from another thread waits for it, but one from the same thread
    (`fast_generation.generate` inside a `with FastDecoder(model)` block) would wait for itself."""
    model = tiny_model(vocab_size=40)
    input_ids, attention_mask = padded_sources(vocab_size=40)
    outcome = []

    def nested():
        with FastDecoder(model):
            try:
                generate(model, input_ids, attention_mask, max_new_tokens=3)
            except RuntimeError as error:
                outcome.append(str(error))

    thread = threading.Thread(target=nested, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the second session waited for the first"
    assert outcome and "already open in this thread" in outcome[0]
    assert generate(model, input_ids, attention_mask, max_new_tokens=3).shape[0] == len(input_ids)  # lock released


ENCODER_SESSIONS = {"plain": ("plain", {}), "packed": ("packed", dict(float32_packing="onednn")),
                    "packed-mkl": ("packed", dict(float32_packing="mkl")), "int8": ("plain", {})}  # fmt: skip


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("session", sorted(ENCODER_SESSIONS))
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("script", [True, False])
@torch.inference_mode()
def test_the_encoders_program_computes_exactly_what_its_forwards_compute(
    position_embedding_type, normalize_before, session, attention, script
):
    """Sentences without padding (one text a call) are encoded by the encoder's layers as one program: bit for bit
    the layers' forwards, compiled and in Python, for every position type, norm placement, attention implementation
    and session weights (GELU in the RoPE variants)."""
    from zhen.quantization import quantize_dynamic

    activation = "gelu" if position_embedding_type == "rope" else "relu"
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before,
                       activation_function=activation, attn_implementation=attention)  # fmt: skip
    weights, machine = ENCODER_SESSIONS[session]
    if session == "int8":
        model = quantize_dynamic(model)
    input_ids = torch.randint(6, 600, (3, 11), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(input_ids)
    with hardware.forced(**machine), FastDecoder(model, weights=weights, script_layers=script) as decoder:
        steps = decoder.encoder_steps(input_ids.device)
        assert isinstance(steps, torch.jit.ScriptModule if script else layer_steps.EncoderSteps)
        program = decoder.encode(input_ids, mask)
        decoder.inline_layers = False  # the layers' forwards
        assert decoder.encoder_steps(input_ids.device) is None
        assert torch.equal(program, decoder.encode(input_ids, mask))


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("session", sorted(ENCODER_SESSIONS))
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@torch.inference_mode()
def test_a_compiling_sessions_program_encodes_padded_batches_exactly_as_the_packed_forwards(
    position_embedding_type, normalize_before, session, attention
):
    """A padded batch, packed into one row of real tokens, in a session that compiles its programs: the encoder's
    program over the packed tokens, attending per group of sentences (one group of equal lengths, without a mask, one
    with), bit for bit the packed forwards, for every position type, norm placement, attention implementation and
    session weights; the program in Python (where TorchScript is missing) computes the same."""
    from zhen.quantization import quantize_dynamic

    activation = "gelu" if position_embedding_type == "rope" else "relu"
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before,
                       activation_function=activation, attn_implementation=attention)  # fmt: skip
    weights, machine = ENCODER_SESSIONS[session]
    if session == "int8":
        model = quantize_dynamic(model)
    input_ids, attention_mask = padded_sources(lengths=(3,) * 10 + (9, 7, 4, 5, 9, 6, 8, 4, 5, 7))
    with hardware.forced(**machine), FastDecoder(model, weights=weights, script_layers=True) as decoder:
        program = decoder.encode(input_ids, attention_mask)
        assert any(key[:2] == ("encoder", True) for key in decoder.programs)
        forwards = decoder.encode(input_ids, attention_mask, script_layers=False)
        in_python = decoder.encoder_steps(input_ids.device, script_layers=False)
        packed = pack_sources(input_ids, attention_mask)
        groups = fast_generation.attention_groups(packed, model.config.encoder_attention_heads)
        assert [mask is None for mask in groups[3]] == [True, False]
        states, rope = model.get_encoder().embed(packed["input_ids"], None, packed["position_ids"])
        python = unpack(in_python(states, *(rope or (None, None)), groups), attention_mask)
    assert torch.equal(program, forwards) and torch.equal(python, forwards)


class MergingEveryStep(BeamSearch):
    """Transformers' order: the finished set merged at every step, also where no continuation among the top K ended."""

    def choose(self, log_probs, cur_len):
        parent_rows, top_scores, top_sequences, ends = self.continue_best(log_probs, cur_len)
        self.merge_finished(top_scores, top_sequences, ends, ends & self.is_top_k, cur_len)
        return None if self.over(ends, cur_len) else parent_rows


@pytest.mark.parametrize("early_stopping,length_penalty", [(False, 1.0), (True, 0.6), ("never", 1.3), (False, 0.0)])
def test_beam_search_skips_merging_finished_hypotheses_only_where_no_result_changes(early_stopping, length_penalty):
    """Random log-probabilities of a small vocabulary whose `</s>` is likely: every sentence's sequences, scores and
    lengths as a search that merges the finished set at every step finds them, step for step."""
    generator = torch.Generator().manual_seed(0)
    batch, beams, vocab, eos, max_length = 3, 3, 9, 2, 12
    for trial in range(20):
        searches = [kind(torch.device("cpu"), batch, beams, length_penalty, early_stopping, eos, 0, 1, max_length)
                    for kind in (BeamSearch, MergingEveryStep)]  # fmt: skip
        for cur_len in range(1, max_length):
            logits = torch.randn(batch * beams, vocab, generator=generator) * 2
            logits[:, eos] += trial % 4  # from rarely to often ending
            chosen = [search.choose(torch.log_softmax(logits, -1), cur_len) for search in searches]
            assert (chosen[0] is None) == (chosen[1] is None) and (chosen[0] is None or torch.equal(*chosen))
            if chosen[0] is None:
                break
        done = [search.is_finished for search in searches]
        assert torch.equal(*done) and bool(done[0].all())
        for name in ("finished_scores", "finished_lengths", "finished_sequences"):
            assert torch.equal(getattr(searches[0], name), getattr(searches[1], name)), (trial, name)
        assert torch.equal(searches[0].sequences(beams), searches[1].sequences(beams))


@pytest.mark.parametrize("cpu_bf16", ["native", "emulated"])
@pytest.mark.parametrize("script_layers", [None, True])
def test_a_bf16_session_encodes_one_text_by_the_program_and_batches_under_autocast(
    cpu_bf16, script_layers, monkeypatch
):
    """One text (no padding) in a bf16 session: the encoder's program, out of autocast (its products multiply in bf16,
    its attention and norms in float32); a padded batch: the layers' forwards under bf16 autocast, also in a session
    that compiles its programs."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    one = input_ids[:1, :4]
    encoded, encode = [], FastDecoder.encode

    def recorded(self, *args):
        encoded.append((torch.is_autocast_enabled("cpu"), args[2], encode(self, *args)))
        return encoded[-1][-1]

    with hardware.forced(cpu_bf16=cpu_bf16), FastDecoder(model, weights="bf16", script_layers=script_layers) as decoder:
        monkeypatch.setattr(FastDecoder, "encode", recorded)
        decoder.generate(one, forced_bos_token_id=ZH, max_new_tokens=3)
        decoder.generate(input_ids, attention_mask, forced_bos_token_id=ZH, max_new_tokens=3)
        monkeypatch.undo()
        program = decoder.encode(one, torch.ones_like(one))
        with torch.autocast("cpu", dtype=torch.bfloat16):  # the layers' forwards under autocast
            forwards = model.get_encoder()(input_ids=one).last_hidden_state
    (one_autocast, one_in_bf16, one_output), (batch_autocast, batch_in_bf16, _) = encoded
    assert not one_autocast and not batch_autocast and one_in_bf16 and batch_in_bf16
    assert torch.equal(one_output, program) and not torch.equal(program, forwards)


def test_the_encoders_forwards_run_where_the_program_would_leave_something_out(monkeypatch):
    """Padding in a session not compiling (the packed or masked encoder), a forward hook, training mode, autocast: the
    layers' forwards. A later session of the same model runs the same program."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    unpadded = input_ids[:, :4]
    calls = []
    with FastDecoder(model) as decoder:
        program = decoder.encoder_steps(input_ids.device)
        assert program is not None
        hook = model.get_encoder().layers[0].register_forward_hook(lambda *args: calls.append(1))
        decoder.programs.clear()
        assert decoder.encoder_steps(input_ids.device) is None
        decoder.encode(unpadded, torch.ones_like(unpadded))
        assert calls
        hook.remove()
        decoder.programs.clear()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert decoder.encoder_steps(input_ids.device) is None
    with FastDecoder(model) as decoder:
        assert decoder.encoder_steps(input_ids.device) is program
        monkeypatch.setattr(FastDecoder, "encoder_steps", lambda *args: pytest.fail("asked for a padded batch"))
        decoder.encode(input_ids, attention_mask)  # padded, in Python: the forwards
        monkeypatch.undo()
    model.get_encoder().train()
    with FastDecoder(model) as decoder:
        assert decoder.encoder_steps(input_ids.device) is None


@pytest.mark.parametrize("weights", ["plain", "packed", "bf16"])
@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
def test_a_forward_during_a_session_attends_as_the_model_does(weights, attn_implementation):
    """While a session is open, a forward of the model outside its own steps (the caller's inside `with`, another
    thread's) attends and masks with the model's own implementation: several decoder positions of a padded batch give
    the logits they give outside the session (the session's products aside: bf16 ones in a bf16 session), and
    `generate` its tokens; the session's own decoding is not changed by it."""
    model = tiny_model(attn_implementation=attn_implementation)
    input_ids, attention_mask = padded_sources()
    decoder_input_ids = torch.randint(6, 600, (len(input_ids), 6), generator=torch.Generator().manual_seed(1))
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=8, do_sample=False)

    def forward():
        with torch.no_grad():
            return model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits

    logits, tokens = forward(), model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
    tolerance = 5e-2 if weights == "bf16" else 1e-4
    with FastDecoder(model, weights=weights) as decoder:
        fast = decoder.generate(input_ids, attention_mask, **{k: v for k, v in options.items() if k != "do_sample"})
        torch.testing.assert_close(forward(), logits, atol=tolerance, rtol=0)
        in_thread = []
        thread = threading.Thread(target=lambda: in_thread.append(forward()))
        thread.start()
        thread.join()
        torch.testing.assert_close(in_thread[0], logits, atol=tolerance, rtol=0)
        if weights != "bf16":
            assert torch.equal(model.generate(input_ids=input_ids, attention_mask=attention_mask, **options), tokens)
        assert torch.equal(decoder.generate(input_ids, attention_mask, **{k: v for k, v in options.items()
                                                                          if k != "do_sample"}), fast)  # fmt: skip
    assert model.config._attn_implementation == attn_implementation


@pytest.mark.parametrize("weights", ["packed", "bf16"])
def test_saving_during_a_session_writes_the_models_own_weights(weights, tmp_path):
    """A session swaps in modules whose state has other names: `save_pretrained` from another thread while it is open
    waits for it to close and writes the model's own weights, which load back as they were; inside the session's block
    it raises rather than write the session's."""
    model = tiny_model()
    own = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    with FastDecoder(model, weights=weights):
        with pytest.raises(RuntimeError, match="after the `with FastDecoder"):
            model.state_dict()
        thread = waiting_thread(model.save_pretrained, tmp_path / "saved")
    thread.join()
    loaded = ZhenForConditionalGeneration.from_pretrained(tmp_path / "saved")
    assert loaded.state_dict().keys() == own.keys()
    assert all(torch.equal(tensor, own[name]) for name, tensor in loaded.state_dict().items())
    assert model.state_dict().keys() == own.keys()
    saved = io.BytesIO()  # the whole model still pickles, and copies, after a session
    torch.save(model, saved)
    saved.seek(0)
    for again in (torch.load(saved, weights_only=False), copy.deepcopy(model)):
        assert all(torch.equal(tensor, own[name]) for name, tensor in again.state_dict().items())


@pytest.mark.parametrize("weights", ["plain", "packed", "bf16"])
def test_training_during_a_session_trains_the_models_own_modules(weights):
    """A training step from another thread while a session is open gets the gradients of the model's own forward (the
    session's copies hand grad-enabled products to the modules they copy); `model.train()` from another thread waits
    for the session to close, so that the dropout it swapped out is back; inside the block `train()` and `eval()` set
    the mode, which the modules the session swapped out take as it closes. Each fails on the previous code."""
    model = tiny_model(dropout=0.1, activation_dropout=0.1)
    input_ids, attention_mask = padded_sources()
    labels = torch.roll(input_ids, 1, dims=1).masked_fill(attention_mask == 0, -100)
    own = dict(model.named_parameters())

    def gradients():
        for weight in own.values():
            weight.grad = None
        model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
        return {name: weight.grad.clone() for name, weight in own.items()}

    expected = gradients()
    with FastDecoder(model, weights=weights):
        in_thread = []
        thread = threading.Thread(target=lambda: in_thread.append(gradients()))
        thread.start()
        thread.join()
        for name, gradient in expected.items():
            torch.testing.assert_close(in_thread[0][name], gradient, atol=1e-6, rtol=1e-5, msg=name)
        thread = waiting_thread(model.train)
        assert not any(module.training for module in model.modules())
    thread.join()
    assert all(module.training for module in model.modules())
    model.eval()
    with FastDecoder(model, weights=weights):
        model.train()
    assert all(module.training for module in model.modules())
    with FastDecoder(model, weights=weights):
        model.eval()
    assert not any(module.training for module in model.modules())


@pytest.mark.parametrize("weights", ["plain", "packed", "bf16"])
def test_changing_the_model_during_a_session_waits_for_it(weights):
    """`load_state_dict`, `to()` (`double()`, ...) and `resize_token_embeddings` from another thread while a session is
    open wait for it to close, so that they reach the modules it swapped out: the model then holds the new weights,
    dtype and vocabulary everywhere, and its next session decodes with them; inside the block they raise. Each fails
    on the previous code."""
    model, other = tiny_model(), tiny_model(seed=1)
    input_ids, attention_mask = padded_sources()
    options = dict(max_new_tokens=8, num_beams=1, do_sample=False)
    with FastDecoder(other, weights=weights) as decoder:
        expected = decoder.generate(input_ids, attention_mask, **options)
    with FastDecoder(model, weights=weights):
        with pytest.raises(RuntimeError, match="after the `with FastDecoder"):
            model.load_state_dict(other.state_dict())
        with pytest.raises(RuntimeError, match="after the `with FastDecoder"):
            model.double()
        thread = waiting_thread(model.load_state_dict, other.state_dict())
    thread.join()
    assert all(torch.equal(tensor, other.state_dict()[name]) for name, tensor in model.state_dict().items())
    with FastDecoder(model, weights=weights) as decoder:
        assert torch.equal(decoder.generate(input_ids, attention_mask, **options), expected)
        thread = waiting_thread(model.double)
    thread.join()
    assert all(weight.dtype == torch.float64 for weight in model.parameters())
    assert all(weight.dtype == torch.float64 for weight in model.state_dict().values())
    with FastDecoder(model.float(), weights=weights):
        with pytest.raises(RuntimeError, match="after the `with FastDecoder"):
            model.resize_token_embeddings(640)
        thread = waiting_thread(model.resize_token_embeddings, 640)
    thread.join()
    assert model.config.vocab_size == 640 and model.get_output_embeddings().weight.shape == (640, model.config.d_model)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight


@pytest.mark.parametrize("weights", ["plain", "packed", "bf16"])
def test_copying_during_a_session_copies_the_models_own_modules(weights):
    """`copy.deepcopy` and pickling from another thread while a session is open wait for it to close: the copies hold
    the model's own modules and attention implementation, which decode as the model does; inside the block they raise.
    On the previous code the copy held the session's modules (or failed on their packed weights)."""
    model = tiny_model()
    own_kinds = sorted({type(module).__name__ for module in model.modules()})
    input_ids, attention_mask = padded_sources()
    options = dict(max_new_tokens=8, num_beams=1, do_sample=False)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)

    def pickled(module):
        saved = io.BytesIO()
        torch.save(module, saved)
        saved.seek(0)
        return torch.load(saved, weights_only=False)

    copies = []
    with FastDecoder(model, weights=weights):
        for copy_inside in (copy.deepcopy, pickled):
            with pytest.raises(RuntimeError, match="after the `with FastDecoder"):
                copy_inside(model)
        thread = waiting_thread(lambda: copies.extend([copy.deepcopy(model), pickled(model)]))
    thread.join()
    for copied in copies:
        assert sorted({type(module).__name__ for module in copied.modules()}) == own_kinds
        assert copied.config._attn_implementation == model.config._attn_implementation
        assert all(torch.equal(tensor, model.state_dict()[name]) for name, tensor in copied.state_dict().items())
        assert torch.equal(copied.generate(input_ids=input_ids, attention_mask=attention_mask, **options), expected)
    shallow = copy.copy(model)  # as Python copies any object: over the same modules
    assert shallow is not model and shallow.model is model.model and shallow.lm_head is model.lm_head


@pytest.mark.parametrize("num_beams", [1, 4])
@pytest.mark.parametrize("session", ["python-layers", "module-layers"])
def test_attention_over_short_rows_softmaxed_as_columns_still_gives_generates_tokens(num_beams, session, monkeypatch):
    """Every short row of the decoding attention's scores softmaxed as a column of the transposed scores (the limits
    lowered, in Python: what the compiled program does on a CPU with AVX-512 or AVX2 at batches of many rows):
    `generate`'s tokens, greedy and beam search."""
    row_softmax, short = hardware.row_softmax, []

    def by_columns(scores, short_below=16, least_scores=1):
        short.append(scores.shape[-1] < 16)
        return row_softmax(scores, 16, 1)

    monkeypatch.setattr(hardware, "row_softmax", by_columns)
    input_ids, attention_mask = padded_sources()
    assert_same_as_generate(tiny_model(), input_ids, attention_mask, session=session, forced_bos_token_id=ZH,
                            num_beams=num_beams, max_new_tokens=12)  # fmt: skip
    assert any(short)


@pytest.mark.parametrize("fbgemm", ["on", "off"])
def test_a_bf16_session_holds_the_sources_keys_and_values_in_bf16_where_row_sums_multiply_them(fbgemm, monkeypatch):
    """The source's keys and values are bf16 products: held in bf16 they are the same numbers at half the bytes a step
    reads, where FBGEMM's row sums multiply them (`fbgemm` on: batches, beams); batched matmuls (FBGEMM off, one text's
    greedy search), slower in bf16 at a step's few rows, keep float32. Greedy and beam search run either way."""
    model = tiny_model()
    input_ids, attention_mask = padded_sources()
    held = []
    new_cache = DecoderSteps.new_cache

    def recorded(self, source_keys_values, dtype, workspace, beams):
        cache = new_cache(self, source_keys_values, dtype, workspace, beams)
        held.append([(layer.keys.clone(), layer.values.clone()) for layer in cache.layers])
        return cache

    monkeypatch.setattr(DecoderSteps, "new_cache", recorded)
    options = dict(forced_bos_token_id=ZH, max_new_tokens=6)
    with hardware.forced(cpu_bf16="native", fbgemm=fbgemm):
        with FastDecoder(model, weights="bf16", drafts=False) as decoder:
            for beams in (1, 4):
                out = decoder.generate(input_ids, attention_mask, num_beams=beams, **options)
                assert out.shape[0] == len(input_ids) and out.shape[1] > 2
            decoder.generate(input_ids[:1], num_beams=1, **options)
        monkeypatch.setattr(fast_generation, "source_dtype", lambda: torch.float32)
        with FastDecoder(model, weights="bf16", drafts=False) as decoder:
            decoder.generate(input_ids, attention_mask, num_beams=1, **options)
    bf16 = torch.bfloat16 if fbgemm == "on" else torch.float32
    assert [layers[0][0].dtype for layers in held] == [bf16, bf16, torch.float32, torch.float32]
    for (keys, values), (keys32, values32) in zip(held[0], held[-1]):  # the same numbers
        assert torch.equal(keys.float(), keys32) and torch.equal(values.float(), values32)


@pytest.mark.skipif(hardware.detected().fbgemm == "off", reason="this PyTorch has no FBGEMM")
@torch.inference_mode()
def test_row_sums_of_a_bf16_table_are_its_float32_sums_rounded(monkeypatch):
    """A bf16 table's weighted row sums (float32 weights rounded to bf16, as a session's softmax weights are), and its
    batched matmul, give the float32 sums of the same numbers to bf16 rounding, in bf16."""
    monkeypatch.setattr(decoding_cache.DECODING, "row_sums", True, raising=False)
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(3, 2, 5, 16, generator=generator).bfloat16()
    weights = torch.randn(3, 2, 4, 5, generator=generator)
    rows = row_index(table, 4)
    assert rows is not None
    expected = torch.matmul(weights.bfloat16().float(), table.float())
    for exact in (layer_steps.multiply(weights, table, rows), layer_steps.multiply(weights, table, None)):
        assert exact.dtype == torch.bfloat16
        torch.testing.assert_close(exact.float(), expected, rtol=1e-2, atol=1e-2)
