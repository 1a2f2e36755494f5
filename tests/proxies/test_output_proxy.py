"""p0_output on an atoms-like dataset, its answers written into the generation cache as if a model
had given them: accuracy per program as the score, the theta label, the answer distribution, a
keyless program left out and counted, the error alignment against the readers' own answers, and
the request (the configured question, one seeded request per program)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcu_exp.data import Dataset, Program
from mcu_exp.data.types import evaluations_frame
from mcu_exp.proxies.p0_output import OutputConfig, OutputProxy, output_requests
from mcu_exp.proxies.stages import StageResults
from mcu_exp.rng_streams import OUTPUTS, program_seed
from support.proxies import compose_cfg, make_proxy, prefill, run_cached

KEYS = {"1": "3 5", "2": "true", "3": "21", "4": "abc", "5": None}
ANSWERS = {  # what the "model" answers, sample by sample (4 samples)
    "1": ["3 5", "```\n3\n5\n```", "3 6", "'3 6'"],  # 2 right; wrong: "3 6" twice
    "2": ["true", "true", "true", "false"],  # 3 right; wrong: "false"
    "3": ["13", "13", "9", "21"],  # 1 right; wrong: "13" twice, "9"
    "4": ["abc", "abc", "abc", "abc"],  # all right: not compared
}
HUMANS = [  # (program, subject, right?, answer)
    *[("1", f"s{i}", 1, "3 5") for i in range(3)],
    ("1", "s3", 0, "3 6"),
    ("1", "s4", 0, "2 5"),
    ("1", "s5", 0, "3 6"),
    ("2", "s0", 1, "true"),
    ("2", "s1", 0, " false "),
    ("3", "s0", 0, "13"),
    ("3", "s1", 0, "13"),
    ("3", "s2", 0, "21.0"),
    ("3", "s3", 1, "21"),
    ("4", "s0", 0, "ab"),
    ("5", "s0", 1, "x"),
]


def atoms_like() -> Dataset:
    programs = [
        Program(id=pid, language="c", code=f'void main() {{ printf("{pid}"); }}', meta={"answer": key})
        for pid, key in KEYS.items()
    ]
    pids, subjects, right, answers = zip(*HUMANS)
    evaluations = evaluations_frame(pids, subjects, right, [1] * len(pids), answer=answers)
    return Dataset(name="atoms-like", programs=programs, evaluations=evaluations, questions=[], source="test")


@pytest.fixture
def proxy(tmp_path: Path) -> OutputProxy:
    cfg = compose_cfg("proxy=p0_output", "proxy.samples=4", "reference=null", "proxy.error_permutations=50")
    made = make_proxy(cfg, atoms_like(), tmp_path)
    assert isinstance(made, OutputProxy)
    return made


def fill(proxy: OutputProxy) -> None:
    ids = ["1", "2", "3", "4"]
    requests = output_requests(proxy.ctx.model, proxy.ctx.dataset, ids, proxy.cfg)
    prefill(proxy.ctx.cache_dir, proxy.ctx.model, requests, lambda pos, i: ANSWERS[ids[pos]][i])


def test_the_score_is_the_share_of_right_samples_and_high_needs_half(
    proxy: OutputProxy, caplog: pytest.LogCaptureFixture
) -> None:
    fill(proxy)
    done, stats = run_cached(proxy)
    assert stats["generation_cache_misses"] == 0 and stats["model_loaded"] == 0  # no model: all cached
    with caplog.at_level(logging.WARNING):
        out = proxy.outcome(done)
    assert "p0_output: 1 of 5 programs have no answer key and are left out (first: 5)" in caplog.text
    table = out.table
    assert list(table.index) == ["1", "2", "3", "4"]
    assert list(table["score"]) == [0.5, 0.75, 0.25, 1.0] and list(table["label"]) == [1, 1, 0, 1]
    assert out.metrics["p0_output.programs_without_key"] == 1 and out.metrics["p0_output.samples"] == 16
    assert out.metrics["p0_output.sample_accuracy"] == pytest.approx(10 / 16)
    dist = out.records["output_answers"]
    one = dist[dist["program_id"] == "1"].set_index("answer")
    assert dict(one["count"]) == {"3 5": 2, "3 6": 2} and dict(one["is_correct"]) == {"3 5": True, "3 6": False}
    samples = out.records["output_samples"]
    assert samples.loc[1, "text"] == "```\n3\n5\n```" and samples.loc[1, "answer"] == "3 5"


def test_wrong_answers_are_set_beside_the_readers_wrong_answers(proxy: OutputProxy) -> None:
    fill(proxy)
    out = proxy.outcome(run_cached(proxy)[0])
    errors = out.records["error_alignment"].set_index("program_id")
    assert list(errors.index) == ["1", "2", "3"]  # program 4: the model is always right
    assert list(errors["model_top"]) == ["3 6", "false", "13"]
    # the study's judgement decides what is wrong ("21.0" was judged wrong), normalised like the model's
    assert list(errors["human_top"]) == ["3 6", "false", "13"]
    assert errors.loc["3", "human_wrong_answers"] == '{"13": 2, "21.0": 1}'
    assert out.metrics["errors.programs"] == 3 and out.metrics["errors.top_match"] == 1.0
    assert out.metrics["errors.human_err"] == 4  # program 4's reader erred too
    assert out.report[0].startswith("Error alignment: 3 programs where the model and the humans both err")


def test_without_readers_answers_there_is_no_error_alignment(tmp_path: Path) -> None:
    base = atoms_like()
    plain = Dataset(
        name=base.name,
        programs=base.programs,
        evaluations=base.evaluations.drop(columns=["answer"]),
        questions=[],
        source="test",
    )
    made = make_proxy(compose_cfg("proxy=p0_output", "proxy.samples=4", "reference=null"), plain, tmp_path)
    assert isinstance(made, OutputProxy)
    fill(made)
    out = made.outcome(run_cached(made)[0])
    assert "error_alignment" not in out.records and out.report == []
    assert not any(k.startswith("errors.") for k in out.metrics)


def test_one_request_per_keyed_program_asks_the_configured_question(proxy: OutputProxy) -> None:
    (stage,) = list(proxy.stages(StageResults()))
    assert len(stage.requests) == 4 and all(r.n == 4 and r.max_new_tokens == 32 for r in stage.requests)
    assert [r.seed for r in stage.requests] == [program_seed(0, pid, OUTPUTS) for pid in "1234"]
    user = stage.requests[0].messages[-1].content
    assert user.endswith("What does this C program print? Answer with the exact output only.")
    assert 'printf("1")' in user and user.startswith("```c\n")


def test_a_dataset_without_keys_is_one_line(tmp_path: Path) -> None:
    base = atoms_like()
    keyless = Dataset(
        name="x",
        programs=[Program(id=p.id, language="c", code=p.code) for p in base.programs],
        evaluations=base.evaluations,
        questions=[],
        source="test",
    )
    made = make_proxy(compose_cfg("proxy=p0_output", "reference=null"), keyless, tmp_path)
    assert not made.applies()
    with pytest.raises(ValueError, match=r"^p0_output needs each program's expected output .* none of the 5"):
        list(made.stages(StageResults()))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("proxy.samples=0", "proxy.samples=0: expected at least 1 sample per program"),
        ("proxy.threshold=1.5", "proxy.threshold=1.5: expected a share in [0, 1]"),
        ("proxy.question=' '", "proxy.question is empty"),
    ],
)
def test_bad_values_are_one_line_problems(tmp_path: Path, override: str, message: str) -> None:
    made = make_proxy(compose_cfg("proxy=p0_output", override), atoms_like(), tmp_path)
    problems = list(made.problems())
    assert len(problems) == 1 and problems[0].startswith(message)


def test_the_config_file_matches_the_class_defaults() -> None:
    cfg = compose_cfg("proxy=p0_output")
    assert {k: v for k, v in cfg.proxy.items() if k != "_target_"} == vars(OutputConfig())
