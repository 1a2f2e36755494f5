"""The README's sample output is checkable on any machine: replaying the bundle shipped beside
it (docs/bundles/default-run.zip, the default run on the machine the README was measured on)
prints the README's results table byte for byte, and every metric and CSV of that run within the
documented tolerance; bit for bit where this machine's floating-point kernels are the bundle's
(its CPU flags, BLAS build and kernels, numerical libraries), which only the machine that made
the bundle can promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcu_exp.bundle.replay import replay
from mcu_exp.pipeline import run_job

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "docs" / "bundles" / "default-run.zip"


def results_table(text: str) -> list[str]:
    """The results table as printed: its title line through the permutation p-value under it,
    and the τ and coverage lines (trailing blanks dropped, as the README holds them)."""
    lines = [line.rstrip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if "vs human labels (" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("AUC (score) vs 0.5"))
    decision = [line for line in lines if line.lstrip().startswith(("τ = ", "coverage = "))]
    assert len(decision) == 2, decision
    return lines[start : end + 1] + decision


def readme_output() -> str:
    """The README's sample output block (the one holding the results table)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = text.split("```text\n")[1:]
    return next(block.split("```", 1)[0] for block in blocks if "vs human labels (" in block)


def test_replaying_the_readme_bundle_prints_the_readme_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checks = replay(BUNDLE, run_job, tmp_path)
    printed = capsys.readouterr().out
    assert [check.difference for check in checks] == [None], [check.line() for check in checks]
    assert results_table(printed) == results_table(readme_output())
    if not checks[0].kernels:  # the bundle's machine: identical, not merely close
        assert checks[0].tolerated == 0, checks[0].line()
    elif checks[0].tolerated:
        assert "floating-point kernels differ from the bundle's" in checks[0].line()
