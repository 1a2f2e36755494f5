"""mcu-exp's Hydra sweeper (``hydra/sweeper=mcu_exp``, the default of ``conf/config.yaml``).

Hydra instantiates sweepers only from the ``hydra_plugins`` package, hence this package's place
beside ``mcu_exp``."""

from hydra_plugins.mcu_exp_sweeper.compose_once import ComposeOnceSweeper

__all__ = ["ComposeOnceSweeper"]
