"""A fake HTTP API on 127.0.0.1 that speaks OpenAI, Anthropic and Gemini, for the real SDKs.

The server answers every request from a script: a list of actions consumed in order
(an HTTP error, a slow answer, a malformed body); when the script is empty it answers
with a well-formed completion whose texts name the prompt and the sample, so tests can
check which answer went where. Every request is logged; every handler is bounded in time.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PLANTED_KEY = "sk-planted-SECRET-9f8e7d6c5b4a"
MAX_HANDLER_WAIT_S = 8.0  # no handler outlives this, whatever a test asks


@dataclass
class Action:
    """One scripted answer: status, headers and body (raw bytes or JSON), after a delay."""

    status: int = 200
    body: Any = None  # None: a normal completion; bytes: sent as is; else JSON-encoded
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class LoggedRequest:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    answered: bool = False  # a normal completion was written back


def _prompt_of(path: str, body: dict[str, Any]) -> str:
    if "contents" in body:  # Gemini
        return "".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []))
    msgs = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = msgs[-1]["content"] if msgs else ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    return str(content)


def completion_text(prompt: str, body: dict[str, Any], k: int) -> str:
    """The text the fake server writes for candidate ``k`` of a request."""
    seed = body.get("seed", body.get("generationConfig", {}).get("seed", "-"))
    return f"answer to [{prompt}] seed={seed} k={k}"


def _openai(body: dict[str, Any], prompt: str) -> dict[str, Any]:
    n = int(body.get("n") or 1)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": k,
                "message": {"role": "assistant", "content": completion_text(prompt, body, k)},
                "finish_reason": "stop",
            }
            for k in range(n)
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5 * n, "total_tokens": 10 + 5 * n},
    }


def _anthropic(body: dict[str, Any], prompt: str) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": [{"type": "text", "text": completion_text(prompt, body, 0)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _gemini(body: dict[str, Any], prompt: str, path: str) -> dict[str, Any]:
    n = int(body.get("generationConfig", {}).get("candidateCount") or 1)
    model = re.sub(r"^.*/models/([^:]+):.*$", r"\1", path)
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": completion_text(prompt, body, k)}]},
                "finishReason": "STOP",
                "index": k,
            }
            for k in range(n)
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5 * n,
            "totalTokenCount": 10 + 5 * n,
        },
        "modelVersion": model,
    }


def _received_key(headers: dict[str, str]) -> str:
    auth = headers.get("authorization", "")
    bearer = auth[len("Bearer ") :] if auth.startswith("Bearer ") else ""
    return bearer or headers.get("x-api-key") or headers.get("x-goog-api-key") or ""


class FakeServer:
    """A threaded HTTP server with a script of actions and a request log."""

    def __init__(self) -> None:
        self.script: list[Action] = []
        self.log: list[LoggedRequest] = []
        self.lock = threading.Lock()
        self.stall_after: int | None = None  # admit this many requests, then hold every later one
        self.admitted = 0
        self.release = threading.Event()
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                return

            def do_POST(self) -> None:  # http.server's naming
                server._handle(self)

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # many concurrent clients: no refused connections

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answered(self) -> list[LoggedRequest]:
        with self.lock:
            return [r for r in self.log if r.answered]

    def push(self, *actions: Action) -> None:
        with self.lock:
            self.script.extend(actions)

    def _wait(self, seconds: float) -> None:
        self.closing.wait(min(seconds, MAX_HANDLER_WAIT_S))

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length", 0)))
        body = json.loads(raw or b"{}")
        entry = LoggedRequest(h.path, body, {k.lower(): v for k, v in h.headers.items()})
        with self.lock:
            self.log.append(entry)
            action = self.script.pop(0) if self.script else Action()
            stalled = self.stall_after is not None and self.admitted >= self.stall_after
            self.admitted += 0 if stalled else 1
        if stalled:  # hold the request, then refuse it: a held request is never answered
            deadline = time.monotonic() + MAX_HANDLER_WAIT_S
            while not (self.release.is_set() or self.closing.is_set()) and time.monotonic() < deadline:
                self.release.wait(0.05)
            action = Action(503, error_body(503, "stalled"))
        if action.delay_s:
            self._wait(action.delay_s)
        if action.body is None and action.status == 200:
            prompt = _prompt_of(h.path, body)
            if h.path.split("?")[0].endswith("/v1/messages"):  # behind a path prefix too
                payload: Any = _anthropic(body, prompt)
            elif ":generateContent" in h.path:
                payload = _gemini(body, prompt, h.path)
            else:
                payload = _openai(body, prompt)
            data = json.dumps(payload).encode()
        elif isinstance(action.body, bytes):
            data = action.body
        else:  # an error body; "{KEY}" echoes the key the client sent, as some APIs do
            text = json.dumps(action.body if action.body is not None else {"error": {}})
            data = text.replace("{KEY}", _received_key(entry.headers)).encode()
        try:
            h.send_response(action.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in action.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (its timeout): nothing was delivered
        if action.status == 200 and action.body is None:
            with self.lock:
                entry.answered = True

    def start(self) -> FakeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.closing.set()
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error payload shaped like all three providers' (they each read `error.message`)."""
    return {
        "type": "error",
        "error": {"type": "api_error", "message": message, "code": status, "status": "ERR"},
    }


PROVIDERS = ("openai", "anthropic", "google", "openai_compatible")
FAST = {"max_retries": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.02}


def base_url(provider: str, server: FakeServer) -> str:
    """Where each SDK expects the API root (OpenAI's includes /v1; the others add theirs)."""
    return server.url + "/v1" if provider.startswith("openai") else server.url


def model_cfg(provider: str, server: FakeServer, **fields: Any) -> Any:
    """A ModelConfig for ``provider`` pointed at ``server``, with tiny timeouts and backoff."""
    from mcu_exp.config import ModelConfig

    values: dict[str, Any] = {
        "name": f"fake-{provider}",
        "backend": provider,
        "model_id": "fake-model",
        "base_url": base_url(provider, server),
        "timeout_s": 0.5,
        **FAST,
        "max_new_tokens": 16,
        "stop": [],
    }
    if provider == "openai_compatible":
        values["api_key_env"] = "FAKE_API_KEY"
    values.update(fields)
    return ModelConfig(**values)


def make_backend(cfg: Any, progress: bool = False) -> Any:
    """The provider's backend for ``cfg`` (whose backoff is fast), with no progress bar unless asked."""
    from mcu_exp.llm.factory import build_backend

    return build_backend(cfg, progress=progress)
