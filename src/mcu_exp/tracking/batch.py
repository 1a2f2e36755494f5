"""MLflow writes gathered into as few ``log_batch`` calls as the store allows.

Each ``log_batch`` is one store transaction, and on a decision-only job a transaction's fixed
cost outweighs the rows it writes. :class:`DeferredClient` stands in for the MLflow client while
a job records its results (:meth:`mcu_exp.tracking.mlflow_run.RunLogger.batched`): its run's
metrics, params and tags wait and go out together, up to 1000 metrics, 100 params and 100 tags
a call, 1000 entities in all (MLflow's limits). A tag set twice keeps its last value, as two
calls would leave it; a param set again with another value is sent in a call of its own, so
MLflow refuses it as it would have. Anything else goes straight to the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_METRICS, MAX_PARAMS, MAX_TAGS, MAX_ENTITIES = 1000, 100, 100, 1000


class DeferredClient:
    """An MLflow client whose ``log_batch`` calls for run ``run_id`` wait for :meth:`flush`."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client, self.run_id = client, run_id
        self.metrics: list[Any] = []
        self.params: dict[str, Any] = {}
        self.tags: dict[str, Any] = {}

    def log_batch(
        self, run_id: str, metrics: Sequence[Any] = (), params: Sequence[Any] = (), tags: Sequence[Any] = ()
    ) -> None:
        """Queue MLflow ``Metric``, ``Param`` and ``RunTag`` entities of this client's run."""
        if run_id != self.run_id:
            self.client.log_batch(run_id, metrics=list(metrics), params=list(params), tags=list(tags))
            return
        if any(p.key in self.params and self.params[p.key].value != p.value for p in params):
            self.flush()
        self.metrics.extend(metrics)
        self.params.update((p.key, p) for p in params)
        self.tags.update((t.key, t) for t in tags)

    def flush(self) -> int:
        """Send everything queued in as few ``log_batch`` calls as the limits allow; the calls made."""
        metrics, params, tags = self.metrics, list(self.params.values()), list(self.tags.values())
        self.metrics, self.params, self.tags = [], {}, {}
        calls = 0
        while metrics or params or tags:
            some_params, params = params[:MAX_PARAMS], params[MAX_PARAMS:]
            some_tags, tags = tags[:MAX_TAGS], tags[MAX_TAGS:]
            room = min(MAX_METRICS, MAX_ENTITIES - len(some_params) - len(some_tags))
            some_metrics, metrics = metrics[:room], metrics[room:]
            self.client.log_batch(self.run_id, metrics=some_metrics, params=some_params, tags=some_tags)
            calls += 1
        return calls

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
