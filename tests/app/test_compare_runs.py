"""scripts/compare_runs.py: the before/after check of a refactor says what differs, and by how much."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def write_run(folder: Path, auc: float, extra: bool = False, seconds: float = 1.0) -> Path:
    (folder / "results").mkdir(parents=True)
    (folder / "results" / "alignment.csv").write_text(f"metric,value\nf1,0.5\nauc_score,{auc!r}\n")
    if extra:
        (folder / "results" / "scores.csv").write_text("program_id,alpha_test\na,0.1\n")
    (folder / "metrics.json").write_text(json.dumps({"auc_score": auc, "job_seconds": seconds}))
    return folder


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compare_runs.py"), *args], capture_output=True, text=True, timeout=120
    )


def test_identical_runs_pass_and_new_files_are_listed(tmp_path: Path) -> None:
    before = write_run(tmp_path / "before", 0.6347402597402596)
    after = write_run(tmp_path / "after", 0.6347402597402596, extra=True, seconds=9.0)
    res = compare(str(before), str(after))
    assert res.returncode == 0, res.stdout
    assert "new outputs scores.csv" in res.stdout and "1 identical" in res.stdout


def test_a_last_bit_change_fails_unless_a_tolerance_allows_it(tmp_path: Path) -> None:
    before = write_run(tmp_path / "before", 0.6347402597402596)
    after = write_run(tmp_path / "after", 0.6347402597402597)
    strict = compare(str(before), str(after))
    assert strict.returncode == 1 and "alignment.csv: contents differ" in strict.stdout
    loose = compare(str(before), str(after), "--tolerance", "1e-15")
    assert loose.returncode == 0 and "equal within 1e-15" in loose.stdout
    assert "largest numeric difference 1.11e-16" in loose.stdout


def test_sweeps_are_paired_job_by_job(tmp_path: Path) -> None:
    for side, aucs in (("before", (0.5, 0.7)), ("after", (0.5, 0.8))):
        for job, auc in enumerate(aucs):
            write_run(tmp_path / side / str(job), auc)
    res = compare(str(tmp_path / "before"), str(tmp_path / "after"), "--tolerance", "1e-15")
    assert res.returncode == 1
    assert "0: 1 CSV files identical" in res.stdout
    assert "1: 2 difference(s)" in res.stdout and "1 different" in res.stdout
