"""Every config group option composes in-process into the typed schema, and every proxy it
names builds and passes its own value checks: a broken YAML file fails here, not in a sweep."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import DictConfig

from mcu_exp.config import Config, ExpertsConfig, ModelConfig, ScorerConfig
from mcu_exp.data import Dataset, Program
from mcu_exp.data.types import evaluations_frame
from mcu_exp.job.validate import config_problems
from mcu_exp.pipeline import build_proxies, typed_config
from mcu_exp.proxies.base import ProxyContext
from support.compose import compose

CONF = Path(__file__).resolve().parents[2] / "conf"
GROUPS = ("dataset", "model", "proxy", "scorer", "experts", "decision", "tracking", "debug", "experiment", "probe")
NEEDS = {("dataset", "custom"): ["dataset.root=/tmp/some-folder"]}


def compose_cfg(*overrides: str) -> DictConfig:
    """The job config the app builds from ``overrides`` (in-process; nothing loaded, nothing run)."""
    return compose(*overrides, folder=CONF)


def options() -> list[tuple[str, str]]:
    return [(group, path.stem) for group in GROUPS for path in sorted((CONF / group).glob("*.yaml"))]


def context(cfg: Config) -> ProxyContext:
    dataset = Dataset(
        name="tiny",
        programs=[Program(id="a", language="java", code="int f() { return 1; }")],
        evaluations=evaluations_frame([], [], [], []),
        questions=[],
        source="test",
    )
    return ProxyContext(
        dataset=dataset,
        program_ids=["a"],
        model=cfg.model,
        scorer=cfg.scorer,
        experts=cfg.experts,
        decision=cfg.decision,
        cache_dir=Path("/nonexistent"),
        progress=False,
    )


def test_every_group_has_options() -> None:
    found = {group for group, _ in options()}
    assert found == set(GROUPS)


@pytest.mark.parametrize(("group", "option"), options(), ids=lambda v: str(v))
def test_each_option_composes_types_and_builds(group: str, option: str) -> None:
    overrides = [f"{group}={option}", *NEEDS.get((group, option), [])]
    if group == "decision" and option != "conformal":
        overrides.append("proxy=p2")  # θ rules need P2's similarity scores
    cfg = typed_config(compose_cfg(*overrides))
    assert isinstance(cfg, Config) and isinstance(cfg.model, ModelConfig)
    assert isinstance(cfg.scorer, ScorerConfig) and isinstance(cfg.experts, ExpertsConfig)
    for member in cfg.experts.members.values():
        assert isinstance(member.model, ModelConfig) and member.model.name  # composed from conf/model/
    assert list(config_problems(cfg)) == []
    proxy, reference = build_proxies(cfg, context(cfg))
    assert proxy.name == cfg.proxy["name"]
    assert reference is None or reference.name == "p0"


def test_default_job_is_p1_on_the_embedded_stack() -> None:
    cfg = typed_config(compose_cfg())
    assert (cfg.dataset.name, cfg.model.name, cfg.proxy["name"], cfg.scorer.name) == (
        "scalabrino",
        "smollm2-135m",
        "p1",
        "minilm",
    )
    assert cfg.decision.epsilon == 0.1 and cfg.reference["name"] == "p0"
    assert "r" not in cfg.proxy and "samples" not in cfg.proxy  # P1 carries only its own settings


def test_debug_applies_after_the_experiment() -> None:
    quick = typed_config(compose_cfg("experiment=paper_p1", "debug=quick"))
    assert (quick.proxy["k"], quick.dataset.limit) == (6, 6)
    paper = typed_config(compose_cfg("experiment=paper_p1"))
    assert (paper.proxy["k"], paper.proxy["k_cal"], paper.reference["samples"]) == (50, 25, 50)


def test_scorer_fallback_is_composed_by_hydra() -> None:
    cfg = typed_config(compose_cfg("scorer=deberta_base", "scorer.fallback.num_layers=5"))
    assert cfg.scorer.fallback["name"] == "minilm" and cfg.scorer.fallback["num_layers"] == 5
    assert cfg.scorer.allow_fallback is False


def test_expert_member_overrides_reach_its_model() -> None:
    cfg = typed_config(compose_cfg("experts.members.smollm2-b.model.max_new_tokens=17"))
    members = cfg.experts.members
    assert list(members) == ["smollm2-a", "smollm2-b", "smollm2-c"]
    assert members["smollm2-b"].model.max_new_tokens == 17
    assert members["smollm2-a"].model.max_new_tokens == members["smollm2-c"].model.max_new_tokens != 17
    assert [m.model.temperature for m in members.values()] == [0.7, 0.9, 1.0]


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("decision.epsilon=1.5", "decision.epsilon=1.5: expected a value in (0, 1)"),
        ("labels.group=students", "labels.group='students'"),
        ("evaluation.bootstrap_resamples=10", "evaluation.bootstrap_resamples=10: expected at least 1000"),
        (
            "decision.rule=majority",
            "unknown decision rule 'majority' (decision.rule) (known: conformal, theta, p1_and_theta)",
        ),
    ],
)
def test_out_of_range_values_are_named_by_key(override: str, needle: str) -> None:
    problems = list(config_problems(typed_config(compose_cfg(override))))
    assert len(problems) == 1 and needle in problems[0]


def test_proxy_values_are_checked_by_the_proxy() -> None:
    cfg = typed_config(compose_cfg("proxy.k_cal=1"))
    with pytest.raises(ValueError, match=r"^proxy.k=20, proxy.k_cal=1: the calibration and test subsets"):
        build_proxies(cfg, context(cfg))


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("model=gpt4o", "unknown model 'gpt4o': did you mean gpt-4o? (options: "),
        ("experiment=paper_gird", "unknown experiment 'paper_gird': did you mean paper_grid? (options: paper_grid, "),
        ("decision=conformall", "unknown decision 'conformall': did you mean conformal? (options: conformal, "),
        ("probe=rename_identifers", "unknown probe 'rename_identifers': did you mean rename_identifiers? (options: "),
        ("decision.epsilon=abc", "decision.epsilon expects a number, got 'abc'"),
        ("dataset.limit=six", "dataset.limit expects a whole number, got 'six'"),
    ],
)
def test_composition_errors_are_one_line_with_a_suggestion(override: str, expected: str) -> None:
    from mcu_exp.config.suggest import composition_message

    with pytest.raises(Exception) as caught:  # Hydra's composition errors, of several classes
        compose_cfg(override)
    message = composition_message(caught.value)
    assert message is not None and message.startswith(expected) and "\n" not in message
    if "options:" in expected:  # every option of the group is named, the group's YAML files
        group = override.partition("=")[0]
        assert message.endswith(", ".join(sorted(p.stem for p in (CONF / group).glob("*.yaml"))) + ")")


def test_three_studies_sweeps_p1_over_the_three_datasets_and_p0_output_on_atoms() -> None:
    """experiment=three_studies is one 4-job sweep (atoms first, the longest); each job pairs a
    dataset with its proxy and decodes in bfloat16, two jobs at a time on one thread each."""
    sweep = compose("experiment=three_studies", return_hydra_config=True, folder=CONF)
    jobs = str(sweep.hydra.sweeper.params["+three_studies"]).split(",")
    assert jobs == ["p1_atoms", "p1_scalabrino", "p1_stakelab", "p0_output_atoms"]
    assert sweep.hydra.launcher.n_jobs == 2 and "joblib" in sweep.hydra.launcher._target_
    want = {"p1_atoms": ("atoms", "p1"), "p1_scalabrino": ("scalabrino", "p1")}
    want |= {"p1_stakelab": ("stakelab", "p1"), "p0_output_atoms": ("atoms", "p0_output")}
    for job, (dataset, proxy) in want.items():
        cfg = typed_config(compose_cfg("experiment=three_studies", f"+three_studies={job}"))
        assert (cfg.dataset.name, cfg.proxy["name"]) == (dataset, proxy)
        assert (cfg.model.dtype, cfg.model.num_threads) == ("bfloat16", 1)


def test_the_schema_is_stored_once_and_again_when_removed_or_replaced() -> None:
    """``register_configs()`` keeps its ConfigStore entry (building it costs ~20 ms a call, and
    every composition calls it), and stores the schema again when a plugin or test removed or
    replaced the entry, so a composition always finds the schema."""
    from hydra.core.config_store import ConfigNode, ConfigStore
    from omegaconf import OmegaConf

    from mcu_exp.config import register_configs, schema

    repo = ConfigStore.instance().repo
    register_configs()
    first = repo[schema.SCHEMA_ENTRY]
    register_configs()
    assert repo[schema.SCHEMA_ENTRY] is first
    del repo[schema.SCHEMA_ENTRY]
    register_configs()
    again = repo[schema.SCHEMA_ENTRY]
    assert again is not first and OmegaConf.to_yaml(again.node) == OmegaConf.to_yaml(first.node)
    other = OmegaConf.create({"other": 1})
    repo[schema.SCHEMA_ENTRY] = ConfigNode(
        name=schema.SCHEMA_ENTRY, node=other, group=None, package=None, provider=None
    )
    register_configs()
    assert OmegaConf.to_yaml(repo[schema.SCHEMA_ENTRY].node) == OmegaConf.to_yaml(first.node)
    assert typed_config(compose_cfg()).decision.epsilon == 0.1
