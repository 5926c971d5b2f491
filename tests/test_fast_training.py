"""zhen's fast training path (`zhen.fast_training`) against the plain model: packed batches with grouped attention,
the fused loss, CPU dropout and emulated-bf16 linears must give the plain model's loss and gradients, on every
hardware branch (forced with `zhen.hardware.forced`, whatever this machine is)."""

import itertools
from pathlib import Path

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration, fast_training, hardware, packing
from zhen.batching import Seq2SeqCollator
from zhen.fast_training import (
    Bf16LinearInFloat32,
    CpuDropout,
    EmulatedBf16Linear,
    FastTraining,
    LinearCrossEntropy,
    OneDnnLinear,
    OneDnnLinearProduct,
    TrainingGraphs,
    pad_batch,
)
from zhen.packing import length_groups, pack


VARIANTS = list(itertools.product(["sinusoidal", "learned", "rope"], [True, False]))
PAD, BOS, EOS, EN, ZH = 0, 1, 2, 4, 5


def tiny_model(seed=0, **overrides) -> ZhenForConditionalGeneration:
    torch.manual_seed(seed)
    config = ZhenConfig.from_preset("tiny", vocab_size=60, dropout=0.0, label_smoothing=0.1, **overrides)
    return ZhenForConditionalGeneration(config).train()


def padded_batch(lengths=((6, 4), (2, 3), (4, 5), (1, 2), (6, 6), (3, 1)), seed=0) -> dict:
    """A batch from zhen's collator: sources and targets of different lengths, right-padded."""
    generator = torch.Generator().manual_seed(seed)
    examples = [
        {
            "input_ids": [EN, *torch.randint(6, 60, (s,), generator=generator).tolist(), EOS],
            "labels": [ZH, *torch.randint(6, 60, (t,), generator=generator).tolist(), EOS],
        }
        for s, t in lengths
    ]
    return Seq2SeqCollator(PAD)(examples)


def loss_and_gradients(model, compute_loss):
    model.zero_grad()
    loss = compute_loss()
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def assert_same(result, expected, rtol=1e-4, atol=1e-6):
    torch.testing.assert_close(result[0], expected[0], rtol=rtol, atol=atol)
    assert result[1].keys() == expected[1].keys()
    for name in expected[1]:
        torch.testing.assert_close(result[1][name], expected[1][name], rtol=rtol, atol=atol, msg=name)


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("attention_groups,attention_kernel", [(1, "sdpa"), (3, "sdpa"), (1, "matmul"), (3, "matmul")])
def test_fast_path_equals_the_plain_model(
    monkeypatch, position_embedding_type, normalize_before, attention_groups, attention_kernel
):
    """Packed batch, attention per group of similar-length sentences (with SDPA or two matmuls and a softmax), fused
    loss: the plain model's loss and gradients, with the layers really seeing the real tokens only, in one row."""
    monkeypatch.setattr(packing, "MIN_GROUP_ROWS", 1)
    batch = padded_batch()
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    plain = loss_and_gradients(model, lambda: model(**batch).loss)
    fast = FastTraining(model, attention_groups=attention_groups, attention_kernel=attention_kernel)
    assert fast.attention_kernel == attention_kernel
    rows_seen = []
    model.model.encoder.layers[0].mlp.fc1.register_forward_hook(lambda m, args, out: rows_seen.append(args[0].shape))
    assert_same(loss_and_gradients(model, lambda: fast.loss(model, batch)), plain)
    assert rows_seen == [(1, int(batch["attention_mask"].sum()), 64)]  # one packed row, no padding
    fast.remove()
    assert_same(loss_and_gradients(model, lambda: model(**batch).loss), plain)


@pytest.mark.parametrize("packing,fused_loss", [(False, True), (True, False), (False, False)])
def test_each_part_alone_equals_the_plain_model(packing, fused_loss):
    batch = padded_batch()
    model = tiny_model(seed=1)
    plain = loss_and_gradients(model, lambda: model(**batch, num_items_in_batch=50).loss)
    fast = FastTraining(model, packing=packing, fused_loss=fused_loss)
    assert_same(loss_and_gradients(model, lambda: fast.loss(model, batch, num_items_in_batch=50)), plain)


@pytest.mark.parametrize("pays", [True, False])
def test_default_path_follows_what_pays_on_the_device(monkeypatch, pays):
    """The packed path by default where `zhen.hardware` says it pays (a CPU), the plain model where not (a GPU)."""
    assert hardware.packing_pays("cpu") and not hardware.packing_pays("cuda")
    monkeypatch.setattr(hardware, "packing_pays", lambda device: pays)
    batch = padded_batch()
    model = tiny_model(seed=1)
    plain = loss_and_gradients(model, lambda: model(**batch, num_items_in_batch=50).loss)
    fast = FastTraining(model)
    assert (fast.packing, fast.fused_loss) == (pays, pays)
    assert ("packed batches" in fast.describe()) == pays
    assert_same(loss_and_gradients(model, lambda: fast.loss(model, batch, num_items_in_batch=50)), plain)


@pytest.mark.parametrize("shape", [(16, 16, 24), (8, 9, 8), (6, 8, 8)])
def test_a_batch_padded_to_a_graph_shape_keeps_its_loss_and_gradients(shape):
    """Extra rows and columns of a CUDA-graph bucket add nothing: same loss, same gradients, nothing NaN."""
    batch = padded_batch()
    model = tiny_model()
    plain = loss_and_gradients(model, lambda: model(**batch, num_items_in_batch=50).loss)
    padded = pad_batch(batch, *shape, pad_token_id=PAD)
    assert padded["input_ids"].shape == padded["attention_mask"].shape == shape[:2]
    assert padded["labels"].shape == (shape[0], shape[2])
    assert_same(loss_and_gradients(model, lambda: model(**padded, num_items_in_batch=50).loss), plain)


@pytest.mark.parametrize("mixed_precision", ["no", "bf16"])
def test_training_graphs_step_equals_the_plain_model(mixed_precision):
    """A CUDA-graph trainer's eager step (each shape's first, and those of shapes that run faster eagerly) adds the
    plain model's gradients to `.grad`, under the training precision."""
    batch = padded_batch()
    model = tiny_model()
    with torch.autocast("cpu", torch.bfloat16, enabled=mixed_precision == "bf16"):
        plain = loss_and_gradients(model, lambda: model(**batch).loss)
    model.zero_grad()
    graphs = TrainingGraphs(model, torch.bfloat16 if mixed_precision == "bf16" else None, PAD)
    loss = graphs(model, batch)  # a shape's first batch: an eager step, as on a GPU
    assert (graphs.eager_steps, graphs.replayed_steps, graphs.shapes[(8, 8, 8, True)].seen) == (1, 0, 1)
    model.zero_grad()
    graphs(model, batch)  # not on a GPU: eager again, where a GPU would time the step
    assert (graphs.eager_steps, graphs.replayed_steps) == (2, 0)
    result = loss, {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    if mixed_precision == "no":
        assert_same(result, plain)
        return
    assert_same(result, plain, rtol=5e-2, atol=1e-2)  # bf16 rounding of a differently shaped batch
    assert loss != model(**batch).loss  # and not float32's


def test_training_graphs_keep_their_gradient_tensors():
    """CUDA graphs add to the gradient tensors they were captured with: `zero_grad(set_to_none=True)` is undone with
    the same tensors, zeroed; gradients replaced by other tensors stop the run with the fix."""
    model = tiny_model()
    graphs = TrainingGraphs(model, None, PAD)
    graphs._keep_gradients()
    first = [p.grad for p in model.parameters()]
    assert all(g is not None and not g.any() for g in first)
    for g in first:
        g.fill_(1.0)
    model.zero_grad(set_to_none=True)
    graphs._keep_gradients()
    assert all(p.grad is g and not g.any() for p, g in zip(model.parameters(), first))
    next(model.parameters()).grad = torch.zeros_like(first[0])
    with pytest.raises(RuntimeError, match="set_to_none=False"):
        graphs._keep_gradients()


@pytest.mark.parametrize(
    "device,mixed_precision,options,graphed",
    [
        ("cuda", "no", {}, True),
        ("cuda", "no", {"cuda_graphs": True}, True),
        ("cuda", "bf16", {}, True),
        ("cuda", "fp16", {}, False),
        ("cuda", "bf16", {"cuda_graphs": False}, False),
        ("cuda", "bf16", {"packing": True, "fused_loss": True}, False),
        ("cpu", "bf16", {}, False),
    ],
)
def test_cuda_graphs_by_default_for_the_plain_model_on_a_gpu(device, mixed_precision, options, graphed):
    """Decided from where the model will train (zhen-train switches the path on before Accelerate moves the model),
    so every branch is forced here on a CPU."""
    model = tiny_model()
    fast = FastTraining(model, mixed_precision=mixed_precision, device=device, **options)
    assert (fast.graphs is not None) == graphed
    assert ("CUDA graphs" in fast.describe()) == graphed
    if graphed:
        assert fast.graphs.always == bool(options.get("cuda_graphs"))
        assert ("where faster" in fast.describe()) != fast.graphs.always
    assert (fast.packing, fast.fused_loss) == ((device == "cpu",) * 2 if not options else (fast.packing,) * 2)
    fast.remove()


@pytest.mark.parametrize(
    "device,mixed_precision,overrides,reason",
    [
        ("cpu", "no", {}, "not on a CUDA GPU"),
        ("cuda", "fp16", {}, "fp16"),
        ("cuda", "bf16", {"packing": True}, "packed batches"),
    ],
)
def test_cuda_graphs_asked_for_where_they_cannot_run_is_a_clear_error(device, mixed_precision, overrides, reason):
    model = tiny_model()
    with pytest.raises(ValueError, match=reason):
        FastTraining(model, mixed_precision=mixed_precision, device=device, cuda_graphs=True, **overrides)
    model.gradient_checkpointing_enable()
    with pytest.raises(ValueError, match="gradient checkpointing"):
        FastTraining(model, mixed_precision="bf16", device="cuda", cuda_graphs=True)


@pytest.mark.parametrize("attention_kernel", ["sdpa", "matmul"])
def test_packing_keeps_labels_ignored_inside_a_row_and_rows_without_labels(monkeypatch, attention_kernel):
    """A -100 inside a target is kept (ignored by the loss, still an input position); a row whose labels are all
    -100 has no target tokens at all, and an attention group of such rows is skipped."""
    batch = padded_batch()
    batch["labels"][0, 2] = -100
    batch["labels"][3] = -100  # the shortest source: alone in its group with enough groups
    model = tiny_model(seed=2)
    plain = loss_and_gradients(model, lambda: model(**batch).loss)
    monkeypatch.setattr(packing, "MIN_GROUP_ROWS", 1)
    fast = FastTraining(model, attention_groups=6, attention_kernel=attention_kernel)
    assert_same(loss_and_gradients(model, lambda: fast.loss(model, batch)), plain)


def test_a_batch_without_labels_gives_a_zero_loss_and_no_gradient():
    batch = padded_batch()
    batch["labels"][:] = -100
    model = tiny_model()
    loss = FastTraining(model).loss(model, batch)
    loss.backward()
    assert loss.item() == 0
    assert all(p.grad is None or not p.grad.any() for p in model.parameters())


def test_pack_lays_out_sentences_and_groups(monkeypatch):
    monkeypatch.setattr(packing, "MIN_GROUP_ROWS", 1)
    batch = padded_batch()
    packed = pack(batch, decoder_start_token_id=BOS, pad_token_id=PAD, attention_groups=2)
    source_lengths, target_lengths = batch["attention_mask"].sum(1), batch["labels"].ne(-100).sum(1)
    assert packed["input_ids"].shape == (1, int(source_lengths.sum()))
    assert packed["labels"].shape == packed["decoder_input_ids"].shape == (1, int(target_lengths.sum()))
    assert packed["position_ids"][0, : int(source_lengths[0])].tolist() == list(range(int(source_lengths[0])))
    assert packed["decoder_input_ids"][0, 0] == BOS and packed["decoder_input_ids"][0, 1] == ZH
    layout = packed["packed_layout"]
    assert [g.rows for g in layout.source] == [g.rows for g in layout.target]
    assert sum(g.rows for g in layout.source) == 6
    assert sorted(torch.cat([g.tokens for g in layout.source]).tolist()) == list(range(int(source_lengths.sum())))
    assert [g.width for g in layout.source] == [5, 8]  # each group padded to its own longest sentence


@pytest.mark.parametrize("heads", [1, 3])
def test_packed_sides_pad_each_group_and_give_back_every_token(monkeypatch, heads):
    """One gather lays out every group as contiguous (rows, heads, width, head_dim), its real slots holding their
    tokens; one `unpad` gives each token back from its slot."""
    monkeypatch.setattr(packing, "MIN_GROUP_ROWS", 1)
    layout = pack(padded_batch(), decoder_start_token_id=BOS, pad_token_id=PAD, attention_groups=3)["packed_layout"]
    for side in (layout.source, layout.target):
        states = torch.randn(1, heads, side.tokens, 4)
        by_token = states[0].transpose(0, 1)  # (tokens, heads, head_dim)
        padded = packing._padded(states, side, in_float32=False)
        for group, group_states in zip(side, padded):
            assert group_states.shape == (group.rows, heads, group.width, 4) and group_states.is_contiguous()
            slots = group_states.transpose(1, 2).reshape(-1, heads, 4)
            assert torch.equal(slots[group.real], by_token[group.tokens])
        given_back = packing._Unpad.apply(torch.cat([p.reshape(-1, 4) for p in padded]), side.unpad(heads))
        assert torch.equal(given_back.view(side.tokens, heads, 4), by_token)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("short_rows", ["as rows", "as columns"])
def test_matmul_attention_scales_and_masks_as_eager_attention(causal, masked, short_rows, monkeypatch):
    """The matmul kernel (scaling and masks inside `baddbmm`) computes softmax(q kᵀ · scaling + masks) v and its
    gradients, its short rows softmaxed as rows or as columns (`zhen.hardware.row_softmax`, forced either way)."""
    row_softmax = hardware.row_softmax
    short_below = 16 if short_rows == "as columns" else 0
    monkeypatch.setattr(hardware, "row_softmax", lambda scores: row_softmax(scores, short_below, 1))
    query, key, value = torch.randn(3, 2, 3, 5, 4).unbind(0)
    key_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    inputs = [t.clone().requires_grad_() for t in (query, key, value)]
    scores = inputs[0] @ inputs[1].transpose(-1, -2) * 0.5
    if causal:
        scores = scores.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), -torch.inf)
    if masked:
        scores = scores.masked_fill(~key_mask, -torch.inf)
    expected = scores.softmax(-1) @ inputs[2]
    expected_gradients = torch.autograd.grad(expected.square().sum(), inputs)
    output = packing._matmul_attention(*inputs, key_mask if masked else None, causal, 0.5, 0.0)
    torch.testing.assert_close(output, expected)
    for gradient, expected_gradient in zip(torch.autograd.grad(output.square().sum(), inputs), expected_gradients):
        torch.testing.assert_close(gradient, expected_gradient)


def test_length_groups_sort_and_merge_equal_widths():
    lengths = torch.tensor([5, 1, 9, 3, 7, 2, 8, 4, 6, 1, 9, 3, 5, 7, 2, 8])
    groups = length_groups(lengths, max_groups=4)
    assert sorted(torch.cat(groups).tolist()) == list(range(16))
    widths = [int(lengths[g].max()) for g in groups]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)
    assert len(length_groups(lengths[:7], max_groups=4)) == 1  # fewer than 8 rows per group: one group


@pytest.mark.parametrize(
    "labelled,autocast,cpu_bf16,onednn",
    [(slice(None), False, "native", False), (slice(None), False, "native", True), (slice(0), False, "native", False),
     (slice(None), True, "native", False), (slice(0), True, "native", False), (slice(None), True, "emulated", False),
     (slice(None), True, "native", True)],
    ids=["fp32", "fp32-onednn", "no-labels", "bf16-native", "bf16-no-labels", "bf16-emulated", "bf16-onednn"],
)  # fmt: skip
def test_fused_loss_matches_lm_head_plus_cross_entropy(monkeypatch, labelled, autocast, cpu_bf16, onednn):
    """Several chunks (the first writes the weight gradient, the rest add to it; in bf16 transposed), a batch without
    any labelled row, float32 logits by oneDNN, and bf16 autocast with native and emulated bf16 (emulated: the
    products run in float32; asked for oneDNN, bf16 products stay PyTorch's)."""
    calls, onednn_linear = [], hardware.onednn_linear
    monkeypatch.setattr(hardware, "onednn_linear", lambda *args: calls.append(len(args[0])) or onednn_linear(*args))
    torch.manual_seed(0)
    hidden, weight = torch.randn(11, 16, requires_grad=True), torch.randn(37, 16, requires_grad=True)
    labels = torch.full((11,), -100)
    labels[labelled] = torch.randint(0, 37, (11,))[labelled]
    labels[3] = -100

    def loss_and_grads(fused):
        with hardware.forced(cpu_bf16=cpu_bf16), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            if fused:
                loss = LinearCrossEntropy.apply(hidden, weight, labels, 0.1, 4, onednn)
            else:
                logits = (hidden @ weight.t()).float()
                loss = torch.nn.functional.cross_entropy(logits, labels, reduction="sum", label_smoothing=0.1)
        (2 * loss).backward()
        grads = hidden.grad.clone(), weight.grad.clone()
        hidden.grad = weight.grad = None
        return loss, *grads

    tolerance = dict(rtol=2e-2, atol=2e-2) if autocast else dict(rtol=1e-5, atol=1e-5)
    for fused, reference in zip(loss_and_grads(True), loss_and_grads(False)):
        torch.testing.assert_close(fused.float(), reference.float(), **tolerance)
    labelled_rows = int((labels != -100).sum())
    chunks = [min(4, labelled_rows - start) for start in range(0, labelled_rows, 4)]
    assert calls == (chunks if onednn and not autocast else [])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fused_loss_log_sum_exp_of_half_logits_is_float32s_within_rounding(dtype):
    """From the largest logit's probability: near-uniform rows (p(max) near 1/vocab), rows with one logit far above
    the rest (p(max) = 1, the others' probabilities underflow), and a 32k vocabulary."""
    torch.manual_seed(0)
    logits = (torch.randn(6, 32000) * torch.tensor([0.01, 1, 3, 10, 30, 100])[:, None]).to(dtype)
    logits[5, 7] = 200 if dtype == torch.bfloat16 else 20_000 / 200  # fp16's largest is 65504
    reference = torch.logsumexp(logits.float(), 1)
    log_sum_exp = fast_training._log_sum_exp(logits, torch.softmax(logits, 1))
    assert log_sum_exp.dtype == torch.float32
    torch.testing.assert_close(log_sum_exp, reference, rtol=0, atol=4e-3)  # one rounding of p(max)


def test_fused_loss_chunks_by_the_dtype_of_its_products(monkeypatch):
    """By default a chunk of float32 products is `LOSS_CHUNK_SIZE` rows, one of bf16 products `HALF_LOSS_CHUNK_SIZE`
    (fewer float32 additions of the LM head's gradient); the chunks give the loss and gradients of one pass."""
    monkeypatch.setattr(fast_training, "LOSS_CHUNK_SIZE", 3)
    monkeypatch.setattr(fast_training, "HALF_LOSS_CHUNK_SIZE", 5)
    torch.manual_seed(0)
    hidden, weight, labels = torch.randn(11, 16, requires_grad=True), torch.randn(37, 16), torch.randint(0, 37, (11,))
    chunks = []
    softmax, log_softmax = torch.softmax, torch.log_softmax
    monkeypatch.setattr(torch, "softmax", lambda x, dim: chunks.append(len(x)) or softmax(x, dim))
    monkeypatch.setattr(torch, "log_softmax", lambda x, dim, out: chunks.append(len(x)) or log_softmax(x, dim, out=out))
    for autocast, cpu_bf16, expected in [(False, "native", [3, 3, 3, 2]), (True, "native", [5, 5, 1]),
                                         (True, "emulated", [3, 3, 3, 2])]:  # fmt: skip
        chunks.clear()
        with hardware.forced(cpu_bf16=cpu_bf16), torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            chunked = LinearCrossEntropy.apply(hidden, weight, labels, 0.1, None)
            whole = LinearCrossEntropy.apply(hidden, weight, labels, 0.1, 11)
        assert chunks[: len(expected)] == expected
        grads = [torch.autograd.grad(loss, hidden)[0] for loss in (chunked, whole)]
        torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(*grads, rtol=1e-2 if autocast else 1e-5, atol=1e-2 if autocast else 1e-5)


def test_fused_loss_refuses_a_second_backward_clearly():
    model = tiny_model()
    loss = FastTraining(model).loss(model, padded_batch())
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="cannot be backpropagated twice"):
        loss.backward()


def test_loss_through_a_wrapper_uses_the_wrapped_forward():
    """DDP and Accelerate wrap the model; the loss must run through the wrapper's forward (which DDP needs to sync
    gradients) and still find the LM head."""

    class Wrapper(torch.nn.Module):
        def __init__(self, module):
            super().__init__()
            self.module, self.calls = module, 0

        def forward(self, **kwargs):
            self.calls += 1
            return self.module(**kwargs)

    model = tiny_model(seed=3)
    batch = padded_batch()
    plain = loss_and_gradients(model, lambda: model(**batch).loss)
    wrapper = Wrapper(model)
    fast = FastTraining(model)
    assert_same(loss_and_gradients(model, lambda: fast.loss(wrapper, batch)), plain)
    assert wrapper.calls == 1


@pytest.mark.parametrize("cpu_bf16", ["native", "emulated"])
def test_modules_swapped_for_the_hardware_and_removed_again(cpu_bf16):
    """On the CPU: CPU dropout always; emulated-bf16 linears only for bf16 training on a CPU without bf16
    instructions. `remove()` gives the plain model back: classes and attention implementation."""
    model = tiny_model()
    with hardware.forced(cpu_bf16=cpu_bf16):
        fast = FastTraining(model, mixed_precision="bf16")
        float32 = FastTraining(tiny_model(), mixed_precision="no")
    types = {type(m) for m in model.modules()}
    assert CpuDropout in types and torch.nn.Dropout not in types
    assert (EmulatedBf16Linear in types) == (cpu_bf16 == "emulated")
    assert EmulatedBf16Linear not in {type(m) for m in float32.model.modules()}
    assert model.config._attn_implementation == fast_training.PACKED_ATTENTION
    fast.remove()
    types = {type(m) for m in model.modules()}
    assert CpuDropout not in types and EmulatedBf16Linear not in types
    assert model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("cpu_bf16", ["native", "emulated"])
def test_bf16_packed_attention_runs_in_float32_where_the_cpu_emulates_bf16(monkeypatch, cpu_bf16):
    """Under bf16 autocast on a CPU without bf16 instructions, training attention runs in float32, where its
    backward is 3-4x faster; with them, and without gradients, it stays bf16. (SDPA here, as on such CPUs.)"""
    dtypes, sdpa = [], torch.nn.functional.scaled_dot_product_attention

    def recording_sdpa(query, *args, **kwargs):
        dtypes.append(query.dtype)
        return sdpa(query, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording_sdpa)
    model, batch = tiny_model(seed=3), padded_batch()
    with hardware.forced(cpu_bf16=cpu_bf16):
        fast = FastTraining(model, mixed_precision="bf16", attention_kernel="sdpa")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = fast.loss(model, batch)
        loss.backward()
        assert dtypes and set(dtypes) == {torch.bfloat16 if cpu_bf16 == "native" else torch.float32}
        assert all(p.grad.isfinite().all() for p in model.parameters() if p.grad is not None)
        dtypes.clear()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            fast.loss(model, batch)
        assert set(dtypes) == {torch.bfloat16}


@pytest.mark.parametrize("autocast", [True, False], ids=["bf16-autocast", "bf16-weights"])
def test_emulated_bf16_linear_does_bf16_arithmetic_in_float32(monkeypatch, autocast):
    """Without bf16 instructions, the bf16 products run as float32 GEMMs of the bf16 values: the arithmetic of a bf16
    GEMM (exact products, float32 sums), so outputs and gradients equal `nn.Linear`'s under autocast up to the order
    of summation, in the same dtypes. Few rows (decoding) and float32 stay `nn.Linear`'s."""
    torch.manual_seed(0)
    linear = EmulatedBf16Linear(64, 96)
    if not autocast:
        linear.bfloat16()
    x = torch.randn(10, 7, 64, dtype=linear.weight.dtype, requires_grad=True)  # 70 rows: enough for float32 GEMMs
    calls, apply = [], Bf16LinearInFloat32.apply
    monkeypatch.setattr(Bf16LinearInFloat32, "apply", lambda *args: calls.append(1) or apply(*args))

    def output_and_gradients(cpu_bf16):
        x.grad = None
        linear.zero_grad()
        with hardware.forced(cpu_bf16=cpu_bf16), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            y = linear(x)
        (y.float() * torch.linspace(-1, 1, 96)).sum().backward()
        return y, x.grad, linear.weight.grad, linear.bias.grad

    native = output_and_gradients("native")
    assert not calls
    emulated = output_and_gradients("emulated")
    assert calls == [1]
    for got, expected in zip(emulated, native):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, rtol=8e-3, atol=1e-2)
    with hardware.forced(cpu_bf16="emulated"):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            linear(x[:1])  # 7 rows
        linear.float()(x.float())
    assert calls == [1]


@pytest.mark.parametrize("mixed_precision", ["no", "bf16"])
@pytest.mark.parametrize("float32_training", ["matmul", "onednn"])
def test_float32_linears_swapped_for_onednns_where_it_trains_faster_and_removed_again(monkeypatch, float32_training,
                                                                                        mixed_precision):  # fmt: skip
    """In float32 CPU training, `nn.Linear` becomes [`OneDnnLinear`] where `zhen.hardware`'s `float32_training` says
    oneDNN multiplies training shapes faster (x86 CPUs other than Intel's); never in bf16, nor on other machines."""
    model = tiny_model()
    with hardware.forced(float32_training=float32_training, onednn_packing="on", cpu_bf16="native"):
        fast = FastTraining(model, mixed_precision=mixed_precision)
    swapped = float32_training == "onednn" and mixed_precision == "no"
    assert (OneDnnLinear in {type(m) for m in model.modules()}) == swapped
    assert ("OneDnnLinear for Linear" in fast.describe()) == swapped
    losses = []  # the fused loss's float32 logits by oneDNN where the linear layers are
    monkeypatch.setattr(fast_training, "fused_translation_loss", lambda *args: losses.append(args[-1]) or args[0])
    fast.loss(model, padded_batch())
    assert losses == [swapped]
    fast.remove()
    assert OneDnnLinear not in {type(m) for m in model.modules()}


def test_paused_gives_the_plain_model_inside_the_block_and_the_fast_path_after_it():
    model = tiny_model()
    with hardware.forced(float32_training="onednn", onednn_packing="on"):
        fast = FastTraining(model, mixed_precision="no")
    fast_types = {type(m) for m in model.modules()}
    assert {OneDnnLinear, CpuDropout} <= fast_types
    with fast.paused() as plain:
        assert plain is model and not {OneDnnLinear, CpuDropout} & {type(m) for m in model.modules()}
        assert model.config._attn_implementation == "sdpa"
    assert {type(m) for m in model.modules()} == fast_types
    assert model.config._attn_implementation == fast_training.PACKED_ATTENTION


def test_onednn_linear_gives_linears_outputs_and_gradients(monkeypatch):
    """Forward and input gradient by oneDNN, weight gradient by matmul: `nn.Linear`'s float32 outputs and gradients
    (up to the order of summation), for 3-D inputs too; few rows, autocast and other dtypes stay `nn.Linear`'s."""
    torch.manual_seed(0)
    linear = OneDnnLinear(64, 96)
    x = torch.randn(10, 7, 64, requires_grad=True)  # 70 rows
    calls, apply = [], OneDnnLinearProduct.apply
    monkeypatch.setattr(OneDnnLinearProduct, "apply", lambda *args: calls.append(1) or apply(*args))

    def output_and_gradients(module):
        x.grad = None
        module.zero_grad()
        y = module(x)
        (y * torch.linspace(-1, 1, 96)).sum().backward()
        return y, x.grad, module.weight.grad, module.bias.grad

    onednn = output_and_gradients(linear)
    assert calls == [1]
    linear.__class__ = torch.nn.Linear
    plain = output_and_gradients(linear)
    linear.__class__ = OneDnnLinear
    for got, expected in zip(onednn, plain):
        torch.testing.assert_close(got, expected)
    linear(x[:1])  # 7 rows
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert linear(x).dtype == torch.bfloat16
    linear.bfloat16()(x.bfloat16())
    assert calls == [1]
    linear.float().bias = None
    torch.testing.assert_close(linear(x), x @ linear.weight.t())
    assert calls == [1, 1]


@pytest.mark.parametrize("position_embedding_type,normalize_before", [("sinusoidal", True), ("rope", False)])
def test_float32_training_through_onednn_equals_the_plain_model(monkeypatch, position_embedding_type,
                                                                normalize_before):  # fmt: skip
    """The whole fast path with every linear layer's products through oneDNN: the plain model's loss and
    gradients."""
    monkeypatch.setattr(OneDnnLinear, "MIN_ROWS", 1)  # this small batch's products too
    batch = padded_batch()
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    plain = loss_and_gradients(model, lambda: model(**batch).loss)
    calls, apply = [], OneDnnLinearProduct.apply
    monkeypatch.setattr(OneDnnLinearProduct, "apply", lambda *args: calls.append(1) or apply(*args))
    with hardware.forced(float32_training="onednn", onednn_packing="on"):
        fast = FastTraining(model, mixed_precision="no")
    logits_products, onednn_linear = [], hardware.onednn_linear
    monkeypatch.setattr(
        hardware,
        "onednn_linear",
        lambda x, w, *rest: logits_products.append(w is model.lm_head.weight) or onednn_linear(x, w, *rest),
    )
    assert_same(loss_and_gradients(model, lambda: fast.loss(model, batch)), plain)
    linears = sum(type(m) is OneDnnLinear for m in model.modules())
    assert len(calls) >= linears - 1  # every layer's (the LM head's weight goes through the fused loss)
    assert any(logits_products)  # and the fused loss's logits


def test_bf16_training_where_the_cpu_emulates_bf16_is_as_precise_as_native_bf16(monkeypatch):
    """A whole bf16 training step (packed, fused loss) with emulated bf16 is as close to float32 training as
    PyTorch's own bf16 path: the same loss, gradients as far from float32's."""
    monkeypatch.setattr(EmulatedBf16Linear, "MIN_ROWS", 1)  # this small batch's products too
    batch = padded_batch()
    model = tiny_model(seed=3)

    def run(cpu_bf16, autocast=True):
        with hardware.forced(cpu_bf16=cpu_bf16):
            fast = FastTraining(model, mixed_precision="bf16" if autocast else "no")
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                result = loss_and_gradients(model, lambda: fast.loss(model, batch))
            fast.remove()
        return result

    float32_loss, float32_grads = run("native", autocast=False)
    (native_loss, native_grads), (loss, grads) = run("native"), run("emulated")
    torch.testing.assert_close(loss, native_loss, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(loss, float32_loss, rtol=1e-2, atol=1e-2)

    def relative_errors(gradients):
        assert gradients.keys() == float32_grads.keys()
        return torch.stack([(g - float32_grads[n]).abs().max() / float32_grads[n].abs().max()
                            for n, g in gradients.items()])  # fmt: skip

    errors, native_errors = relative_errors(grads), relative_errors(native_grads)
    assert errors.max() <= 1.25 * native_errors.max() and errors.mean() <= 1.25 * native_errors.mean()


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_cpu_dropout_drops_p_and_keeps_expectations(p):
    """The mask comes from 16-bit integers: the drop rate must be p in each of the four lanes of a 64-bit draw, kept
    values scaled so the expectation is unchanged, the gradient masked the same way, the mask reproducible."""
    dropout = CpuDropout(p).train()
    x = (torch.rand(400, 501) + 1).requires_grad_()
    torch.manual_seed(0)
    y = dropout(x)
    kept = y != 0
    assert abs((1 - kept.float().mean()).item() - p) < 0.005
    for lane in range(4):
        assert abs((1 - kept.flatten()[lane::4].float().mean()).item() - p) < 0.008
    rounded_p = round(p * 65536) / 65536
    torch.testing.assert_close(y[kept], x[kept] / (1 - rounded_p))
    y.backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, kept / (1 - rounded_p))
    torch.manual_seed(0)
    assert torch.equal(dropout(x) != 0, kept)
    assert dropout.eval()(x) is x
    x16 = x.detach().bfloat16()  # bf16 keeps the exact float32 scale
    torch.manual_seed(0)
    y16 = dropout.train()(x16)
    assert torch.equal(y16 != 0, kept)
    torch.testing.assert_close(y16[kept], (x16[kept].float() / (1 - rounded_p)).bfloat16())


@pytest.mark.parametrize("encoder_layers,decoder_layers", [(3, 1), (1, 3)])
def test_fast_path_with_encoder_and_decoder_of_different_depths(encoder_layers, decoder_layers):
    """The `small` preset has 6 encoder and 3 decoder layers: the fused loss must find the decoder's last hidden state
    whatever the two depths are."""
    batch = padded_batch()
    model = tiny_model(seed=4, encoder_layers=encoder_layers, decoder_layers=decoder_layers)
    plain = loss_and_gradients(model, lambda: model(**batch).loss)
    fast = FastTraining(model)
    assert_same(loss_and_gradients(model, lambda: fast.loss(model, batch)), plain)


@pytest.mark.parametrize(
    "cpu_bf16,float32_training,mixed_precision,device,expected",
    [("native", "matmul", "bf16", "cpu", "matmul"), ("native", "matmul", "no", "cpu", "sdpa"),
     ("emulated", "matmul", "bf16", "cpu", "sdpa"), ("native", "matmul", "bf16", "cuda", "sdpa"),
     ("emulated", "onednn", "no", "cpu", "matmul"), ("native", "onednn", "no", "cpu", "matmul"),
     ("emulated", "onednn", "bf16", "cpu", "sdpa"), ("emulated", "onednn", "no", "cuda", "sdpa")],
)  # fmt: skip
def test_attention_kernel_follows_the_machine_and_precision(cpu_bf16, float32_training, mixed_precision, device,
                                                             expected):  # fmt: skip
    """Two matmuls and a softmax for bf16 where it is native, and for float32 where float32 training multiplies
    through oneDNN (x86 CPUs other than Intel's); SDPA elsewhere."""
    with hardware.forced(cpu_bf16=cpu_bf16, float32_training=float32_training, onednn_packing="on"):
        assert hardware.training_attention_kernel(device, mixed_precision) == expected
        if device == "cpu":
            assert FastTraining(tiny_model(), mixed_precision=mixed_precision).attention_kernel == expected
    with pytest.raises(ValueError, match="attention_kernel='flash'"):
        FastTraining(tiny_model(), attention_kernel="flash")


def test_a_hub_copy_of_the_packing_code_leaves_zhens_attention_registered(tmp_path, monkeypatch):
    """Checkpoints ship `packing.py` as custom code; loading that copy where zhen is installed must not replace zhen's
    packed attention (whose `zhen.hardware` tests and users can force) in Transformers' global registry."""
    import importlib
    import shutil

    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    copy = tmp_path / "hub_copy"
    copy.mkdir()
    (copy / "__init__.py").touch()
    for name in ("packing.py", "hardware.py", "screened_argmax.py", "modeling_zhen.py", "configuration_zhen.py"):
        shutil.copy(Path(packing.__file__).parent / name, copy / name)
    monkeypatch.syspath_prepend(str(tmp_path))
    hub_packing = importlib.import_module("hub_copy.packing")
    assert hub_packing.packed_sdpa_attention is not packing.packed_sdpa_attention
    assert ALL_ATTENTION_FUNCTIONS[packing.PACKED_ATTENTION] is packing.packed_sdpa_attention
