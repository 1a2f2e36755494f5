"""The report leads with the answer: which configuration aligns best (ΔF1 vs always-1's lower
bound, then AUC (score)'s), does it beat the always-understandable baseline, where it lies
against the humans' bounds (an old run: its share of ceiling, labelled); the
verdicts as one column of the main table; summary.csv's headline numbers in columns of their
own; `mcu-exp report` prints the ranked table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from mcu_exp.cli.report import main
from mcu_exp.report import ranking, tables
from mcu_exp.report.html import ReportDocument, Section, render_html, render_markdown
from mcu_exp.report.lead import BEST, SHARE_COLUMN, UPPER_COLUMN, lead
from support.html_tables import element_text, parse
from support.mlflow_runs import METRICS, Store, log_job


def record(run_id: str, group: str, eps: float, f1: tuple[float, float, float], always: float, **extra: float) -> dict:
    """A run of smollm2 on reader group ``group`` at ε ``eps`` with F1 (value, low, high)."""
    params = {
        "decision.epsilon": str(eps),
        "decision.rule": "conformal",
        "decision.quantile": "empirical",
        "labels.group": group,
    }
    tags = {"mcu.model": "smollm2-135m", "mcu.proxy": "p1", "mcu.labels.group": group}
    metrics = {
        "f1": f1[0],
        "f1_ci_low": f1[1],
        "f1_ci_high": f1[2],
        "baseline_always_f1": always,
        "baseline_random_f1": 0.5,
        "auc_score": 0.6,
        "auc_score_ci_low": 0.45,
        "auc_score_ci_high": 0.75,
        "n": 6.0,
        **extra,
    }
    return tables.run_record(run_id, run_id, "1", "FINISHED", len(run_id), tags, params, metrics)


def issue_sweep() -> pd.DataFrame:
    """ε × reader group as in the issue: professional's F1 looks best (66.7 %) but its always-1
    baseline is 80 %; all's 57.1 % stands against 50 %."""
    return tables.runs_frame(
        [
            record("a1", "all", 0.1, (0.571, 0.45, 0.70), 0.5),
            record("a2", "all", 0.2, (0.571, 0.52, 0.70), 0.5, auc_score_ci_low=0.40),
            record("p1", "professional", 0.1, (0.667, 0.50, 0.85), 0.8),
            record("p2", "professional", 0.2, (0.667, 0.50, 0.85), 0.8, auc_score_ci_low=0.55),
        ]
    )


def test_ranking_is_delta_f1_lower_bound_then_auc_lower_bound() -> None:
    items = [
        ranking.headline({"f1": 0.6, "f1_ci_low": 0.5, "f1_ci_high": 0.7, "baseline_always_f1": 0.4}),
        ranking.headline({"f1": 0.9, "f1_ci_low": 0.6, "f1_ci_high": 1.0, "baseline_always_f1": 0.8}),
        ranking.headline(
            {"f1": 0.6, "f1_ci_low": 0.5, "f1_ci_high": 0.7, "baseline_always_f1": 0.4, "auc_score": 0.7}
            | {"auc_score_ci_low": 0.6, "auc_score_ci_high": 0.8}
        ),
        ranking.headline({"f1": math.nan, "baseline_always_f1": 0.4}),
    ]
    assert ranking.ranked(items) == [2, 0, 1, 3]  # +10 pp (AUC 0.6 before none), −20 pp, undefined last
    assert items[2].delta_f1.low == pytest.approx(0.1) and items[2].beats_always and items[2].beats_chance
    assert items[1].beats_always is False and items[3].beats_always is None
    assert items[0].auc_name == "auc_binary" and items[2].auc_name == "auc_score"
    assert ranking.verdict_marks(items[2]) == "✓ F1 · ✓ AUC" and ranking.verdict_marks(items[3]) == "? F1 · ? AUC"
    assert ranking.delta_text(items[1]) == "+10.0 pp [−20.0, +20.0]"


def test_the_answer_names_the_winner_or_says_none_beats_the_baseline() -> None:
    beats = ranking.headline({"f1": 0.7, "f1_ci_low": 0.62, "f1_ci_high": 0.8, "baseline_always_f1": 0.6})
    short = ranking.headline({"f1": 0.7, "f1_ci_low": 0.55, "f1_ci_high": 0.8, "baseline_always_f1": 0.6})
    assert ranking.answer(["A", "B"], [short, beats]) == (
        "B beats the always-understandable baseline by +10.0 pp [+2.0, +20.0] F1 (70.0% [62.0%, 80.0%] vs 60.0%)."
    )
    assert ranking.answer(["A"], [short]) == (
        "No configuration beats the always-understandable baseline; the closest, A, has ΔF1 +10.0 pp [−5.0, +20.0] "
        "(70.0% [55.0%, 80.0%] vs 60.0%)."
    )


def test_the_page_opens_with_the_best_configuration_against_its_baseline() -> None:
    frame = issue_sweep()
    keys = tables.varying_keys(frame)
    summary = tables.summary_table(frame, keys)
    opening = lead(summary, keys)
    main_table = tables.display_table(summary, keys)
    page = render_html(ReportDocument("r", {"runs": "4"}, [Section("Alignment", main_table)], [], lead=opening))

    parsed = parse(page)
    assert parsed.blocks[:3] == ["h1", "section#answer", "dl"]  # the answer before anything else
    (answer,) = element_text(page, "p", "answer")
    assert answer == opening.answer and answer.endswith(
        "beats the always-understandable baseline by +7.1 pp [+2.0, +20.0] F1 (57.1% [52.0%, 70.0%] vs 50.0%)."
    )
    ranked = parsed.tables[0]
    assert ranked.inside == "section#answer"
    records = ranked.records()
    assert [r["configuration"] for r in records] == [
        "reader group=all · ε=0.2",  # ΔF1 ≥ +2.0 pts
        "reader group=all · ε=0.1",  # ≥ −5.0 pts
        "reader group=professional · ε=0.2",  # ≥ −30.0 pp, AUC ≥ 0.55
        "reader group=professional · ε=0.1",  # ≥ −30.0 pp, AUC ≥ 0.45
    ]
    assert records[0]["rank"] == f"1 {BEST}" and records[1]["rank"] == "2"
    assert records[2]["F1"] == "66.7% [50.0%, 85.0%]" and records[2]["F1 always-1"] == "80.0%"
    assert records[2]["ΔF1 vs always-1"] == "−13.3 pp [−30.0, +5.0]" and records[2]["verdict"] == "✗ F1 · ✓ AUC"
    assert records[0]["verdict"] == "✓ F1 · ✗ AUC"

    shown = parsed.tables[1].records()  # the main table: the verdict as one column, in table order
    assert [r["verdict"] for r in shown] == ["✗ F1 · ✗ AUC", "✓ F1 · ✗ AUC", "✗ F1 · ✗ AUC", "✗ F1 · ✓ AUC"]
    assert ": verdict: " not in page  # no note per row
    markdown = render_markdown(ReportDocument("r", {}, [], [], lead=opening))
    assert markdown.splitlines()[2] == f"**{opening.answer}**"


def test_the_first_sentence_says_which_configuration_beats_the_baseline() -> None:
    frame = issue_sweep()
    keys = tables.varying_keys(frame)
    opening = lead(tables.summary_table(frame, keys), keys)
    assert opening.answer == (
        "reader group=all · ε=0.2 beats the always-understandable baseline by "
        "+7.1 pp [+2.0, +20.0] F1 "
        "(57.1% [52.0%, 70.0%] vs 50.0%)."
    )
    assert opening.best[0] == "Best configuration: smollm2-135m · p1 · reader group=all · ε=0.2"


def test_the_lead_reads_the_best_against_the_humans_bounds() -> None:
    from support.ceiling_keys import bounds_metrics

    frame = tables.runs_frame(
        [
            record("a1", "all", 0.1, (0.571, 0.52, 0.70), 0.5, **bounds_metrics()),
            record("a2", "all", 0.2, (0.571, 0.45, 0.70), 0.5),  # logged no ceiling
        ]
    )
    keys = tables.varying_keys(frame)
    opening = lead(tables.summary_table(frame, keys), keys)
    assert opening.table[UPPER_COLUMN].tolist() == ["−0.240 [−0.370, −0.110]", "—"]  # as logged, best first
    assert SHARE_COLUMN not in opening.table.columns
    assert opening.best[2] == (
        "Humans' bounds on AUC (score): lower 0.650 [0.560, 0.750] (half panel), upper 0.820 [0.760, 0.880] "
        "(reader model); AUC (score) − lower −0.070 [−0.200, +0.060], − upper −0.240 [−0.370, −0.110]"
    )
    assert "95 % CI over programs" in opening.caption


def test_an_old_runs_share_of_ceiling_is_shown_labelled() -> None:
    from support.ceiling_keys import old_metrics

    frame = tables.runs_frame([record("o", "all", 0.1, (0.571, 0.52, 0.70), 0.5, **old_metrics())])
    keys = tables.varying_keys(frame)
    opening = lead(tables.summary_table(frame, keys), keys)
    assert opening.table[SHARE_COLUMN].tolist() == ["53.3% [-50.0%, 120.0%]"]
    assert UPPER_COLUMN not in opening.table.columns
    assert opening.best[2] == (
        "Humans' AUC (score) ceiling 0.650 [0.560, 0.750] (old run: interval over reader splits), "
        "share of it 53.3% [−50.0%, 120.0%]"
    )
    assert "run logged before the bounds" in opening.caption


def test_summary_csv_holds_rank_delta_f1_and_the_verdict_as_numbers() -> None:
    frame = issue_sweep()
    keys = tables.varying_keys(frame)
    summary = tables.csv_table(tables.summary_table(frame, keys)).set_index("run_id")
    assert summary.loc[["a2", "a1", "p2", "p1"], "rank"].tolist() == [1, 2, 3, 4]
    assert summary.loc["p1", "f1_minus_always"] == pytest.approx(0.667 - 0.8)
    assert summary.loc["p1", "f1_minus_always_ci_low"] == pytest.approx(0.5 - 0.8)
    assert summary.loc["p1", "f1_minus_always_ci_high"] == pytest.approx(0.85 - 0.8)
    assert summary.loc["a2", "f1_beats_always"] is True and summary.loc["p2", "f1_beats_always"] is False
    assert summary.loc["p2", "auc_beats_chance"] is True


def test_report_command_prints_the_ranked_table_and_the_answer(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exp = "lead"
    log_job(store, exp, ["decision.epsilon=0.1"], metrics={**METRICS, "f1_ci_low": 0.7, "f1": 0.75})
    log_job(store, exp, ["decision.epsilon=0.2"])
    main(["--tracking-uri", store.uri, "--experiment", exp, "--out", str(tmp_path / "r"), "--no-log"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert any("ΔF1 vs always-1" in line for line in lines)  # the table's header
    best = next(line for line in lines if BEST in line)
    assert "ε=0.1" in best and "+6.6 pp [+1.6, +11.6]" in best
    assert "ε=0.1 beats the always-understandable baseline by +6.6 pp" in out.replace("\n", " ")
    assert "Every row: smollm2-135m · p1." in out
    assert str(tmp_path / "r" / "report.html") in out


def wide_summary() -> tuple[pd.DataFrame, list[str]]:
    """Five models with every main metric, their CIs and the humans' bounds: 23 columns."""
    from support.ceiling_keys import bounds_metrics

    metrics = {"accuracy": 0.6, "precision": 0.61, "recall": 0.62, "auc_score": 0.6, "spearman": 0.3, "kendall": 0.2}
    ci = {f"{m}_ci_{b}": v for m, v in metrics.items() for b in ("low", "high")}
    models = ["qwen3-14b", "gpt-4o", "deepseek-coder-v2-lite", "codellama-13b", "llama-3.1-8b"]
    frame = tables.runs_frame(
        [
            {
                **record(m, "all", round(0.1 + i / 10, 2), (0.6, 0.5, 0.7), 0.684),
                **metrics,
                **ci,
                "auc_score_perm_p": 0.01,
                **bounds_metrics(proxy=0.6),
            }
            for i, m in enumerate(models)
        ]
    )
    keys = tables.varying_keys(frame)
    return tables.summary_table(frame, keys), keys


def test_a_wide_main_table_is_split_into_two_tables_on_the_page() -> None:
    from mcu_exp.report.display import FIRST_PANEL, SECOND_PANEL, main_panels

    summary, keys = wide_summary()
    shown = tables.display_table(summary, keys)
    assert len(shown.columns) >= 17
    page = render_html(ReportDocument("r", {}, [Section("Alignment", shown, panels=main_panels(shown, keys))], []))
    first, second = parse(page).tables
    assert first.header == [
        *(
            "model",
            "proxy",
            "ε",
            "runs",
            "n",
            "verdict",
            "F1",
            "F1 always-1",
            "F1 random",
            "F1 lower bound",
        ),
        *("AUC (score)", "AUC (score) lower bound", "AUC (score) upper bound"),
        *("AUC (score) − lower bound", "AUC (score) − upper bound"),
    ]
    assert (
        second.header[:3] == ["model", "proxy", "ε"] and "precision" in second.header and "ρ ceiling" in second.header
    )
    assert sorted(first.header[3:] + second.header[3:]) == sorted(shown.columns[3:])  # every column, once
    assert f"<h3>{FIRST_PANEL}</h3>" in page and f"<h3>{SECOND_PANEL}</h3>" in page
    markdown = render_markdown(
        ReportDocument("r", {}, [Section("Alignment", shown, panels=main_panels(shown, keys))], [])
    )
    assert "| model | proxy | ε | runs | n | verdict | accuracy |" in markdown  # Markdown keeps the one table


@pytest.mark.slow  # headless Chromium (a few seconds)
def test_the_report_page_fits_a_1400_px_window_with_margins(tmp_path: Path) -> None:
    import re

    from mcu_exp.report.display import main_panels
    from support.browser import chromium

    summary, keys = wide_summary()
    shown = tables.display_table(summary, keys)
    doc = ReportDocument(
        "wide", {}, [Section("Alignment", shown, panels=main_panels(shown, keys))], [], lead=lead(summary, keys)
    )
    probe = (
        "<script>window.addEventListener('load', () => { const d = document.body.dataset;"
        " const right = [...document.querySelectorAll('table')].map(t => t.getBoundingClientRect().right);"
        " d.tables = Math.ceil(Math.max(...right)); d.scroll = document.documentElement.scrollWidth;"
        " d.width = document.documentElement.clientWidth;"
        " d.left = Math.floor(document.querySelector('h1').getBoundingClientRect().left); });</script></body>"
    )
    page = tmp_path / "page.html"
    page.write_text(render_html(doc).replace("</body>", probe), encoding="utf-8")
    res = chromium(page.as_uri(), tmp_path / "profile", "--window-size=1400,900", "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    found = {k: int(v) for k, v in re.findall(r'data-(\w+)="(\d+)"', res.stdout)}
    assert found["scroll"] <= found["width"], found  # the page does not scroll sideways
    assert found["left"] >= 16 and found["tables"] <= found["width"] - 16, found  # every table inside the margins
