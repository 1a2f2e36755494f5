"""The model a run is logged under must be the model that generated its text.

``model.name`` becomes the run's name, its ``mcu.model`` tag and its params; ``model.model_id``
becomes a param and part of the cache key. An override of either that does not change what
runs would log one model's texts under another's name (``model.name=gpt-4o-mini`` on the
SmolLM2 config; ``model.model_id=Qwen/...`` where the packaged GGUF is what loads).
:func:`label_problem` finds such a mislabel before anything runs, by comparing the model
section with the shipped configs of ``conf/model/``, without loading anything.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


def model_configs_dir() -> Path | None:
    """``conf/model`` of this installation (the wheel's copy first, else the repository's)."""
    here = Path(__file__).resolve().parents[1]  # the mcu_exp package
    for candidate in (here / "conf" / "model", here.parents[1] / "conf" / "model"):
        if candidate.is_dir():
            return candidate
    return None


@functools.lru_cache(maxsize=4)
def shipped_models(folder: Path) -> dict[str, dict[str, Any]]:
    """The model configs in ``folder`` by their ``name`` (the file stem when unnamed)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if isinstance(data, dict):
            found[str(data.get("name") or path.stem)] = {**data, "_file": path.name}
    return found


def _get(model: Any, key: str) -> Any:
    return model.get(key) if isinstance(model, dict) else getattr(model, key, None)


def what_runs(model: Any) -> tuple[str, ...]:
    """What decides which weights generate: the backend and, for packaged weights, the package
    and file (``model_id`` then only names them), else the model id and weights file."""
    backend = str(_get(model, "backend"))
    if _get(model, "package"):
        return (backend, str(_get(model, "package")), str(_get(model, "gguf_file")))
    return (backend, str(_get(model, "model_id")), str(_get(model, "gguf_file") or ""))


def _describe(model: Any) -> str:
    if _get(model, "package"):
        return f"{_get(model, 'backend')} {_get(model, 'gguf_file')} of package {_get(model, 'package')}"
    return f"{_get(model, 'backend')} {_get(model, 'model_id')}"


def label_problem(cfg: ModelConfig, key: str = "model", folder: Path | None = None) -> str | None:
    """One line when ``cfg``'s name or model id does not name what would run, else None.

    * ``name`` is a shipped config's name and ``model_id`` differs from it while the packaged
      weights stay those of that config: the override changes the label, not the model.
    * ``name`` is no shipped config's name but what runs is exactly a shipped config's model:
      a relabelled copy of that config (a config of your own under ``conf/model/`` keeps its name).
    """
    folder = folder or model_configs_dir()
    if folder is None:
        return None
    shipped = shipped_models(folder)
    name = str(cfg.name)
    own = shipped.get(name)
    if own is not None:
        if own.get("package") and what_runs(cfg) == what_runs(own) and str(cfg.model_id) != str(own.get("model_id")):
            return (
                f"{key}.model_id={cfg.model_id!r} does not change what runs: {key}.package {own['package']!r} ships "
                f"the weights, so {own['gguf_file']} would run, logged as model_id {cfg.model_id!r}; to load "
                f"{cfg.model_id!r} set {key}.package=null {key}.gguf_file=null too, or pick its config ({key}=<name>)"
            )
        return None
    for other, data in shipped.items():
        if what_runs(data) == what_runs(cfg):
            return (
                f"{key}.name={name!r} does not change what runs: {_describe(cfg)} is conf/model/{data['_file']}'s "
                f"{other!r}, which would run and be logged as {name!r}; drop the override, or pick another model "
                f"with {key}=<config>"
            )
    return None
