"""Benchmark: model load times (cold GGUF vs converted folder), then many samples of one prompt,
the project's backend vs ``model.generate``.

Load times, in a temporary user cache (``$MCU_EXP_CACHE``) so the first load is truly cold:
the cold load de-quantises the GGUF (:mod:`mcu_exp.llm.gguf_convert`) and builds the model from
the tensors in memory, until the model is ready to decode (target: <= 5 s, PASS/FAIL); the
converted folder's weights are written behind it, in a background thread, and the seconds that
write took after the load are printed beside it; the warm load reads that folder (target:
<= 2 s, PASS/FAIL). Both are timed after importing the libraries a load needs (printed apart: every
fresh process pays them, whichever way it loads), in seconds of wall clock and of this
process's CPU (on a busy machine the wall clock counts other processes' work too); a warm load
in a fresh process, imports included, is printed too. The baseline, in the same run, is the
cold load as it was before the converter: transformers' own GGUF load (``MCU_EXP_CONVERT=0``,
nothing written; ``--no-baseline`` skips its 20-odd seconds).

The project's :class:`~mcu_exp.llm.local.LocalBackend` computes the prompt once and its
decoder (what ``stream`` runs) decodes the k samples together from it; the baseline runs
``model.generate(do_sample=True)`` on the prompt repeated k times (same loaded model, same
temperature/top-p, top-k off). Both produce exactly ``--new-tokens`` tokens per sample
(end-of-sequence and stop strings are ignored), so tokens/s compare like with like. Prints
tokens/s, their ratio and peak RSS.

The default run's workload (``--programs`` programs × ``--samples`` samples, 10 × 20 by default;
the run itself is 50 × 20), with its real decoding settings (temperature, top-p, the stop string,
end-of-sequence), three ways: each program decoded alone with PyTorch's own linear layers (the
backend before batching across programs and before the packed kernels), each program alone with
the oneDNN packed linear layers (:mod:`mcu_exp.llm.packed_linear`, the backend's default), and all
the programs through ``LocalBackend.stream``, which decodes the rows of several programs in one
batch (up to ``model.max_batch_size``; continuous batching: the next programs' rows take the slots
of rows that finish). The per-program runs take half of the programs before the batched run and
half after, so a load that changes steadily during the run weighs on every way alike. The packed
ways run ``--rounds`` times (3 by default; PyTorch's layers in the first round only) and the ratios
pool every round's tokens and seconds: on a shared 2-core VM one round's ratio moved by ±0.1 from
run to run (1.46, 1.50 and 1.63 on one quiet morning); each round's ratio is printed too, and
whether every round gave the same samples. Prints tokens/s of the three, two ratios with PASS/FAIL at 1.5x (batching alone, same kernels both ways;
the default run's decoding against per-program decoding with PyTorch's layers), the decode steps
(how many, their mean row count and the time per row-step: what batching can save) and how many
texts differ (packed layers give a row the same numbers whatever else is in its batch, so
per-program and batched texts are equal; PyTorch's layers sum in another order, which can flip a
sampled token).

With ``--vllm``, the same prompt and k values also go through the in-process ``vllm`` backend
(``conf/model/smollm2-135m-vllm.yaml``: the converted folder, vLLM's CPU build on a machine
without a GPU) in vLLM's environment (``make vllm-env``; ``--vllm-python`` names another
python), with the backend's own per-sample ``SamplingParams`` and end-of-sequence ignored;
printed: the engine's start-up, tokens/s of vLLM and of the local backend, and their ratio.

With ``--compare-dtype bfloat16``, only the default run's workload, batched, in float32 and in
that dtype (``model.dtype``; ``experiment=three_studies`` decodes in bfloat16), rounds alternating:
tokens per wall and per CPU second, their ratio with PASS/FAIL at 1.3x per CPU second, and how many
texts differ (bfloat16 rounds each activation to 8 significant bits, so a sampled token can flip).

Usage: python scripts/bench_generate.py [--k 25 50] [--new-tokens 48] [--target-prompt 500] [--threads N]
[--programs 10] [--samples 20] [--rounds 3] [--load-only] [--no-baseline] [--vllm [--vllm-python PY]]
[--compare-dtype bfloat16] (``--k`` with no
value or ``--programs 0`` skips that part) (needs $MCU_EXP_DATA holding scalabrino/snippets; never
downloads anything).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from mcu_exp.config import ModelConfig
from mcu_exp.llm import GenerationRequest, LocalBackend, Sample, SampleJob, request_for
from mcu_exp.llm.converted import CONVERT_ENV
from mcu_exp.proxies.prompts import summary_messages
from mcu_exp.user_cache import CACHE_ENV

REPO = Path(__file__).resolve().parents[1]
COLD_TARGET_S = 5.0
WARM_TARGET_S = 2.0
BATCHING_TARGET = 1.5  # cross-program batching over per-program decoding, tokens/s
DTYPE_TARGET = 1.3  # --compare-dtype: the other dtype's tokens per CPU second over float32's
RESULT = "vllm-result: "  # the worker's result line (vLLM logs to stdout too)
# One way of decoding a workload: wall-clock seconds, CPU seconds, samples by (program, index).
Way = tuple[float, float, dict[tuple[int, int], Sample]]


def model_config(name: str) -> ModelConfig:
    """The shipped model config ``conf/model/<name>.yaml``."""
    raw = OmegaConf.to_container(OmegaConf.load(REPO / "conf" / "model" / f"{name}.yaml"))
    assert isinstance(raw, dict)
    return ModelConfig(**{str(key): value for key, value in raw.items()})


def peak_rss_gb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def unwrap(source: str) -> str:
    """The method as participants saw it: drop the splitter's package/class wrapper."""
    lines = source.strip("\n").splitlines()
    if lines and lines[0].startswith("package "):
        lines = lines[1:]
    if lines and lines[0].lstrip().startswith("public class ds_"):
        lines = lines[1:-1]
    return textwrap.dedent("\n".join(lines))


def snippet_files() -> list[Path]:
    """The Scalabrino snippets, sorted by name."""
    folder = Path(os.environ.get("MCU_EXP_DATA", REPO.parent / "shared" / "data")) / "scalabrino" / "snippets"
    files = sorted(folder.glob("*.java"))
    if not files:
        raise SystemExit(f"no snippets in {folder}: set MCU_EXP_DATA to the folder holding scalabrino/")
    return files


def pick_snippet(backend: LocalBackend, target: int) -> tuple[str, str, int]:
    """The snippet whose chat-templated prompt length is closest to ``target`` tokens."""
    best = None
    for path in snippet_files():
        code = unwrap(path.read_text(encoding="utf-8"))
        length = len(backend.prompt_ids(summary_messages(code, "Java")))
        if best is None or abs(length - target) < abs(best[2] - target):
            best = (path.name, code, length)
    assert best is not None
    return best


def run_backend(backend: LocalBackend, request: GenerationRequest, k: int) -> tuple[float, int]:
    """Seconds and generated tokens for k samples through the backend's decoder, as ``stream``
    runs it (prompt once, rows in batches of ``model.max_batch_size``), end-of-sequence ignored."""
    start = time.perf_counter()
    prefix = backend.decoder.prefill(backend.prompt_ids(request.messages))
    tokens = 0
    for first in range(0, k, backend.max_batch_size):
        rows = range(first, min(k, first + backend.max_batch_size))
        tokens += sum(s.completion_tokens for _, s in backend.decoder.decode(request, prefix, rows, use_eos=False))
    return time.perf_counter() - start, tokens


def run_generate(backend: LocalBackend, prompt: list[int], request: GenerationRequest, k: int) -> tuple[float, int]:
    """Seconds and generated tokens for ``model.generate`` on the prompt repeated k times."""
    import torch

    model = backend.model
    ids = torch.tensor([prompt] * k, device=backend.device)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            temperature=request.temperature,
            top_p=request.top_p,
            top_k=0,
            max_new_tokens=request.max_new_tokens,
            min_new_tokens=request.max_new_tokens,
            pad_token_id=backend.tokenizer.eos_token_id,
        )
    return time.perf_counter() - start, int(out.shape[0] * (out.shape[1] - ids.shape[1]))


def load_average() -> str:
    """The 1, 5 and 15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def import_libraries() -> float:
    """Seconds to import what a Llama load imports (torch, transformers' model and tokenizer code)."""
    start = time.perf_counter()
    import torch  # noqa: F401
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: F401

    return time.perf_counter() - start


def timed_load(cfg: ModelConfig) -> tuple[LocalBackend, float, float]:
    """A loaded backend, and the wall-clock and CPU seconds its load took."""
    backend = LocalBackend(cfg)
    start, cpu = time.perf_counter(), time.process_time()
    backend.load()
    return backend, time.perf_counter() - start, time.process_time() - cpu


def verdict(what: str, seconds: float, target: float, extra: str = "") -> None:
    """One PASS/FAIL line: ``what`` took ``seconds`` against ``target``."""
    ok = seconds <= target
    print(f"{'PASS' if ok else 'FAIL'}: {what} {seconds:.2f} s {'<=' if ok else '>'} {target:.0f} s{extra}")


def fresh_process_load(cache: Path, threads: int | None) -> float:
    """Seconds of a warm load in a new process, imports included (this script's --time-one-load)."""
    command = [sys.executable, __file__, "--time-one-load"] + ([] if threads is None else ["--threads", str(threads)])
    res = subprocess.run(command, env={**os.environ, CACHE_ENV: str(cache)}, capture_output=True, text=True, check=True)
    return float(res.stdout.strip().splitlines()[-1])


def measure_loads(cfg: ModelConfig, cache: Path, baseline: bool) -> LocalBackend:
    """Print the library import, cold and warm load times in the empty user cache ``cache``, and
    (``baseline``) transformers' own GGUF load; the warm backend is returned for the decoding
    benchmark."""
    print(f"load average {load_average()} on {os.cpu_count()} CPUs; user cache {cache} (empty)")
    print(f"library imports (torch, transformers' Llama and tokenizer code): {import_libraries():.1f} s")
    cold, cold_s, cold_cpu = timed_load(cfg)
    start = time.perf_counter()
    folder = cold.converted_folder  # waits for the weights' write behind the load
    behind_s = time.perf_counter() - start
    assert folder is not None, "the cold load wrote no converted folder"
    print(
        f"cold load (GGUF de-quantised, model built from the tensors in memory): {cold_s:.2f} s ({cold_cpu:.2f} s "
        f"CPU); the converted folder's weights written behind it, {behind_s:.2f} s more -> {folder}"
    )
    del cold
    warm, warm_s, warm_cpu = timed_load(cfg)
    assert warm.loaded_from == folder, f"the warm load read {warm.loaded_from}, not {folder}"
    print(f"warm load (converted folder): {warm_s:.2f} s ({warm_cpu:.2f} s CPU)")
    print(f"warm load in a fresh process, library imports included: {fresh_process_load(cache, cfg.num_threads):.1f} s")
    versus = ""
    if baseline:
        os.environ[CONVERT_ENV] = "0"
        try:
            old, old_s, old_cpu = timed_load(cfg)
        finally:
            del os.environ[CONVERT_ENV]
        del old
        print(
            f"baseline: transformers' GGUF load (the cold load before the converter): {old_s:.2f} s "
            f"({old_cpu:.2f} s CPU)"
        )
        versus = f" ({old_s / cold_s:.1f}x faster than transformers' GGUF load, {old_cpu / cold_cpu:.1f}x in CPU)"
    print(f"load average {load_average()} after the loads")
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        print(
            "note: the machine is busier than its CPU count, so the wall-clock times include waiting for "
            "other processes; the CPU seconds are what the loads themselves cost"
        )
    verdict("cold load", cold_s, COLD_TARGET_S, versus)
    verdict("warm load", warm_s, WARM_TARGET_S, f" ({cold_s / warm_s:.0f}x faster than the cold load)")
    return warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="*", default=[25, 50])
    parser.add_argument("--new-tokens", type=int, default=48)
    parser.add_argument("--target-prompt", type=int, default=500)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: automatic)")
    parser.add_argument("--programs", type=int, default=10, help="programs of the default-run workload (0: skip)")
    parser.add_argument("--samples", type=int, default=20, help="samples per program of that workload")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of that workload's packed ways, pooled (machine noise)"
    )
    parser.add_argument("--load-only", action="store_true", help="measure the load times only")
    parser.add_argument(
        "--compare-dtype",
        default=None,
        help="only time the default-run workload, batched, in float32 and in this dtype (e.g. bfloat16)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip timing transformers' own GGUF load (the cold load before the converter)",
    )
    parser.add_argument("--vllm", action="store_true", help="also time the vllm backend (vLLM's environment)")
    parser.add_argument(
        "--vllm-python",
        default=str(REPO / ".venv-vllm" / "bin" / "python"),
        help="the python of vLLM's environment (default: .venv-vllm, `make vllm-env`)",
    )
    parser.add_argument("--time-one-load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--vllm-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.vllm_worker:
        vllm_worker()
        return
    os.environ.pop(CONVERT_ENV, None)
    if args.vllm and not Path(args.vllm_python).is_file():
        raise SystemExit(
            f"--vllm: no python at {args.vllm_python}: run `make vllm-env`, or name one with --vllm-python"
        )

    cfg = dataclasses.replace(model_config("smollm2-135m"), num_threads=args.threads)
    if args.compare_dtype:
        compare_dtypes(cfg, args.compare_dtype, args.programs or 10, args.samples, args.rounds)
        return
    if args.time_one_load:
        start = time.perf_counter()
        LocalBackend(cfg).load()
        print(f"{time.perf_counter() - start:.3f}")
        return
    with tempfile.TemporaryDirectory(prefix="mcu-exp-cache-") as cache:
        os.environ[CACHE_ENV] = cache
        backend = measure_loads(cfg, Path(cache), baseline=not args.no_baseline)
        if not args.load_only:
            import torch

            print(
                f"torch threads {torch.get_num_threads()}; "
                f"shared-prefix attention {backend.decoder.shared_prefix}; peak RSS {peak_rss_gb():.2f} GB"
            )
            if args.programs > 0:
                cross_program(backend, cfg, args.programs, args.samples, args.rounds)
            if args.k:
                decode(backend, cfg, args)


def decode_rows(backend: LocalBackend, steps: list[int]) -> Any:
    """A forward pre-hook that appends the row count of every one-token forward pass (a decode
    step; prefills have more tokens) to ``steps``; ``.remove()`` it after."""

    def hook(_module: object, _args: tuple[object, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids")
        if ids is not None and ids.shape[1] == 1:
            steps.append(int(ids.shape[0]))

    return backend.model.register_forward_pre_hook(hook, with_kwargs=True)


def per_program(backend: LocalBackend, requests: list[GenerationRequest]) -> Way:
    """Wall-clock and CPU seconds and texts of the requests decoded one program at a time (prompt
    once, its samples in batches of ``model.max_batch_size``): the backend's decoding before
    cross-program batching."""
    texts: dict[tuple[int, int], Sample] = {}
    start, cpu = time.perf_counter(), time.process_time()
    for position, request in enumerate(requests):
        prompt = backend.prompt_ids(request.messages)
        prefix = backend.decoder.prefill(prompt)
        for first in range(0, request.n, backend.max_batch_size):
            rows = range(first, min(request.n, first + backend.max_batch_size))
            for index, sample in backend.decoder.decode(request, prefix, rows):
                texts[position, index] = sample
    return time.perf_counter() - start, time.process_time() - cpu, texts


def batched(backend: LocalBackend, requests: list[GenerationRequest]) -> Way:
    """Wall-clock and CPU seconds and texts of the requests through ``LocalBackend.stream`` (rows
    of several programs in one batch)."""
    start, cpu = time.perf_counter(), time.process_time()
    jobs = [SampleJob(r, tuple(range(r.n))) for r in requests]
    texts = {(position, index): sample for position, index, sample in backend.stream(jobs)}
    return time.perf_counter() - start, time.process_time() - cpu, texts


def cross_program(backend: LocalBackend, cfg: ModelConfig, programs: int, samples: int, rounds: int) -> None:
    """The default run's workload three ways: per program with PyTorch's own linear layers (the
    backend before this benchmark's changes), per program with the packed ones, and batched across
    programs with the packed ones; tokens/s, the two ratios with PASS/FAIL, and how many texts
    differ between them. ``rounds`` repeats the packed ways (PyTorch's layers run in the first
    round only); the ratios pool every round's tokens and seconds, and each round's is printed."""
    files = snippet_files()[:programs]
    requests = [
        request_for(cfg, summary_messages(unwrap(path.read_text(encoding="utf-8")), "Java"), n=samples, seed=j)
        for j, path in enumerate(files)
    ]
    plain = LocalBackend(dataclasses.replace(cfg, settings={"packed_linear": False}))
    plain.load()
    print(
        f"default-run workload: {len(requests)} programs x {samples} samples, temperature {cfg.temperature}, "
        f"top_p {cfg.top_p}, max {cfg.max_new_tokens} new tokens, stop {list(cfg.stop or [])}, "
        f"model.max_batch_size {backend.max_batch_size}; packed linear layers {backend.packed_layers}; "
        f"{rounds} round(s); load average {load_average()}",
        flush=True,
    )
    # Each round: the first half of the programs per program (PyTorch's layers in round 1, then packed
    # ones), all of them batched, the second half per program (packed, then PyTorch's): a load that
    # rises or falls steadily during the round weighs on every way alike, and the batched run streams
    # the programs as the default run does (all at once, so its rows run down once at the end, not
    # once per half).
    half = (len(requests) + 1) // 2
    rows_one: list[int] = []
    rows_all: list[int] = []
    old: dict[tuple[int, int], Sample] = {}
    t_old = c_old = 0.0
    one_rounds: list[Way] = []
    all_rounds: list[Way] = []
    for number in range(rounds):
        if number == 0:
            p_a = per_program(plain, requests[:half])
        with_hook = decode_rows(backend, rows_one)
        a = per_program(backend, requests[:half])
        with_hook.remove()
        with_hook = decode_rows(backend, rows_all)
        all_rounds.append(batched(backend, requests))
        with_hook.remove()
        with_hook = decode_rows(backend, rows_one)
        d = per_program(backend, requests[half:])
        with_hook.remove()
        if number == 0:
            p_d = per_program(plain, requests[half:])
            old = {**p_a[2], **{(position + half, index): s for (position, index), s in p_d[2].items()}}
            t_old, c_old = p_a[0] + p_d[0], p_a[1] + p_d[1]
        texts = {**a[2], **{(position + half, index): s for (position, index), s in d[2].items()}}
        one_rounds.append((a[0] + d[0], a[1] + d[1], texts))
        ratio = tokens(all_rounds[-1][2]) / all_rounds[-1][0] / (tokens(texts) / one_rounds[-1][0])
        print(f"round {number + 1}: batching alone {ratio:.2f}x; load average {load_average()}", flush=True)
    one, together = one_rounds[0][2], all_rounds[0][2]
    n_old, t_one, c_one = tokens(old), sum(w[0] for w in one_rounds), sum(w[1] for w in one_rounds)
    n_one, n_all = sum(tokens(w[2]) for w in one_rounds), sum(tokens(w[2]) for w in all_rounds)
    t_all, c_all = sum(w[0] for w in all_rounds), sum(w[1] for w in all_rounds)
    rate_old, rate_one, rate_all = n_old / t_old, n_one / t_one, n_all / t_all
    print(
        f"per program, PyTorch's linear layers: {len(old)} samples in {t_old:.1f} s = {rate_old:.1f} tok/s | "
        f"per program, packed: {rounds} x {len(one)} samples in {t_one:.1f} s = {rate_one:.1f} tok/s | "
        f"batched across programs, packed: {rounds} x {len(together)} samples in {t_all:.1f} s = "
        f"{rate_all:.1f} tok/s; load average {load_average()}"
    )
    print(
        f"per CPU second (what the decoding itself costs, whatever else runs): {n_old / c_old:.1f}, "
        f"{n_one / c_one:.1f} and {n_all / c_all:.1f} tok/s"
    )
    print(
        f"decode steps: per program {len(rows_one)} of {sum(rows_one) / len(rows_one):.1f} rows on average "
        f"({1000 * t_one / sum(rows_one):.2f} ms a row-step), batched {len(rows_all)} of "
        f"{sum(rows_all) / len(rows_all):.1f} rows ({1000 * t_all / sum(rows_all):.2f} ms a row-step)"
    )
    same = all(w[2] == together for w in all_rounds) and all(w[2] == one for w in one_rounds)
    print(
        f"texts that differ: per program vs batched {sum(one[k].text != together[k].text for k in one)} of "
        f"{len(one)}; PyTorch's layers vs packed {sum(old[k].text != one[k].text for k in one)} of {len(one)}; "
        f"every round gave the same samples: {'yes' if same else 'NO'}"
    )
    for what, ratio in (
        ("cross-program batching alone (packed layers both ways)", rate_all / rate_one),
        (
            "the default run's decoding (batched, packed) over per-program decoding with PyTorch's layers",
            rate_all / rate_old,
        ),
    ):
        ok = ratio >= BATCHING_TARGET
        print(f"{'PASS' if ok else 'FAIL'}: {what}: {ratio:.2f}x {'>=' if ok else '<'} {BATCHING_TARGET}x")
    del plain


def compare_dtypes(cfg: ModelConfig, dtype: str, programs: int, samples: int, rounds: int) -> None:
    """The default run's workload batched across programs (``LocalBackend.stream``) in float32 and in
    ``dtype``, alternating rounds so a changing load weighs on both: tokens per wall and per CPU
    second, their ratio (PASS at :data:`DTYPE_TARGET` per CPU second), peak RSS and how many texts
    differ (another dtype rounds differently, so a sampled token can flip)."""
    files = snippet_files()[:programs]
    requests = [
        request_for(cfg, summary_messages(unwrap(path.read_text(encoding="utf-8")), "Java"), n=samples, seed=j)
        for j, path in enumerate(files)
    ]
    backends = {}
    for name in ("float32", dtype):
        backends[name] = LocalBackend(dataclasses.replace(cfg, dtype=name))
        backends[name].load()
    import torch

    print(
        f"default-run workload: {len(requests)} programs x {samples} samples, float32 vs {dtype}, {rounds} round(s), "
        f"torch threads {torch.get_num_threads()}; load average {load_average()}",
        flush=True,
    )
    found: dict[str, list[Way]] = {name: [] for name in backends}
    for number in range(rounds):
        for name in backends if number % 2 == 0 else reversed(list(backends)):
            found[name].append(batched(backends[name], requests))
    rates = {}
    for name, ways in found.items():
        n, wall, cpu = sum(tokens(w[2]) for w in ways), sum(w[0] for w in ways), sum(w[1] for w in ways)
        rates[name] = (n / wall, n / cpu)
        print(f"{name:>9}: {n} tokens in {wall:.1f} s = {n / wall:.1f} tok/s; {n / cpu:.1f} tok per CPU second")
    first, other = found["float32"][0][2], found[dtype][0][2]
    ratio_wall, ratio_cpu = rates[dtype][0] / rates["float32"][0], rates[dtype][1] / rates["float32"][1]
    print(
        f"texts that differ between the dtypes: {sum(first[k].text != other[k].text for k in first)} of {len(first)}; "
        f"peak RSS {peak_rss_gb():.2f} GB; load average {load_average()}"
    )
    ok = ratio_cpu >= DTYPE_TARGET
    print(
        f"{'PASS' if ok else 'FAIL'}: {dtype} over float32: {ratio_cpu:.2f}x per CPU second "
        f"{'>=' if ok else '<'} {DTYPE_TARGET}x ({ratio_wall:.2f}x per wall second)"
    )


def tokens(texts: dict[tuple[int, int], Sample]) -> int:
    """Completion tokens of some samples."""
    return sum(s.completion_tokens for s in texts.values())


def decode(backend: LocalBackend, cfg: ModelConfig, args: argparse.Namespace) -> None:
    """Tokens/s of the backend's decoder vs ``model.generate`` on the same loaded model."""
    name, code, length = pick_snippet(backend, args.target_prompt)
    request = dataclasses.replace(
        request_for(cfg, summary_messages(code, "Java"), n=max(args.k), seed=0), max_new_tokens=args.new_tokens, stop=()
    )
    prompt = backend.prompt_ids(request.messages)
    print(
        f"prompt: {name}, {length} tokens; temperature {request.temperature}, top_p {request.top_p}, "
        f"{args.new_tokens} new tokens per sample"
    )

    ours = {k: run_backend(backend, request, k) for k in args.k}
    rss_ours = peak_rss_gb()
    backend.model.set_attn_implementation("sdpa")  # the baseline runs the model's stock attention
    plain = {k: run_generate(backend, prompt, request, k) for k in args.k}
    rss_all = peak_rss_gb()
    for k in args.k:
        (t_ours, n_ours), (t_plain, n_plain) = ours[k], plain[k]
        rate_ours, rate_plain = n_ours / t_ours, n_plain / t_plain
        print(
            f"k={k:3d}: backend {n_ours} tokens in {t_ours:6.1f} s = {rate_ours:6.1f} tok/s | "
            f"model.generate {n_plain} tokens in {t_plain:6.1f} s = {rate_plain:6.1f} tok/s | "
            f"ratio {rate_ours / rate_plain:.2f}x"
        )
    print(f"peak RSS: {rss_ours:.2f} GB after the backend runs, {rss_all:.2f} GB after model.generate")
    if args.vllm:
        compare_vllm(args, request, ours)


def compare_vllm(args: argparse.Namespace, request: GenerationRequest, ours: dict[int, tuple[float, int]]) -> None:
    """Run the k values through the vllm backend in vLLM's environment (a child process: vLLM
    pins its own torch and transformers); print its tokens/s against the local backend's."""
    job = {
        "messages": [[m.role, m.content] for m in request.messages],
        "k": args.k,
        "new_tokens": args.new_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
    }
    print(f"vllm: starting the engine with {args.vllm_python} (load average {load_average()})", flush=True)
    res = subprocess.run(
        [args.vllm_python, __file__, "--vllm-worker"],
        input=json.dumps(job),
        text=True,
        capture_output=True,
        env={**os.environ, "VLLM_LOGGING_LEVEL": "WARNING"},
    )
    if res.returncode != 0:
        raise SystemExit(f"vllm run failed:\n{res.stderr[-3000:]}")
    result = json.loads([line for line in res.stdout.splitlines() if line.startswith(RESULT)][-1][len(RESULT) :])
    print(f"vllm {result['version']}: engine start-up {result['startup_s']:.1f} s; load average {load_average()}")
    for k in args.k:
        t_vllm, n_vllm = result["runs"][str(k)]
        t_ours, n_ours = ours[k]
        rate_vllm, rate_ours = n_vllm / t_vllm, n_ours / t_ours
        print(
            f"k={k:3d}: vllm {n_vllm} tokens in {t_vllm:6.1f} s = {rate_vllm:6.1f} tok/s | "
            f"local backend {n_ours} tokens in {t_ours:6.1f} s = {rate_ours:6.1f} tok/s | "
            f"ratio vllm/local {rate_vllm / rate_ours:.2f}x"
        )


def vllm_worker() -> None:
    """``--vllm-worker`` (in vLLM's environment): the job on stdin through the vllm backend's
    engine, one ``SamplingParams`` per sample as the backend builds them, end-of-sequence and
    stop strings off (exactly ``new_tokens`` each, as the local runs); JSON on stdout. A warm-up
    batch on another prompt goes first (vLLM's first batch is slow), and the prefix cache is
    emptied before each k, so each run computes its prompt once, as the local backend does."""
    from mcu_exp.llm.contract import Message
    from mcu_exp.llm.providers import vllm as vllm_p

    job = json.loads(sys.stdin.read())
    cfg = model_config("smollm2-135m-vllm")
    request = GenerationRequest(
        messages=tuple(Message(r, c) for r, c in job["messages"]),
        n=max(job["k"]),
        temperature=job["temperature"],
        top_p=job["top_p"],
        max_new_tokens=job["new_tokens"],
        stop=(),
        seed=0,
    )
    start = time.perf_counter()
    backend = vllm_p.create_backend(cfg, progress=False)
    startup = time.perf_counter() - start
    messages = vllm_p.chat_messages(request)

    def run(k: int, chat: list[dict[str, str]]) -> tuple[float, int]:
        params = [
            backend.vllm.SamplingParams(**{**vllm_p.sampling_kwargs(request, cfg, i), "ignore_eos": True})
            for i in range(k)
        ]
        backend.llm.reset_prefix_cache()
        begin = time.perf_counter()
        outputs = backend.llm.chat([chat] * k, params, use_tqdm=False)
        return time.perf_counter() - begin, sum(len(o.outputs[0].token_ids) for o in outputs)

    run(min(job["k"]), [{**m, "content": "Warm-up. " + m["content"]} for m in messages])
    runs = {str(k): run(k, messages) for k in job["k"]}
    import vllm

    print(RESULT + json.dumps({"version": vllm.__version__, "startup_s": startup, "runs": runs}), flush=True)
    vllm_p.release_engines()


if __name__ == "__main__":
    main()
