"""Keep secrets out of everything a job writes: artifacts, Hydra's copies, MLflow, logs, cache keys.

Two kinds of secret are recognised wherever they come from (a config file, a command-line
override, an ``${oc.env:…}`` interpolation):

- the value of a secret-looking key (:func:`is_secret_key`: ``api_key``, ``token``,
  ``password``, an HTTP header such as ``Authorization``, ``Cookie`` or ``X-Api-Key``, … but
  not ``api_key_env`` or ``max_new_tokens``), in a config tree or as ``key=value`` in a line
  of text (Hydra's overrides, quoted or not);
- the user-info of a URL (``http://user:pass@host`` → ``http://***@host``) and the values of
  its secret-looking query parameters (``?key=…`` → ``?key=***``).

Values found that way, and the API keys in the environment variables the config names, are
remembered (:func:`remember`) so that they are masked in any later log line, wherever they
appear. :func:`install_log_redaction` applies all of this to every log record of the process.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REDACTED = "***"
SECRET_WORDS = frozenset(
    {
        "apikey",
        "key",
        "secret",
        "token",
        "password",
        "sslpassword",  # libpq's passphrase of the client key
        "passwd",
        "pwd",
        "credential",
        "credentials",
        "bearer",
        "auth",
        "oauth",
        "authorization",
        "authentication",
        "authn",
        "authz",
        "authtoken",
        "cookie",
        "cookies",
        "signature",
        "sig",
    }
)
# "<q>_key" names a key that is no secret: an identifier of a row, a cache entry, a request.
PUBLIC_KEY_QUALIFIERS = frozenset(
    {"cache", "sort", "group", "partition", "primary", "foreign", "idempotency", "public"}
)
AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})  # "Bearer <token>"
DEFAULT_KEY_ENVS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
MIN_SECRET_CHARS = 6  # shorter remembered values would mask ordinary words in log lines

_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.\-]*://)[^\s/?#'\"<>@]+(?:@[^\s/?#'\"<>@]*)*@", re.IGNORECASE)
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+", re.IGNORECASE)
_QUERY_PAIR = re.compile(r"(?P<sep>[?&;])(?P<key>[^=&#;\s]+)=(?P<value>[^&#;\s]*)")
_PAIR = re.compile(r"(?P<key>[A-Za-z_+~][\w.\-]*)=(?P<value>'[^']*'|\"[^\"]*\"|[^\s,'\"\]&]+)")
# "key: value" of an indented YAML line (Hydra's config dump) and "'key': 'value'" of a dict or JSON;
# never a line's first word (an error's "AuthenticationFailed: …" keeps its message).
_YAML_PAIR = re.compile(r"(?m)^(?P<head>[ \t]+(?:- )?(?P<key>[A-Za-z_][\w.\-]*):[ \t]+)(?P<value>\S.*)$")
_QUOTED_PAIR = re.compile(
    r"""(?P<head>(?P<q>['"])(?P<key>[A-Za-z_][\w.\-]*)(?P=q)\s*:\s*)(?P<value>'[^'\n]*'|"[^"\n]*")"""
)
_known: set[str] = set()


def is_secret_key(key: str) -> bool:
    """Whether a (dotted) config key, HTTP header or query parameter may hold a secret: a
    word of its leaf is ``key``, ``token``, ``secret``, ``password``, ``auth``/``authorization``,
    ``cookie``, … (``apiKey``, ``x-api-key``, ``Authorization`` and ``Cookie`` too).
    ``max_tokens``, ``tokenizer``, ``author``, a row's or cache entry's key (``cache_key``,
    ``sort_key``, …) and a name ending in ``_env`` (``api_key_env``: the name of a variable,
    not its value) are not secrets."""
    leaf = str(key).rsplit(".", 1)[-1].lstrip("+~")
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", leaf).lower().replace("-", "_").split("_")
    if not words or words[-1] == "env":
        return False
    if "apikey" in "".join(words):
        return True
    return any(
        w in SECRET_WORDS and not (w == "key" and i > 0 and words[i - 1] in PUBLIC_KEY_QUALIFIERS)
        for i, w in enumerate(words)
    )


def _mask_query(match: re.Match[str]) -> str:
    if not is_secret_key(match.group("key")) or not match.group("value"):
        return match.group(0)
    return f"{match.group('sep')}{match.group('key')}={REDACTED}"


def redact_url(text: str) -> str:
    """``text`` with the user-info of every URL in it, and the values of the URLs'
    secret-looking query parameters (``?key=``, ``&access_token=``), replaced by ``***``."""
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _URL.sub(lambda m: _QUERY_PAIR.sub(_mask_query, m.group(0)), text)


def _mask_pair(match: re.Match[str]) -> str:
    key, value = match.group("key"), match.group("value")
    quote = value[0] if value[:1] in ("'", '"') else ""
    if not is_secret_key(key) or value.strip("'\"") in ("", "null", "None", REDACTED):
        return match.group(0)
    return f"{key}={quote}{REDACTED}{quote}"


def mask_known(text: str) -> str:
    """``text`` with the remembered secrets (:func:`remember`) masked, and nothing else."""
    for value in sorted(_known, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def _mask_colon_pair(match: re.Match[str]) -> str:
    value = match.group("value")
    if not is_secret_key(match.group("key")) or value.strip("'\"") in ("", "null", "None", REDACTED):
        return match.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('head')}{quote}{REDACTED}{quote}"


def redact_text(text: str) -> str:
    """``text`` with remembered secrets, URL user-info and the values of secret keys masked
    (``key=value``, an indented YAML ``key: value``, a dict's ``'key': 'value'``)."""
    text = _PAIR.sub(_mask_pair, redact_url(mask_known(text)))
    return _QUOTED_PAIR.sub(_mask_colon_pair, _YAML_PAIR.sub(_mask_colon_pair, text))


def redact_tree(node: Any, key: str = "") -> Any:
    """A copy of a plain config tree (dicts, lists, scalars) with secrets masked: values of
    secret-looking keys become ``***`` (an empty or null one stays), strings are
    :func:`redact_text`-ed."""
    if key and is_secret_key(key) and node not in (None, "", {}, []):
        return REDACTED
    if isinstance(node, Mapping):
        return {k: redact_tree(v, str(k)) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [redact_tree(v) for v in node]
    if isinstance(node, str):
        return redact_text(node)
    return node


def _url_secrets(text: str) -> Iterable[str]:
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group(0)[len(match.group("scheme")) : -1]
        yield userinfo
        yield from userinfo.split(":", 1)[1:]
    for url in _URL.finditer(text):
        for pair in _QUERY_PAIR.finditer(url.group(0)):
            if is_secret_key(pair.group("key")):
                yield pair.group("value")


def _value_secrets(value: str) -> Iterable[str]:
    """A secret value and the parts of it that may show up alone: the token of
    ``Bearer <token>``, the values of ``name=value; …`` (a cookie)."""
    yield value
    for piece in re.split(r"[\s;,]+", value):
        piece = piece.split("=", 1)[-1]
        if piece.lower() not in AUTH_SCHEMES:
            yield piece


def secret_values(node: Any, key: str = "") -> set[str]:
    """Every secret in a plain config tree: values of secret-looking keys, URL user-info and
    passwords, and the values of the environment variables named by ``api_key_env``."""
    found: set[str] = set()
    if isinstance(node, Mapping):
        for k, v in node.items():
            found |= secret_values(v, str(k))
        if node.get("api_key_env"):
            found.add(os.environ.get(str(node["api_key_env"]), ""))
    elif isinstance(node, (list, tuple)):
        for v in node:
            found |= secret_values(v)
    elif isinstance(node, str):
        if key and is_secret_key(key):
            found.update(_value_secrets(node))
        found.update(_url_secrets(node))
    elif node is not None and key and is_secret_key(key):
        found.add(str(node))
    return {s.strip() for s in found if len(s.strip()) >= MIN_SECRET_CHARS}


def remember(values: Iterable[str]) -> None:
    """Mask these values (and the default API-key variables' values) in every later redaction."""
    defaults = (os.environ.get(name, "").strip() for name in DEFAULT_KEY_ENVS)
    _known.update(v for v in (*values, *defaults) if v and len(v) >= MIN_SECRET_CHARS and v != REDACTED)


def redact_yaml_file(path: Path) -> None:
    """Rewrite a YAML file (Hydra's ``.hydra/*.yaml``, ``multirun.yaml``) with secrets masked;
    interpolations are kept as written, except under secret keys."""
    from omegaconf import OmegaConf

    if not path.is_file() or _nothing_to_mask(path):
        return
    tree = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    cleaned = redact_tree(tree)
    if cleaned == tree:
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    OmegaConf.save(OmegaConf.create(cleaned), tmp)
    os.replace(tmp, path)


def _nothing_to_mask(path: Path) -> bool:
    """Whether a YAML file certainly holds no secret, read with LibYAML's fast safe loader (a
    sweep job checks four of Hydra's files; OmegaConf's pure-Python reading cost ~0.1 s a job).
    Safe to skip on: that reading keeps as strings everything OmegaConf's does and more (it
    resolves fewer floats), except dates and times, which send the file to the full check."""
    import datetime

    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        tree = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)  # a safe loader
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return False
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, (datetime.date, datetime.datetime)):
            return False
    return bool(redact_tree(tree) == tree)


class _RedactingRecordFactory:
    """Wraps the log-record factory: a record whose message (or traceback) holds a secret is
    rewritten with the secret masked, before any handler sees it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 (a malformed call: leave it to logging's own error report)
            return record
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return record


def install_log_redaction() -> None:
    """Mask secrets in every log record of this process, whatever logger or handler (idempotent)."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _RedactingRecordFactory):
        logging.setLogRecordFactory(_RedactingRecordFactory(current))
