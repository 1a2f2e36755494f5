"""Named parameters with defaults: one way to fill them in and to say a misspelt one.

Decision rules and measures take a mapping of parameters with defaults (:func:`with_defaults`:
an unknown name is refused); proxies' sections and backends' ``model.settings`` are
dataclasses (:func:`typed`: a wrong type is refused, an unknown name is dropped with a
warning, so a shared override such as ``debug=quick``'s ``proxy.k`` still lets a proxy
without ``k`` run). Either way the misspelt name is said in one line, by :func:`unknown_line`,
with the closest known name (:func:`mcu_exp.config.suggest.suggest_key`) and the known ones.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

log = logging.getLogger("mcu_exp")


def guess(name: str, known: Sequence[str]) -> str:
    """``": did you mean 'x'?"`` for the known name closest to ``name`` (empty when none is)."""
    from mcu_exp.config.suggest import suggest_key

    found = suggest_key(name, list(known)) if known else None
    return f": did you mean {found!r}?" if found else ""


def unknown_line(key: str, unknown: Iterable[str], known: Sequence[str], what: str) -> str:
    """One line naming each unknown ``key.<name>``, ``what`` they are not (e.g. "rule 'x' takes
    no such parameter"), the closest known name and the known names."""
    names = list(unknown)
    hint = guess(names[0], known) if len(names) == 1 else ""
    listed = ", ".join(f"{key}.{name}" for name in names)
    return f"{listed}: {what}{hint} (its parameters: {', '.join(known) or 'none'})"


def with_defaults(defaults: Mapping[str, Any], given: Mapping[str, Any] | None, key: str, owner: str) -> dict[str, Any]:
    """``defaults`` with ``given`` over them; a name ``defaults`` lacks is a one-line
    ValueError ``"<key>.<name>: <owner> takes no such parameter…"``."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ValueError(unknown_line(key, unknown[:1], list(defaults), f"{owner} takes no such parameter"))
    return {**defaults, **given}


def typed(
    config_class: type,
    given: Mapping[str, Any],
    key: str,
    owner: str,
    error: type[Exception] = ValueError,
    known_as: str = "keys",
) -> Any:
    """``given`` checked against the dataclass ``config_class`` and turned into an instance.

    A wrong type is a one-line ``error`` naming the key and ``"(<known_as> of <owner>: …)"``;
    names the class lacks are dropped with one warning naming them, the closest known name and
    the known ones.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    known = [f.name for f in dataclasses.fields(config_class)]
    data = {k: v for k, v in dict(given).items() if k != "_target_"}
    foreign = [k for k in data if k not in known]
    if foreign:
        hint = guess(foreign[0], known) if len(foreign) == 1 else ""
        listed = ", ".join(f"{key}.{k}" for k in foreign)
        log.warning("%s: ignoring %s: not settings of %s%s (its keys: %s)", key, listed, owner, hint, ", ".join(known))
    try:
        merged = OmegaConf.merge(OmegaConf.structured(config_class), {k: data[k] for k in data if k in known})
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        detail = str(exc).splitlines()[0]
        where = f"{key}.{exc.full_key}" if getattr(exc, "full_key", None) else key
        raise error(f"{where}: {detail} ({known_as} of {owner}: {', '.join(known)})") from None
