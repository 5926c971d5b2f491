# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Whether a weight is as it was when a copy was made from it: what a decoding session's copies of a model's weights
(`zhen.fast_generation.session_copy`) and a model's int8 draft (`zhen.draft_decoding.int8_draft`) are kept by."""

import weakref

import torch
from torch import nn


SAMPLED_VALUES = 32


class WeightStamp:
    """A weight as a copy (a session's, a draft) was made from it: the same tensor (not replaced), on the same memory
    (no new `.data`), changed in place as many times as PyTorch counts (optimizer steps, `load_state_dict`,
    `torch.nn.init` all count), and the same values at a sample of `SAMPLED_VALUES` positions (in-place edits through
    `.data` do not count: a whole-weight edit shows there), read through a view of the weight's memory kept from the
    start."""

    def __init__(self, weight: torch.Tensor):
        self.weight = weakref.ref(weight)
        self.pointer, self.version = weight.data_ptr(), self.version_of(weight)
        self.view = self.sample_of(weight)
        self.sample = self.view.clone()

    def matches(self, weight: torch.Tensor) -> bool:
        same = self.weight() is weight and weight.data_ptr() == self.pointer
        return same and self.version_of(weight) == self.version and torch.equal(self.view, self.sample)

    @staticmethod
    def version_of(weight: torch.Tensor) -> int | None:
        """PyTorch's count of in-place changes; None for a tensor made under `torch.inference_mode()` (a model
        loaded there), which PyTorch does not count (its sample still shows a change)."""
        return None if weight.is_inference() else weight._version

    @staticmethod
    def all_match(stamps: "list[WeightStamp]", weights: list[torch.Tensor]) -> bool:
        return len(stamps) == len(weights) and all(stamp.matches(w) for stamp, w in zip(stamps, weights))

    @staticmethod
    def sample_of(weight: torch.Tensor) -> torch.Tensor:
        flat = weight.detach().reshape(-1)
        return flat[:: max(1, len(flat) // SAMPLED_VALUES)]


def weights_of(module: nn.Module) -> list[torch.Tensor]:
    """`list(module.parameters())` (shared ones repeated), without its generators' cost: read at every session's
    opening."""
    weights = [weight for weight in module._parameters.values() if weight is not None]
    for child in module._modules.values():
        if child is not None:
            weights += weights_of(child)
    return weights
