"""``mcu-exp compare``: two finished runs side by side, with paired intervals and tests
(the statistics live in :mod:`mcu_exp.evaluation.paired` and :mod:`mcu_exp.evaluation.rejection`)."""
