"""The public extension API: everything a plugin package imports, from this one module.

A plugin (a separate installed package with an ``mcu_exp.plugins`` entry point, see
docs/architecture.md) adds entries to the registries re-exported here, and builds a remote
backend from :func:`remote_provider` and the call object a :class:`RemoteBackend` drives
(:class:`RemoteCalls`: ``open``, ``call``, ``close``, ``max_output_tokens``). Names here are
stable; the modules they live in are not, so a plugin imports nothing else of ``mcu_exp``.

Importing this module is light: each name is imported on first use (module ``__getattr__``),
so a plugin's entry point that only registers lazy entries loads neither pandas nor an SDK.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name → "module:attribute" it is imported from on first use
_WHERE: dict[str, str] = {
    # the registries and their decorators
    "Registry": "mcu_exp.registry:Registry",
    "UnknownName": "mcu_exp.registry:UnknownName",
    "METRICS": "mcu_exp.evaluation.registry:METRICS",
    "register_metric": "mcu_exp.evaluation.registry:register",
    "safe_ratio": "mcu_exp.evaluation.registry:safe_ratio",
    "MEASURES": "mcu_exp.measures.registry:MEASURES",
    "register_measure": "mcu_exp.measures.registry:register_measure",
    "RULES": "mcu_exp.calibration.rules:RULES",
    "register_rule": "mcu_exp.calibration.rules:register_rule",
    "Scores": "mcu_exp.calibration:Scores",
    "apply_rule": "mcu_exp.calibration:apply_rule",
    "PROXIES": "mcu_exp.proxies.registry:PROXIES",
    "Proxy": "mcu_exp.proxies.base:Proxy",
    "ProxyContext": "mcu_exp.proxies.base:ProxyContext",
    "ProxyOutcome": "mcu_exp.proxies.base:ProxyOutcome",
    "SummaryProxy": "mcu_exp.proxies.p1_consistency:SummaryProxy",
    "SummaryConfig": "mcu_exp.proxies.p1_consistency:SummaryConfig",
    "PROVIDERS": "mcu_exp.llm.providers:PROVIDERS",
    "FORMATS": "mcu_exp.data:FORMATS",
    "SCORERS": "mcu_exp.scoring.factory:SCORERS",
    "PairScorer": "mcu_exp.scoring.pairs:PairScorer",
    "LABEL_RULES": "mcu_exp.data.labels:LABEL_RULES",
    "EDITS": "mcu_exp.counterfactual.registry:EDITS",
    # declaring a backend
    "Provider": "mcu_exp.llm.providers._spec:Provider",
    "Capabilities": "mcu_exp.llm.providers._spec:Capabilities",
    "remote_provider": "mcu_exp.llm.providers._spec:remote_provider",
    "typed_settings": "mcu_exp.llm.providers._spec:typed_settings",
    "RemoteBackend": "mcu_exp.llm.providers._runner:RemoteBackend",
    "RemoteCalls": "mcu_exp.llm.providers._runner:RemoteApi",
    "CallResult": "mcu_exp.llm.providers._runner:CallResult",
    "Backend": "mcu_exp.llm.contract:Backend",
    "GenerationRequest": "mcu_exp.llm.contract:GenerationRequest",
    "Message": "mcu_exp.llm.contract:Message",
    "Sample": "mcu_exp.llm.contract:Sample",
    "BackendError": "mcu_exp.llm.errors:BackendError",
    "MalformedResponse": "mcu_exp.llm.providers._errors:MalformedResponse",
    "ModelConfig": "mcu_exp.config:ModelConfig",
    # keys, cache identity and request shaping
    "Secret": "mcu_exp.llm.providers._common:Secret",
    "resolve_api_key": "mcu_exp.llm.providers._common:resolve_api_key",
    "remote_identity": "mcu_exp.llm.providers._common:remote_identity",
    "sample_seed": "mcu_exp.llm.providers._common:sample_seed",
    "split_system": "mcu_exp.llm.providers._common:split_system",
    "split_usage": "mcu_exp.llm.providers._common:split_usage",
    "truncate_at_stop": "mcu_exp.llm.providers._common:truncate_at_stop",
    "json_body": "mcu_exp.llm.providers._common:json_body",
    # parameters with defaults
    "with_defaults": "mcu_exp.settings:with_defaults",
    "typed": "mcu_exp.settings:typed",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Import the public ``name`` on first use (and keep it, so the next use is a lookup)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'mcu_exp.plugin' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
