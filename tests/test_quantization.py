"""int8 dynamic quantization: a separate copy, still a working translator that agrees with float32."""

import concurrent.futures
import copy
import json
import os
import sys
import textwrap
import threading
import time
import warnings

import pytest
import torch

from zhen import hardware
from zhen.fast_generation import generate
from zhen.quantization import is_quantized, quantize_dynamic


def test_quantized_copy_translates_like_float32(tiny_model, tiny_tokenizer, tiny_pairs):
    quantized = quantize_dynamic(tiny_model)
    assert is_quantized(quantized) and not is_quantized(tiny_model)
    assert not any(isinstance(m, torch.nn.Linear) for m in quantized.modules())  # every projection and the LM head
    assert isinstance(tiny_model.lm_head, torch.nn.Linear)  # the original is untouched
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=40)
    reference = tiny_tokenizer.batch_decode(generate(tiny_model, **batch, **kwargs), skip_special_tokens=True)
    for num_beams in (1, 4):
        fast = generate(quantized, batch["input_ids"], batch["attention_mask"], num_beams=num_beams, **kwargs)
        texts = tiny_tokenizer.batch_decode(fast, skip_special_tokens=True)
        assert sum(a == b for a, b in zip(texts, reference)) >= len(reference) - 2
    # the quantized model also works with Transformers' own generate, and gives the same ids as the fast path
    assert torch.equal(quantized.generate(**batch, **kwargs), generate(quantized, **batch, **kwargs))


def test_translate_and_evaluate_load_an_int8_copy(tiny_checkpoint, tiny_pairs, tmp_path):
    from zhen.commands import translate as translate_command
    from zhen.translation import load_model_and_tokenizer, translate

    model, tokenizer = load_model_and_tokenizer(tiny_checkpoint, int8=True)
    assert is_quantized(model)
    sources = [en for en, _ in tiny_pairs]
    translations = translate(sources, model, tokenizer, tgt_lang="zh")
    assert sum(a == zh for a, (_, zh) in zip(translations, tiny_pairs)) >= len(tiny_pairs) - 2

    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(sources) + "\n", encoding="utf-8")
    translate_command.main(["--model", str(tiny_checkpoint), "--tgt", "zh", "-i", str(source), "-o", str(target),
                            "--device", "cpu", "--no-progress", "--int8"])  # fmt: skip
    assert target.read_text(encoding="utf-8").splitlines() == translations


def test_int8_refuses_a_model_off_the_cpu(tiny_model, tiny_tokenizer):
    from zhen.translation import load_model_and_tokenizer

    class OnMeta(torch.nn.Module):
        device = torch.device("meta")

    with pytest.raises(ValueError, match=r"int8 inference runs on the CPU.*--device cpu"):
        load_model_and_tokenizer(OnMeta(), tiny_tokenizer, int8=True)


def test_int8_session_linear_is_the_quantized_product_without_the_cast(tiny_model):
    from zhen.session_modules import Int8Linear

    quantized = quantize_dynamic(tiny_model)
    linear = quantized.lm_head
    assert Int8Linear.replaces(linear) and not Int8Linear.replaces(tiny_model.lm_head)
    x = torch.randn(3, 1, tiny_model.config.d_model)
    assert torch.equal(Int8Linear(linear)(x), linear(x))


def test_int8_relu_mlp_fuses_relu_into_the_first_product_exactly(tiny_model):
    from zhen.modeling_zhen import ZhenMLP
    from zhen.session_modules import Int8ReluMLP

    mlp = quantize_dynamic(tiny_model).get_decoder().layers[0].mlp
    assert Int8ReluMLP.replaces(mlp) and not Int8ReluMLP.replaces(tiny_model.get_decoder().layers[0].mlp)
    for rows in ((3, 1), (1, 40)):  # a decoding step's rows, a packed encoder's
        x = torch.randn(*rows, tiny_model.config.d_model)
        assert torch.equal(Int8ReluMLP(mlp)(x), mlp(x))
    mlp.train()
    assert not Int8ReluMLP.replaces(mlp)  # its dropout would count
    gelu = ZhenMLP(tiny_model.config.__class__(**{**tiny_model.config.to_dict(), "activation_function": "gelu"}), 8)
    assert not Int8ReluMLP.replaces(quantize_dynamic(torch.nn.Sequential(gelu))[0].eval())


@pytest.mark.parametrize("num_beams", [1, 4])
def test_int8_session_swaps_in_its_linears_and_decodes_as_quantized_generate(
    tiny_model, tiny_pairs, tiny_tokenizer, num_beams
):
    from zhen.fast_generation import FastDecoder
    from zhen.session_modules import Int8Linear, Int8ReluMLP

    quantized = quantize_dynamic(tiny_model)
    types = [type(m) for m in quantized.modules()]
    int8_products = [m for m in quantized.modules() if Int8Linear.replaces(m)]
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=30, num_beams=num_beams)
    with FastDecoder(quantized) as decoder:
        swapped = [m.linear for m in quantized.modules() if isinstance(m, Int8Linear)]
        assert len(swapped) == len(int8_products) and all(any(m is s for s in swapped) for m in int8_products)
        layers = [*quantized.get_encoder().layers, *quantized.get_decoder().layers]
        assert all(isinstance(layer.mlp, Int8ReluMLP) for layer in layers)
        fast = decoder.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
    assert [type(m) for m in quantized.modules()] == types
    assert torch.equal(fast, quantized.generate(**batch, **kwargs))


def _int8_linears(model):
    return [m for m in model.modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]


@pytest.mark.parametrize("machine", ["vnni", "amx", "neither"])
def test_quantizing_packs_each_weight_once_into_what_pytorchs_own_quantization_makes(tiny_model, machine):
    """Each int8 weight is packed once, at its size (no placeholder of its size packed first, the LM head's packing
    handed on, not unpacked and packed again): the same int8 weights, per-row scales and biases as PyTorch's own
    `quantize_dynamic` makes with the same weight observers (without VNNI the layers' 7-bit ones), on every machine
    class (the head a `RowDispatchedLinear` with oneDNN's int8 or not)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig
    from torch.profiler import profile

    from zhen.quantization import narrow_weights

    onednn_int8, amx_int8 = ("off", "off") if machine == "neither" else ("on", "on" if machine == "amx" else "off")
    full_range = "off" if machine == "neither" else "on"  # VNNI and AMX sum 8-bit activations exactly
    with hardware.forced(onednn_int8=onednn_int8, amx_int8=amx_int8, int8_full_range=full_range):
        with profile(record_shapes=True) as trace:
            quantized = quantize_dynamic(tiny_model)
    packed = [event.input_shapes[0] for event in trace.events() if event.name == "quantized::linear_prepack"]
    linears = {name: module for name, module in quantized.named_modules() if module in _int8_linears(quantized)}
    assert sorted(shape for shape in packed if shape != [1, 1]) == sorted(
        [module.out_features, module.in_features] for module in linears.values()
    )
    layers = per_channel_dynamic_qconfig if full_range == "on" else narrow_weights(per_channel_dynamic_qconfig, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = {torch.nn.Linear: layers, "lm_head": per_channel_dynamic_qconfig}
        reference = torch.ao.quantization.quantize_dynamic(copy.deepcopy(tiny_model).eval(), spec, dtype=torch.qint8)
    for name, module in linears.items():
        (weight, bias), (expected, expected_bias) = module._weight_bias(), reference.get_submodule(name)._weight_bias()
        assert torch.equal(weight.int_repr(), expected.int_repr()), name
        assert torch.equal(weight.q_per_channel_scales(), expected.q_per_channel_scales()), name
        assert (bias is None and expected_bias is None) or torch.equal(bias, expected_bias), name
        assert (module.in_features, module.out_features) == (expected.shape[1], expected.shape[0])


@pytest.mark.skipif("onednn" not in torch.backends.quantized.supported_engines, reason="this PyTorch has no oneDNN")
@pytest.mark.parametrize("machine", ["vnni", "amx", "neither"])
def test_the_lm_head_is_packed_for_onednn_where_its_int8_products_are_faster(
    tiny_model, tiny_pairs, tiny_tokenizer, machine
):
    """Where oneDNN multiplies int8 with VNNI, the LM head multiplies `HEAD_MANY_ROWS_VNNI` rows or more by a oneDNN
    packing of its weight and fewer (one text's beams, a batch's last rows) by FBGEMM's, as every narrower product
    does; with AMX, from `HEAD_MANY_ROWS` rows. Either packing holds the same int8 weights (nearly the same logits),
    and the model's own forward and a decoding session multiply by the same packing (the same ids)."""
    from zhen import hardware, quantization
    from zhen.quantization import DynamicInt8Linear, RowDispatchedLinear

    onednn_int8, amx_int8 = ("off", "off") if machine == "neither" else ("on", "on" if machine == "amx" else "off")
    with hardware.forced(onednn_int8=onednn_int8, amx_int8=amx_int8):
        quantized = quantize_dynamic(tiny_model)
    engine = torch.backends.quantized.engine  # what PyTorch packs for by default (FBGEMM's kernels on x86)
    assert all(m.packed_for == engine for m in _int8_linears(quantized))
    d_model, head = tiny_model.config.d_model, quantized.lm_head
    if machine == "neither":
        assert type(head) is DynamicInt8Linear
    else:
        few = quantization.HEAD_MANY_ROWS if machine == "amx" else quantization.HEAD_MANY_ROWS_VNNI
        assert isinstance(head, RowDispatchedLinear) and head.many_rows_numel == few * d_model
        assert head.packing_for(torch.empty(few - 1, d_model)) is head._packed_params._packed_params
        assert head.packing_for(torch.empty(few, d_model)) is head.many_rows_packing()
    with hardware.forced(onednn_int8="off" if onednn_int8 == "on" else "on", amx_int8="off"):
        other = quantize_dynamic(tiny_model)
    assert torch.equal(head._weight_bias()[0].int_repr(), other.lm_head._weight_bias()[0].int_repr())
    for rows in (2, 20):  # FBGEMM's, and oneDNN's where it has it (twice the rows: a batch of 2)
        hidden = torch.randn(2, rows, d_model)
        torch.testing.assert_close(quantized.lm_head(hidden), other.lm_head(hidden), rtol=1e-5, atol=1e-5)
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    for num_beams in (1, 4):
        kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=30, num_beams=num_beams)
        assert torch.equal(generate(quantized, **batch, **kwargs), quantized.generate(**batch, **kwargs))


@pytest.mark.skipif("onednn" not in torch.backends.quantized.supported_engines, reason="this PyTorch has no oneDNN")
def test_a_model_quantized_for_onednn_takes_its_relu_apart_and_decodes_as_its_generate(
    tiny_model, tiny_pairs, tiny_tokenizer
):
    """PyTorch's oneDNN int8 product reuses the kernel of the first input shape it meets, with or without the ReLU
    of that first call: a model whose every product is packed for oneDNN, or packed for what zhen does not know
    (quantized by PyTorch directly), keeps its MLPs' ReLU apart in a decoding session, and translates as its own
    `generate`."""
    from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic

    from zhen.fast_generation import FastDecoder
    from zhen.quantization import pack_for
    from zhen.session_modules import Int8ReluMLP, relu_fuses

    quantized = quantize_dynamic(tiny_model)
    assert relu_fuses(quantized.get_decoder().layers[0].mlp.fc1)  # FBGEMM's packing fuses it
    unknown = torch_quantize_dynamic(tiny_model, {torch.nn.Linear}, dtype=torch.qint8)
    assert Int8ReluMLP.replaces(quantized.get_decoder().layers[0].mlp)
    assert not relu_fuses(unknown.get_decoder().layers[0].mlp.fc1)
    for linear in _int8_linears(quantized):
        pack_for(linear, "onednn")
    mlp = quantized.get_decoder().layers[0].mlp
    assert not relu_fuses(mlp.fc1) and not Int8ReluMLP.replaces(mlp)

    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    for num_beams in (1, 4):
        kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=30, num_beams=num_beams)
        with FastDecoder(quantized) as decoder:
            fast = decoder.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
        assert torch.equal(fast, quantized.generate(**batch, **kwargs))


ONEDNN = "onednn" in torch.backends.quantized.supported_engines


@pytest.mark.skipif(not ONEDNN, reason="this PyTorch has no oneDNN")
@pytest.mark.parametrize("amx_int8", ["on", "off"])
def test_on_amx_int8_products_send_batches_of_many_rows_to_onednn(tiny_model, monkeypatch, amx_int8):
    """With AMX (forced here on any CPU), a wide enough int8 product multiplies batches of `MANY_ROWS` rows or more by
    a oneDNN packing of the same int8 weight, fewer by FBGEMM's: the same numbers to float32 rounding. The LM head
    does from `HEAD_MANY_ROWS` rows; narrow products keep FBGEMM's. Without AMX the products are PyTorch's."""
    import copy
    import pickle

    from zhen import hardware, quantization
    from zhen.quantization import RowDispatchedLinear, pack_for

    monkeypatch.setattr(quantization, "MANY_ROWS", 8)
    monkeypatch.setattr(quantization, "WIDE_WEIGHT", tiny_model.config.d_model**2)
    with hardware.forced(amx_int8=amx_int8, onednn_int8="on"):
        quantized = quantize_dynamic(tiny_model)
    linears = _int8_linears(quantized)
    if amx_int8 == "off":  # but the LM head's (VNNI: `test_the_lm_head_is_packed_for_onednn_where_...`)
        assert all(type(m) is quantization.DynamicInt8Linear for m in linears if m is not quantized.lm_head)
        return
    assert all(type(m) is RowDispatchedLinear for m in linears)
    mlp = quantized.get_decoder().layers[0].mlp
    d_model = tiny_model.config.d_model
    head = quantized.lm_head  # FBGEMM's for few rows, as the others, from HEAD_MANY_ROWS rows oneDNN's
    assert head.many_rows_numel == quantization.HEAD_MANY_ROWS * d_model and head.packed_for == mlp.fc1.packed_for
    assert mlp.fc1.many_rows_numel == 8 * d_model  # d_model x ffn: wide
    assert RowDispatchedLinear(d_model, d_model // 2).many_rows_numel == sys.maxsize  # fewer than WIDE_WEIGHT
    onednn = pack_for(copy.deepcopy(mlp.fc1), "onednn")
    fbgemm = pack_for(copy.deepcopy(mlp.fc1), "fbgemm")
    for rows in (1, 7, 8, 40):
        x = torch.randn(rows, d_model)
        many = rows >= 8
        own = mlp.fc1._packed_params._packed_params
        assert (mlp.fc1.packing_for(x) is mlp.fc1.many_rows_packing()) == many
        assert (mlp.fc1.packing_for(x) is own) == (not many)
        assert torch.equal(mlp.fc1(x), (onednn if many else fbgemm)(x))
        torch.testing.assert_close(mlp.fc1(x), fbgemm(x), rtol=1e-5, atol=1e-5)
    x = torch.randn(40, d_model)
    for copied in (copy.deepcopy(mlp.fc1), pickle.loads(pickle.dumps(mlp.fc1))):  # oneDNN's packing made again
        assert copied._many_rows_packing is None and torch.equal(copied(x), mlp.fc1(x))
    reloaded = copy.deepcopy(mlp.fc1)
    reloaded.many_rows_packing()
    reloaded.load_state_dict(fbgemm.state_dict())
    assert reloaded._many_rows_packing is None and torch.equal(reloaded(x), mlp.fc1(x))


@pytest.mark.skipif(not ONEDNN, reason="this PyTorch has no oneDNN")
@pytest.mark.parametrize("num_beams", [1, 4])
def test_an_amx_int8_session_sends_the_same_rows_to_onednn_and_decodes_as_quantized_generate(
    tiny_model, tiny_pairs, tiny_tokenizer, monkeypatch, num_beams
):
    """A session's int8 products send the rows the model's own would send to oneDNN, so the two agree; a session
    that never multiplies that many rows never packs for oneDNN (it costs ~10-25 ms a base weight)."""
    from zhen import hardware, quantization
    from zhen.fast_generation import FastDecoder
    from zhen.quantization import RowDispatchedLinear
    from zhen.session_modules import Int8Linear

    monkeypatch.setattr(quantization, "MANY_ROWS", 16)  # the encoder's rows and the batch's first steps
    monkeypatch.setattr(quantization, "WIDE_WEIGHT", 1)
    with hardware.forced(amx_int8="on"):
        quantized = quantize_dynamic(tiny_model)
    tiny_tokenizer.src_lang = "en"
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=30, num_beams=num_beams)
    one = tiny_tokenizer(tiny_pairs[0][0], return_tensors="pt")
    assert max(one["input_ids"].numel(), num_beams) < 16  # the encoder's rows, the decoder's
    with FastDecoder(quantized) as decoder:
        decoder.generate(one["input_ids"], one["attention_mask"], **kwargs)
    dispatching = [m for m in quantized.modules() if isinstance(m, RowDispatchedLinear)]  # the LM head's from 16 too
    assert dispatching and all(m._many_rows_packing is None for m in dispatching)

    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    with FastDecoder(quantized) as decoder:
        fast = decoder.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
        products = [m for m in quantized.modules() if isinstance(m, Int8Linear) and m.onednn_rows == 16]
        assert len(products) == len(dispatching) and all(m.many_rows is m.linear.many_rows_packing() for m in products)
    assert torch.equal(fast, quantized.generate(**batch, **kwargs))
    texts = tiny_tokenizer.batch_decode(fast, skip_special_tokens=True)
    assert sum(text == zh for text, (_, zh) in zip(texts, tiny_pairs)) >= len(tiny_pairs) - 2


@pytest.mark.skipif(not ONEDNN, reason="this PyTorch has no oneDNN")
def test_streams_reaching_the_heads_onednn_packing_at_once_make_it_once(tiny_model, monkeypatch):
    """The streams of a session reach the LM head's oneDNN packing at once at their first batch of many rows: one
    packs it (PyTorch's engine set for oneDNN meanwhile), the others wait for it and take the same packing."""
    from zhen import hardware
    from zhen.quantization import RowDispatchedLinear

    with hardware.forced(onednn_int8="on", amx_int8="off"):
        head = quantize_dynamic(tiny_model).lm_head
    unpack, engines, engine = RowDispatchedLinear._weight_bias, [], torch.backends.quantized.engine

    def slow_unpack(self):  # long enough for every thread to arrive while the first packs
        engines.append(torch.backends.quantized.engine)
        time.sleep(0.05)
        return unpack(self)

    monkeypatch.setattr(RowDispatchedLinear, "_weight_bias", slow_unpack)
    start = threading.Barrier(4)

    def reach():
        start.wait()
        return head.many_rows_packing()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        packings = list(pool.map(lambda _: reach(), range(4)))
    assert engines == ["onednn"] and all(packing is head.many_rows_packing() for packing in packings)
    assert torch.backends.quantized.engine == engine  # restored


@pytest.mark.skipif(not ONEDNN, reason="this PyTorch has no oneDNN")
def test_a_session_packs_for_onednn_only_the_products_its_rows_reach(
    tiny_model, tiny_pairs, tiny_tokenizer, monkeypatch
):
    """The LM head goes to oneDNN from fewer rows than the others: a session whose steps reach the head's threshold
    but not theirs packs the head's weight alone, and one whose steps reach theirs too packs theirs; both decode as
    the model's own `generate`."""
    from zhen import hardware, quantization
    from zhen.fast_generation import FastDecoder
    from zhen.session_modules import Int8Linear

    monkeypatch.setattr(quantization, "MANY_ROWS", 32)
    monkeypatch.setattr(quantization, "HEAD_MANY_ROWS", 16)
    monkeypatch.setattr(quantization, "WIDE_WEIGHT", 1)
    with hardware.forced(amx_int8="on", onednn_int8="on"):
        quantized = quantize_dynamic(tiny_model)
    step_products = [  # what a step multiplies (the source's keys and values multiply its tokens)
        m
        for name, m in quantized.get_decoder().named_modules()
        if isinstance(m, quantization.RowDispatchedLinear) and not name.endswith("encoder_attn.kv_proj")
    ]
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")  # 16 sentences
    for num_beams, decoder_packed in ((1, False), (4, True)):  # steps of 16 rows, of 64
        kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=30, num_beams=num_beams)
        with FastDecoder(quantized) as decoder:
            fast = decoder.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
            head = next(m for m in quantized.modules() if isinstance(m, Int8Linear) and m.onednn_rows == 16)
            assert head.many_rows is not None
        assert all((m._many_rows_packing is not None) == decoder_packed for m in step_products)
        assert torch.equal(fast, quantized.generate(**batch, **kwargs))


@pytest.mark.parametrize("full_range", ["on", "off"])
@pytest.mark.parametrize("num_beams", [1, 4])
def test_int8_activations_take_8_bits_where_the_kernels_sum_them_exactly(
    tiny_model, tiny_pairs, tiny_tokenizer, full_range, num_beams
):
    """Where the CPU's int8 kernels sum 8-bit activations exactly (`int8_full_range`: VNNI, AMX) every product
    quantizes them to 256 levels by 8-bit weights. Elsewhere the layers' weights take 7 bits (at most 63 either side)
    and their activations 8, and the LM head keeps 8-bit weights and PyTorch's 7-bit activations. Copies and a state
    dict loaded on the same machine keep the choice, and a decoding session multiplies as the model's own forward
    does, so the two decode the same ids."""
    import copy
    import pickle

    from zhen import hardware
    from zhen.fast_generation import FastDecoder
    from zhen.quantization import NARROW_WEIGHT_LEVELS
    from zhen.session_modules import Int8Linear

    with hardware.forced(int8_full_range=full_range):
        quantized = quantize_dynamic(tiny_model)
        reloaded = quantize_dynamic(tiny_model)
        reloaded.load_state_dict(quantized.state_dict())
    narrow = full_range == "off"
    head = quantized.lm_head
    layers = [m for m in _int8_linears(quantized) if m is not head]
    assert layers and all(not m.reduce_range and m.weight_bits == (7 if narrow else 8) for m in layers)
    widest = max(int(m.weight().int_repr().abs().max()) for m in layers)
    assert widest == NARROW_WEIGHT_LEVELS if narrow else widest > NARROW_WEIGHT_LEVELS
    assert head.reduce_range == narrow and head.weight_bits == 8
    assert f"activation_bits={7 if narrow else 8}, weight_bits=8" in repr(head)
    bits = [(m.reduce_range, m.weight_bits) for m in _int8_linears(quantized)]
    assert [(m.reduce_range, m.weight_bits) for m in _int8_linears(reloaded)] == bits
    for copied in (copy.deepcopy(quantized), pickle.loads(pickle.dumps(quantized))):
        assert [(m.reduce_range, m.weight_bits) for m in _int8_linears(copied)] == bits
    x = torch.randn(5, tiny_model.config.d_model)
    for module in (head, layers[0]):
        product = torch.ops.quantized.linear_dynamic(x, module._packed_params._packed_params, module.reduce_range)
        assert torch.equal(module(x), product) and torch.equal(Int8Linear(module)(x), product)
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=30, num_beams=num_beams)
    with FastDecoder(quantized) as decoder:
        fast = decoder.generate(batch["input_ids"], batch["attention_mask"], **kwargs)
        pairs = [(m.linear.reduce_range, m.reduce_range) for m in quantized.modules() if isinstance(m, Int8Linear)]
        assert pairs and all(own == session for own, session in pairs)
    assert torch.equal(fast, quantized.generate(**batch, **kwargs))


def test_a_model_quantized_by_pytorch_itself_decodes_with_its_7_bit_activations(tiny_model):
    """A model a user quantized with PyTorch's own `quantize_dynamic` keeps its modules' 7-bit activations in a
    decoding session."""
    from zhen.session_modules import Int8Linear

    quantized = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(tiny_model.lm_head), dtype=torch.qint8)[0]
    x = torch.randn(3, tiny_model.config.d_model)
    assert Int8Linear(quantized).reduce_range and torch.equal(Int8Linear(quantized)(x), quantized(x))


@pytest.mark.skipif(
    __import__("zhen").hardware.detected().int8_full_range != "on", reason="this CPU's int8 kernels need 7 bits"
)
def test_8_bit_activations_bring_a_models_int8_logits_closer_to_float32(tiny_model, tiny_pairs, tiny_tokenizer):
    from zhen import hardware

    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    inputs = dict(**batch, decoder_input_ids=batch["input_ids"])
    with torch.no_grad():
        exact = tiny_model(**inputs).logits
        errors = {}
        for full_range in ("on", "off"):
            with hardware.forced(int8_full_range=full_range):
                logits = quantize_dynamic(tiny_model)(**inputs).logits
            errors[full_range] = ((logits - exact).norm() / exact.norm()).item()
    assert errors["on"] < 0.8 * errors["off"], errors


def test_7_bit_weights_bring_the_layers_int8_logits_closer_to_float32_than_pytorchs_own_scheme(
    tiny_model, tiny_pairs, tiny_tokenizer
):
    """On a CPU without VNNI (forced), the layers' 8-bit activations by 7-bit weights and the LM head's 7-bit ones by
    8-bit weights give logits closer to float32's than PyTorch's 7-bit activations by 8-bit weights everywhere (with
    a scale per row, as zhen quantizes)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig

    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    inputs = dict(**batch, decoder_input_ids=batch["input_ids"])
    with torch.no_grad(), hardware.forced(int8_full_range="off"):
        exact = tiny_model(**inputs).logits
        spec = {torch.nn.Linear: per_channel_dynamic_qconfig}
        pytorchs = torch.ao.quantization.quantize_dynamic(copy.deepcopy(tiny_model), spec, torch.qint8)
        errors = {
            name: ((model(**inputs).logits - exact).norm() / exact.norm()).item()
            for name, model in (("zhen", quantize_dynamic(tiny_model)), ("pytorch", pytorchs))
        }
    assert errors["zhen"] < 0.9 * errors["pytorch"], errors


def test_a_weight_reaching_minus_128_keeps_7_bit_activations_without_vnni():
    """A weight whose largest level is -128 (int8's `abs` leaves it -128) is an 8-bit one: without VNNI (forced) its
    activations take 7 bits, and so do a 7-bit weight's 8 only where it stays within 63 either side."""
    from zhen.quantization import DynamicInt8Linear

    scales, zeros = torch.ones(2, dtype=torch.double), torch.zeros(2, dtype=torch.long)
    with hardware.forced(int8_full_range="off"):
        for levels, bits in (([[-128, 10], [5, -3]], 8), ([[-63, 10], [63, -3]], 7), ([[-64, 10], [5, -3]], 8)):
            weight = torch._make_per_channel_quantized_tensor(torch.tensor(levels, dtype=torch.int8), scales, zeros, 0)
            linear = DynamicInt8Linear(2, 2)
            linear.set_weight_bias(weight, None)
            assert (linear.weight_bits, linear.reduce_range) == (bits, bits == 8), levels


@pytest.mark.skipif(hardware.detected().fbgemm == "off", reason="this PyTorch has no FBGEMM")
@pytest.mark.parametrize("instructions", ["AVX2", "AVX512", "AVX512_E1"])
def test_8_bit_activations_by_7_bit_weights_sum_exactly_with_each_of_fbgemms_kernels(run_fresh_python, instructions):
    """A product of activations at the top of their 8-bit range by weights at the top of 7 bits sums exactly with every
    kernel set FBGEMM has (`FBGEMM_ENABLE_INSTRUCTIONS`), AVX2's too, whose int16 pairs 8-bit weights overflow."""
    code = textwrap.dedent("""
        import json
        import torch
        from zhen.quantization import DynamicInt8Linear, NARROW_WEIGHT_LEVELS, narrow_weights
        from torch.ao.quantization import per_channel_dynamic_qconfig
        width = 512
        linear = torch.nn.Linear(width, 8, bias=False)
        torch.nn.init.constant_(linear.weight, 1.0)
        linear.weight.data[1::2] = -1.0
        linear.qconfig = narrow_weights(per_channel_dynamic_qconfig, True)
        quantized = DynamicInt8Linear.from_float(linear)
        assert (quantized.weight_bits, quantized.reduce_range) == (7, False)
        assert int(quantized.weight().int_repr().abs().max()) == NARROW_WEIGHT_LEVELS
        x = torch.ones(3, width)  # quantized to 255: the top of 8 bits
        print(json.dumps(quantized(x)[0, :2].tolist()))
    """)
    env = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": instructions}
    assert [round(v) for v in json.loads(run_fresh_python(code, env=env))] == [512, -512]


def _packed_op_calls(run) -> int:
    """How many products by a packed weight (`quantized::...`, not packing or unpacking: a oneDNN packing is made at
    its first use) `run()` calls."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    return sum(event.name.startswith("quantized::") and "pack" not in event.name for event in profile.events())


@pytest.mark.parametrize("path", ["forward", "generate", "session-greedy", "session-beams", "screen"])
def test_every_packed_weight_product_called_from_python_skips_the_subclass_lookup(
    tiny_model, tiny_tokenizer, tiny_pairs, monkeypatch, path
):
    """Calling an op with a packed weight from Python asks the `torch.ScriptObject` for `__torch_function__`, which
    throws and catches a C++ exception each call; every product zhen calls from Python goes through
    `hardware.packed_product`, which skips that lookup, and gives the op's own result."""
    from zhen import hardware
    from zhen.fast_generation import FastDecoder

    calls = []

    def counted(op, *args):
        calls.append(op)
        direct = op(*args)
        result = packed_product(op, *args)
        assert torch.equal(result, direct)
        return result

    packed_product = hardware.packed_product
    monkeypatch.setattr(hardware, "packed_product", counted)
    model = quantize_dynamic(tiny_model)
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=12)
    with torch.inference_mode():
        if path == "forward":
            ops = _packed_op_calls(lambda: model(**batch, decoder_input_ids=batch["input_ids"][:, :5]))
        elif path == "generate":
            ops = _packed_op_calls(lambda: model.generate(**batch, **kwargs))
        elif path == "screen":  # a float32 session's screened argmax: its integer sums
            from zhen.screened_argmax import fbgemm_packed, fbgemm_sums

            packed = fbgemm_packed(torch.randint(-127, 128, (300, 32), dtype=torch.int8))
            if packed is None:
                pytest.skip("FBGEMM cannot give these sums exactly in this PyTorch")
            calls.clear()  # the packing's own check
            ops = _packed_op_calls(lambda: fbgemm_sums(torch.randint(-63, 64, (3, 32)).float(), packed))
        else:  # the layers' program interpreted (as before TorchScript compiles it, or where it cannot)
            with FastDecoder(model, script_layers=False) as decoder:
                beams = 4 if path == "session-beams" else 1
                ops = _packed_op_calls(lambda: decoder.generate(**batch, num_beams=beams, **kwargs))
    assert ops > 0 and len(calls) * 2 == ops  # each counted call ran the op twice: directly and through the helper
