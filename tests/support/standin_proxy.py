"""A stand-in proxy for tests of the app, tracking and sweeps: no model, no encoder.

Scores are a deterministic function of the program id and ``proxy.split_seed``, and the
labels go through the real decision-rule registry, so ε changes the labels like P1's would.
``proxy.k == 13`` makes it fail on purpose (a failing job in a sweep); ``$MCU_STANDIN_SLEEP_S``
holds it that many seconds inside its MLflow run (a job to kill mid-run), after creating the
file ``$MCU_STANDIN_READY`` names, if set. Selected with
``proxy._target_=support.standin_proxy.StandInProxy`` (it reads P1's config section).
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Iterator

import numpy as np
import pandas as pd

from mcu_exp.calibration import Scores, apply_rule
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.proxies.p1_consistency import SummaryProxy
from mcu_exp.proxies.stages import Stage, StageResults

TARGET = "proxy._target_=support.standin_proxy.StandInProxy"


class StandInProxy(SummaryProxy):
    """P1's config and decision, made-up scores, no generation."""

    calibrated = True
    offers = ("alpha_cal", "alpha_test")

    def stages(self, done: StageResults) -> Iterator[Stage]:
        return iter(())

    def outcome(self, done: StageResults) -> ProxyOutcome:
        if self.cfg.k == 13:
            raise RuntimeError("stand-in proxy asked to fail (proxy.k=13)")
        ready = os.environ.get("MCU_STANDIN_READY")
        if ready:  # a test waiting to interrupt the job knows it is now inside its run
            open(ready, "w").close()
        time.sleep(float(os.environ.get("MCU_STANDIN_SLEEP_S") or 0))
        ids = self.ctx.program_ids
        rng = [np.random.default_rng([self.cfg.split_seed, zlib.crc32(p.encode())]) for p in ids]
        alpha_cal = np.array([r.uniform(0.05, 0.4) for r in rng])
        alpha_test = np.array([r.uniform(0.05, 0.4) for r in rng])
        scores = Scores(alpha_cal=alpha_cal, alpha_test=alpha_test)
        decision = apply_rule(self.ctx.decision.rule, scores, self.ctx.decision)
        table = pd.DataFrame(
            {"alpha_cal": alpha_cal, "alpha_test": alpha_test, "score": -alpha_test, "label": decision.labels},
            index=pd.Index(ids, name="program_id"),
        )
        return ProxyOutcome(
            table=table,
            params=decision.params,
            metrics=dict(decision.metrics),
            scores=scores,
            quantile=self.ctx.decision.quantile,
        )
