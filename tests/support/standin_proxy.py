"""A stand-in proxy for tests of the app, tracking and sweeps: no model, no encoder.

Scores are a deterministic function of the program id and ``proxy.split_seed``, and the
labels go through the real calibration code, so ε changes the labels like P1's would.
``proxy.k == 13`` makes it fail on purpose (a failing job in a sweep).
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from mcu_exp.calibration import decide
from mcu_exp.proxies.base import JobContext, ProxyOutcome


def run(ctx: JobContext) -> ProxyOutcome:
    cfg = ctx.cfg
    if int(cfg.proxy.k) == 13:
        raise RuntimeError("stand-in proxy asked to fail (proxy.k=13)")
    ids = ctx.program_ids
    rng = [np.random.default_rng([int(cfg.proxy.split_seed), zlib.crc32(p.encode())]) for p in ids]
    alpha_cal = np.array([r.uniform(0.05, 0.4) for r in rng])
    alpha_test = np.array([r.uniform(0.05, 0.4) for r in rng])
    decision = decide(alpha_cal, alpha_test, float(cfg.decision.epsilon), str(cfg.decision.quantile))
    table = pd.DataFrame(
        {"alpha_cal": alpha_cal, "alpha_test": alpha_test, "score": -alpha_test, "label": decision.labels},
        index=pd.Index(ids, name="program_id"),
    )
    return ProxyOutcome(
        table=table,
        params={"tau": decision.tau, "quantile": decision.quantile},
        metrics={"tau": decision.tau, "coverage": decision.coverage, "model_loaded": 0.0},
        alpha_cal=alpha_cal,
        alpha_test=alpha_test,
        quantile=decision.quantile,
    )
