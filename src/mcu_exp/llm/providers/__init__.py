"""Model backends, one module per provider, each declaring itself as ``PROVIDER = Provider(...)``
(:mod:`._spec`): how to create it (and its batch backend), its cache identity, its
capabilities and its own settings.

:data:`PROVIDERS` is the registry ``model.backend`` names an entry of. The built-in entries
are lazy (``"module:PROVIDER"``), so nothing imports a provider module, let alone its SDK,
until a job uses it; a provider imports its client inside ``create`` and answers a missing
SDK with a one-line ``pip install`` hint. A plugin package adds a backend from its
``mcu_exp.plugins`` entry point: ``PROVIDERS.add_lazy("mine", "my_pkg.backend:PROVIDER")``
(or ``PROVIDERS.add("mine", Provider(...))``).
"""

from mcu_exp.llm.providers._spec import Capabilities, Provider, typed_settings
from mcu_exp.registry import Registry

PROVIDERS: Registry[Provider] = Registry("backend", "model.backend")
for _name in ("local", "openai", "anthropic", "google", "openai_compatible", "vllm"):
    PROVIDERS.add_lazy(_name, f"mcu_exp.llm.providers.{_name}:PROVIDER")

__all__ = ["PROVIDERS", "Capabilities", "Provider", "typed_settings"]
