"""A sweep's jobs start through Hydra's own ``run_job`` with cheaper config copies and YAML
files: the files are Hydra's, byte for byte; a config's YAML text is emitted part by part, each
part once per content; a copy behaves as OmegaConf's deep copy."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.plugins import Plugins
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf._utils import get_omega_conf_dumper

from hydra_plugins.mcu_exp_sweeper import job_start
from hydra_plugins.mcu_exp_sweeper.compose_once import ComposeOnceSweeper
from mcu_exp.config import register_configs
from mcu_exp.job import config_yaml as cy

CONF = Path(__file__).resolve().parents[2] / "conf"


def pyyaml(container: object) -> str:
    """What ``OmegaConf.to_yaml`` writes for a plain container."""
    return str(
        yaml.dump(
            container, default_flow_style=False, allow_unicode=True, sort_keys=False, Dumper=get_omega_conf_dumper()
        )
    )


def project_config(*overrides: str) -> DictConfig:
    register_configs()
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF)))
    return loader.load_configuration("config", overrides=list(overrides), run_mode=RunMode.MULTIRUN)


TRICKY = {
    "empty": {},
    "none": None,
    "list": [],
    "nested": {"rows": [{"a": 1, "b": [1.5, "x"]}, {"c": None}], "flag": True, "on": "yes"},
    "null": {"true": "1", "key with space": "value: with colon", "#hash": "é ü ∆ 中"},
    "long": "word " * 40 + "end\nsecond line\\ with a backslash\n",
    "quoted": "${interpolation:a,b}",
    "number_text": "0.10",
    "multi": {"a": {"b": {"c": "deep"}}},
}


@pytest.mark.parametrize("overrides", [(), ("proxy=p0", "decision.epsilon=0.3")], ids=["defaults", "p0"])
def test_a_config_and_its_hydra_node_read_as_pyyaml_writes_them(overrides: tuple[str, ...]) -> None:
    cfg = project_config(*overrides)
    hydra_node = OmegaConf.to_container(OmegaConf.masked_copy(cfg, "hydra"), resolve=False, enum_to_str=True)
    task = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    assert isinstance(task, dict)
    task.pop("hydra")
    for container in (task, hydra_node, ["a=1", "b=2"], TRICKY, {"one": TRICKY}):
        assert cy.config_yaml(container) == pyyaml(container)


def test_each_part_is_emitted_once_per_content() -> None:
    cy._pieces.clear()
    first = project_config("decision.epsilon=0.2")
    task = OmegaConf.to_container(first, resolve=False, enum_to_str=True)
    assert isinstance(task, dict)
    cy.config_yaml(task)
    kept = len(cy._pieces)
    assert kept > 20  # the top two levels, entry by entry
    task["decision"]["epsilon"] = 0.3  # the next job of an ε sweep
    text = cy.config_yaml(task)
    assert len(cy._pieces) == kept + 1  # one new piece: decision.epsilon
    assert "  epsilon: 0.3\n" in text and text == pyyaml(task)
    task["decision"]["epsilon"] = "0.3"  # the same text in another type is another entry
    assert cy.config_yaml(task) == pyyaml(task) and len(cy._pieces) == kept + 2


def test_a_copy_is_a_deep_copy() -> None:
    cfg = project_config("decision.epsilon=0.2")
    OmegaConf.set_readonly(cfg.hydra, True)
    for node in (cfg, OmegaConf.masked_copy(cfg, "hydra")):
        copied = job_start.config_copy(node)
        expected = copy.deepcopy(node)
        assert OmegaConf.to_container(copied) == OmegaConf.to_container(expected)
        assert copied._get_parent() is expected._get_parent()
        assert all(copied._get_node(k)._get_parent() is copied for k in copied)
        assert OmegaConf.is_readonly(copied.hydra) and OmegaConf.get_type(copied, "hydra") is OmegaConf.get_type(
            node, "hydra"
        )
    copied = job_start.config_copy(cfg)
    copied.decision.epsilon = 0.4  # its copy changes, not the original
    assert cfg.decision.epsilon == 0.2


def sweep_files(tmp_path: Path, sweeper_class: str) -> dict[str, bytes]:
    """Run ``x=1,2`` in this process with the named sweeper; the bytes of each job's ``.hydra`` files."""
    conf = tmp_path / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "config.yaml").write_text("x: 0\nlong: " + "word " * 30 + "end\nnested: {a: [1, {b: null}]}\n")
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(conf)))
    overrides = [f"hydra.sweep.dir={tmp_path / 'multirun'}", "hydra.job.chdir=false"]
    master = loader.load_configuration("config", overrides=overrides, run_mode=RunMode.MULTIRUN)
    sweeper = Plugins.instance().class_name_to_class[sweeper_class]
    made = sweeper() if "ComposeOnce" in sweeper_class else sweeper(max_batch_size=None)
    made.setup(hydra_context=HydraContext(loader, Callbacks(master)), task_function=lambda cfg: None, config=master)
    made.sweep(["x=1,2"])
    return {str(p.relative_to(tmp_path)): p.read_bytes() for p in sorted((tmp_path / "multirun").glob("*/.hydra/*"))}


def test_the_jobs_hydra_files_are_hydras_own(tmp_path: Path) -> None:
    cy._pieces.clear()
    ours = sweep_files(tmp_path, f"{ComposeOnceSweeper.__module__}.ComposeOnceSweeper")
    assert len(cy._pieces) > 0  # written through the pieces
    hydras = sweep_files(tmp_path, "hydra._internal.core_plugins.basic_sweeper.BasicSweeper")
    assert len(ours) == 6 and ours == hydras
