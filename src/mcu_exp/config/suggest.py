"""One line for a command line Hydra cannot compose: which config key a misspelled override
meant ("unknown config key decision.epsilom: did you mean decision.epsilon?", instead of Hydra's
hint to add it with ``+``, which would silently add a key nothing reads), which option of a
config group a misspelled choice meant (``model=gpt4o``), and which type a value must have
(``decision.epsilon=abc``), instead of Hydra's and OmegaConf's multi-line reports."""

from __future__ import annotations

import re

from omegaconf import OmegaConf

_OVERRIDE_FAILED = re.compile(r"Could not override '([^']+)'")
_MERGING = re.compile(r"Error merging override (\S+)")
_CONVERTED = re.compile(r"could not be converted to (\w+)")
USER_FULL_ERROR = "MCU_EXP_USER_HYDRA_FULL_ERROR"
"""The user's own ``HYDRA_FULL_ERROR`` while the command composes (it sets Hydra's to 1 to
receive composition errors as exceptions): "1" when the user asked for Hydra's full reports."""
EXPECTED = {"Float": "a number", "Integer": "a whole number", "Boolean": "true or false", "String": "a string"}


def composition_message(exc: BaseException) -> str | None:
    """The one-line message for a composition error Hydra raised (:func:`unknown_key_message`,
    :func:`missing_option_message`, :func:`wrong_type_message`); None for any other error."""
    for explain in (unknown_key_message, missing_option_message, wrong_type_message):
        message = explain(exc)
        if message is not None:
            return message
    return None


def missing_option_message(exc: BaseException) -> str | None:
    """For Hydra's "Could not find 'model/gpt4o'": "unknown model 'gpt4o': did you mean gpt-4o?
    (options: …)"; None for any other error."""
    from hydra.errors import MissingConfigException

    if not isinstance(exc, MissingConfigException) or not exc.missing_cfg_file or not exc.options:
        return None
    group, _, name = exc.missing_cfg_file.rpartition("/")
    if not group:
        return None
    options = sorted(str(o) for o in exc.options)
    guess = suggest_option(name, options)
    hint = f": did you mean {guess}?" if guess is not None else ""
    return f"unknown {group.replace('/', '.')} {name!r}{hint} (options: {', '.join(options)})"


def suggest_option(name: str, options: list[str]) -> str | None:
    """The option ``name`` was most likely meant to be: the closest by difflib's ratio (≥ 0.6,
    ignoring case and the separators ``-``, ``_``, ``.``), or None."""
    from difflib import SequenceMatcher

    def bare(text: str) -> str:
        return re.sub(r"[-_.]", "", text.lower())

    scored = [(SequenceMatcher(None, bare(name), bare(option)).ratio(), option) for option in options]
    best = max(scored, default=(0.0, ""))
    return best[1] if best[0] >= 0.6 else None


def wrong_type_message(exc: BaseException) -> str | None:
    """For OmegaConf's "Value 'abc' of type 'str' could not be converted to Float" under an
    override: "decision.epsilon expects a number, got 'abc'" (any other check of a typed key:
    its first line, after the override); None for any other error."""
    from omegaconf.errors import ValidationError

    cause = exc.__cause__
    found = _MERGING.search(str(exc))
    if found is None or not isinstance(cause, ValidationError):
        return None
    first = str(cause.msg if getattr(cause, "msg", None) else cause).splitlines()[0].strip()
    target = _CONVERTED.search(first)
    if target is None:
        return f"{found.group(1)}: {first}"
    expected = EXPECTED.get(target.group(1), target.group(1).lower())
    key = cause.full_key or found.group(1).partition("=")[0]
    return f"{key} expects {expected}, got {cause.value!r}"


def unknown_key_message(exc: BaseException) -> str | None:
    """For Hydra's "Could not override 'a.b'" (the key is not in the config): "unknown config
    key a.b: did you mean a.c?" (or where to see the keys); None for any other error."""
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    found = _OVERRIDE_FAILED.search(str(exc))
    cause = exc.__cause__
    if found is None or not isinstance(cause, (ConfigKeyError, ConfigAttributeError)):
        return None
    key = found.group(1)
    parent = getattr(cause, "parent_node", None)
    root = parent._get_root() if parent is not None else None
    guess = suggest_key(key, config_keys(root)) if root is not None else None
    if guess is not None:
        return f"unknown config key {key}: did you mean {guess}?"
    return f"unknown config key {key}; `mcu-exp --cfg job` lists the keys"


def config_keys(cfg: object) -> list[str]:
    """Every dotted key of ``cfg`` (mappings only, list items left out; Hydra's own ``hydra.*``
    section included), without resolving interpolations."""
    keys: list[str] = []

    def walk(node: object, prefix: str) -> None:
        if not OmegaConf.is_dict(node):
            return
        for name in node:  # type: ignore[attr-defined]
            full = f"{prefix}{name}"
            keys.append(full)
            walk(node._get_node(name), full + ".")  # type: ignore[attr-defined]

    walk(cfg, "")
    return keys


def suggest_key(key: str, keys: list[str]) -> str | None:
    """The config key ``key`` was most likely meant to be (difflib ratios), or None.

    Candidates: a sibling with a close name (``decision.epsilom`` -> ``decision.epsilon``,
    ratio >= 0.6), any key with a close full name (``decison.epsilon`` -> ``decision.epsilon``)
    or with a close last part (``epsilon`` -> ``decision.epsilon``), both ratio >= 0.8. The
    closest wins; on a tie the sibling, then the shallower key. ``hydra.*`` keys only for a key
    under ``hydra``.
    """
    from difflib import SequenceMatcher

    if not key.startswith("hydra."):
        keys = [k for k in keys if k != "hydra" and not k.startswith("hydra.")]
    parent, _, name = key.rpartition(".")
    best: tuple[float, int, int, str] | None = None  # (ratio, preference, -depth, key)
    for candidate in keys:
        if candidate == key:
            continue
        c_parent, _, c_name = candidate.rpartition(".")
        depth = -candidate.count(".")
        scores = [
            (SequenceMatcher(None, key, candidate).ratio(), 0.8, 1),
            (SequenceMatcher(None, name, c_name).ratio(), 0.8, 1),
        ]
        if c_parent == parent:
            scores.append((SequenceMatcher(None, name, c_name).ratio(), 0.6, 2))
        for ratio, cutoff, preference in scores:
            if ratio >= cutoff and (best is None or (ratio, preference, depth) > best[:3]):
                best = (ratio, preference, depth, candidate)
    return best[3] if best is not None else None
