"""A fake batch API on 127.0.0.1 for the real OpenAI, Anthropic and google-genai clients.

It implements each provider's batch endpoints: OpenAI (file upload, ``/v1/batches`` create
and retrieve, file content), Anthropic Message Batches (create, retrieve, JSONL results) and
Gemini batch mode (``models/*:batchGenerateContent`` with inline requests, ``batches/*``).
A batch stays in progress for ``polls_to_end`` polls, then ends with ``end_state`` (a whole
batch expired or cancelled: only the items in ``partial`` answered). Items whose prompt is
in ``fail_prompts`` end failed (``fail_kind``: ``error`` or ``expired``), once each. Answers
name the prompt, the seed and the candidate, as the interactive fake server's do.

Faults at creation: the next ``slow_creates`` create calls make their batch, then answer only
after ``create_delay_s`` (past a client's timeout: the provider accepted a batch the client
never heard of); the next ``refused_creates`` answer 503 without making one. Each provider's
list call shows the batches with the tag they were given (OpenAI ``metadata``, Gemini
``displayName``; Anthropic has none, its custom ids carry it).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def answer(prompt: str, seed: Any, k: int) -> str:
    """The text written for candidate ``k`` of a request."""
    return f"answer to [{prompt}] seed={seed} k={k}"


@dataclass
class Batch:
    """One submitted batch: provider, items (custom id, request body) and polls so far."""

    id: str
    provider: str
    items: list[tuple[str, dict[str, Any]]]
    tag: Any = None  # OpenAI metadata, Gemini displayName
    created: float = 0.0
    polls: int = 0
    results: list[dict[str, Any]] | None = None  # built when it ends
    state: str = "running"


@dataclass
class Logged:
    method: str
    path: str
    key: str


@dataclass
class BatchServer:
    """The server's knobs, its batches and its request log."""

    polls_to_end: int = 1
    end_state: str = "completed"  # completed | expired | cancelled
    fail_prompts: set[str] = field(default_factory=set)
    fail_kind: str = "error"
    poll_status: int = 200  # a non-200 answers every poll with that HTTP status, echoing the key
    slow_creates: int = 0  # the next creates make their batch but answer after create_delay_s
    create_delay_s: float = 1.5
    refused_creates: int = 0  # the next creates answer 503 and make nothing
    batches: dict[str, Batch] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_GET(self) -> None:  # http.server's naming
                server._handle(self, "GET")

            def do_POST(self) -> None:
                server._handle(self, "POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def creates(self) -> list[Logged]:
        """The batch-creating requests received."""
        return [e for e in self.log if e.method == "POST" and re.search(r"/batches$|:batchGenerateContent$", e.path)]

    def paid(self) -> int:
        """Samples asked for in every batch created (what the provider bills)."""
        total = 0
        for batch in self.batches.values():
            for _, body in batch.items:
                total += int(body.get("n") or body.get("generationConfig", {}).get("candidateCount") or 1)
        return total

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- request handling ---------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length", 0) or 0))
        key = (
            h.headers.get("x-api-key")
            or h.headers.get("x-goog-api-key")
            or (h.headers.get("authorization") or "").removeprefix("Bearer ")
        )
        path = h.path.split("?")[0]
        with self.lock:
            self.log.append(Logged(method, path, key))
            self.last_key = key
            create = method == "POST" and bool(re.search(r"/batches$|:batchGenerateContent$", path))
            if create and self.refused_creates:
                self.refused_creates -= 1
                status, body, ctype = 503, {"error": {"message": "overloaded", "code": 503}}, "application/json"
            else:
                status, body, ctype = self._route(method, path, raw, h.headers.get("Content-Type", ""))
            delay = self.create_delay_s if create and status == 200 and self.slow_creates else 0.0
            self.slow_creates -= 1 if delay else 0
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        time.sleep(delay)
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up waiting

    def _route(self, method: str, path: str, raw: bytes, ctype: str) -> tuple[int, Any, str]:
        js = "application/json"
        if method == "POST" and path == "/v1/files":
            content = _multipart_file(raw, ctype)
            file_id = f"file-{len(self.files)}"
            self.files[file_id] = content
            return (
                200,
                {
                    "id": file_id,
                    "object": "file",
                    "bytes": len(content),
                    "created_at": 0,
                    "filename": "batch.jsonl",
                    "purpose": "batch",
                    "status": "processed",
                },
                js,
            )
        if method == "POST" and path == "/v1/batches":
            lines = [json.loads(x) for x in self.files[json.loads(raw)["input_file_id"]].decode().splitlines() if x]
            batch = self._new("openai", [(x["custom_id"], x["body"]) for x in lines], json.loads(raw).get("metadata"))
            return 200, self._openai_batch(batch), js
        if method == "POST" and path == "/v1/messages/batches":
            batch = self._new("anthropic", [(x["custom_id"], x["params"]) for x in json.loads(raw)["requests"]])
            return 200, self._anthropic_batch(batch), js
        if method == "POST" and path.endswith(":batchGenerateContent"):
            spec = json.loads(raw)["batch"]
            reqs = spec["inputConfig"]["requests"]["requests"]
            batch = self._new(
                "google",
                [((r.get("metadata") or {}).get("custom_id", ""), r["request"]) for r in reqs],
                spec.get("displayName"),
            )
            return 200, self._google_batch(batch), js
        if method == "GET" and path in ("/v1/batches", "/v1/messages/batches", "/v1beta/batches"):
            return 200, self._listing(path), js
        match = re.fullmatch(r"/v1/files/([^/]+)/content", path)
        if method == "GET" and match:
            return 200, self.files[match.group(1)], "application/octet-stream"
        match = re.fullmatch(r"/v1/messages/batches/([^/]+)/results", path)
        if method == "GET" and match:
            batch = self.batches[match.group(1)]
            return 200, "".join(json.dumps(r) + "\n" for r in batch.results or []).encode(), "application/x-jsonl"
        match = re.fullmatch(r"/v1/batches/([^/]+)|/v1/messages/batches/([^/]+)|/v1beta/batches/([^/]+)", path)
        if method == "GET" and match:
            batch = self.batches.get(next(g for g in match.groups() if g))
            if batch is None:
                return 404, {"error": {"message": "no such batch", "type": "not_found_error", "code": 404}}, js
            if self.poll_status != 200:
                refusal = {
                    "message": f"poll refused (key {self.last_key})",
                    "type": "api_error",
                    "code": self.poll_status,
                }
                return self.poll_status, {"error": refusal}, js
            self._advance(batch)
            view = {"openai": self._openai_batch, "anthropic": self._anthropic_batch, "google": self._google_batch}
            return 200, view[batch.provider](batch), js
        return 404, {"error": {"message": f"no route {method} {path}", "code": 404}}, js

    def _new(self, provider: str, items: list[tuple[str, dict[str, Any]]], tag: Any = None) -> Batch:
        batch_id = {"openai": "batch_", "anthropic": "msgbatch_", "google": "g"}[provider] + str(len(self.log))
        self.batches[batch_id] = batch = Batch(batch_id, provider, items, tag, time.time())
        return batch

    def _listing(self, path: str) -> dict[str, Any]:
        """Every batch of the provider ``path`` lists, newest first, on one page."""
        provider = {"/v1/batches": "openai", "/v1/messages/batches": "anthropic"}.get(path, "google")
        found = sorted((b for b in self.batches.values() if b.provider == provider), key=lambda b: -b.created)
        if provider == "google":
            return {"operations": [self._google_batch(b) for b in found]}
        view = self._openai_batch if provider == "openai" else self._anthropic_batch
        data = [view(b) for b in found]
        ids = [b.id for b in found]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None,
        }

    def _advance(self, batch: Batch) -> None:
        batch.polls += 1
        if batch.state == "running" and batch.polls >= self.polls_to_end:
            batch.state = self.end_state
            batch.results = list(self._results(batch))

    def _results(self, batch: Batch) -> Iterator[dict[str, Any]]:
        for n, (custom_id, body) in enumerate(batch.items):
            prompt = _prompt(body)
            if prompt in self.fail_prompts or (batch.state != "completed" and n > 0):
                self.fail_prompts.discard(prompt)
                kind = "expired" if batch.state != "completed" else self.fail_kind
                yield _failure(batch.provider, custom_id, kind)
            else:
                yield _success(batch.provider, custom_id, body, prompt)

    # -- provider views of a batch ------------------------------------------------------
    def _openai_batch(self, batch: Batch) -> dict[str, Any]:
        view: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "created_at": int(batch.created),
            "input_file_id": "file-in",
            "metadata": batch.tag,
            "status": "in_progress" if batch.state == "running" else batch.state,
        }
        if batch.results is not None:
            good = [r for r in batch.results if r.get("error") is None]
            bad = [r for r in batch.results if r.get("error") is not None]
            for name, rows in (("output_file_id", good), ("error_file_id", bad)):
                if rows:
                    file_id = f"file-{name}-{batch.id}"
                    self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                    view[name] = file_id
        return view

    def _anthropic_batch(self, batch: Batch) -> dict[str, Any]:
        ended = batch.results is not None
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created))
        return {
            "id": batch.id,
            "type": "message_batch",
            "created_at": created,
            "expires_at": "2099-01-02T00:00:00Z",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else len(batch.items),
                "succeeded": len(batch.items) if ended else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    def _google_batch(self, batch: Batch) -> dict[str, Any]:
        states = {
            "running": "BATCH_STATE_RUNNING",
            "completed": "BATCH_STATE_SUCCEEDED",
            "expired": "BATCH_STATE_EXPIRED",
            "cancelled": "BATCH_STATE_CANCELLED",
        }
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created))
        meta: dict[str, Any] = {"name": f"batches/{batch.id}", "state": states[batch.state], "createTime": created}
        if batch.tag is not None:
            meta["displayName"] = batch.tag
        if batch.results is not None:
            meta["output"] = {"inlinedResponses": {"inlinedResponses": batch.results}}
        return {"name": f"batches/{batch.id}", "metadata": meta}


def _multipart_file(raw: bytes, ctype: str) -> bytes:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + raw
    )
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_payload(decode=True)
    raise ValueError("no file part in the upload")


def _prompt(body: dict[str, Any]) -> str:
    if "contents" in body:
        return "".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []) if c["role"] == "user")
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


def _success(provider: str, custom_id: str, body: dict[str, Any], prompt: str) -> dict[str, Any]:
    if provider == "openai":
        n = int(body.get("n") or 1)
        choices = [
            {
                "index": k,
                "message": {"role": "assistant", "content": answer(prompt, body.get("seed"), k)},
                "finish_reason": "stop",
            }
            for k in range(n)
        ]
        completion = {
            "id": "chatcmpl-b",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": choices,
            "usage": {"prompt_tokens": 10, "completion_tokens": 5 * n, "total_tokens": 10 + 5 * n},
        }
        return {
            "id": "r",
            "custom_id": custom_id,
            "error": None,
            "response": {"status_code": 200, "request_id": "q", "body": completion},
        }
    if provider == "anthropic":
        message = {
            "id": "msg_b",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": answer(prompt, "-", 0)}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}
    config = body.get("generationConfig", {})
    n = int(config.get("candidateCount") or 1)
    parts = [[{"text": answer(prompt, config.get("seed"), k)}] for k in range(n)]
    response = {
        "candidates": [
            {"content": {"role": "model", "parts": parts[k]}, "finishReason": "STOP", "index": k} for k in range(n)
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5 * n, "totalTokenCount": 10 + 5 * n},
    }
    return {"response": response, "metadata": {"custom_id": custom_id}}


def _failure(provider: str, custom_id: str, kind: str) -> dict[str, Any]:
    message = "request expired before it ran" if kind == "expired" else "internal error"
    if provider == "openai":
        return {
            "id": "r",
            "custom_id": custom_id,
            "response": None,
            "error": {"code": "batch_expired" if kind == "expired" else "server_error", "message": message},
        }
    if provider == "anthropic":
        if kind == "expired":
            return {"custom_id": custom_id, "result": {"type": "expired"}}
        return {
            "custom_id": custom_id,
            "result": {
                "type": "errored",
                "error": {"type": "error", "error": {"type": "api_error", "message": message}},
            },
        }
    return {
        "error": {"code": 500 if kind == "error" else 504, "message": message},
        "metadata": {"custom_id": custom_id},
    }
