"""Whole jobs whose generations failed (filtered by the provider): above
generation.max_failed_share the job stops in one line and leaves a FAILED run, within it the
job finishes on the remaining samples (in this process: the job's exit status is not what is
tested there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_job_errors import assert_one_line, job, job_in_process, runs

from support.fake_api import Action, FakeServer
from support.mlflow_store import seed_store

pytestmark = pytest.mark.slow  # whole jobs, one in a subprocess


def filtered_body(n: int, kept: int = 0) -> dict[str, object]:
    """A completion whose first ``n`` choices were withheld by the provider's content filter
    and whose next ``kept`` choices are ordinary summaries."""
    withheld = [
        {"index": k, "message": {"role": "assistant", "content": None}, "finish_reason": "content_filter"}
        for k in range(n)
    ]
    ordinary = [
        {"index": n + k, "message": {"role": "assistant", "content": f"It sums a list ({k})."}, "finish_reason": "stop"}
        for k in range(kept)
    ]
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-model",
        "choices": withheld + ordinary,
        "usage": {"prompt_tokens": 10, "completion_tokens": 5 * kept, "total_tokens": 10 + 5 * kept},
    }


def test_filtered_generations_fail_the_job_instead_of_feeding_a_table(fake_server: FakeServer, tmp_path: Path) -> None:
    fake_server.push(*[Action(200, filtered_body(4))] * 4)  # every program's 4 summaries
    outputs = seed_store(tmp_path / "outputs")
    res = job(fake_server, outputs)
    assert_one_line(res, "16 of 16 samples failed (0 errors, 16 filtered, 0 empty)")
    (run,) = runs(outputs)
    assert run.info.status == "FAILED" and "f1" not in run.data.metrics  # type: ignore[attr-defined]


def test_a_raised_failed_share_lets_the_job_finish_on_the_rest(
    fake_server: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Two of one program's eight summaries withheld: whichever program the concurrent requests
    # hand them to, and however its random split falls, each subset of four keeps at least two.
    fake_server.push(Action(200, filtered_body(2, kept=6)))
    outputs = seed_store(tmp_path / "outputs")
    job_in_process(fake_server, outputs, monkeypatch, "generation.max_failed_share=0.3", "proxy.k=8", "proxy.k_cal=4")
    captured = capsys.readouterr()
    printed = captured.out + captured.err + caplog.text
    assert "2 of 32 samples failed (0 errors, 2 filtered, 0 empty), within" in printed, printed[-3000:]
    (run,) = runs(outputs)
    assert run.info.status == "FINISHED"  # type: ignore[attr-defined]
