"""A scripted stand-in for the Anthropic Messages API, for running the real Claude Code
offline (``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``).

Why: the tests need Claude Code itself (its MCP client, its hooks, its TUI) with "the
model" under the test's control. Claude Code sends every model call as
``POST /v1/messages?beta=true`` with ``"stream": true`` and reads the Messages API's SSE
events; this server answers each call with whatever the test's ``script`` returns for
it (text, or ``tool_use`` blocks) and records every request body, so a test can read
exactly what reached the model: the user turns and the tool results Claude Code sent
back. ``POST /v1/messages/count_tokens`` gets a fixed count.

The server itself, shared with the Codex and Gemini CLI ones in tests/agents/, is
tests/scripted_http.py."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import trio
from scripted_http import ScriptedHandler, ScriptedServer, serving

Block = dict[str, Any]
"""One content block of a reply: ``text(...)`` or ``tool_use(...)``."""

Script = Callable[["ModelRequest"], list[Block]]
"""What "the model" does: called once per model request, returns the reply's blocks."""


def text(words: str) -> Block:
    return {"type": "text", "text": words}


_ids = itertools.count(1)


def tool_use(name: str, tool_input: dict[str, Any]) -> Block:
    return {
        "type": "tool_use",
        "id": f"toolu_scripted_{next(_ids):04d}",
        "name": name,
        "input": tool_input,
    }


@dataclass
class ModelRequest:
    """One ``/v1/messages`` call as Claude Code sent it."""

    body: dict[str, Any]
    index: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools", [])]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block in the conversation so far, oldest first."""
        found = []
        for message in self.messages:
            content = message.get("content")
            if message.get("role") == "user" and isinstance(content, list):
                found += [b for b in content if b.get("type") == "tool_result"]
        return found

    def last_tool_result(self) -> dict[str, Any] | None:
        results = self.tool_results()
        return results[-1] if results else None

    def user_texts(self) -> list[str]:
        """The text of every user turn (string content or text blocks)."""
        texts = []
        for message in self.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts += [b["text"] for b in content if b.get("type") == "text"]
        return texts


def result_text(result: dict[str, Any]) -> str:
    """A ``tool_result``'s content as one string (it may be a string or text blocks)."""
    content = result.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


@dataclass
class ScriptedModel(ScriptedServer[ModelRequest, Block]):
    """The server's state: the script, and every request recorded."""

    _recorded: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._recorded = threading.Condition(self._lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def record(self, body: dict[str, Any]) -> ModelRequest:
        with self._lock:
            request = ModelRequest(body, len(self.requests))
            self.requests.append(request)
            self._recorded.notify_all()
            return request

    async def request_where(
        self, wanted: Callable[[ModelRequest], bool], *, within_s: float
    ) -> ModelRequest:
        """The first request recorded (earlier or later) that ``wanted`` accepts, as
        soon as the server records it: the agent runs in another process, and the
        server's thread tells each request it records (no poll)."""

        def found() -> ModelRequest | None:
            return next((r for r in self.requests if wanted(r)), None)

        def wait() -> ModelRequest:
            with self._recorded:
                if not self._recorded.wait_for(found, timeout=within_s):
                    raise AssertionError(f"no such model request within {within_s:g} s")
                request = found()
                assert request is not None
                return request

        return await trio.to_thread.run_sync(wait, abandon_on_cancel=True)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(blocks: list[Block], model: str) -> Iterator[bytes]:
    """The Messages API's streaming events for a reply made of ``blocks``."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    yield _sse(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_scripted_{next(_ids):04d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        },
    )
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: Block = {"type": "text", "text": ""}
            delta: Block = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        yield _sse(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield _sse("message_stop", {"type": "message_stop"})


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self.send_json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
            )

        def do_POST(self) -> None:
            body = self.read_json()
            path = self.path.partition("?")[0]
            if path == "/v1/messages/count_tokens":
                self.send_json(200, {"input_tokens": 100})
                return
            if path != "/v1/messages":
                self.send_json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": path}}
                )
                return
            request = model.record(body)
            try:
                blocks = model.script(request)
            except Exception as exc:
                # The test reads it. A 400, not a 5xx: Claude Code retries a 5xx with
                # backoff for minutes, and ends the run at once on a 400.
                model.errors.append(f"request {request.index}: {exc!r}")
                self.send_json(
                    400,
                    {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": repr(exc)},
                    },
                )
                return
            if not body.get("stream"):
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                self.send_json(
                    200,
                    {
                        "id": f"msg_scripted_{next(_ids):04d}",
                        "type": "message",
                        "role": "assistant",
                        "model": body.get("model", "scripted"),
                        "content": blocks,
                        "stop_reason": stop,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    },
                )
                return
            self.send_events(stream_events(blocks, body.get("model", "scripted")))

    return Handler


@contextmanager
def scripted_model(script: Script) -> Iterator[ScriptedModel]:
    """Serve ``script`` on a free loopback port for the ``with`` block."""
    model = ScriptedModel(script)
    with serving(_handler(model), "scripted-model") as model.port:
        yield model
