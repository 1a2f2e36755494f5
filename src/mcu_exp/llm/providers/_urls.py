"""The base URL a provider's client gets: its query kept apart, its login checked against the key.

Two things the SDKs do with a plain ``base_url`` string that nobody asked for:

* a **query string** (Azure's ``…/openai/v1?api-version=2024-01-01``): the OpenAI and Anthropic
  clients append their endpoint after it (``/openai/v1/?api-version=…chat/completions``), so
  :func:`split_query` hands them the URL without it and its parameters as ``default_query``,
  which they add to every request (google-genai already puts the query last);
* a **login** in the URL (``https://user:pass@host/v1``): httpx sends it as HTTP Basic
  ``Authorization``, which replaces OpenAI's ``Bearer`` key and a configured ``Authorization``
  header, and travels instead of Anthropic's ``x-api-key`` or beside Gemini's key. With nothing
  else configured that is what the URL says (``openai_compatible`` without ``api_key_env``:
  the server gets the Basic login); with a key or an ``Authorization`` header configured too,
  :func:`check_login` refuses the job in one line, since which credential authenticates would
  depend on the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from mcu_exp.llm.errors import BackendError

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig


def split_query(url: str | None) -> tuple[str | None, dict[str, str]]:
    """``url`` without its query (and fragment), and the query's parameters, for a client that
    appends its endpoint to the URL's text. A repeated parameter is a :class:`BackendError`:
    ``default_query`` sends a list as ``name[]=…``, which is not what the URL said."""
    if not url:
        return url, {}
    parts = urlsplit(str(url))
    found: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in found:
            raise BackendError(
                f"model.base_url repeats the query parameter {name!r}; expected each parameter once "
                "(the client adds them to every request as a mapping)"
            )
        found[name] = value
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), found


def check_query(cfg: ModelConfig) -> None:
    """The start-up check of a backend whose client takes the query apart (:func:`split_query`)."""
    try:
        split_query(cfg.base_url)
    except BackendError as exc:
        raise BackendError(f"model '{cfg.name}': {exc}") from None


def has_login(url: str | None) -> bool:
    """Whether ``url`` carries a user name or password (``user:pass@host``)."""
    if not url:
        return False
    try:
        parts = urlsplit(str(url))
        return bool(parts.username or parts.password)
    except ValueError:
        return False


def authorization_header(tree: Any, path: str = "model.quirks") -> str | None:
    """The config key of an ``Authorization`` header set in the quirks (in any ``…headers``
    mapping: ``params.extra_headers``, Gemini's ``params.http_options.headers``), or None."""
    if not isinstance(tree, Mapping):
        return None
    for key, value in tree.items():
        here = f"{path}.{key}"
        if str(key).lower() == "authorization" and path.lower().endswith("headers"):
            return here
        found = authorization_header(value, here)
        if found:
            return found
    return None


def check_login(cfg: ModelConfig, key_envs: Sequence[str], quirks: Mapping[str, Any]) -> None:
    """Refuse a ``base_url`` login beside an API key (``model.api_key_env``, else ``key_envs``,
    the backend's default variables) or a configured ``Authorization`` header: one line naming
    the keys, never a value."""
    if not has_login(cfg.base_url):
        return
    header = authorization_header(quirks)
    if cfg.api_key_env or key_envs:  # a backend with default variables cannot run without its key
        where = f"model.api_key_env={cfg.api_key_env}" if cfg.api_key_env else " or ".join(key_envs)
        other, remedy = f"the API key in {where}", "" if key_envs else ", or unset model.api_key_env"
    elif header:
        other, remedy = f"an Authorization header ({header})", ", or the header"
    else:
        return
    raise BackendError(
        f"model '{cfg.name}': model.base_url carries a login (user:pass@) and {other} is configured too; "
        f"requests would carry the login instead of (or beside) it, so use one: remove user:pass@ from "
        f"model.base_url{remedy}"
    )
