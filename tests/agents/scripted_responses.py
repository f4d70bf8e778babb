"""A scripted stand-in for the OpenAI Responses API, for running the real Codex CLI
offline (a custom ``model_provider`` whose ``base_url`` is ``http://127.0.0.1:PORT/v1``
and ``wire_api = "responses"``; research.md, "Other agents, offline").

Why: the tests need Codex itself (its MCP client, its hooks, its sandbox) with "the
model" under the test's control. Codex 0.171.0 sends every model call as
``POST /v1/responses`` with ``"stream": true`` and reads the Responses API's SSE events:
each ``response.output_item.done`` carries one whole output item (a message or a
``function_call``), and ``response.completed`` ends the turn. This server answers each
call with the items the test's ``script`` returns for it, and records every request
body, so a test can read exactly what reached the model: the prompt, the tools offered
(MCP tools arrive grouped in a ``namespace`` tool, e.g. ``mcp__hive_rpc``) and each
``function_call_output`` Codex sent back.

The server itself, shared with tests/claude/scripted_model.py, is tests/scripted_http.py."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import scripted_http
from scripted_http import ScriptedHandler, ScriptedServer, serving

Item = dict[str, Any]
"""One output item of a reply: ``message(...)`` or ``function_call(...)``."""

Script = Callable[["ResponsesRequest"], list[Item]]
"""What "the model" does: called once per model request, returns the reply's items."""

_ids = itertools.count(1)


def message(words: str) -> Item:
    """The assistant's text (a turn that ends with it ends Codex's run in ``exec``)."""
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_scripted_{next(_ids):04d}",
        "content": [{"type": "output_text", "text": words, "annotations": []}],
    }


def function_call(name: str, arguments: dict[str, Any], namespace: str | None = None) -> Item:
    """A call of one of the offered tools; an MCP tool is named inside its namespace
    (``namespace="mcp__hive_rpc"``, ``name="hivemind_ask_async"``)."""
    number = next(_ids)
    item: Item = {
        "type": "function_call",
        "id": f"fc_scripted_{number:04d}",
        "call_id": f"call_scripted_{number:04d}",
        "name": name,
        "arguments": json.dumps(arguments),
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def in_turns(*turns: Sequence[Item] | Script) -> Script:
    """A script that serves ``turns`` in order, one per request: each a list of items,
    or a script called with the request (to read it, or to wait for the human). A
    request after the last turn is an error (the test sees it in ``errors``)."""
    return scripted_http.in_turns(*turns)


@dataclass
class ResponsesRequest:
    """One ``/v1/responses`` call as Codex sent it."""

    body: dict[str, Any]
    headers: dict[str, str]
    index: int

    @property
    def input(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.body.get("input", [])
        return items

    def namespace(self, name: str) -> dict[str, Any] | None:
        """The ``namespace`` tool called ``name`` (an MCP server's tools), if offered."""
        for tool in self.body.get("tools", []):
            if tool.get("type") == "namespace" and tool.get("name") == name:
                found: dict[str, Any] = tool
                return found
        return None

    @property
    def tool_names(self) -> list[str]:
        """Every offered tool's name; a namespace's tools as ``NAMESPACE.NAME``."""
        names = []
        for tool in self.body.get("tools", []):
            if tool.get("type") == "namespace":
                names += [f"{tool['name']}.{t.get('name')}" for t in tool.get("tools", [])]
            else:
                names.append(tool.get("name") or tool.get("type", ""))
        return names

    def outputs(self) -> list[dict[str, Any]]:
        """Every ``function_call_output`` item in the conversation so far, oldest first."""
        return [i for i in self.input if i.get("type") == "function_call_output"]

    def output_for(self, call: Item) -> dict[str, Any] | None:
        """The ``function_call_output`` that answers ``call`` (by its call_id)."""
        for item in self.outputs():
            if item.get("call_id") == call["call_id"]:
                return item
        return None

    def user_texts(self) -> list[str]:
        """The text of every user message."""
        texts = []
        for item in self.input:
            if item.get("type") == "message" and item.get("role") == "user":
                texts += [c.get("text", "") for c in item.get("content", [])]
        return texts


def output_text(output: dict[str, Any]) -> str:
    """A ``function_call_output``'s output as one string: Codex sends a string, or a
    list of content items (``input_text``) for an MCP tool's content."""
    value = output.get("output")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(c.get("text", "") for c in value if isinstance(c, dict))
    return json.dumps(value)


@dataclass
class ScriptedResponses(ScriptedServer[ResponsesRequest, Item]):
    """The server's state: the script, and every request recorded."""

    @property
    def base_url(self) -> str:
        """What a Codex ``model_providers`` entry's ``base_url`` is set to."""
        return f"http://127.0.0.1:{self.port}/v1"

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> ResponsesRequest:
        with self._lock:
            request = ResponsesRequest(body, headers, len(self.requests))
            self.requests.append(request)
            return request


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(items: list[Item], model: str) -> Iterator[bytes]:
    """The Responses API's streaming events for a reply made of ``items``: each item
    added then done (Codex acts on ``output_item.done``), then ``response.completed``."""
    response_id = f"resp_scripted_{next(_ids):04d}"
    response = {"id": response_id, "object": "response", "model": model, "status": "in_progress"}
    yield _sse({"type": "response.created", "response": response})
    for index, item in enumerate(items):
        yield _sse({"type": "response.output_item.added", "output_index": index, "item": item})
        yield _sse({"type": "response.output_item.done", "output_index": index, "item": item})
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    yield _sse(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": items, "usage": usage},
        }
    )


def _handler(server: ScriptedResponses) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def _not_found(self) -> None:
            self.send_json(404, {"error": {"type": "not_found", "message": self.path}})

        def do_GET(self) -> None:
            self._not_found()

        def do_POST(self) -> None:
            body = self.read_json()
            if self.path.partition("?")[0] != "/v1/responses":
                self._not_found()
                return
            request = server.record(body, {k.lower(): v for k, v in self.headers.items()})
            try:
                items = server.script(request)
            except Exception as exc:
                # The test reads it. A 400, not a 5xx: Codex retries a 5xx (stream
                # errors too) with backoff, and ends the turn on a 400.
                server.errors.append(f"request {request.index}: {exc!r}")
                self.send_json(
                    400, {"error": {"type": "invalid_request_error", "message": repr(exc)}}
                )
                return
            self.send_events(stream_events(items, body.get("model", "scripted")))

    return Handler


@contextmanager
def scripted_responses(script: Script) -> Iterator[ScriptedResponses]:
    """Serve ``script`` on a free loopback port for the ``with`` block."""
    state = ScriptedResponses(script)
    with serving(_handler(state), "scripted-responses") as state.port:
        yield state
