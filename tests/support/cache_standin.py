"""The stand-in proxy that also writes to the shared generation cache, so parallel jobs can
be checked for a consistent cache: every job writes the same 50 "shared" samples and 50 of
its own, reads them back, and logs whether they came back intact (``cache.consistent``)."""

from __future__ import annotations

from pathlib import Path

from mcu_exp.llm.cache import GenerationCache
from mcu_exp.llm.contract import Sample
from mcu_exp.proxies.base import ProxyOutcome
from mcu_exp.proxies.stages import StageResults
from support.standin_proxy import StandInProxy


class CacheStandInProxy(StandInProxy):
    """The stand-in, plus writes and reads of the shared cache."""

    def outcome(self, done: StageResults) -> ProxyOutcome:
        outcome = super().outcome(done)
        eps = self.ctx.decision.epsilon
        written: dict[str, str] = {}
        assert outcome.scores is not None and outcome.scores.alpha_test is not None
        with GenerationCache(Path(self.ctx.cache_dir) / "generations.sqlite") as cache:
            for pid, alpha in zip(self.ctx.program_ids, outcome.scores.alpha_test, strict=True):
                for key, text in ((f"shared/{pid}", f"{alpha:.9f}"), (f"job/{eps:g}/{pid}", f"{pid}@{eps:g}")):
                    cache.put(key, Sample(text, "stop", 3, 5), parts={"test": key})
                    written[key] = text
            back = cache.get_many(written)
        consistent = all(key in back and back[key].text == text for key, text in written.items())
        outcome.metrics["cache.consistent"] = float(consistent)
        return outcome
