"""A fake batch API on 127.0.0.1 for the real OpenAI, Anthropic and google-genai clients.

It implements each provider's batch endpoints: OpenAI (file upload, ``/v1/batches`` create
and retrieve, file content), Anthropic Message Batches (create, retrieve, JSONL results) and
Gemini batch mode (``models/*:batchGenerateContent`` with inline requests, ``batches/*``).
A batch stays in progress for ``polls_to_end`` polls, then ends with ``end_state`` (a whole
batch expired or cancelled: only the items in ``partial`` answered). Items whose prompt is
in ``fail_prompts`` end failed (``fail_kind``: ``error`` or ``expired``), once each. Answers
name the prompt, the seed and the candidate, as the interactive fake server's do.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
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

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
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

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- request handling ---------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length", 0) or 0))
        key = h.headers.get("x-api-key") or h.headers.get("x-goog-api-key") or \
            (h.headers.get("authorization") or "").removeprefix("Bearer ")
        path = h.path.split("?")[0]
        with self.lock:
            self.log.append(Logged(method, path, key))
            self.last_key = key
            status, body, ctype = self._route(method, path, raw, h.headers.get("Content-Type", ""))
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _route(self, method: str, path: str, raw: bytes, ctype: str) -> tuple[int, Any, str]:
        js = "application/json"
        if method == "POST" and path == "/v1/files":
            content = _multipart_file(raw, ctype)
            file_id = f"file-{len(self.files)}"
            self.files[file_id] = content
            return 200, {"id": file_id, "object": "file", "bytes": len(content), "created_at": 0,
                         "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}, js
        if method == "POST" and path == "/v1/batches":
            lines = [json.loads(x) for x in self.files[json.loads(raw)["input_file_id"]].decode().splitlines() if x]
            batch = self._new("openai", [(x["custom_id"], x["body"]) for x in lines])
            return 200, self._openai_batch(batch), js
        if method == "POST" and path == "/v1/messages/batches":
            batch = self._new("anthropic", [(x["custom_id"], x["params"]) for x in json.loads(raw)["requests"]])
            return 200, self._anthropic_batch(batch), js
        if method == "POST" and path.endswith(":batchGenerateContent"):
            reqs = json.loads(raw)["batch"]["inputConfig"]["requests"]["requests"]
            batch = self._new("google", [((r.get("metadata") or {}).get("custom_id", ""), r["request"]) for r in reqs])
            return 200, self._google_batch(batch), js
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
                refusal = {"message": f"poll refused (key {self.last_key})", "type": "api_error",
                           "code": self.poll_status}
                return self.poll_status, {"error": refusal}, js
            self._advance(batch)
            view = {"openai": self._openai_batch, "anthropic": self._anthropic_batch, "google": self._google_batch}
            return 200, view[batch.provider](batch), js
        return 404, {"error": {"message": f"no route {method} {path}", "code": 404}}, js

    def _new(self, provider: str, items: list[tuple[str, dict[str, Any]]]) -> Batch:
        batch_id = {"openai": "batch_", "anthropic": "msgbatch_", "google": "g"}[provider] + str(len(self.log))
        self.batches[batch_id] = batch = Batch(batch_id, provider, items)
        return batch

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
        view: dict[str, Any] = {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
                                "completion_window": "24h", "created_at": 0, "input_file_id": "file-in",
                                "status": "in_progress" if batch.state == "running" else batch.state}
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
        return {"id": batch.id, "type": "message_batch", "created_at": "2026-01-01T00:00:00Z",
                "expires_at": "2026-01-02T00:00:00Z", "processing_status": "ended" if ended else "in_progress",
                "request_counts": {"processing": 0 if ended else len(batch.items), "succeeded": 0, "errored": 0,
                                   "canceled": 0, "expired": 0},
                "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None}

    def _google_batch(self, batch: Batch) -> dict[str, Any]:
        states = {"running": "BATCH_STATE_RUNNING", "completed": "BATCH_STATE_SUCCEEDED",
                  "expired": "BATCH_STATE_EXPIRED", "cancelled": "BATCH_STATE_CANCELLED"}
        meta: dict[str, Any] = {"name": f"batches/{batch.id}", "state": states[batch.state]}
        if batch.results is not None:
            meta["output"] = {"inlinedResponses": {"inlinedResponses": batch.results}}
        return {"name": f"batches/{batch.id}", "metadata": meta}


def _multipart_file(raw: bytes, ctype: str) -> bytes:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
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
        choices = [{"index": k, "message": {"role": "assistant", "content": answer(prompt, body.get("seed"), k)},
                    "finish_reason": "stop"} for k in range(n)]
        completion = {"id": "chatcmpl-b", "object": "chat.completion", "created": 0, "model": body["model"],
                      "choices": choices, "usage": {"prompt_tokens": 10, "completion_tokens": 5 * n,
                                                    "total_tokens": 10 + 5 * n}}
        return {"id": "r", "custom_id": custom_id, "error": None,
                "response": {"status_code": 200, "request_id": "q", "body": completion}}
    if provider == "anthropic":
        message = {"id": "msg_b", "type": "message", "role": "assistant", "model": body["model"],
                   "content": [{"type": "text", "text": answer(prompt, "-", 0)}], "stop_reason": "end_turn",
                   "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}
        return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}
    config = body.get("generationConfig", {})
    n = int(config.get("candidateCount") or 1)
    parts = [[{"text": answer(prompt, config.get("seed"), k)}] for k in range(n)]
    response = {"candidates": [{"content": {"role": "model", "parts": parts[k]}, "finishReason": "STOP", "index": k}
                               for k in range(n)],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5 * n,
                                  "totalTokenCount": 10 + 5 * n}}
    return {"response": response, "metadata": {"custom_id": custom_id}}


def _failure(provider: str, custom_id: str, kind: str) -> dict[str, Any]:
    message = "request expired before it ran" if kind == "expired" else "internal error"
    if provider == "openai":
        return {"id": "r", "custom_id": custom_id, "response": None,
                "error": {"code": "batch_expired" if kind == "expired" else "server_error", "message": message}}
    if provider == "anthropic":
        if kind == "expired":
            return {"custom_id": custom_id, "result": {"type": "expired"}}
        return {"custom_id": custom_id, "result": {"type": "errored", "error": {
            "type": "error", "error": {"type": "api_error", "message": message}}}}
    return {"error": {"code": 500 if kind == "error" else 504, "message": message},
            "metadata": {"custom_id": custom_id}}
