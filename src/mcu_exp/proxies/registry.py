"""The proxy registry: proxy names → :class:`~mcu_exp.proxies.base.Proxy` classes.

The built-ins are lazy ``"module:Class"`` entries, so reading the names imports no proxy
module. A plugin package registers its own (``PROXIES.add_lazy("p4", "pkg.mod:P4")`` or
``PROXIES.register("p4", P4)``) from its ``mcu_exp.plugins`` entry point; ``proxy=p4`` then
composes from a generated config-group entry (:mod:`mcu_exp.plugins`) when no
``conf/proxy/p4.yaml`` exists, and its section is typed by the class's ``Config``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcu_exp.registry import Registry

if TYPE_CHECKING:
    from mcu_exp.proxies.base import Proxy

PROXIES: Registry[type[Proxy]] = Registry("proxy", key="proxy")
PROXIES.add_lazy("p0", "mcu_exp.proxies.p0_subject:SubjectProxy")
PROXIES.add_lazy("p1", "mcu_exp.proxies.p1_consistency:ConsistencyProxy")
PROXIES.add_lazy("p2", "mcu_exp.proxies.p2_meta_review:MetaReviewProxy")
PROXIES.add_lazy("p3", "mcu_exp.proxies.p3_judge:JudgeProxy")
PROXIES.add_lazy("p0_output", "mcu_exp.proxies.p0_output:OutputProxy")
