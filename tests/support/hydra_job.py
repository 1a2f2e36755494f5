"""A single ``mcu-exp`` job in the test process, inside a Hydra job as the app runs it: the
config composed from the same command line, ``HydraConfig`` set the way Hydra's own
``run_job`` sets it (its run folder, mode RUN, the task's overrides), so what a job reads of
Hydra (its output folder, its overrides in the run name, the ``mcu.output_dir`` tag) is what
the app's job reads. No Hydra callbacks, logging set-up or ``.hydra/`` files: tests of those
run the app in a subprocess. ``HydraConfig`` is put back afterwards."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

CONF = Path(__file__).resolve().parents[2] / "conf"


@contextmanager
def hydra_job(*overrides: str) -> Iterator[DictConfig]:
    """The job's config (without its ``hydra`` node) while ``HydraConfig`` is the job's; its
    run folder (``hydra.run.dir``) created."""
    from hydra.core.hydra_config import HydraConfig

    import mcu_exp.app  # noqa: F401 (registers ${mcu_uid:}, which hydra.run.dir names)
    from support.compose import compose

    config = compose(*overrides, return_hydra_config=True, folder=CONF)
    before = HydraConfig.instance().cfg
    try:
        HydraConfig.instance().set_config(config)
        output_dir = os.path.abspath(str(OmegaConf.select(config, "hydra.run.dir")))
        with read_write(config.hydra.runtime), open_dict(config.hydra.runtime):
            config.hydra.runtime.output_dir = output_dir
        HydraConfig.instance().set_config(config)
        task = copy.deepcopy(config)
        with read_write(task), open_dict(task):
            del task["hydra"]
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        yield task
    finally:
        HydraConfig.instance().cfg = before
