"""The sweeper composes each job's config once (Hydra's basic sweeper composes it twice), and
every job still gets its own overrides and a config of its own."""

from __future__ import annotations

from pathlib import Path

import yaml
from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig, OmegaConf

from hydra_plugins.mcu_exp_sweeper.compose_once import ComposeOnceSweeper
from mcu_exp.config import register_configs
from mcu_exp.job.merge_once import MergeOnceLoader
from mcu_exp.redact import redact_text

CONF = Path(__file__).resolve().parents[2] / "conf"


class CountingLoader(ConfigLoaderImpl):
    """Hydra's config loader, counting the job configs it composes."""

    composed = 0

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        type(self).composed += 1
        return super().load_sweep_config(master_config, sweep_overrides)


def sweep(sweeper: Sweeper, tmp_path: Path) -> tuple[int, list[dict]]:
    """Run ``x=1,2,3`` with ``sweeper`` in this process; the compositions and what each job saw."""
    conf = tmp_path / "conf"
    conf.mkdir(parents=True)
    (conf / "config.yaml").write_text("x: 0\ny: 5\n")
    loader = CountingLoader(config_search_path=create_config_search_path(str(conf)))
    overrides = [f"hydra.sweep.dir={tmp_path / 'multirun'}", "hydra.output_subdir=null", "hydra.job.chdir=false"]
    master = loader.load_configuration("config", overrides=overrides, run_mode=RunMode.MULTIRUN)
    CountingLoader.composed = 0
    seen: list[dict] = []

    def task(cfg: DictConfig) -> None:
        seen.append(OmegaConf.to_container(cfg))  # type: ignore[arg-type]
        cfg.y = 99  # a job changing its own config leaves the others' alone

    sweeper.setup(hydra_context=HydraContext(loader, Callbacks(master)), task_function=task, config=master)
    sweeper.sweep(["x=1,2,3"])
    return CountingLoader.composed, seen


def test_each_job_is_composed_once_with_its_overrides(tmp_path: Path) -> None:
    # The classes as Hydra's plugin scan last loaded them: a job run earlier in this process
    # re-executed their modules, and BasicSweeper.__init__ names its class through the module.
    once = Plugins.instance().class_name_to_class[f"{ComposeOnceSweeper.__module__}.ComposeOnceSweeper"]
    composed, seen = sweep(once(), tmp_path / "once")
    assert composed == 3
    assert seen == [{"x": 1, "y": 5}, {"x": 2, "y": 5}, {"x": 3, "y": 5}]
    basic = Plugins.instance().class_name_to_class["hydra._internal.core_plugins.basic_sweeper.BasicSweeper"]
    basic_composed, basic_seen = sweep(basic(max_batch_size=None), tmp_path / "basic")
    assert (basic_composed, basic_seen) == (6, seen)  # Hydra's own: twice a job, the same configs


def test_the_help_text_holds_nothing_the_secret_masking_rewrites() -> None:
    """Hydra copies the help text into every job's ``.hydra/hydra.yaml``; a ``key=value`` in it
    looked like a secret, so each job of a sweep rewrote that file (``key=***``) through
    OmegaConf, about a tenth of a decision-only job's CPU."""
    header = yaml.safe_load((CONF / "hydra" / "help" / "mcu_exp.yaml").read_text(encoding="utf-8"))["header"]
    assert redact_text(header) == header
    assert "mcu-exp -m name=a,b" in header


def test_jobs_sharing_a_defaults_list_merge_its_files_once_into_hydras_own_config(tmp_path: Path) -> None:
    """A sweep over values (ε) reads and merges the project's config files once; a job choosing another
    config group (``proxy=p0``) gets its own merge; every job's config, hydra node included, is
    the one Hydra's own loader composes, whatever an earlier job did to its copy."""
    register_configs()
    plain = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF)))
    master = plain.load_configuration(
        "config", overrides=[f"hydra.sweep.dir={tmp_path}", "quiet=true"], run_mode=RunMode.MULTIRUN
    )
    fast = MergeOnceLoader.wrapping(plain)
    assert isinstance(fast, MergeOnceLoader)
    jobs = [
        ["decision.epsilon=0.1"],
        ["decision.epsilon=0.2", "labels.group=phd"],
        ["proxy=p0"],
        ["decision.epsilon=0.3"],
    ]
    for overrides in jobs:
        composed = fast.load_sweep_config(master, overrides)
        assert OmegaConf.to_yaml(composed) == OmegaConf.to_yaml(plain.load_sweep_config(master, overrides))
        assert OmegaConf.is_struct(composed)
        composed.decision.epsilon = 0.9  # a job changing its own config leaves the others' alone
    assert len(fast.merged) == 2
    assert len(fast.repos) == 1  # the files were read once for all four jobs
    assert (
        MergeOnceLoader.wrapping(CountingLoader(config_search_path=plain.config_search_path)).__class__
        is CountingLoader
    )


def test_the_defaults_list_is_built_once_per_group_choices_and_configs_stay_hydras(tmp_path: Path) -> None:
    """Jobs differing only in values (ε, the reader group) share one defaults list; choosing a
    group (``proxy=p0``, ``experiment=paper_p0``) builds another; the choices
    Hydra records and every job's config are those of Hydra's own loader, and a mistaken group
    option still fails as it does there."""
    import pytest
    from hydra.errors import ConfigCompositionException

    from mcu_exp.job import merge_once

    register_configs()
    plain = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF)))
    master = plain.load_configuration(
        "config", overrides=[f"hydra.sweep.dir={tmp_path}", "quiet=true"], run_mode=RunMode.MULTIRUN
    )
    fast = MergeOnceLoader.wrapping(plain)
    jobs = [
        ["decision.epsilon=0.1"],
        ["decision.epsilon=0.2", "labels.group=phd"],
        ["proxy=p0", "decision.epsilon=0.3"],
        ["decision.epsilon=0.4"],
        ["proxy=p0"],
        ["experiment=paper_p0"],
    ]
    for overrides in jobs:
        composed = fast.load_sweep_config(master, overrides)
        own = plain.load_sweep_config(master, overrides)
        assert OmegaConf.to_yaml(composed) == OmegaConf.to_yaml(own)
        assert composed.hydra.runtime.choices == own.hydra.runtime.choices
        assert composed.hydra.overrides.task == own.hydra.overrides.task
    (built,) = [v for k, v in merge_once._DEFAULTS_LISTS.items() if k in fast.repos.values()]
    assert len(built) == 3  # no group override, proxy=p0, experiment=paper_p0
    with pytest.raises(ConfigCompositionException, match="nope"):
        fast.load_sweep_config(master, ["proxy=nope"])
    with pytest.raises(ConfigCompositionException, match="nope"):
        plain.load_sweep_config(master, ["proxy=nope"])


def test_the_tests_shared_compose_is_hydras_own_and_sees_a_changed_config_store() -> None:
    """``support.compose`` (one loader per config folder for the test process) composes what
    ``initialize_config_dir`` and ``compose`` compose, for repeated and new group choices, and a
    ConfigStore entry stored or replaced meanwhile is seen by the next composition."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.config_store import ConfigStore

    from support.compose import compose

    register_configs()
    cases = [["decision.epsilon=0.2"], ["decision.epsilon=0.3", "quiet=true"], ["proxy=p0"], ["decision.epsilon=0.2"]]
    for overrides in cases:
        for hydra_node in (False, True):
            with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
                own = hydra_compose("config", overrides=overrides, return_hydra_config=hydra_node)
            shared = compose(*overrides, return_hydra_config=hydra_node)
            assert OmegaConf.to_yaml(shared) == OmegaConf.to_yaml(own)
    store = ConfigStore.instance()
    try:
        for epsilon in (0.42, 0.43):  # the same entry, its content replaced
            store.store(group="decision", name="shared_compose_probe", node={"rule": "conformal", "epsilon": epsilon})
            assert compose("decision=shared_compose_probe").decision.epsilon == epsilon
    finally:
        store.repo["decision"].pop("shared_compose_probe.yaml", None)
