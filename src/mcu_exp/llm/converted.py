"""GGUF models converted once into a Hugging Face folder in the user cache.

transformers de-quantises a GGUF file on every load (SmolLM2-135M: 22–25 s on a quiet 2-core
machine, paid again by every joblib or SLURM job process). The de-quantised weights written as
safetensors, beside the config, the tokenizer and the chat template, load in well under a
second, and the folder is a plain model folder (what ``from_pretrained`` and vLLM read).
The first load writes it with :func:`convert` (:mod:`mcu_exp.llm.gguf_convert`: a few seconds,
no model built); a GGUF that converter does not handle is loaded by transformers and written
from the loaded model (:func:`write`): the same files either way.

Where: ``<root>/converted/<GGUF stem>-<sha256 of the GGUF>-<dtype>/``, where ``<root>`` is
``$MCU_EXP_CACHE``, else ``$XDG_CACHE_HOME/mcu_exp``, else ``~/.cache/mcu_exp``. Deleting the
``converted`` folder (or one folder in it) is always safe: the next load converts again.
``MCU_EXP_CONVERT=0`` loads from the GGUF every time and writes nothing.

The folder is keyed by the GGUF's full content hash and the dtype, so a changed GGUF file
never reuses an old folder. It is written in a temporary folder and renamed into place, so a
crash or Ctrl-C never leaves a half-written folder that a later load would take. The model's
identity in the generation cache stays the GGUF's (:func:`mcu_exp.llm.weights.local_identity`):
cached generations stay hits whichever way the weights were loaded.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import secrets
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcu_exp.user_cache import user_cache

if TYPE_CHECKING:
    from mcu_exp.llm.weights import Weights

log = logging.getLogger(__name__)

CONVERT_ENV = "MCU_EXP_CONVERT"
CONVERTED_DIR = "converted"
MANIFEST = "mcu_exp_conversion.json"
WEIGHTS_FILE = "model.safetensors"
HASH_MEMO_DIR = ".sha256"
TMP_PREFIX = ".tmp-"
STALE_TMP_S = 24 * 3600  # a temporary folder this old belongs to a conversion that died
FORMAT = 1
FAST_CONVERTER = "mcu_exp.gguf_convert"  # the manifest's converter for mcu_exp.llm.gguf_convert
_BLOCK = 1 << 22


def converted_root() -> Path:
    """The folder holding every converted model (safe to delete)."""
    return user_cache() / CONVERTED_DIR


def enabled() -> bool:
    """False when ``MCU_EXP_CONVERT`` is ``0``/``false``/``no``: GGUF loads, nothing written."""
    return os.environ.get(CONVERT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


@functools.lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    """Full sha256 of a file's content (size and mtime only invalidate this memo)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_sha256(path: Path, root: Path | None = None) -> str:
    """The full sha256 of ``path``, computed once and remembered in ``<root>/.sha256/`` by
    (path, size, mtime), so warm loads of a large GGUF do not read it all again."""
    path = path.resolve()
    stat = path.stat()
    stamp = {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    memo = (root or converted_root()) / HASH_MEMO_DIR / (hashlib.sha256(str(path).encode()).hexdigest()[:32] + ".json")
    try:
        saved = json.loads(memo.read_text(encoding="utf-8"))
        if {k: saved.get(k) for k in stamp} == stamp and len(str(saved.get("sha256", ""))) == 64:
            return str(saved["sha256"])
    except (OSError, ValueError):
        pass
    sha = _sha256(str(path), stat.st_size, stat.st_mtime_ns)
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f"{TMP_PREFIX}{memo.name}.{os.getpid()}.{secrets.token_hex(3)}")
        tmp.write_text(json.dumps({**stamp, "sha256": sha}), encoding="utf-8")
        os.replace(tmp, memo)
    except OSError as exc:  # a read-only cache: hash again next time
        log.debug("cannot remember the sha256 of %s in %s: %s", path, memo, exc)
    return sha


def folder_for(gguf: Path, dtype: str, root: Path | None = None) -> tuple[Path, str]:
    """Where the conversion of ``gguf`` to ``dtype`` lives (whether or not it exists yet), and
    the GGUF's sha256."""
    root = root or converted_root()
    sha = gguf_sha256(gguf, root)
    return root / f"{gguf.stem}-{sha}-{dtype}", sha


def find(weights: Weights, dtype: str, root: Path | None = None) -> Path | None:
    """The finished converted folder of ``weights`` (a GGUF) in ``dtype``, or None."""
    if not weights.gguf_file:
        return None
    folder, sha = folder_for(weights.folder / weights.gguf_file, dtype, root)
    try:
        made = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if made.get("dtype") != dtype or made.get("source", {}).get("sha256") != sha:
        return None
    return folder


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in ("mcu_exp", "transformers", "torch", "safetensors", "gguf"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def manifest(weights: Weights, dtype: str, sha: str) -> dict[str, Any]:
    """What the folder was made from, and with which library versions."""
    gguf = weights.folder / str(weights.gguf_file)
    return {
        "format": FORMAT,
        "source": {
            "file": gguf.name,
            "path": str(gguf.resolve()),
            "size": gguf.stat().st_size,
            "sha256": sha,
            "package": weights.package,
            "package_version": weights.package_version,
        },
        "dtype": dtype,
        "versions": _versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def untied_state_dict(model: Any) -> dict[str, Any]:
    """The model's tensors, each stored once: a tensor sharing storage with an earlier one (the
    tied ``lm_head``) is left out; transformers ties it again on load from the config."""
    seen: set[int] = set()
    tensors: dict[str, Any] = {}
    for key, tensor in model.state_dict().items():
        pointer = tensor.untyped_storage().data_ptr()
        if pointer in seen:
            continue
        seen.add(pointer)
        tensors[key] = tensor.detach().contiguous()
    return tensors


def _plain_config(model: Any) -> Any:
    """The model's config without the GGUF ``quantization_config`` (the weights are plain now),
    naming its architecture (vLLM picks the model class by it)."""
    config = copy.deepcopy(model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(model).__name__]
    return config


def _fsync_all(folder: Path) -> None:
    for path in folder.iterdir():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove_stale(root: Path) -> None:
    """Delete temporary folders left by conversions that died (older than a day)."""
    now = time.time()
    for tmp in root.glob(f"{TMP_PREFIX}*"):
        try:
            if tmp.is_dir() and now - tmp.stat().st_mtime > STALE_TMP_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


def _claim(weights: Weights, dtype: str, root: Path | None) -> tuple[Path, Path, str]:
    """A new temporary folder for the converted folder of ``weights``: ``(temporary, final,
    sha256 of the GGUF)``."""
    root = root or converted_root()
    final, sha = folder_for(weights.folder / str(weights.gguf_file), dtype, root)
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root)
    tmp = root / f"{TMP_PREFIX}{final.name}.{os.getpid()}.{secrets.token_hex(3)}"
    tmp.mkdir()
    return tmp, final, sha


def _place(tmp: Path, final: Path, made: dict[str, Any]) -> None:
    """Write the manifest into the filled ``tmp``, flush it all to disk and rename it to
    ``final``; when another process finished the same folder first, its folder is kept."""
    (tmp / MANIFEST).write_text(json.dumps(made, indent=2) + "\n", encoding="utf-8")
    _fsync_all(tmp)
    try:
        os.rename(tmp, final)
    except OSError:
        if not (final / MANIFEST).is_file():
            raise
        log.debug("%s was converted by another process meanwhile; keeping that one", final)


def _publish(weights: Weights, dtype: str, root: Path | None, fill: Callable[[Path], None], how: str) -> Path:
    """Make the converted folder of ``weights``: ``fill`` writes the model files into a temporary
    folder, renamed into place at the end with the manifest."""
    tmp, final, sha = _claim(weights, dtype, root)
    try:
        fill(tmp)
        _place(tmp, final, {**manifest(weights, dtype, sha), "converter": how})
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


class Behind:
    """A converted folder written behind the load that needs it: the small files (config,
    tokenizer) are in :attr:`staging` already, :attr:`prepared` holds the de-quantised tensors
    the caller builds its model from, and :meth:`start` writes the weights in a background
    thread, then renames the folder into place. The thread is not a daemon: a process that
    ends waits for it; one killed meanwhile leaves only a temporary folder, never a partial
    converted one."""

    def __init__(self, prepared: Any, staging: Path, final: Path, made: dict[str, Any]) -> None:
        self.prepared = prepared
        self.staging = staging
        self.final = final
        self._made = made
        self._folder: Path | None = None
        self._thread = threading.Thread(target=self._write, name="mcu-exp-convert-write")

    def start(self) -> None:
        """Write the weights and publish the folder in the background."""
        self._thread.start()

    def _write(self) -> None:
        try:
            self.prepared.write_weights(self.staging)
            _place(self.staging, self.final, self._made)
            self._folder = self.final
            log.info("converted model: %s", self.final)
        except Exception as exc:  # noqa: BLE001 (a full disk, a read-only cache, whatever: the next load converts again)
            log.warning(
                "cannot write the converted model under %s (%s): the next load de-quantises the GGUF again",
                self.final.parent,
                f"{type(exc).__name__}: {exc}",
            )
        finally:
            self.prepared = None  # the tensors: the model keeps what it still uses
            if self.staging.exists():
                shutil.rmtree(self.staging, ignore_errors=True)

    def wait(self) -> Path | None:
        """The converted folder once written (None when the write failed)."""
        if self._thread.ident is not None:  # started
            self._thread.join()
        return self._folder

    def abandon(self) -> None:
        """Drop the staged folder (the caller could not use the tensors): nothing is written."""
        self.prepared = None
        shutil.rmtree(self.staging, ignore_errors=True)


def convert_behind(weights: Weights, dtype: str, root: Path | None = None) -> Behind:
    """De-quantise the GGUF of ``weights`` in memory and write all of its converted folder but
    the weights (:class:`Behind`: the caller builds its model from the tensors, then starts the
    weights' write). Raises :class:`~mcu_exp.llm.gguf_convert.Unsupported` as :func:`convert`."""
    from mcu_exp.llm import gguf_convert

    prepared = gguf_convert.prepare(weights.folder / str(weights.gguf_file), dtype)
    tmp, final, sha = _claim(weights, dtype, root)
    try:
        prepared.write_small(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Behind(prepared, tmp, final, {**manifest(weights, dtype, sha), "converter": FAST_CONVERTER})


def convert(weights: Weights, dtype: str, root: Path | None = None) -> Path:
    """De-quantise the GGUF of ``weights`` straight into its converted folder and return it, in
    a few seconds (:mod:`mcu_exp.llm.gguf_convert`, the same files as :func:`write`). Raises
    :class:`~mcu_exp.llm.gguf_convert.Unsupported` for a GGUF that converter does not handle."""
    from mcu_exp.llm import gguf_convert

    gguf = weights.folder / str(weights.gguf_file)
    return _publish(weights, dtype, root, lambda tmp: gguf_convert.convert(gguf, dtype, tmp), FAST_CONVERTER)


def write(model: Any, tokenizer: Any, weights: Weights, dtype: str, root: Path | None = None) -> Path:
    """Write the loaded (de-quantised) ``model`` and its ``tokenizer`` as the converted folder of
    ``weights`` and return it (atomic, as :func:`convert`). ``model`` must still have its own
    linear layers: packed ones (:mod:`mcu_exp.llm.packed_linear`) keep no weights to write."""
    from mcu_exp.llm.packed_linear import PackedLinear

    if any(isinstance(module, PackedLinear) for module in model.modules()):
        raise ValueError("cannot write a model whose linear layers are packed: write it before packing")

    def fill(tmp: Path) -> None:
        from safetensors.torch import save_file

        save_file(untied_state_dict(model), str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
        _plain_config(model).save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    return _publish(weights, dtype, root, fill, "transformers")


def discard(folder: Path) -> None:
    """Remove a converted folder that failed to load (renamed aside first, so no reader sees
    it half deleted)."""
    aside = folder.with_name(f"{TMP_PREFIX}{folder.name}.bad.{os.getpid()}.{secrets.token_hex(3)}")
    try:
        os.rename(folder, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)
