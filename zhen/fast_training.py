# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""zhen's fast training path, beside the plain model and switched on by one object, [`FastTraining`].

What it changes, each the same arithmetic as the plain model (`tests/test_fast_training.py` proves forward, loss and
gradients equal) and each through a mechanism Transformers provides:

- **Packed batches** (`zhen.packing`): the sentences of a padded batch concatenated into one row, with `position_ids`
  restarting at each sentence, as Transformers' padding-free training does. Projections, feed-forward layers, norms,
  dropout and the LM head then do no work on padding; attention runs per group of sentences of similar length
  (`attn_implementation="zhen_packed_sdpa"`).
- **The loss** ([`fused_translation_loss`], a criterion the trainer calls instead of reading `outputs.loss`, as
  fairseq keeps criteria apart from models): label-smoothed cross-entropy of `hidden @ lm_head.T` computed a chunk of
  rows at a time with its gradient formed in the same pass, so the (tokens × vocabulary) logits never exist.
- **Swapped modules** on the CPU: `nn.Dropout` → [`CpuDropout`] (its mask from 16-bit random integers, four per
  64-bit draw, a third of `bernoulli_`'s cost); and where the CPU has no bf16 instructions and training runs in bf16,
  `nn.Linear` → [`EmulatedBf16Linear`] (the same bf16 arithmetic as float32 GEMMs, 2-4x faster there); in float32
  where oneDNN multiplies training shapes faster than PyTorch's matmul (AMD EPYCs), `nn.Linear` → [`OneDnnLinear`]
  (and the fused loss's logits by oneDNN).
- **CUDA graphs** on one GPU ([`TrainingGraphs`]): the plain model's forward and backward of each batch shape
  captured once and replayed, where that measures faster than launching its kernels one by one from Python (the
  packed path and the fused loss save arithmetic a CPU is short of; a GPU is short of launches instead).

Hardware choices come from `zhen.hardware`, so tests can force each branch on any machine. `FastTraining(...).remove()`
gives back exactly the plain model; `torch.compile` is for the plain model (packed batches change shape every step).
"""

import contextlib
from collections.abc import Callable

import torch
from torch import nn

from . import hardware
from .packing import PACKED_ATTENTION, pack


# Rows of logits per chunk of the fused loss, by the dtype of its products. Each chunk adds its share of the LM head's
# (vocab, d_model) gradient to the float32 sum, a pass over 64 MiB at transformer-base: bf16 chunks, whose logits take
# half the bytes and need no float32 copy, are four times longer (README, Training: measured).
LOSS_CHUNK_SIZE = 512
HALF_LOSS_CHUNK_SIZE = 2048
NO_LOGITS = torch.empty(0, dtype=torch.long)  # `logits_to_keep` that keeps none: the fused loss needs no logits


# --------------------------------------------------------------------------------------------------------------
# The loss
# --------------------------------------------------------------------------------------------------------------


def fused_translation_loss(model, inputs: dict, labels: torch.Tensor, label_smoothing: float,
                           num_items_in_batch=None, chunk_size: int | None = None,
                           onednn: bool = False) -> torch.Tensor:  # fmt: skip
    """The loss `model(**inputs, labels=labels).loss` computes (label-smoothed cross-entropy per labelled token, or
    per `num_items_in_batch`), without the logits: the decoder's last hidden states go through [`LinearCrossEntropy`]
    with the LM head's weight, `chunk_size` rows at a time ([`default_loss_chunk_size`] by default), each chunk's
    float32 logits on the CPU multiplied by oneDNN if `onednn`. `inputs` must hold the decoder inputs. `model` may be
    wrapped (DDP, Accelerate): it is called as it is, so that wrappers see the forward pass."""
    outputs = model(**inputs, logits_to_keep=NO_LOGITS, output_hidden_states=-1, use_cache=False)
    hidden = outputs.decoder_hidden_states[-1]
    labels = labels.to(hidden.device).flatten()
    weight = _unwrapped(model).get_output_embeddings().weight
    loss = LinearCrossEntropy.apply(hidden.flatten(0, -2), weight, labels, label_smoothing, chunk_size, onednn)
    if num_items_in_batch is None:
        num_items_in_batch = (labels != -100).sum().clamp(min=1)
    return loss / (num_items_in_batch.to(loss.device) if torch.is_tensor(num_items_in_batch) else num_items_in_batch)


def _log_sum_exp(logits: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """Each row's log-sum-exp in float32, from its largest logit `m` and that logit's probability: `m - log p(m)`,
    exact but for the rounding of `p(m)` to the probabilities' dtype (within 2^-8 relative in bf16: under 0.004,
    unbiased), and free of underflow, since `p(m)` is at least 1/vocab."""
    return logits.amax(1).float() - probs.amax(1).float().log()  # softmax keeps the order: p(m) is the largest p


def _unwrapped(model):
    while hasattr(model, "module"):  # DistributedDataParallel, DataParallel
        model = model.module
    return model


def default_loss_chunk_size(dtype: torch.dtype) -> int:
    """The fused loss's rows per chunk where its products run in `dtype`."""
    return LOSS_CHUNK_SIZE if dtype == torch.float32 else HALF_LOSS_CHUNK_SIZE


class LinearCrossEntropy(torch.autograd.Function):
    """Label-smoothed cross-entropy of `hidden @ weight.T`, summed over the rows whose label is not -100, computed a
    chunk of rows at a time with the gradient formed in the same pass (as Liger's fused linear cross-entropy does).

    The (tokens, vocab) logits, their log-softmax and its gradient never exist at once (each half a gigabyte per 4k
    tokens with a 32k vocabulary). Under autocast the products run in the autocast dtype and the softmax in float32,
    as `lm_head` + `cross_entropy` would (the softmax of bf16 logits reads them as they are and computes in float32;
    the loss's log-sum-exp comes from the largest logit's probability, [`_log_sum_exp`]); in bf16 on a CPU without
    bf16 instructions the products of the bf16-rounded operands run in float32 (see [`Bf16LinearInFloat32`]) and are
    not rounded again. `chunk_size` None: [`default_loss_chunk_size`] of the products' dtype. `onednn`: float32
    logits on the CPU multiplied by oneDNN (`zhen.hardware.onednn_linear`) rather than PyTorch's matmul, as
    [`OneDnnLinear`] multiplies the linear layers; the gradients' products stay PyTorch's (no faster through oneDNN).
    """

    @staticmethod
    def forward(ctx, hidden, weight, labels, label_smoothing: float, chunk_size: int | None, onednn: bool = False):
        rows = (labels != -100).nonzero().squeeze(1)
        device = hidden.device
        dtype = hardware.autocast_dtype(device) or hidden.dtype
        with torch.autocast(device.type, enabled=False):
            inputs, targets, w = hidden[rows].to(dtype), labels[rows], weight.to(dtype)
            if dtype == torch.bfloat16 and hardware.emulates_bf16(device):
                inputs, w, dtype = inputs.float(), w.float(), torch.float32
            n, vocab_size = len(rows), w.shape[0]
            weight_sum, input_sum = w.sum(0, dtype=torch.float32), inputs.sum(0, dtype=torch.float32)
            grad_inputs = torch.empty_like(inputs)
            fp32 = dtype == torch.float32
            onednn = onednn and fp32 and device.type == "cpu"
            # written by the first chunk's product rather than zero-filled first: a pass less over (vocab, d_model);
            # in bf16 as (d_model, vocab), the layout whose products oneDNN runs fastest, transposed once at the end
            new_grad_weight = torch.empty if n else torch.zeros
            grad_weight = new_grad_weight(weight.shape if fp32 else weight.shape[::-1], dtype=torch.float32,
                                          device=device)  # fmt: skip
            w_t = None if fp32 else w.t().contiguous()
            chunk_size = chunk_size or default_loss_chunk_size(dtype)
            buffer = inputs.new_empty((min(chunk_size, n), vocab_size)) if fp32 and not onednn else None
            loss = torch.zeros((), dtype=torch.float32, device=device)
            for start in range(0, n, chunk_size):
                x, y = inputs[start : start + chunk_size], targets[start : start + chunk_size]
                grad_rows = grad_inputs[start : start + chunk_size]
                if fp32:  # logits in one buffer (oneDNN's fresh each chunk: `keep_freed_memory` keeps them mapped)
                    logits = hardware.onednn_linear(x, w) if onednn else torch.mm(x, w.t(), out=buffer[: len(x)])
                    target_logits = logits.gather(1, y[:, None]).squeeze(1)
                    log_probs = torch.log_softmax(logits, 1, out=logits)
                    nll = -log_probs.gather(1, y[:, None]).squeeze(1)
                    probs = log_probs.exp_()
                    torch.mm(probs, w, out=grad_rows)
                    grad_weight.addmm_(probs.t(), x, beta=1 if start else 0)  # beta=0 ignores the empty memory
                else:  # softmax reads the bf16 logits and computes in float32: no float32 copy of them
                    logits = x @ w_t
                    target_logits = logits.gather(1, y[:, None]).squeeze(1).float()
                    probs = torch.softmax(logits, 1)
                    nll = _log_sum_exp(logits, probs) - target_logits
                    grad_rows.copy_(probs @ w)
                    (grad_weight.add_ if start else grad_weight.copy_)(x.t().contiguous() @ probs)
                loss += nll.sum() + label_smoothing * target_logits.sum()
            # smoothed -log p(y) = -(1-e) log p(y) - e mean(log p) = -log p(y) + e (z_y - mean z), summed over the rows
            loss -= label_smoothing * (input_sum @ weight_sum) / vocab_size
            # the rest of d loss / d logits = softmax - e/V - (1-e) onehot(y), applied without a (tokens, vocab) pass
            smooth = label_smoothing / vocab_size
            grad_inputs -= (smooth * weight_sum + (1 - label_smoothing) * w[targets].float()).to(dtype)
            if fp32:
                grad_weight -= smooth * input_sum
            else:  # transposed in the same pass
                transposed, grad_weight = grad_weight.t(), torch.empty_like(weight, dtype=torch.float32)
                torch.sub(transposed, smooth * input_sum, out=grad_weight)
            grad_weight.index_add_(0, targets, inputs.float(), alpha=-(1 - label_smoothing))
        ctx.save_for_backward(rows, grad_inputs, grad_weight)
        ctx.hidden_shape, ctx.hidden_dtype, ctx.weight_dtype = hidden.shape, hidden.dtype, weight.dtype
        ctx.used = False
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.used:
            raise RuntimeError(
                "The fused loss scales its precomputed gradients in place, so it cannot be backpropagated twice "
                "(retain_graph=True); compute the loss again, or use the model's own loss (outputs.loss)."
            )
        ctx.used = True
        rows, grad_inputs, grad_weight = ctx.saved_tensors
        grad_hidden = grad_inputs.new_zeros(ctx.hidden_shape, dtype=ctx.hidden_dtype)
        grad_hidden[rows] = (grad_inputs * grad_output).to(ctx.hidden_dtype)
        # in place: a second (vocab, d_model) gradient would cost a pass and, at 32k x 512, 64 MiB of fresh pages
        return grad_hidden, grad_weight.mul_(grad_output).to(ctx.weight_dtype), None, None, None, None


# --------------------------------------------------------------------------------------------------------------
# Swapped modules
# --------------------------------------------------------------------------------------------------------------


class CpuDropout(nn.Dropout):
    """`nn.Dropout` whose CPU training mask comes from 16-bit random integers, four per 64-bit draw, where
    `bernoulli_` draws a float per element: on CPU the random numbers are most of dropout's cost. `p` is rounded to a
    multiple of 1/65536 (fused GPU kernels round it to 1/256) and kept values are scaled by 1 / (1 - rounded p), so
    expectations are unchanged."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and x.device.type == "cpu" and 0 < round(self.p * 65536) < 65536:
            return _CpuDropoutFunction.apply(x, self.p)
        return super().forward(x)


def _widen(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean mask as 0/1 of `dtype`, converted from its bytes: PyTorch's CPU conversion is vectorised from uint8
    but not from bool."""
    return mask.view(torch.uint8).to(dtype)


class _CpuDropoutFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float) -> torch.Tensor:
        threshold = round(p * 65536)
        ctx.scale = 65536 / (65536 - threshold)
        draws = torch.empty((x.numel() + 3) // 4, dtype=torch.int64).random_(-(2**63), None)  # all 64 bits random
        bits = draws.view(torch.int16)[: x.numel()].view(x.shape)  # uniform on [-32768, 32767]
        keep = bits >= threshold - 32768
        ctx.save_for_backward(keep)  # as booleans: a saved float mask would cost four times the fresh memory
        return _widen(keep, x.dtype).mul_(x).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        (keep,) = ctx.saved_tensors
        return _widen(keep, grad_output.dtype).mul_(grad_output).mul_(ctx.scale), None


class Bf16LinearInFloat32(torch.autograd.Function):
    """`linear(x, weight, bias)` of bfloat16 tensors, with a bfloat16 result and bfloat16 gradients, multiplied by
    float32 GEMMs on their float32 values. That is the arithmetic of a bfloat16 GEMM (the product of two bf16 numbers
    is exact in float32, and bf16 GEMMs accumulate in float32), at float32 speed where the CPU has no bf16
    instructions: PyTorch's emulated bf16 GEMM converts to float32 too, but runs at a quarter of float32's rate."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return nn.functional.linear(x.float(), weight.float(), None if bias is None else bias.float()).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        x, weight = ctx.saved_tensors
        grad = grad_output.float().flatten(0, -2)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = (grad @ weight.float()).to(x.dtype).view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_weight = (grad.t() @ x.flatten(0, -2).float()).to(weight.dtype)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad.sum(0).to(weight.dtype)
        return grad_x, grad_weight, grad_bias


class EmulatedBf16Linear(nn.Linear):
    """`nn.Linear` whose bfloat16 products (under bf16 autocast, or with bf16 weights) of at least `MIN_ROWS` rows
    run through [`Bf16LinearInFloat32`] on a CPU that emulates bf16; elsewhere it is `nn.Linear`."""

    MIN_ROWS = 64  # below, converting the weight to float32 costs more than the faster GEMM saves

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        computes_bf16 = hardware.autocast_dtype(x.device) == torch.bfloat16 or (
            x.dtype == self.weight.dtype == torch.bfloat16
        )
        if x.numel() < self.MIN_ROWS * self.in_features or not computes_bf16 or not hardware.emulates_bf16(x.device):
            return super().forward(x)
        with torch.autocast(x.device.type, enabled=False):  # the casts autocast would make, differentiable
            bias = None if self.bias is None else self.bias.bfloat16()
            return Bf16LinearInFloat32.apply(x.bfloat16(), self.weight.bfloat16(), bias)


class OneDnnLinearProduct(torch.autograd.Function):
    """`linear(x, weight, bias)` of float32 CPU tensors with the forward product and the input's gradient multiplied
    by oneDNN (`zhen.hardware.onednn_linear`), the weight's gradient by PyTorch's matmul (faster there): float32
    GEMMs either way, by the library that runs a training step's shapes faster on CPUs where MKL runs code for older
    ones (`zhen.hardware`'s `float32_training`)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return hardware.onednn_linear(x.flatten(0, -2), weight, bias).view(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        x, weight = ctx.saved_tensors
        grad = grad_output.flatten(0, -2)
        grad_x = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_x = hardware.onednn_linear(grad, weight.t()).view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_weight = grad.t() @ x.flatten(0, -2)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = grad.sum(0)
        return grad_x, grad_weight, grad_bias


class OneDnnLinear(nn.Linear):
    """`nn.Linear` whose float32 CPU products of at least `MIN_ROWS` rows, outside autocast, run through
    [`OneDnnLinearProduct`]; elsewhere it is `nn.Linear`."""

    MIN_ROWS = 64  # below, a oneDNN call costs more than its faster product saves

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        float32 = x.dtype == self.weight.dtype == torch.float32 and not torch.is_autocast_enabled(x.device.type)
        if x.device.type != "cpu" or not float32 or x.numel() < self.MIN_ROWS * self.in_features:
            return super().forward(x)
        return OneDnnLinearProduct.apply(x, self.weight, self.bias)


# --------------------------------------------------------------------------------------------------------------
# CUDA graphs
# --------------------------------------------------------------------------------------------------------------


GRAPH_MULTIPLE = 8  # a batch's rows and lengths are rounded up to multiples of this: fewer shapes, fewer graphs
MAX_TRAINING_GRAPHS = 256  # shapes beyond this many train eagerly
GRAPH_KEYS = ("input_ids", "attention_mask", "labels")
LOW_GPU_MEMORY = 0.2  # a capture empties the allocator's cache first only where less than this share of the GPU is free


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def pad_batch(batch: dict, rows: int, source_length: int, target_length: int, pad_token_id: int) -> dict:
    """`batch` (`input_ids`, `attention_mask`, `labels`) padded to `rows` rows and the given lengths, with the loss and
    the gradients unchanged: extra columns are masked sources and -100 labels, extra rows a source of one unmasked pad
    token (a row with no key to attend to gives NaNs, and NaN times a zero gradient is NaN) and -100 labels."""
    n, s = batch["input_ids"].shape
    t = batch["labels"].shape[1]
    input_ids = batch["input_ids"].new_full((rows, source_length), pad_token_id)
    attention_mask = batch["attention_mask"].new_zeros((rows, source_length))
    labels = batch["labels"].new_full((rows, target_length), -100)
    input_ids[:n, :s], attention_mask[:n, :s], labels[:n, :t] = (
        batch["input_ids"],
        batch["attention_mask"],
        batch["labels"],
    )
    attention_mask[n:, 0] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


class _Shape:
    """One bucketed batch shape: how often seen, its eager step's time, its graph, and whether replaying is faster."""

    def __init__(self, size: tuple[int, int, int]):
        self.size, self.seen = size, 0
        self.eager_seconds: float | None = None
        self.replays: bool | None = None
        self.drop_graph()

    def drop_graph(self):
        self.graph = self.inputs = self.num_items = self.loss = None


class TrainingGraphs:
    """Forward and backward of padded batches run as CUDA graphs: on a GPU a training step of a translation-sized
    batch is thousands of small kernels, and launching them from Python, not running them, is much of its time.

    Each batch is padded to a shape rounded up to multiples of `multiple` ([`pad_batch`]: the loss and gradients
    stay those of the batch). A graph is captured for a shape after an eager step of that shape on the stream the
    capture uses (the warm-up CUDA graphs want; it is also that batch's real step) and replayed for later batches of
    the shape. Where the step is bound by the GPU's work, not by launching it (large batches, float32), the padding
    costs more than the launches save, so by default each shape is measured: its second batch runs eagerly and timed,
    the third is captured, the fourth replayed and timed, and the shape keeps whichever was faster. `always=True`
    captures at a shape's first batch and always replays. A model that is not on a CUDA GPU trains eagerly.

    All graphs share one memory pool: nothing a replay leaves behind is read after the next one but the loss, copied
    out. Gradients are added to the parameters' `.grad`, allocated once; an optimizer's `zero_grad(set_to_none=True)`
    is undone by putting back the same, zeroed, tensors. Dropout draws fresh numbers at each replay.

    ```python
    graphs = TrainingGraphs(model, autocast_dtype=torch.bfloat16, pad_token_id=model.config.pad_token_id)
    loss = graphs(model, batch)           # forward and backward; then clip, optimizer.step(), zero_grad()
    ```
    """

    def __init__(self, model, autocast_dtype: torch.dtype | None, pad_token_id: int, always: bool = False,
                 multiple: int = GRAPH_MULTIPLE, max_graphs: int = MAX_TRAINING_GRAPHS):  # fmt: skip
        self.model = model
        self.parameters = self.device = None  # read at the first step: the model may move before it
        self.autocast_dtype, self.pad_token_id, self.always = autocast_dtype, pad_token_id, always
        self.multiple, self.max_graphs = multiple, max_graphs
        self.shapes: dict[tuple, _Shape] = {}
        self.gradients: list[torch.Tensor] | None = None
        self.pool = self.stream = None
        self.eager_steps = self.replayed_steps = 0

    def shape(self, batch: dict) -> tuple[int, int, int]:
        rows, source_length = batch["input_ids"].shape
        return tuple(round_up(n, self.multiple) for n in (rows, source_length, batch["labels"].shape[1]))

    def graph_count(self) -> int:
        return sum(shape.graph is not None for shape in self.shapes.values())

    def describe(self) -> str:
        eager = sum(shape.replays is False for shape in self.shapes.values())
        return (f"{self.graph_count()} batch shapes in CUDA graphs, {eager} faster eagerly; "
                f"{self.replayed_steps} steps replayed")  # fmt: skip

    def __call__(self, model, batch: dict, num_items_in_batch=None) -> torch.Tensor:
        """Forward and backward of `batch` through `model` (the model given at construction, or a wrapper that
        calls it as it is, such as Accelerate's on one device); returns the loss, detached."""
        self._keep_gradients()
        if num_items_in_batch is None:
            num_items_in_batch = batch["labels"].ne(-100).sum().clamp(min=1)
        num_items = torch.as_tensor(num_items_in_batch, dtype=torch.float32)
        size = self.shape(batch)
        shape = self.shapes.setdefault((*size, model.training), _Shape(size))
        shape.seen += 1
        if shape.graph is None:
            eager = shape.replays is False or self.graph_count() >= self.max_graphs or self.device.type != "cuda"
            if eager or (not self.always and shape.seen == 1):
                return self._eager(model, batch, num_items)
            if not self.always and shape.eager_seconds is None:
                loss, shape.eager_seconds = _timed(lambda: self._eager(model, batch, num_items))
                return loss
            return self._capture(model, shape, pad_batch(batch, *size, self.pad_token_id), num_items)
        if shape.replays is None and not self.always:
            loss, seconds = _timed(lambda: self._replay(shape, batch, num_items))
            shape.replays = seconds < shape.eager_seconds
            if not shape.replays:
                shape.drop_graph()
                if not self.graph_count():
                    self.pool = None  # the last graph's memory goes back to eager steps
            return loss
        return self._replay(shape, batch, num_items)

    def _eager(self, model, batch: dict, num_items: torch.Tensor) -> torch.Tensor:
        self.eager_steps += 1
        inputs = {name: batch[name].to(self.device) for name in GRAPH_KEYS}
        return self._forward_backward(model, inputs, num_items.to(self.device)).detach()

    def _replay(self, shape: _Shape, batch: dict, num_items: torch.Tensor) -> torch.Tensor:
        self.replayed_steps += 1
        for name, tensor in pad_batch(batch, *shape.size, self.pad_token_id).items():
            shape.inputs[name].copy_(tensor, non_blocking=True)
        shape.num_items.copy_(num_items, non_blocking=True)
        shape.graph.replay()
        return shape.loss.clone()

    def _forward_backward(self, model, inputs: dict, num_items: torch.Tensor) -> torch.Tensor:
        # the autocast cache keeps weight casts across calls: not allowed in a CUDA graph
        with torch.autocast(self.device.type, self.autocast_dtype or torch.float32,
                            enabled=self.autocast_dtype is not None, cache_enabled=False):  # fmt: skip
            loss = model(**inputs, num_items_in_batch=num_items).loss
        loss.backward()
        return loss

    def _capture(self, model, shape: _Shape, inputs: dict, num_items: torch.Tensor) -> torch.Tensor:
        shape.inputs = {name: torch.empty_like(t, device=self.device).copy_(t) for name, t in inputs.items()}
        shape.num_items = num_items.to(self.device, copy=True)
        current = torch.cuda.current_stream(self.device)
        self.stream = self.stream or torch.cuda.Stream(self.device)
        self.stream.wait_stream(current)
        with torch.cuda.stream(self.stream):  # this batch's step, and the warm-up a capture needs
            loss = self._forward_backward(model, shape.inputs, shape.num_items).detach()
        shape.graph = torch.cuda.CUDAGraph()
        with capturing(shape.graph, self.pool, self.stream):
            shape.loss = self._forward_backward(model, shape.inputs, shape.num_items).detach()
        current.wait_stream(self.stream)
        self.pool = shape.graph.pool()
        return loss

    def _keep_gradients(self):
        """The gradients the graphs add to must stay the same tensors."""
        if self.gradients is None:
            self.parameters = [p for p in self.model.parameters() if p.requires_grad]
            self.device = self.parameters[0].device
            for p in self.parameters:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
            self.gradients = [p.grad for p in self.parameters]
        elif any(p.grad is not g for p, g in zip(self.parameters, self.gradients)):
            if any(p.grad is not None for p in self.parameters):
                raise RuntimeError(
                    "The parameters' gradients were replaced since the CUDA graphs were captured, which add to the "
                    "first ones: zero them in place (optimizer.zero_grad(set_to_none=False)) or train without CUDA "
                    "graphs (FastTraining(..., cuda_graphs=False), zhen-train --no-cuda-graphs)."
                )
            torch._foreach_zero_(self.gradients)
            for p, g in zip(self.parameters, self.gradients):
                p.grad = g


@contextlib.contextmanager
def capturing(graph: torch.cuda.CUDAGraph, pool, stream: torch.cuda.Stream):
    """`torch.cuda.graph(graph, pool=pool, stream=stream)` without what it does before every capture: wait for the GPU
    and hand the allocator's cached memory back to the driver. Training captures a graph per batch shape, dozens in a
    first epoch, and after each such emptying the eager steps of the shapes not yet captured allocate their memory from
    the driver anew. Here the cache is emptied only where the GPU is short of memory."""
    free, total = torch.cuda.mem_get_info(stream.device)
    if free < LOW_GPU_MEMORY * total:
        torch.cuda.synchronize(stream.device)
        torch.cuda.empty_cache()
    with torch.cuda.stream(stream):
        graph.capture_begin(*(() if pool is None else (pool,)))
        try:
            yield
        finally:
            graph.capture_end()


def _timed(step: Callable) -> tuple[torch.Tensor, float]:
    """`step()` and the GPU seconds it took (from the start of its work to the end, gaps for launching included)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    result = step()
    end.record()
    end.synchronize()
    return result, start.elapsed_time(end) / 1000


# --------------------------------------------------------------------------------------------------------------
# The switch
# --------------------------------------------------------------------------------------------------------------


class FastTraining:
    """Switch a model to zhen's fast training path, and compute the training loss through it.

    ```python
    fast = FastTraining(model, mixed_precision="bf16")   # swaps modules, sets the packed attention
    loss = fast.loss(prepared_model, batch)               # batch from zhen's collator; prepared_model may be wrapped
    fast.remove()                                         # the plain model again
    ```

    Args:
        model ([`ZhenForConditionalGeneration`]): the model (unwrapped).
        mixed_precision (`str`): `"no"`, `"bf16"` or `"fp16"`, as training runs.
        packing (`bool`, *optional*): train on packed batches; by default when the model uses SDPA and
            `zhen.hardware.packing_pays` on its device (a CPU: yes; a GPU: no, the plain model is faster).
        fused_loss (`bool`, *optional*): the loss without logits ([`fused_translation_loss`]); by default where
            `zhen.hardware.packing_pays`.
        attention_groups (`int`, defaults to 4): groups of similar-length sentences attention runs on.
        attention_kernel (`str`, defaults to `"auto"`): how each group attends, `"sdpa"` or `"matmul"` (two matmuls
            and a softmax); `"auto"` is what `zhen.hardware.training_attention_kernel` says is faster on the device.
        label_smoothing (`float`, *optional*): defaults to `model.config.label_smoothing`.
        loss_chunk_size (`int`, *optional*): rows of logits per chunk of the fused loss; by default
            [`default_loss_chunk_size`] of its products' dtype (512 in float32, 2048 in bf16).
        device (`torch.device` or `str`, *optional*): where the model trains, if it is not there yet (zhen-train
            switches the path on before Accelerate moves the model); defaults to the model's device.
        cuda_graphs (`bool`, *optional*): train through `self.graphs` ([`TrainingGraphs`]), each batch shape's
            forward and backward a replayed CUDA graph: `True` always, `None` (the default) for the shapes where a
            replay measures faster than an eager step. Only on a CUDA GPU, for the plain model (no packing, no fused
            loss, no gradient checkpointing) in float32 or bf16, in one process (a graph does not hold DDP's gradient
            communication).
    """

    def __init__(self, model, mixed_precision: str = "no", packing: bool | None = None, fused_loss: bool | None = None,
                 attention_groups: int = 4, attention_kernel: str = "auto", label_smoothing: float | None = None,
                 loss_chunk_size: int | None = None, device: torch.device | str | None = None,
                 cuda_graphs: bool | None = None):  # fmt: skip
        self.model = model
        self.attn_implementation = model.config._attn_implementation
        device = torch.device(device) if device is not None else next(model.parameters()).device
        pays = hardware.packing_pays(device)
        self.packing = pays and self.attn_implementation == "sdpa" if packing is None else packing
        self.fused_loss = pays if fused_loss is None else fused_loss
        self.loss_chunk_size = loss_chunk_size
        self.attention_groups = attention_groups
        self.attention_kernel = (
            hardware.training_attention_kernel(device, mixed_precision)
            if attention_kernel == "auto"
            else attention_kernel
        )
        if self.attention_kernel not in ("sdpa", "matmul"):
            raise ValueError(f"attention_kernel={attention_kernel!r} is not one of 'auto', 'sdpa', 'matmul'.")
        self.label_smoothing = model.config.label_smoothing if label_smoothing is None else label_smoothing
        on_cpu = device.type == "cpu"
        if on_cpu:
            hardware.keep_freed_memory(large_blocks=True)
        self.swaps = {nn.Dropout: CpuDropout} if on_cpu else {}
        if on_cpu and mixed_precision == "bf16" and hardware.emulates_bf16("cpu"):
            self.swaps[nn.Linear] = EmulatedBf16Linear
        elif on_cpu and mixed_precision == "no" and hardware.current().float32_trainer() == "onednn":
            self.swaps[nn.Linear] = OneDnnLinear
        self.swapped: list[tuple[nn.Module, type]] = []
        self.graphs = self._graphs(device, mixed_precision, cuda_graphs)
        self.apply()

    def _graphs(self, device: torch.device, mixed_precision: str, cuda_graphs: bool | None) -> TrainingGraphs | None:
        obstacles = [
            reason
            for reason, present in [
                ("the model is not on a CUDA GPU", device.type != "cuda"),
                ("packed batches change shape every step", self.packing),
                ("the fused loss is not captured", self.fused_loss),
                (f"mixed_precision={mixed_precision!r} (float32 or bf16 only)", mixed_precision not in ("no", "bf16")),
                ("gradient checkpointing reads the RNG state", self.model.is_activation_checkpointing),
            ]
            if present
        ]
        if cuda_graphs and obstacles:
            raise ValueError(f"cuda_graphs=True cannot train this model: {'; '.join(obstacles)}.")
        if obstacles or cuda_graphs is False:
            return None
        dtype = torch.bfloat16 if mixed_precision == "bf16" else None
        return TrainingGraphs(self.model, dtype, self.model.config.pad_token_id, always=bool(cuda_graphs))

    def describe(self) -> str:
        if self.graphs is not None:
            where = "" if self.graphs.always else " where faster"
            return f"the plain model (padded batches, logits) in CUDA graphs{where}"
        if not (self.packing or self.fused_loss or self.swaps):
            return "the plain model (padded batches, logits)"
        parts = [
            f"packed batches ({self.attention_kernel} attention)" if self.packing else "padded batches",
            "fused loss" if self.fused_loss else "logits",
        ]
        parts += [f"{new.__name__} for {old.__name__}" for old, new in self.swaps.items()]
        return ", ".join(parts)

    def apply(self) -> "FastTraining":
        for module in self.model.modules():
            new_class = self.swaps.get(type(module))
            if new_class is not None:
                self.swapped.append((module, type(module)))
                module.__class__ = new_class
        if self.packing:
            self.model.set_attn_implementation(PACKED_ATTENTION)
        return self

    def remove(self) -> None:
        """Undo [`apply`]: the plain model, with its own attention implementation."""
        for module, original_class in self.swapped:
            module.__class__ = original_class
        self.swapped.clear()
        if self.packing:
            self.model.set_attn_implementation(self.attn_implementation)

    @contextlib.contextmanager
    def paused(self):
        """The plain model inside the block ([`remove`]), the fast path again after it ([`apply`]): what a
        translation in the middle of training decodes, since the fast decoder makes its session copies of
        `nn.Linear`s, not of the training path's modules."""
        self.remove()
        try:
            yield self.model
        finally:
            self.apply()

    def loss(self, model, batch: dict, num_items_in_batch=None) -> torch.Tensor:
        """The training loss of a padded batch (`input_ids`, `attention_mask`, `labels`), through `model` (the model
        given at construction, or its DDP/Accelerate wrapper)."""
        device = next(self.model.parameters()).device
        if self.packing and bool((batch["labels"] != -100).any()):  # packed, a batch without labels has no target
            config = self.model.config
            inputs = pack(batch, config.decoder_start_token_id, config.pad_token_id, self.attention_groups)
            inputs["packed_layout"].attention_kernel = self.attention_kernel
            inputs["packed_layout"] = inputs["packed_layout"].to(device)
        else:
            inputs = dict(batch)
        inputs = {key: value.to(device) if torch.is_tensor(value) else value for key, value in inputs.items()}
        if not self.fused_loss:
            return model(**inputs, num_items_in_batch=num_items_in_batch).loss
        labels = inputs.pop("labels")
        if "decoder_input_ids" not in inputs:
            inputs["decoder_input_ids"] = self.model.prepare_decoder_input_ids_from_labels(labels)
        onednn = self.swaps.get(nn.Linear) is OneDnnLinear
        return fused_translation_loss(
            model, inputs, labels, self.label_smoothing, num_items_in_batch, self.loss_chunk_size, onednn
        )


__all__ = [
    "CpuDropout",
    "EmulatedBf16Linear",
    "FastTraining",
    "LinearCrossEntropy",
    "OneDnnLinear",
    "TrainingGraphs",
    "default_loss_chunk_size",
    "fused_translation_loss",
]
