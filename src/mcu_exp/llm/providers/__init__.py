"""Model backends, one module per provider, each declaring itself as ``PROVIDER = Provider(...)``
(:mod:`._spec`): how to create it (and its batch backend), its cache identity, its
capabilities and its own settings.

:data:`PROVIDERS` is the registry ``model.backend`` names an entry of. Every public module of
this package is an entry, lazily (``"module:PROVIDER"``), so nothing imports a provider
module, let alone its SDK, until a job uses it; a provider imports its client inside
``create``, and a missing SDK is a one-line ``pip install`` hint from its declaration. A plugin package adds a backend from its
``mcu_exp.plugins`` entry point: ``PROVIDERS.add_lazy("mine", "my_pkg.backend:PROVIDER")``
(or ``PROVIDERS.add("mine", Provider(...))``).
"""

import pkgutil

from mcu_exp.llm.providers._spec import Capabilities, Provider, typed_settings
from mcu_exp.plugin_guard import guard_fields
from mcu_exp.registry import Registry

PROVIDERS: Registry[Provider] = Registry(
    "backend",
    "model.backend",
    guard=lambda p, wrap: guard_fields(p, wrap, "create", "identity", "create_batch", "check"),
)
# Every public module here is a provider, registered lazily under its name (found without
# importing it): a backend added to this package is its module, nothing else.
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    PROVIDERS.add_lazy(_module, f"{__name__}.{_module}:PROVIDER")

__all__ = ["PROVIDERS", "Capabilities", "Provider", "typed_settings"]
