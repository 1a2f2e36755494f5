"""Whole jobs whose generations failed (filtered by the provider): above
generation.max_failed_share the job stops in one line and leaves a FAILED run, within it the
job finishes on the remaining samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Action, FakeServer  # type: ignore[import-not-found]
from support.mlflow_store import seed_store
from test_job_errors import assert_one_line, job, runs

pytestmark = pytest.mark.slow  # jobs in subprocesses


def filtered_body(n: int) -> dict[str, object]:
    """A completion whose ``n`` choices were all withheld by the provider's content filter."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": k, "message": {"role": "assistant", "content": None},
                         "finish_reason": "content_filter"} for k in range(n)],
            "usage": {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10}}


def test_filtered_generations_fail_the_job_instead_of_feeding_a_table(fake_server: FakeServer,
                                                                      tmp_path: Path) -> None:
    fake_server.push(*[Action(200, filtered_body(4))] * 4)  # every program's 4 summaries
    outputs = seed_store(tmp_path / "outputs")
    res = job(fake_server, outputs)
    assert_one_line(res, "16 of 16 samples failed (0 errors, 16 filtered, 0 empty)")
    (run,) = runs(outputs)
    assert run.info.status == "FAILED" and "f1" not in run.data.metrics  # type: ignore[attr-defined]


def test_a_raised_failed_share_lets_the_job_finish_on_the_rest(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.push(Action(200, filtered_body(4)))  # one program of four: a quarter of the samples
    outputs = seed_store(tmp_path / "outputs")
    res = job(fake_server, outputs, "generation.max_failed_share=0.3", "proxy.k=8", "proxy.k_cal=4")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "4 of 32 samples failed (0 errors, 4 filtered, 0 empty), within" in res.stdout + res.stderr
    (run,) = runs(outputs)
    assert run.info.status == "FINISHED"  # type: ignore[attr-defined]
