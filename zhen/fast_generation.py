# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Lean greedy and beam-search decoding for zhen models, beside `model.generate`.

`generate(model, input_ids, attention_mask, forced_bos_token_id=..., num_beams=...)` returns the token ids of
`model.generate(...)` with the same arguments (greedy, or beam search with Transformers' length penalty and early
stopping rules), with far less work around the model at each step. The decoder is the model's own: every step runs
each `ZhenDecoderLayer` on one token per row, through the layer's ordinary forward (or, on a CPU, the same
operations as one program that TorchScript runs without the GIL: `zhen.layer_steps`). What differs is around it:

- a key/value cache preallocated for the whole output (`zhen.decoding_cache`), written in place through the cache API
  the layers already use, the beams of a sentence side by side: each row finds its history through pointers to the
  beam slot that holds it at each position, so beam search's reorder rewrites pointers and moves no keys or values
  (where `generate` gathers the whole cache every step). The source's cross-attention keys and values are projected
  once per sentence, not per beam. Within a session the caches of one batch reuse the memory of the last: fresh
  memory costs a page fault per page on first touch;
- [`decoding_attention`], registered with Transformers' attention interface for the time of decoding: softmax(q kᵀ) v
  for one query per row (cheaper than SDPA's set-up at this size), where the beams of a sentence attend as one block
  of queries to that sentence's source instead of to copies of it; its products over the values and the source's
  keys are FBGEMM's weighted row sums on x86 CPUs (`zhen.decoding_cache.row_index`: one pass over the rows, where a
  matmul per row and head is slower);
- one loop with the bookkeeping of greedy or beam search done on small tensors, without logits processors, stopping
  criteria, masks or output capturing (`zhen.search`); rows (greedy) and sentences (beam search) that have finished
  leave the batch, where `generate` computes them to the end of the longest; argmax and top-k found from block maxima
  (CPU `argmax`/`topk` over a 32k vocabulary are several times slower than `amax`; beam search's top continuations
  from each beam's block maxima plus its score, the score added to the candidates only); the LM head skipped on the
  step whose token is forced; beam search's first steps, while the beams of a sentence share one history, run one row
  per sentence;
- within a [`FastDecoder`] session (what `zhen.translate` and the translation pipeline open), the projections of
  encoder and decoder and the LM head multiply by session copies of their weights chosen for the machine
  (`zhen.hardware`): bf16 copies packed into oneDNN's GEMM layout where the CPU computes bf16 natively (AMX,
  AVX512-BF16; ReLU fused into the feed-forward's first product), float32 weights packed into oneDNN's (or MKL's)
  GEMM layout elsewhere; bf16 copies on a GPU with bf16 (`zhen.session_modules`).
  The copies are made at a model's first session and kept for its later ones while its weights stay as they are
  ([`session_copy`]: a session costs tens of milliseconds at base otherwise, more than a short text's decoding);
- no call that does nothing: dropout in eval mode and the no-op float32 cast after an int8 product leave the model for
  the session ([`FastDecoder.swap_in_lean_modules`]), since every PyTorch call lets go of the GIL and takes it back;
- on a GPU, [`StaticDecoderSteps`] (`zhen.decoder_steps`): each decoder step captured once as a CUDA graph and
  replayed;
- [`FastDecoder.generate_batches`], [`FastDecoder.map`]: several batches decoded at once by one session, each in its
  own thread with its share of PyTorch's threads (on a CPU, small products parallelise poorly over threads;
  independent batches do not), greedy batches' tails decoded together (`zhen.pooled_tails`).

On a model quantized with `zhen.quantization.quantize_dynamic` it is the fast int8 decoder.
"""

import contextlib
import copy
import functools
import itertools
import math
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sized
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, AttentionInterface
from transformers.utils import logging

from . import draft_decoding, hardware, layer_steps
from .decoder_steps import DecoderSteps, StaticDecoderSteps, cuda_graphs_work, inline_layers_work, position_table
from .decoding_cache import DECODING, Workspace, row_index
from .draft_decoding import draft_due, drafted_beam_search, drafted_greedy_search, drafting_pays, int8_draft
from .hardware import current as current_hardware
from .layer_steps import (
    DecoderLayerSteps,
    EncoderSteps,
    Groups,
    attend,
    attend_history,
    encoder_steps,
    interpreted,
    kept_steps,
    submodules,
)
from .layer_steps import release as release_program
from .packing import PACKED_ATTENTION, pack_sources, unpack
from .pooled_tails import TailPool, generate_batches
from .screened_argmax import BF16_MIN_WEIGHT, screen_pays
from .search import beam_search, greedy_search
from .session_modules import (
    INERT,
    Bf16Linear,
    Bf16ReluMLP,
    Int8Linear,
    Int8ReluMLP,
    PackedLinear,
    ScreenedBf16Head,
    ScreenedHead,
    is_relu_mlp,
    lean_int8_class,
)
from .weight_stamps import WeightStamp, weights_of


logger = logging.get_logger(__name__)

# Generation options this decoder does not implement, with the value that switches each off. `generate` refuses them
# (passed, or set in the model's generation config) rather than silently ignoring them.
UNSUPPORTED = dict(
    do_sample=False, repetition_penalty=1.0, no_repeat_ngram_size=0, encoder_no_repeat_ngram_size=0,
    bad_words_ids=None, sequence_bias=None, suppress_tokens=None, begin_suppress_tokens=None, num_beam_groups=1,
    diversity_penalty=0.0, exponential_decay_length_penalty=None, renormalize_logits=False, min_length=0,
    return_dict_in_generate=False, output_scores=False, output_logits=False, output_attentions=False,
    output_hidden_states=False, synced_gpus=False,
)  # fmt: skip
IGNORED = ("use_cache", "max_length")  # the cache is always on; max_length is read as 1 + max_new_tokens
ARGUMENTS = ("forced_bos_token_id", "num_beams", "max_new_tokens", "min_new_tokens", "length_penalty", "early_stopping",
             "num_return_sequences", "input_ids", "attention_mask")  # fmt: skip
# Each copy of this file (zhen's, a checkpoint's Hub custom code) registers its own: a session reads its own state.
DECODING_ATTENTION = "zhen_decoding" if __name__.startswith("zhen.") else f"zhen_decoding:{__name__}"
WEIGHTS = ("auto", "bf16", "packed", "plain")
# Seconds a model's calls decode with their layers' programs in Python before TorchScript compiles them: compiling
# takes longer than a few calls, so a one-off call (`zhen-translate "..."`, a notebook's first translation) never pays
# it, and a model that decodes for longer loses less than a compilation's time before it has it (README, Performance).
SCRIPT_AFTER_SECONDS = 1.0
# Batches decoded side by side compile at once where each stream has more than this many to decode: in Python two
# streams contend for the GIL, which a longer run pays for more than for a compilation; a shorter one does not.
SCRIPT_AT_ONCE_BATCHES_PER_STREAM = 2


def unsupported_options(model, **generate_kwargs) -> list[str]:
    """The generation options, passed or set in `model.generation_config`, that `generate` here does not implement:
    empty when it can stand in for `model.generate(**generate_kwargs)`."""
    config = model.generation_config
    found = [name for name, off in UNSUPPORTED.items() if getattr(config, name, off) not in (off, None)]
    for name, value in generate_kwargs.items():
        if name in UNSUPPORTED and value not in (UNSUPPORTED[name], None):
            found.append(name)
        elif name not in UNSUPPORTED and name not in ARGUMENTS + IGNORED:
            found.append(name)
    if isinstance(config.eos_token_id, (list, tuple)) and len(config.eos_token_id) > 1:
        found.append("eos_token_id")
    return sorted(set(found))


def refuse_generate_in_open_session(model, **generate_kwargs) -> None:
    """Raise where this thread has a [`FastDecoder`] session open for `model` and the options `generate_kwargs` need
    `model.generate`: inside the session its forwards multiply by the session's copies of the weights, not the model's
    own, so it would not give `generate`'s tokens."""
    if FastDecoder.open_in_this_thread(model) is not None:
        raise ValueError(
            f"{unsupported_options(model, **generate_kwargs)} need model.generate, which cannot run inside the "
            "FastDecoder session this thread has open for the model; translate outside it."
        )


def generate(model, input_ids, attention_mask=None, **generate_kwargs) -> torch.LongTensor:
    """Translate a batch like `model.generate(input_ids, attention_mask, **generate_kwargs)`; see
    [`FastDecoder.generate`]. With the model's own weights: session copies pay only over several batches (use
    [`FastDecoder`])."""
    with FastDecoder(model, weights="plain") as decoder:
        return decoder.generate(input_ids, attention_mask, **generate_kwargs)


class FastDecoder:
    """A decoding session: inside `with FastDecoder(model) as decoder:`, `decoder.generate(...)` translates batch after
    batch with the model's decoder layers switched to fast decoding (see the module docstring); on exit the model is
    exactly as it was. Weights must not change inside the block (none of zhen's code does so). One session at a time
    per model: a second one, from another thread, waits; from the same thread, it raises. Within a session, threads
    may decode batches at once ([`FastDecoder.map`]). Other forwards of the model while it is open (the caller's
    inside the block, another thread's) attend and mask as the model's own attention implementation does, through
    the session's copies of the projections ([`session_attention`]), or with gradients enabled (a training step) the
    model's own; saving, reloading, moving, resizing, copying and `train()` from another thread wait for the session
    to close ([`wait_for_sessions`]).

    Args:
        model ([`ZhenForConditionalGeneration`]): in eval mode, any dtype.
        weights (`str`, *optional*): the session copies the float32 projections of encoder and decoder and the LM
            head multiply by: `"bf16"` (bfloat16 copies: on a CPU with native bf16 a bf16 product is several times
            faster, with the precision of bf16 weights; the encoder runs under bf16 autocast), `"packed"` (float32
            weights packed once into oneDNN's GEMM layout, or MKL's for each few-row product where oneDNN cannot:
            float32 products, faster than plain ones), `"plain"` (the model's own), or `"auto"`, by default: bf16 where
            `zhen.hardware` says the CPU computes bf16 natively or on a CUDA GPU with bf16, else packed where oneDNN
            or MKL is available. Making the copies of a transformer-base model takes tens of milliseconds, more
            than translating a short text: they are kept for the model's later sessions while its weights stay as they
            are ([`session_copy`]).
        cuda_graphs (`bool`, *optional*): run each decoder step as a replayed CUDA graph ([`StaticDecoderSteps`]).
            Defaults to `True` for a model on a CUDA GPU whose positions allow it ([`cuda_graphs_work`]). `True` with
            a model on the CPU runs the same static-shape steps eagerly (how the CPU tests check them).
        inline_layers (`bool`, *optional*): run each decoding step's layers as one program,
            [`zhen.layer_steps.DecoderLayerSteps`]: the same operations as the layers' forwards, without their module
            calls, where the model allows it ([`inline_layers_work`]) and its session modules are of kinds the
            program knows. Defaults to `True` on a CPU, where a step of a few rows costs what issuing its operations
            costs; a GPU runs the layers' own forwards (or replays them as CUDA graphs).
        script_layers (`bool`, *optional*): compile that program (and the encoder's) with TorchScript, whose
            interpreter runs a step's layers in one call without Python's GIL, so that threads decoding at once
            ([`FastDecoder.map`]) run side by side; `False` runs it in Python. By default it compiles once the
            model's calls have decoded for `SCRIPT_AFTER_SECONDS` in Python, or at once for batches decoded side by
            side, more than `SCRIPT_AT_ONCE_BATCHES_PER_STREAM` a stream ([`scripting_due`]): compiling takes longer
            than translating a few texts.
        keep_copies (`bool`, *optional*, defaults to `True`): keep the session's copies of the weights for the
            model's next session (which uses those whose weights have not changed: [`session_copy`]), at the memory
            they take: half the float32 projections' in bf16, as much again packed in float32. `False` keeps none,
            and drops those kept before (`zhen.translate` does so for a model in training mode, whose weights will
            change).
        screen_argmax (`bool`, *optional*): in a float32 or bf16 session (`weights="packed"`, `"bf16"`), greedy
            search finds each next token by screening the vocabulary with an int8 product and computing float32
            logits only for the tokens that can still be the largest ([`zhen.screened_argmax.ScreenedArgmax`]): the
            full float32 product's argmax, at a fraction of its cost. On a CPU only; by default in a float32 session,
            and in a bf16 one where int8 products outrun bf16 ones (`zhen.hardware`'s `int8_outruns_bf16`) and the LM
            head is large (`zhen.screened_argmax.BF16_MIN_WEIGHT`: transformer-base's 32k x 512), where PyTorch
            multiplies int8 matrices.
        drafts (`bool`, *optional*): greedy search of up to `MAX_DRAFTED_SENTENCES` sentences (texts a call), in
            step, and beam search of one let an int8 copy of the decoder draft the next tokens, or a tree of the next
            beams, and check them with the model's own in one pass ([`zhen.draft_decoding.drafted_greedy_search`],
            [`zhen.draft_decoding.drafted_beam_search`]): the search's own tokens, in fewer passes over the weights
            (several sentences keep the drafted tokens all of them confirm). The copy is made once and kept while the
            weights stay as they are. By default on a CPU with FBGEMM, for a decoder large enough that a step of one
            sentence reads its weights at the memory's rate ([`zhen.draft_decoding.drafting_pays`]): greedy search in a
            float32 or bf16 session, beam search in a float32 session, from the model's `DRAFT_AFTER`-th such call on
            (making the copy takes what tens of drafted calls save); `True` drafts from the first call; CPU only. A bf16
            session never drafts beams: its step of a few beams costs about what the copy's steps of as many rows do,
            and a tree of them has too many rows to multiply its small weights in float32 as a step does
            (`zhen.layer_steps.few_rows`), so it would not give the search's own beams.
        pool_tails (`bool`, *optional*, defaults to `True`): greedy search over many batches ([`generate_batches`])
            decodes the tails of a stream's batches together, a tail being a batch's last few running rows
            ([`zhen.pooled_tails`]); `False` decodes each batch to its end.
    """

    def __init__(self, model, weights: str = "auto", cuda_graphs: bool | None = None,
                 inline_layers: bool | None = None, script_layers: bool | None = None, keep_copies: bool = True,
                 screen_argmax: bool | None = None, drafts: bool | None = None, pool_tails: bool = True):  # fmt: skip
        if weights not in WEIGHTS:
            raise ValueError(f"weights={weights!r} is not one of {WEIGHTS}.")
        self.model = model
        self.weights = session_weights(model) if weights == "auto" else weights
        if weights == "auto" and emulated_bf16_weights(model):
            logger.warning_once(
                "This model's weights are bfloat16 and this CPU has no bf16 instructions (zhen-env): its products run "
                "here several times slower than a float32 session's (zhen.translate and the pipeline decode a float32 "
                "copy). Load it with dtype=torch.float32 (or call model.float()) to decode faster in a session of "
                "your own."
            )
        device_type = model.device.type
        on_cpu, on_gpu = device_type == "cpu", device_type == "cuda"
        self.cuda_graphs = on_gpu and cuda_graphs_work(model) if cuda_graphs is None else cuda_graphs
        if self.cuda_graphs and not cuda_graphs_work(model):
            raise ValueError(
                f"cuda_graphs=True: the step of a model with {model.config.rope_parameters['rope_type']} RoPE cannot "
                "be captured (its frequencies follow the longest position, read on the host); use cuda_graphs=False."
            )
        self.attends_by_row_sums = on_cpu and current_hardware().fbgemm == "on"
        self.inline_layers = on_cpu if inline_layers is None else inline_layers
        self.script_layers = script_layers
        self.keep_copies = keep_copies
        self.screen_argmax = screen_argmax if on_cpu else False  # None: where PyTorch can ([`screens_argmax`])
        if drafts and not on_cpu:
            raise ValueError("drafts=True: the int8 draft runs on the CPU only; use drafts=False on a GPU.")
        if drafts and model.get_output_embeddings().weight.dtype != torch.float32:
            raise ValueError(
                "drafts=True: the int8 draft is made from float32 weights; use model.float() or drafts=False."
            )
        self.drafts_at_once = drafts is True  # asked for: from the first call (by default after `DRAFT_AFTER`)
        self.drafts, self.drafts_beams = drafts, drafts and self.weights != "bf16"
        if drafts is None:
            pays = on_cpu and current_hardware().fbgemm == "on" and drafting_pays(self.decoder_weights)
            self.drafts = pays and self.weights in ("packed", "bf16")
            self.drafts_beams = pays and self.weights == "packed"
        self.draft_session: FastDecoder | None = None
        self.programs: dict = {}  # the session's layer programs: the decoder's by whether scripted, the encoder's
        self.programs_lock = threading.Lock()
        self.lock = _lock_of(model)
        self.swapped: list[tuple[nn.Module, str, nn.Module]] = []
        self.onednn_rows = sys.maxsize  # the fewest rows one of its int8 products sends to oneDNN ([`Int8Linear`])
        self.parent_modes: list[bool] = []  # each swap's parent's `training` when the session swapped
        self.workspaces: dict[int, Workspace] = {}  # per thread decoding in the session
        self.pool_tails = pool_tails
        self.tail_pools: dict[int, TailPool] = {}  # per thread, as the workspaces

    def __enter__(self) -> "FastDecoder":
        if FastDecoder.open_in_this_thread(self.model) is not None:  # its lock is this thread's: waiting never ends
            raise RuntimeError(
                "A FastDecoder session for this model is already open in this thread; decode in it (its `generate`, "
                "or zhen.translate, which uses it) or close it before opening another."
            )
        self.lock.acquire()
        try:
            wait_for_sessions(self.model)
            config = self.model.config
            self.attn_implementation = config._attn_implementation
            _OWN_IMPLEMENTATIONS[id(config)] = self.attn_implementation
            config._attn_implementation_internal = DECODING_ATTENTION
            if self.model.device.type == "cpu":
                hardware.keep_freed_memory()
            self.swap_in_session_modules()
        except BaseException:
            self.__exit__()
            raise
        _OPEN[self.model] = self, threading.get_ident()
        return self

    def __exit__(self, *exc_info):
        _OPEN.pop(self.model, None)
        if self.draft_session is not None:
            self.draft_session.__exit__()
            self.draft_session = None
        for (parent, name, original), mode in zip(reversed(self.swapped), reversed(self.parent_modes)):
            _put(parent, name, original)
            if parent.training != mode:  # `train()` / `eval()` reached the session's module in its place
                original.train(parent.training)
        self.swapped.clear()
        self.parent_modes.clear()
        self.workspaces.clear()
        self.tail_pools.clear()
        if not self.keep_copies:  # the kept programs hold the session's copies: let them go with them
            release_program(self.model)
            release_program(self.model.get_encoder())
        self.programs.clear()
        if hasattr(self, "attn_implementation"):
            self.model.config._attn_implementation_internal = self.attn_implementation
            _OWN_IMPLEMENTATIONS.pop(id(self.model.config), None)
        self.lock.release()

    @functools.cached_property
    def decoder_weights(self) -> int:
        """The number of weights in the linears of the model's decoder ([`decoder_weights`]), counted once."""
        return decoder_weights(self.model)

    @property
    def workspace(self) -> "Workspace":
        """The memory this thread's decoding keeps from batch to batch in this session."""
        return self.workspaces.setdefault(threading.get_ident(), Workspace())

    @staticmethod
    def open_in_this_thread(model) -> "FastDecoder | None":
        """The session this thread has open for `model`, if any: `zhen.translate` decodes in it rather than open a
        second one (which would wait for this one to end)."""
        session, thread = _OPEN.get(model, (None, None))
        return session if thread == threading.get_ident() else None

    def map(self, function: Callable, batches: Iterable, streams: int = 1) -> Iterator:
        """`function(batch)` for each of `batches`, in order, where `function` decodes with this session
        (`self.generate`), in `streams` threads, no more than there are batches ([`in_streams`]). Each thread keeps its
        own memory (its own caches); outputs are those of one stream with the same number of threads."""
        self.script_if_side_by_side(batches, streams)
        return in_streams(function, batches, streams)

    def swap_in_session_modules(self):
        """Swap in the session's lean modules ([`swap_in_lean_modules`]) and its copies of the weights
        ([`swap_in_session_linears`]); or, where the model's last session kept its swaps ([`SessionPlan`]) and nothing
        they were chosen from has changed, the same swaps again without choosing them."""
        modules = submodules(self.model)
        with _COPIES_LOCK:
            plan = _PLANS.pop(self.model, None)
        if self.keep_copies and plan is not None and plan.holds(self, modules):
            plan.swap_in(self)
            self.multiply_few_rows_in_float32()  # by the rule of the session that uses them
        else:
            self.swap_in_lean_modules(modules)
            if self.weights != "plain":
                self.swap_in_session_linears()
            plan = SessionPlan(self, modules) if self.keep_copies else None
        if plan is not None:
            with _COPIES_LOCK:
                _PLANS[self.model] = plan

    def multiply_few_rows_in_float32(self):
        """Let the bf16 copies this session swapped in multiply few rows by their float32 weights where the model's
        decoder is small: its float32 weights stay in the caches from step to step ([`Bf16Linear`]; where MKL runs
        its own code for the CPU, `zhen.layer_steps.few_rows`)."""
        if self.weights != "bf16":
            return
        small = self.decoder_weights <= layer_steps.BF16_FLOAT32_DECODER
        for parent, name, _ in self.swapped:
            copy = parent._modules[name]
            for linear in (copy.fc1, copy.fc2) if isinstance(copy, Bf16ReluMLP) else (copy,):
                if isinstance(linear, Bf16Linear):
                    linear.multiply_few_rows_in_float32(small)

    def plan_options(self) -> tuple:
        """What, besides the model, decides this session's swaps: its weights, its LM head's kind, the machine."""
        return self.weights, self.head_class(), current_hardware()

    def swap_in_lean_modules(self, modules: list[nn.Module] | None = None):
        """Swap out, for the session, what only costs a decoding step calls: dropout in eval mode (an identity, yet
        a call into PyTorch), the float32 cast of an int8 product's float32 output ([`Int8Linear`]) and an int8 ReLU
        MLP's separate ReLU ([`Int8ReluMLP`]). Each PyTorch call lets go of the GIL and takes it back, which threads
        decoding at once ([`FastDecoder.map`]) contend for. A model's next session swaps in the same replacements
        where they still compute what they replace (the same modules for the same modules: the session's layer
        steps are kept too, [`zhen.layer_steps.kept_steps`])."""
        with _COPIES_LOCK:
            kept = _LEAN.get(self.model, {})
        made, replaced = {}, set()
        for parent in submodules(self.model) if modules is None else modules:
            if id(parent) in replaced:
                continue
            for name, child in list(parent._modules.items()):
                if type(child) is nn.Dropout and not child.training:
                    replacement = INERT
                elif (lean_int8 := lean_int8_class(child)) is not None:
                    replacement = kept.get(child)
                    if replacement is None or not replacement.made_from(child):
                        replacement = lean_int8(child)
                    made[child] = replacement
                    replaced.add(id(child))
                else:
                    continue
                self.swap(parent, name, child, replacement)
        with _COPIES_LOCK:
            _LEAN[self.model] = made

    def swap(self, parent: nn.Module, name: str, original: nn.Module, replacement: nn.Module):
        """Put `replacement` in `original`'s place (`parent.name`) until the session closes."""
        self.swapped.append((parent, name, original))
        self.parent_modes.append(parent.training)
        self.onednn_rows = min(self.onednn_rows, getattr(replacement, "onednn_rows", sys.maxsize))
        if replacement.training != original.training:  # a new session copy: in training mode, as modules are made
            replacement.train(original.training)
        _put(parent, name, replacement)

    @functools.cached_property
    def screens_argmax(self) -> bool:
        """Whether this session's LM head screens greedy search's argmax: `screen_argmax`; by default in a float32
        session, and in a bf16 one where int8 products outrun bf16 ones and the head has `BF16_MIN_WEIGHT` weights or
        more, where PyTorch multiplies int8 matrices on the CPU (probed once per process, where a session would
        screen) and fast (`torch._int_mm`'s kernels, or FBGEMM's: `screen_pays`)."""
        if self.screen_argmax is not None:
            return self.screen_argmax
        if self.weights == "bf16":
            head = self.model.get_output_embeddings().weight
            machine = current_hardware()
            return machine.int8_outruns_bf16() and head.numel() >= BF16_MIN_WEIGHT and screen_pays(machine)
        return screen_pays(current_hardware())

    def head_class(self) -> type | None:
        """What the session swaps in for the LM head: a float32 or bf16 copy, screened where [`screens_argmax`];
        None where the session keeps the model's weights (`"plain"`)."""
        if self.weights == "plain":
            return None
        if self.weights == "bf16":
            return ScreenedBf16Head if self.screens_argmax else Bf16Linear
        return ScreenedHead if self.screens_argmax else PackedLinear

    def swap_in_session_linears(self):
        session_class = Bf16Linear if self.weights == "bf16" else PackedLinear
        head_class = self.head_class()
        stacks = [self.model.get_decoder(), self.model.get_encoder()]  # the encoder's products too (under autocast)
        sites = []  # (parent, name, module, what makes its session copy)
        for parent in [self.model, *(module for stack in stacks for module in submodules(stack))]:
            if self.weights == "bf16" and is_relu_mlp(parent):
                continue  # replaced whole, below
            for name, child in parent._modules.items():
                if self.weights == "bf16" and is_relu_mlp(child):
                    sites.append((parent, name, child, Bf16ReluMLP))
                elif type(child) is nn.Linear and parent is not self.model:
                    sites.append((parent, name, child, session_class))
                elif type(child) is nn.Linear and name == "lm_head":
                    sites.append((parent, name, child, head_class))
        with _COPIES_LOCK:
            kept = _COPIES.pop(self.model, {})
        made = {} if self.keep_copies else None
        machine = current_hardware()
        for parent, name, module, make in sites:
            self.swap(parent, name, module, session_copy(module, make, kept, made, machine))
        self.multiply_few_rows_in_float32()
        if made is not None:  # a model keeps the copies of its last session, no others
            with _COPIES_LOCK:
                _COPIES[self.model] = made

    @torch.inference_mode()
    def generate(
        self,
        input_ids: torch.LongTensor,
        attention_mask: torch.Tensor | None = None,
        forced_bos_token_id: int | None = None,
        num_beams: int | None = None,
        max_new_tokens: int | None = None,
        min_new_tokens: int | None = None,
        length_penalty: float | None = None,
        early_stopping: bool | str | None = None,
        num_return_sequences: int = 1,
        tail_pool: "TailPool | None" = None,
        **generate_kwargs,
    ) -> torch.LongTensor:
        """Greedy search (`num_beams=1`) or beam search, like `model.generate(**same_arguments)`.

        Args:
            input_ids, attention_mask: the tokenized source, `(batch, source_length)`.
            forced_bos_token_id: the target language code, forced as the first generated token.
            num_beams: 1 for greedy search.
            max_new_tokens / min_new_tokens: bounds on the number of generated tokens (the language code included, as
                in `generate`); `</s>` is suppressed until `min_new_tokens` have been produced.
            length_penalty, early_stopping: beam search's finished-hypothesis score `sum log p / length**length_penalty`
                and its stopping rule (`True`, `False` or `"never"`), with Transformers' semantics and defaults.
            num_return_sequences: best hypotheses returned per source sentence (beam search).
            tail_pool: where greedy search parks the batch's tail ([`zhen.pooled_tails.TailPool`]): the rows still
                running are written by the pool's `finish`, which also cuts the output to its length
                ([`generate_batches`] does both).
            generate_kwargs: other `model.generate` options, accepted only at their neutral values (`do_sample=False`,
                `use_cache=True`, ...; `max_length=n` is read as `max_new_tokens=n - 1`). Anything else raises
                `NotImplementedError`; check first with [`unsupported_options`].

        Returns:
            `torch.LongTensor` of shape `(batch * num_return_sequences, 1 + generated_length)`: the decoder start
            token, then the generated tokens; finished rows are padded as `model.generate` pads them.
        """
        model, config = self.model, self.model.generation_config
        unsupported = unsupported_options(model, **generate_kwargs)
        if unsupported:
            raise NotImplementedError(f"fast generation does not implement {unsupported}; use model.generate")
        if max_new_tokens is None and generate_kwargs.get("max_length") is not None:
            max_new_tokens = generate_kwargs["max_length"] - 1
        num_beams = num_beams or config.num_beams or 1
        if max_new_tokens is None:  # as `generate`: `max_length` (default 20) new tokens, within the position table
            longest = min((config.max_length or 20) + 1, position_table(model.config))
            max_new_tokens = config.max_new_tokens or longest - 1
        eos = config.eos_token_id[0] if isinstance(config.eos_token_id, (list, tuple)) else config.eos_token_id
        options = dict(
            eos=eos,
            pad=config.pad_token_id,
            start=config.decoder_start_token_id,
            forced_bos=config.forced_bos_token_id if forced_bos_token_id is None else forced_bos_token_id,
            forced_eos=config.forced_eos_token_id,
            min_new_tokens=min_new_tokens if min_new_tokens is not None else (config.min_new_tokens or 0),
            max_length=1 + max_new_tokens,
        )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        one_text = len(input_ids) == 1
        # A step of one row multiplies its few keys and values faster as matmuls than as row sums.
        DECODING.row_sums = self.attends_by_row_sums and not (one_text and num_beams == 1)
        if num_beams > 1:
            if length_penalty is None:
                length_penalty = 1.0 if config.length_penalty is None else config.length_penalty
            if early_stopping is None:
                early_stopping = config.early_stopping or False
        if not 1 <= num_return_sequences <= num_beams:
            raise ValueError(
                f"num_return_sequences={num_return_sequences} must be between 1 and num_beams={num_beams}: "
                "greedy search (num_beams=1) returns one sequence a text, beam search up to num_beams."
            )
        drafts = self.drafts if num_beams == 1 else self.drafts_beams
        few = len(input_ids) <= (draft_decoding.MAX_DRAFTED_SENTENCES if num_beams == 1 else 1)
        drafted = drafts and few and not self.cuda_graphs and (self.drafts_at_once or draft_due(self.model))
        script = self.scripts()
        start = time.perf_counter()
        steps = self.decoder_steps(input_ids, attention_mask, num_beams, 1 + max_new_tokens, script_layers=script,
                                   drafted=drafted)  # fmt: skip
        if drafted and num_beams == 1:
            sequences = drafted_greedy_search(steps, steps.draft, draft_length=self.draft_session.model.draft_length,
                                              batch=len(input_ids), **options)  # fmt: skip
        elif num_beams == 1:
            pool = None if self.cuda_graphs else tail_pool
            sequences = greedy_search(steps, len(input_ids), **options, pool=pool)
        elif drafted:
            draft_length = self.draft_session.model.beam_draft_length
            sequences = drafted_beam_search(steps, steps.draft, num_beams, length_penalty, early_stopping,
                                            num_return_sequences, draft_length=draft_length, **options)  # fmt: skip
        else:
            sequences = beam_search(steps, len(input_ids), num_beams, length_penalty, early_stopping,
                                    num_return_sequences, **options)  # fmt: skip
        if not script:
            with _SCRIPTING_LOCK:  # streams side by side add theirs at once
                _SCRIPTING[self.model] = _SCRIPTING.get(self.model, 0.0) + time.perf_counter() - start
        return sequences

    def generate_batches(self, batches: Iterable[dict], streams: int = 1) -> Iterator[torch.LongTensor]:
        """`self.generate(**batch)` for each of `batches` (dicts of its arguments), in order, in `streams` threads
        ([`zhen.pooled_tails.generate_batches`]): greedy search decodes the tails of several batches of a stream
        together."""
        self.script_if_side_by_side(batches, streams)
        return generate_batches(self, batches, streams)

    def script_if_side_by_side(self, batches: Iterable, streams: int) -> None:
        """Compile the model's layers' programs from now on where `streams` streams decode more than
        `SCRIPT_AT_ONCE_BATCHES_PER_STREAM` batches each side by side: compiled programs let go of the GIL."""
        few = isinstance(batches, Sized) and len(batches) <= SCRIPT_AT_ONCE_BATCHES_PER_STREAM * streams
        if streams > 1 and not few:
            _SCRIPTING[self.model] = math.inf

    def tail_pool(self) -> "TailPool | None":
        """This thread's pool for the tails of its greedy batches in this session, empty, its memory kept from call to
        call ([`zhen.pooled_tails.TailPool`]); None where the session does not pool them (`pool_tails`)."""
        if not self.pool_tails:
            return None
        pool = self.tail_pools.get(threading.get_ident())
        if pool is None:
            config = self.model.generation_config
            eos = config.eos_token_id[0] if isinstance(config.eos_token_id, (list, tuple)) else config.eos_token_id
            pad = eos if config.pad_token_id is None else config.pad_token_id
            pool = TailPool(self.model, lambda rows: self.layer_steps(self.scripts(), rows), eos, pad,
                                         config.forced_eos_token_id)  # fmt: skip
            self.tail_pools[threading.get_ident()] = pool
        pool.clear()
        return pool

    def decoder_steps(self, input_ids, attention_mask, num_beams: int, max_length: int,
                      inline_layers: bool | None = None, script_layers: bool | None = None,
                      workspace: "Workspace | None" = None, drafted: bool = False):  # fmt: skip
        """The batch encoded and its decoder steps as this session runs them. By default the session's choice of
        `inline_layers` and `script_layers` and this thread's kept memory (`workspace`). With `drafted`, the steps'
        `draft` are the int8 draft's over the same source ([`FastDecoder.draft_steps`])."""
        device_type = input_ids.device.type
        in_bf16 = self.weights == "bf16" and not torch.is_autocast_enabled(device_type)
        inline_layers = self.inline_layers if inline_layers is None else inline_layers
        script_layers = self.scripts() if script_layers is None else script_layers
        # Under the caller's autocast the session's products compute as autocast has them: the layers' forwards run.
        inline_layers = inline_layers and inline_layers_work(self.model) and not torch.is_autocast_enabled(device_type)
        layer_steps = self.layer_steps(script_layers, len(input_ids) * num_beams) if inline_layers else None
        # In bf16 the encoder (but one text's, whose layers' program multiplies in bf16 itself), and the source's keys
        # and values for cross-attention, run under autocast; the decoder's norms, attention and cache stay float32,
        # but for the source's keys and values where row sums multiply them ([`source_dtype`]).
        encoder_states = self.encode(input_ids, attention_mask, in_bf16, script_layers)
        with torch.autocast(device_type, torch.bfloat16, enabled=in_bf16):
            attention_dtype = source_dtype() if in_bf16 else None
            arguments = (self.model, encoder_states, attention_mask, num_beams, max_length, attention_dtype,
                         workspace or self.workspace, layer_steps)  # fmt: skip
            if self.cuda_graphs:
                return StaticDecoderSteps(*arguments, cuda_graph=device_type == "cuda")
            steps = DecoderSteps(*arguments)
        if drafted:  # out of autocast: TorchScript would compile its bf16 casts into the draft's float32 program
            steps.draft = self.draft_steps(steps, encoder_states, attention_mask, max_length, num_beams, script_layers)
        return steps

    def draft_steps(self, target: "DecoderSteps", encoder_states: torch.Tensor, attention_mask: torch.Tensor,
                    max_length: int, num_beams: int = 1, script_layers: bool = True) -> "DecoderSteps":  # fmt: skip
        """The decoder steps of the model's int8 draft ([`zhen.draft_decoding.int8_draft`]) over the source of
        `target` (the model's own steps), whose keys and values it attends to, in a session of the draft opened with
        this one's first drafted call and closed with it; its layers' program compiled with `script_layers`, as the
        model's are."""
        with self.programs_lock:
            if self.draft_session is None:
                originals = {id(parent._modules[name]): original for parent, name, original in self.swapped}
                draft = int8_draft(self.model, originals)
                self.draft_session = FastDecoder(draft, keep_copies=self.keep_copies, drafts=False).__enter__()
        draft = self.draft_session
        layer_steps = draft.layer_steps(script_layers) if inline_layers_work(draft.model) else None
        sources = [(layer.keys, layer.values) for layer in target.cache.layers]
        # The draft's products take float32 rows, whatever the session's encoder gave (bf16 under its autocast).
        return DecoderSteps(draft.model, encoder_states, attention_mask, num_beams, max_length, torch.float32,
                            draft.workspace, layer_steps, sources)  # fmt: skip

    def scripts(self) -> bool:
        """Whether this session's calls compile the layers' programs now: `script_layers`, or by default
        [`scripting_due`]."""
        return self.script_layers if self.script_layers is not None else scripting_due(self.model)

    def layer_steps(self, script: bool, rows: int = 1) -> "DecoderLayerSteps | None":
        """The decoder's layers as one program over this session's modules ([`zhen.layer_steps.decoder_layer_steps`]),
        compiled by TorchScript with `script` (where it can be), for steps of up to `rows` rows; None where the
        program does not know one of them (the layers' forwards run). Made once per session, and once more for the
        first steps with enough rows for more of oneDNN's int8 products ([`onednn_ready`])."""
        reached = self.onednn_ready(rows)
        with self.programs_lock:
            if (script, reached) not in self.programs:
                decoder = self.model.get_decoder()
                self.programs[script, reached] = kept_steps(decoder, self.model, script, variant=reached)
            return self.programs[script, reached]

    def onednn_ready(self, rows: int) -> int:
        """The most rows from which one of this session's int8 products multiplies by oneDNN's packing
        ([`zhen.quantization.RowDispatchedLinear`]) that `rows` reaches (0: none), each such packing made now, so that
        a program built next holds them. Made at first need: a session of a few rows a step never pays for them."""
        if rows < self.onednn_rows:
            return 0
        reached = 0
        for parent, name, _ in self.swapped:
            replacement = parent._modules[name]
            products = [replacement.fc1, replacement.fc2] if isinstance(replacement, Int8ReluMLP) else [replacement]
            for product in products:
                if isinstance(product, Int8Linear) and product.onednn_rows <= rows:
                    product.onednn_packing()
                    reached = max(reached, product.onednn_rows)
        return reached

    def encode(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor, in_bf16: bool = False,
               script_layers: bool | None = None) -> torch.Tensor:  # fmt: skip
        """The encoder's output `(batch, source_length, d_model)`: sentences without padding through the layers'
        program ([`encoder_steps`], compiled with `script_layers`, by default as the session [`scripts`]; float32
        out of a bf16 session's products too), others through the layers' forwards, under bf16 autocast with
        `in_bf16`; on a CPU computed on the real tokens alone, packed into one row ([`zhen.packing.pack_sources`]),
        its attention per group of similar-length sentences: there through the compiled program where the session
        compiles it (out of bf16 sessions), the same computation."""
        encoder = self.model.get_encoder()
        unpadded = bool(attention_mask.all())
        steps = self.encoder_steps(input_ids.device, script_layers, input_ids.numel()) if unpadded else None
        if steps is not None:
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None]
            hidden_states, position_embeddings = encoder.embed(input_ids, None, positions)
            cos, sin = position_embeddings or (None, None)
            with interpreted(steps):
                return steps(hidden_states, cos, sin)
        packs = not unpadded and hardware.packing_pays(input_ids.device)
        packed = pack_sources(input_ids, attention_mask) if packs else None
        script_layers = self.scripts() if script_layers is None else script_layers
        if packs and script_layers and not in_bf16:
            steps = self.encoder_steps(input_ids.device, True, packed["input_ids"].numel())
        if steps is not None:
            hidden_states, position_embeddings = encoder.embed(packed["input_ids"], None, packed["position_ids"])
            cos, sin = position_embeddings or (None, None)
            groups = attention_groups(packed, encoder.config.encoder_attention_heads)
            with interpreted(steps):
                return unpack(steps(hidden_states, cos, sin, groups), attention_mask)
        with torch.autocast(input_ids.device.type, torch.bfloat16, enabled=in_bf16):
            if not packs:
                with self.encoding_with(self.attn_implementation):
                    return encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            with self.encoding_with(PACKED_ATTENTION):
                return unpack(encoder(**packed).last_hidden_state, attention_mask)

    def encoder_steps(self, device: torch.device, script_layers: bool | None = None,
                      rows: int = 1) -> "EncoderSteps | None":  # fmt: skip
        """The encoder's layers as one program over this session's modules ([`zhen.layer_steps.EncoderSteps`]) for
        sentences without padding (one text a call) of up to `rows` tokens, compiled with `script_layers` (by default
        as the session [`scripts`]); None where the layers' forwards run (as for the decoder: [`inline_layers_work`];
        on a GPU; under autocast; attention other than SDPA or eager)."""
        encoder = self.model.get_encoder()
        if (
            device.type != "cpu"
            or not self.inline_layers
            or torch.is_autocast_enabled(device.type)
            or self.attn_implementation not in ("sdpa", "eager")
            or not inline_layers_work(self.model, encoder)
        ):
            return None
        sdpa = self.attn_implementation == "sdpa"
        script_layers = self.scripts() if script_layers is None else script_layers
        key = ("encoder", script_layers, sdpa, self.onednn_ready(rows))
        with self.programs_lock:
            if key not in self.programs:
                build = functools.partial(encoder_steps, sdpa=sdpa)
                self.programs[key] = kept_steps(encoder, encoder, script_layers, build, variant=key[2:])
            return self.programs[key]

    @contextlib.contextmanager
    def encoding_with(self, implementation: str):
        """The encoder, in this thread, attends and builds its mask as `implementation` does."""
        if implementation in ALL_ATTENTION_FUNCTIONS:
            _ENCODING.attention = ALL_ATTENTION_FUNCTIONS[implementation]
        else:  # "eager": the model file's own function (Hub custom code has its own copy)
            _ENCODING.attention = modeling_function(self.model, "eager_attention_forward")
        _ENCODING.implementation = implementation
        try:
            yield
        finally:
            _ENCODING.attention = _ENCODING.implementation = None


def attention_groups(packed: dict, heads: int) -> Groups:
    """The attention groups of a packed source batch ([`zhen.packing.pack_sources`]) as the encoder's program takes
    them ([`zhen.layer_steps.attend_groups`])."""
    side = packed["packed_layout"].source
    return side.gather(heads), side.unpad(heads), [(g.rows, g.width) for g in side], [g.key_mask for g in side]


def scripting_due(model) -> bool:
    """Whether a session of `model` compiles its layers' programs with TorchScript by default: once the model's calls
    have decoded for `SCRIPT_AFTER_SECONDS` without them, or decoded more than `SCRIPT_AT_ONCE_BATCHES_PER_STREAM`
    batches a stream side by side ([`FastDecoder.generate_batches`], [`FastDecoder.map`])."""
    return _SCRIPTING.get(model, 0.0) >= SCRIPT_AFTER_SECONDS


def modeling_function(model, name: str) -> Callable:
    """The function `name` of the modeling file `model` comes from: zhen's, or a checkpoint's Hub custom code copy,
    also for a subclass defined elsewhere (the first class of its MRO whose module has it)."""
    for cls in type(model).__mro__:
        function = getattr(sys.modules.get(cls.__module__), name, None)
        if function is not None:
            return function
    raise AttributeError(f"No modeling file among the modules of {type(model).__name__}'s classes defines {name}.")


# What the encoder that this thread runs inside a session attends with: `attention` (a function) and `implementation`
# (its name), or None while it decodes. Per thread: the threads of a session share the model's config.
_ENCODING = threading.local()


_LOCKS: "weakref.WeakKeyDictionary[nn.Module, threading.RLock]" = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()
# The session open for each model, and the thread that opened it ([`FastDecoder.open_in_this_thread`]).
# The attention implementation of each open session's model, by `id` of its config (`PretrainedConfig` is not
# hashable): what forwards outside the session's own steps attend with ([`session_attention`]).
_OWN_IMPLEMENTATIONS: dict[int, str] = {}
_OPEN: "weakref.WeakKeyDictionary[nn.Module, tuple[FastDecoder, int]]" = weakref.WeakKeyDictionary()
# Seconds each model's calls have decoded with their layers' programs in Python ([`scripting_due`]).
_SCRIPTING: "weakref.WeakKeyDictionary[nn.Module, float]" = weakref.WeakKeyDictionary()
_SCRIPTING_LOCK = threading.Lock()


def in_streams(function: Callable, batches: Iterable, streams: int) -> Iterator:
    """`function(batch)` for each of `batches`, in order. With `streams > 1`, that many threads take the batches in
    turn, each running PyTorch with `torch.get_num_threads() // streams` threads of its own: on a CPU a decoding step
    is many small products and attention over a few rows, which two threads split with little gain, while two batches
    at once run faster (`benchmarks/bench_generate.py --systems zhen-fast-fp32,zhen-streams-fp32`). Where `batches`
    has a length, there are no more streams than batches: a single batch (a few texts) runs in the caller's thread
    with all of its threads. An error in a stream reaches the caller and cancels the batches not yet started."""
    if isinstance(batches, Sized):
        streams = min(streams, len(batches))
    if streams <= 1:
        yield from map(function, batches)
        return
    threads = max(1, torch.get_num_threads() // streams)

    def decode(batch):
        torch.set_num_threads(threads)  # this worker thread's own setting
        return function(batch)

    pool = ThreadPoolExecutor(streams, thread_name_prefix="zhen-decoding")
    try:
        yield from pool.map(decode, batches)
    finally:
        pool.shutdown(cancel_futures=True)


def wait_for_sessions(model):
    """Make the methods of `model`'s class that read or set a model's modules see the model's own, whatever sessions
    are open: `state_dict()` (`save_pretrained`), `load_state_dict()`, `_apply()` (`to()`, `float()`, `half()`,
    `cuda()`), `resize_token_embeddings()` and the embeddings' setters, `tie_weights()`, `train()` (`eval()`),
    `copy.deepcopy` and pickling. From another thread they wait for the model's open session to close: a checkpoint
    saved then holds the model's own weights, new weights, a new vocabulary, dtype or device reach the modules the
    session swapped out, a copy is of the model's own modules, and a training loop's `model.train()` returns once the
    model's dropout is back in it. Inside a session's `with` block, where waiting would never end, `train(mode)` sets
    the mode, which the session passes on to the modules it swapped out as it closes, and the others raise. Installed
    on the class at a model's first session (on the class: the model's instances stay as they were)."""
    model_class = type(model)
    for name, inside in _WAITING.items():
        own = getattr(model_class, name)
        if not getattr(own, "waits_for_sessions", False):
            setattr(model_class, name, _waiting(own, inside))
    if getattr(model_class, "__deepcopy__", None) is None:
        model_class.__deepcopy__ = _deepcopy_between_sessions
    if model_class.__reduce_ex__ is object.__reduce_ex__:
        model_class.__reduce_ex__ = _reduce_between_sessions
        if getattr(model_class, "__copy__", None) is None:  # `copy.copy` would otherwise reduce through it
            model_class.__copy__ = _shallow_copy


# The methods [`wait_for_sessions`] makes wait, and what they are inside the session's own block: the method itself,
# or what the call does (which the error names).
_WAITING = {
    "state_dict": "model.state_dict() (save_pretrained, a state dict to save)",
    "load_state_dict": "model.load_state_dict()",
    "_apply": "model.to(), .float(), .half(), .cuda() (a change of every tensor of the model)",
    "resize_token_embeddings": "model.resize_token_embeddings()",
    "set_input_embeddings": "model.set_input_embeddings()",
    "set_output_embeddings": "model.set_output_embeddings()",
    "tie_weights": "model.tie_weights()",
    "train": None,
}


def _deepcopy_between_sessions(self, memo: dict):
    """`copy.deepcopy` of a model as Python's default copies it, all of it while no session of the model is open in
    another thread. In the session's own thread only where `memo` gives the copy of each module the session swapped
    in (what [`zhen.draft_decoding.int8_draft`] does: copies of the model's own modules)."""
    session = FastDecoder.open_in_this_thread(self)
    if session is not None and any(id(parent._modules[name]) not in memo for parent, name, _ in session.swapped):
        raise RuntimeError(
            "copy.deepcopy(model) or pickling inside a FastDecoder session of this model, which has swapped in its "
            "own modules: copy it after the `with FastDecoder(model)` block."
        )
    with _lock_of(self):
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        copied.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return copied


def _shallow_copy(self):
    """`copy.copy` of a model as Python's default copies it: a new model object over the same modules."""
    copied = type(self).__new__(type(self))
    copied.__setstate__(self.__getstate__())
    return copied


def _reduce_between_sessions(self, protocol: int):
    """What pickling a model pickles: its modules as they are while no session of the model is open in another thread
    (a copy of the modules, not of the weights, made then: a session opened while the pickler walks the model swaps
    modules in the model, not in the copy)."""
    with _lock_of(self):
        tensors = itertools.chain(self.parameters(), self.buffers())
        modules = copy.deepcopy(self, {id(tensor): tensor for tensor in tensors})
    return object.__reduce_ex__(modules, protocol)


def _waiting(own: Callable, inside: str | None) -> Callable:
    @functools.wraps(own)
    def method(self, *args, **kwargs):
        if FastDecoder.open_in_this_thread(self) is None:
            with _lock_of(self):  # what an open session holds until it has put the model's own modules back
                return own(self, *args, **kwargs)
        if inside is not None:
            raise RuntimeError(
                f"{inside} inside a FastDecoder session of this model, which has swapped in its own modules: call it "
                "after the `with FastDecoder(model)` block."
            )
        return own(self, *args, **kwargs)

    method.waits_for_sessions = True
    return method


def _lock_of(model) -> threading.RLock:
    """The lock a session of `model` holds while open; re-entrant, for a waiting method that calls another
    ([`wait_for_sessions`])."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(model, threading.RLock())


def source_dtype() -> torch.dtype:
    """The dtype a bf16 session's decoder steps hold the source's keys and values in: they are bf16 products, so bf16
    loses nothing of them and halves what each step reads, where FBGEMM's row sums multiply them (this call's
    `DECODING.row_sums`; measured: README, Performance); float32 where batched matmuls do, whose bf16 kernels at a
    step's few rows are slower than float32's."""
    return torch.bfloat16 if getattr(DECODING, "row_sums", False) else torch.float32


def emulated_bf16_weights(model) -> bool:
    """Whether `model`'s LM head holds bf16 weights on a CPU that emulates bf16: its session multiplies them as they
    are, 2.5-6.5x slower than a float32 session there (README, Performance)."""
    weight = getattr(model.get_output_embeddings(), "weight", None)  # an int8 head's is a method
    return isinstance(weight, torch.Tensor) and weight.dtype == torch.bfloat16 and hardware.emulates_bf16(weight.device)


def decoding_model(model, keep: bool = True):
    """The model zhen's front ends (`zhen.translate`, the pipeline) decode `model` through: itself, or where its weights
    are bf16 on a CPU that emulates bf16 ([`emulated_bf16_weights`]), a float32 copy in eval mode, whose session there
    runs several times faster (bf16 values are exact in float32: the same weights in float32 arithmetic). With `keep`,
    the copy is kept for the model's later calls while its weights stay as they are ([`WeightStamp`];
    [`forget_session_copies`] drops it)."""
    if not emulated_bf16_weights(model):
        return model
    weights = weights_of(model)
    with _COPIES_LOCK:
        stamps, twin = _TWINS.get(model, (None, None))
    if twin is None or not WeightStamp.all_match(stamps, weights):
        twin = copy.deepcopy(model).float().eval()  # waits for another thread's session to put its modules back
        if keep:
            with _COPIES_LOCK:
                _TWINS[model] = [WeightStamp(weight) for weight in weights], twin
    twin.generation_config = model.generation_config
    return twin


def session_weights(model) -> str:
    """The session weights [`FastDecoder`] uses by default for `model` on this machine (`zhen.hardware`)."""
    head = model.get_output_embeddings()
    if type(head) is not nn.Linear or head.weight.dtype != torch.float32:
        return "plain"  # an int8 model, bf16 weights: as it is
    machine = current_hardware()
    if head.weight.device.type != "cpu":
        return "bf16" if head.weight.device.type == "cuda" and machine.cuda_bf16 else "plain"
    if machine.cpu_bf16 == "native":
        return "bf16"
    return "plain" if machine.float32_packer() is None else "packed"


def decoding_weights(model) -> str:
    """The session weights a call on `model` decodes with: those of the session this thread has open for it (which the
    call decodes in), else [`session_weights`]'s for the model it decodes through ([`decoding_model`])."""
    session = FastDecoder.open_in_this_thread(model)
    return session.weights if session is not None else session_weights(decoding_model(model))


def default_batch_size(weights: str, texts: int, streams: int, num_beams: int, device="cpu") -> int:
    """Texts per batch for `texts` texts decoded in `streams` streams by a session of `weights` ([`session_weights`])
    on `device`: `DEFAULT_BATCH_SIZE`; for greedy search in a float32 or bf16 session on a CPU (`"packed"`, `"bf16"`),
    whose products of a batch's last few rows cost more than int8's, up to `GREEDY_BATCH_SIZE`, as long as each
    stream still gets `STREAM_BATCHES` batches: the texts are sorted by length, and streams that take turns over
    several batches finish together."""
    if num_beams > 1 or weights not in ("packed", "bf16") or torch.device(device).type != "cpu":
        return hardware.DEFAULT_BATCH_SIZE
    shares = -(-texts // (hardware.STREAM_BATCHES * max(1, streams)))
    return min(hardware.GREEDY_BATCH_SIZE, max(hardware.DEFAULT_BATCH_SIZE, shares))


def session_copy(module: nn.Module, make: Callable[[nn.Module], nn.Module], kept: dict, made: dict | None,
                 machine: "hardware.Hardware | None" = None) -> nn.Module:  # fmt: skip
    """`make(module)`, a session's copy of the weights of `module` (a [`Bf16Linear`], [`Bf16ReluMLP`] or
    [`PackedLinear`]): the one `kept` (a model's copies from its last session) holds for `module` where `module`'s
    weights are as they were ([`WeightStamp`]) and `zhen.hardware` says what it said (`machine`: read once for a
    session's copies; by default now), otherwise made again; recorded in `made` (None: nothing is kept).
    [`forget_session_copies`] drops a model's copies."""
    entry, machine = kept.get(module), machine or current_hardware()
    weights = weights_of(module)
    if entry is None or entry[0] != (make, machine) or not WeightStamp.all_match(entry[1], weights):
        stamps = [WeightStamp(weight) for weight in weights] if made is not None else []
        entry = (make, machine), stamps, make(module)
    if made is not None:
        made[module] = entry
    return entry[2]


def forget_session_copies(model: nn.Module):
    """Drop the session copies kept for `model`'s weights ([`session_copy`]), the layer steps kept with them and its
    float32 copy ([`decoding_model`]):
    for their memory, or after editing a weight in place through `.data`, which PyTorch does not count as a change
    (a sample of each weight's values catches edits of the whole weight)."""
    with _COPIES_LOCK:
        _COPIES.pop(model, None)
        _PLANS.pop(model, None)
        _TWINS.pop(model, None)
    release_program(model)
    release_program(model.get_encoder())


def decoder_weights(model) -> int:
    """The number of weights in the linears of `model`'s decoder."""
    return sum(m.weight.numel() for m in submodules(model.get_decoder()) if type(m) is nn.Linear)


class SessionPlan:
    """A session's swaps, kept for the model's next session with the same options ([`FastDecoder.plan_options`]),
    which makes them again where the model is as it was: the same modules (by identity, walked breadth first) in the
    same modes, the weights of its session copies unchanged ([`WeightStamp`]) and its int8 modules packed as they were:
    walking the model and choosing its swaps module by module is a part of a short text's call worth saving."""

    def __init__(self, session: "FastDecoder", modules: list[nn.Module]):
        model = session.model  # not held: a model's plan must not keep it alive (`_PLANS` is keyed by it)
        self.options = session.plan_options()
        self.modules, self.modes = modules[1:], [module.training for module in modules]
        self.swaps = [(None if parent is model else parent, name, original, parent._modules[name])
                      for parent, name, original in session.swapped]  # fmt: skip
        with _COPIES_LOCK:  # a plain session makes no copies: those kept from another session are not its own
            self.copies = [] if session.weights == "plain" else list(_COPIES.get(model, {}).items())

    def holds(self, session: "FastDecoder", modules: list[nn.Module]) -> bool:
        """Whether the session would make these swaps itself: the same options and the model as it was."""
        return (
            len(modules) == len(self.modules) + 1
            and all(a is b for a, b in zip(modules[1:], self.modules))
            and self.options == session.plan_options()
            and all(module.training == mode for module, mode in zip(modules, self.modes))
            and all(WeightStamp.all_match(stamps, weights_of(module)) for module, (_, stamps, _) in self.copies)
            and all(
                replacement.made_from(original)
                for _, _, original, replacement in self.swaps
                if isinstance(replacement, (Int8Linear, Int8ReluMLP))
            )
        )

    def swap_in(self, session: "FastDecoder"):
        for parent, name, original, replacement in self.swaps:
            session.swap(session.model if parent is None else parent, name, original, replacement)


def _put(parent: nn.Module, name: str, child: nn.Module):
    """`setattr(parent, name, child)` for `name` already a submodule of `parent` (a session's swaps in and back):
    what `nn.Module.__setattr__` does then, less its lookups, a few microseconds each over a model's ~100 swaps."""
    parent._modules[name] = child


# The session copies a model keeps from its last session for the next, by the part they copy: (what made them, stamps,
# copy). The copies refer to the parts, not to the model: they go when the model goes.
_COPIES: "weakref.WeakKeyDictionary[nn.Module, dict[nn.Module, tuple]]" = weakref.WeakKeyDictionary()
_COPIES_LOCK = threading.Lock()
# A model's int8 lean modules from its last session, by the module they replace ([`FastDecoder.swap_in_lean_modules`]).
_LEAN: "weakref.WeakKeyDictionary[nn.Module, dict[nn.Module, nn.Module]]" = weakref.WeakKeyDictionary()
# A model's last session's swaps, for its next session ([`SessionPlan`]).
_PLANS: "weakref.WeakKeyDictionary[nn.Module, SessionPlan]" = weakref.WeakKeyDictionary()
# A bf16 model's float32 copy, kept with its weights' stamps ([`decoding_model`]).
_TWINS: "weakref.WeakKeyDictionary[nn.Module, tuple[list[WeightStamp], nn.Module]]" = weakref.WeakKeyDictionary()


def decoding_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, decoding_cache=None,
                       **kwargs):  # fmt: skip
    """Attention of one new token per row ([`zhen.layer_steps.attend`]: as `eager_attention_forward` computes it,
    softmax in float32). In cross-attention the source's keys and values are held once per sentence, `(batch, heads,
    source, head_dim)`, and the `rows = batch * beams` queries of a sentence attend as one block; in self-attention
    over a [`LineageCache`] (`decoding_cache`), the beams of a sentence are side by side in theirs
    ([`zhen.layer_steps.attend_history`]). Float32 products on the CPU are weighted sums of cache rows
    ([`row_index`]) where the cache's layout allows, else batched matmuls."""
    if key.dim() == 5 and query.shape[2] == 1:
        columns, value_rows = decoding_cache.history(key.shape[2])
        return attend_history(query, key, value, scaling, columns, value_rows), None
    if key.dim() == 5:  # several positions of one sentence ([`DecoderSteps.steps`]): every slot, under a mask
        key, value = key.flatten(2, 3), value.flatten(2, 3)
    queries = len(query) // len(key) * query.shape[2]
    output = attend(query, key, value, attention_mask, scaling, row_index(key.transpose(-1, -2), queries),
                    row_index(value, queries))  # fmt: skip
    return output, None


def session_attention(module, *args, **kwargs):
    """What a model attends with during a [`FastDecoder`] session: its encoder's own attention where this thread is
    encoding ([`FastDecoder.encoding_with`]), [`decoding_attention`] in the session's decoder steps (which pass
    `decoding_cache`), and the model's own implementation in any other forward (another thread's, or the caller's
    inside the session)."""
    encoding = getattr(_ENCODING, "attention", None)
    if encoding is not None:
        return encoding(module, *args, **kwargs)
    if kwargs.get("decoding_cache") is not None:
        return decoding_attention(module, *args, **kwargs)
    implementation = own_implementation(module.config)
    if implementation in ALL_ATTENTION_FUNCTIONS:
        return ALL_ATTENTION_FUNCTIONS[implementation](module, *args, **kwargs)
    return modeling_function(module, "eager_attention_forward")(module, *args, **kwargs)


def session_mask(*args, **kwargs):
    """The mask a forward builds during a session: that of the implementation its attention is
    ([`session_attention`]); the session's own decoder steps build none."""
    implementation = getattr(_ENCODING, "implementation", None) or own_implementation(kwargs.get("config"))
    mask = ALL_MASK_ATTENTION_FUNCTIONS.get(implementation) or ALL_MASK_ATTENTION_FUNCTIONS["eager"]
    return mask(*args, **kwargs)


def own_implementation(config) -> str:
    """The attention implementation a model whose config is `config` had before its session opened."""
    implementation = _OWN_IMPLEMENTATIONS.get(id(config), "eager")
    return "eager" if implementation == DECODING_ATTENTION else implementation


AttentionInterface.register(DECODING_ATTENTION, session_attention)
AttentionMaskInterface.register(DECODING_ATTENTION, session_mask)


__all__ = [
    "FastDecoder",
    "default_batch_size",
    "decoding_attention",
    "decoding_model",
    "forget_session_copies",
    "generate",
    "session_copy",
    "unsupported_options",
]
