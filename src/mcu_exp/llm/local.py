"""The embedded backend: a Hugging Face causal LM run in this process (CPU, or a GPU when present).

Weights come from a package, a local folder or the local hub cache (:mod:`mcu_exp.llm.weights`;
nothing is ever downloaded). The model loads on the first :meth:`LocalBackend.stream` call,
once; a GGUF is de-quantised only the first time and kept as a plain model folder in the user
cache (:mod:`mcu_exp.llm.converted`). Each request's prompt is computed once and its samples
decode from it, as rows of a batch shared with other requests' samples, kept full by continuous
batching (:mod:`mcu_exp.llm.decode`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcu_exp import console
from mcu_exp.llm import converted
from mcu_exp.llm.contract import GenerationRequest, Message, Sample, SampleJob
from mcu_exp.llm.errors import BackendError
from mcu_exp.llm.threads import choose_threads
from mcu_exp.llm.weights import (
    Weights,
    build_from_memory,
    load_message,
    load_pretrained,
    local_identity,
    locate_weights,
    resolve_device,
    resolve_dtype,
)

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig
    from mcu_exp.llm.decode import Part

log = logging.getLogger(__name__)


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
        self._converted: Path | None = None  # the converted folder this load wrote
        self._behind: converted.Behind | None = None  # its weights still being written
        self.packed_layers = 0  # linear layers running through oneDNN's packed kernel

    @property
    def converted_folder(self) -> Path | None:
        """The converted folder this load wrote (None: it loaded an existing one, or could not
        write it); waits for the weights' write when it still runs behind the load."""
        if self._behind is not None:
            self._converted, self._behind = self._behind.wait(), None
        return self._converted

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
        write_after = convert
        if folder is None and convert:
            built, write_after = self._convert(weights, dtype_name, dtype, threads)
            if built is not None:
                tokenizer, model = built
                self.loaded_from = gguf
        if folder is not None:
            try:
                message = load_message(self.cfg, weights, self.device, threads, from_converted=True)
                with console.step(message, logger=log):
                    tokenizer, model = load_pretrained(folder, dtype)
                self.loaded_from = folder
            except Exception as exc:  # noqa: BLE001 (a broken converted copy, whatever the error: the GGUF is loaded again)
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
        try:
            model.to(self.device).eval()
            self._prepare(model, tokenizer)
        except BaseException:
            if self._behind is not None:  # nothing to write for a model that did not load
                self._behind.abandon()
                self._behind = None
            raise
        if self._behind is not None:
            self._behind.start()

    def _convert(
        self, weights: Weights, dtype_name: str, dtype: Any, threads: int | None
    ) -> tuple[tuple[Any, Any] | None, bool]:
        """De-quantise the GGUF (:func:`converted.convert_behind`, a second or two) and build the
        model from its tensors in memory; the converted folder's weights are written behind, in
        a background thread started once the model is ready (:attr:`converted_folder` waits for
        them). Returns ``(tokenizer, model)``, or None and whether the model transformers loads
        instead is still worth writing (not when the cache cannot be written)."""
        from mcu_exp.llm import gguf_convert

        gguf = weights.folder / str(weights.gguf_file)
        try:
            gguf_convert.check(gguf)
        except (gguf_convert.Unsupported, OSError) as exc:  # an unreadable file: transformers' load says why
            log.info("%s is converted from transformers' GGUF load: %s", gguf.name, exc)
            return None, True
        try:
            with (
                console.step(f"Converting {gguf.name} into a model folder (once)", logger=log),
                console.quiet_output("transformers"),
            ):
                behind = converted.convert_behind(weights, dtype_name)
        except OSError as exc:
            log.warning(
                "cannot write the converted model under %s (%s): loading the GGUF, and the next load "
                "converts again (%s=0 stops trying)",
                converted.converted_root(),
                _first_line(exc),
                converted.CONVERT_ENV,
            )
            return None, False
        except Exception as exc:  # noqa: BLE001 (a GGUF the fast converter misreads: transformers' load says more)
            log.warning("cannot convert %s (%s): loading it with transformers", gguf.name, _first_line(exc))
            return None, True
        try:
            message = load_message(self.cfg, weights, self.device, threads, from_converted=True)
            with console.step(message, logger=log):
                built = build_from_memory(behind.staging, behind.prepared.weights, dtype)
        except Exception as exc:  # noqa: BLE001 (whatever the build raised: transformers' own load is the fallback)
            behind.abandon()
            log.warning("cannot build the converted model (%s): loading the GGUF with transformers", _first_line(exc))
            return None, True
        self._behind = behind  # started once the model is ready (:meth:`load`): not to slow its packing
        return built, False

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
        self._converted = folder
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
