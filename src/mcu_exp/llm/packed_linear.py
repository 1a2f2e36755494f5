"""Linear layers through oneDNN with weights packed once at load (CPU, float32).

On a CPU, PyTorch runs a float32 ``nn.Linear`` as a BLAS ``sgemm`` (MKL in the x86 wheels). For
the small matrices of a decode step (a few dozen rows × a few hundred columns) that reaches a
fraction of the machine: measured on a 2-core AMD EPYC (AVX-512), SmolLM2-135M's projections ran
at 90–180 GFLOP/s through ``sgemm`` and 250–420 GFLOP/s through oneDNN with the weight reordered
into its blocked layout once (the kernel PyTorch's own compiler uses for frozen CPU models,
``torch.ops.mkldnn._linear_pointwise``). oneDNN's result for a row also does not depend on how
many rows share the call (``sgemm``'s does, below ~16 rows), so a sample's text no longer depends
on which other samples share its batch.

:func:`pack_linears` swaps every ``nn.Linear`` of a loaded float32 CPU model for a
:class:`PackedLinear`; where the op is missing (a PyTorch built without oneDNN, another
architecture) or disagrees with the layer it replaces, the model keeps its layers.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

log = logging.getLogger(__name__)

# Largest relative difference accepted between a packed layer and the layer it replaces on a
# probe input (float32 sums in another order differ by ~1e-6).
_TOLERANCE = 1e-4


class PackedLinear(torch.nn.Module):
    """``y = x Wᵀ + b`` with ``W`` in oneDNN's packed layout (read-only: no gradients)."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        weight = linear.weight.detach()
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight), persistent=False)
        bias = None if linear.bias is None else linear.bias.detach().clone()
        self.register_buffer("bias", bias, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The layer's output for ``x`` ``[..., in_features]``."""
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def available() -> bool:
    """Whether this PyTorch has oneDNN's packed linear kernel."""
    try:
        built = bool(torch.backends.mkldnn.is_available())  # type: ignore[no-untyped-call]
        return built and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    except (AttributeError, RuntimeError):
        return False


def _agrees(linear: torch.nn.Linear, packed: PackedLinear) -> bool:
    """Whether ``packed`` gives ``linear``'s output on a probe (1 and 3 rows, 2-D and 3-D)."""
    gen = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for shape in ((1, linear.in_features), (3, 1, linear.in_features)):
            x = torch.randn(*shape, generator=gen, dtype=linear.weight.dtype)
            want, got = linear(x), packed(x)
            if got.shape != want.shape:
                return False
            error = (got - want).abs().max() / want.abs().max().clamp_min(1e-6)
            if not bool(error <= _TOLERANCE):
                return False
    return True


def pack_linears(model: Any) -> int:
    """Replace the ``nn.Linear`` layers of a float32 CPU ``model`` by :class:`PackedLinear`
    (tied output embeddings get their own packed copy). Returns how many were replaced: 0 when
    the model is not float32 on a CPU, the kernel is missing, or a probe disagrees (then the
    model is left as it was)."""
    if not available():
        return 0
    targets = [
        (name, module)
        for name, module in model.named_modules()
        if type(module) is torch.nn.Linear
        and module.weight.device.type == "cpu"
        and module.weight.dtype == torch.float32
    ]
    if not targets:
        return 0
    replacements: list[tuple[str, PackedLinear]] = []
    probed: set[tuple[int, int, bool]] = set()
    try:
        with torch.inference_mode():
            for name, module in targets:
                packed = PackedLinear(module)
                shape = (module.in_features, module.out_features, module.bias is not None)
                if shape not in probed:  # the kernel depends on the shapes, not on the values
                    if not _agrees(module, packed):
                        log.debug("packed linear disagrees with %s; keeping the model's own layers", name)
                        return 0
                    probed.add(shape)
                replacements.append((name, packed))
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        log.debug("packed linear unavailable (%s); keeping the model's own layers", exc)
        return 0
    for name, packed in replacements:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, packed)
    return len(replacements)
