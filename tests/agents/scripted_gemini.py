"""A scripted stand-in for the Gemini API, for running the real Gemini CLI offline
(``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT`` with ``GEMINI_API_KEY``; research.md,
"Other agents, offline").

Why: the tests need Gemini CLI itself (its MCP client, its trust rules) with "the model"
under the test's control. Gemini CLI 0.61.0 sends each turn as
``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` and reads SSE events whose
data is a ``GenerateContentResponse``; a ``functionCall`` part asks it to run a tool, and
the next request carries the tool's result as a ``functionResponse`` part. Beside the
turns it makes side calls, ``:generateContent`` without streaming, that ask for JSON (the
model router's "flash or pro?" first of all): they must get JSON back, or the CLI
retries them until it is killed. This server answers the turns with the parts the test's
``script`` returns, answers each side call with ``SIDE_ANSWER`` as JSON text, and
records both, so a test can read exactly what reached the model.

The server itself, shared with tests/claude/scripted_model.py, is tests/scripted_http.py."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import scripted_http
from scripted_http import ScriptedHandler, ScriptedServer, serving

Part = dict[str, Any]
"""One part of the model's reply: ``text(...)`` or ``function_call(...)``."""

Script = Callable[["GeminiRequest"], list[Part]]
"""What "the model" does: called once per turn request, returns the reply's parts."""

SIDE_ANSWER: dict[str, Any] = {
    "reasoning": "scripted",
    "model_choice": "flash",
    "complexity_reasoning": "scripted",
    "complexity_score": 1,
}
"""The JSON every side call gets: the model router's classifier reads ``model_choice``
(``flash`` or ``pro``); the fields another classifier might read are there too."""


def text(words: str) -> Part:
    return {"text": words}


_ids = itertools.count(1)


def function_call(name: str, args: dict[str, Any]) -> Part:
    """A call of one of the declared functions (an MCP tool under the name Gemini CLI
    declared it with)."""
    return {"functionCall": {"id": f"call_scripted_{next(_ids):04d}", "name": name, "args": args}}


def in_turns(*turns: Sequence[Part] | Script) -> Script:
    """A script that serves ``turns`` in order, one per turn request: each a list of
    parts, or a script called with the request. A request after the last turn is an
    error (the test sees it in ``errors``)."""
    return scripted_http.in_turns(*turns)


@dataclass
class GeminiRequest:
    """One ``:streamGenerateContent`` (a turn) or ``:generateContent`` (a side call)."""

    path: str
    body: dict[str, Any]
    index: int

    @property
    def model(self) -> str:
        """The model named in the path (``/v1beta/models/MODEL:method``)."""
        return self.path.rpartition("/")[2].partition(":")[0]

    @property
    def contents(self) -> list[dict[str, Any]]:
        contents: list[dict[str, Any]] = self.body.get("contents", [])
        return contents

    @property
    def function_names(self) -> list[str]:
        """The name of every declared function (the tools offered to the model)."""
        names = []
        for tool in self.body.get("tools", []):
            names += [f.get("name", "") for f in tool.get("functionDeclarations", [])]
        return names

    def function_responses(self) -> list[dict[str, Any]]:
        """Every ``functionResponse`` part in the conversation so far, oldest first."""
        return [
            part["functionResponse"]
            for content in self.contents
            for part in content.get("parts", [])
            if "functionResponse" in part
        ]

    def user_texts(self) -> list[str]:
        return [
            part["text"]
            for content in self.contents
            if content.get("role") == "user"
            for part in content.get("parts", [])
            if "text" in part
        ]


@dataclass
class ScriptedGemini(ScriptedServer[GeminiRequest, Part]):
    """The server's state: the script, and every request recorded (the turns in
    ``requests``, the side calls in ``side_calls``)."""

    side_calls: list[GeminiRequest] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        """What ``GOOGLE_GEMINI_BASE_URL`` is set to."""
        return f"http://127.0.0.1:{self.port}"

    def record(self, path: str, body: dict[str, Any], *, side: bool) -> GeminiRequest:
        with self._lock:
            found = self.side_calls if side else self.requests
            request = GeminiRequest(path, body, len(found))
            found.append(request)
            return request


def reply(parts: list[Part], model: str) -> dict[str, Any]:
    """A ``GenerateContentResponse`` holding ``parts`` as the one candidate's content."""
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
        "responseId": f"resp_scripted_{next(_ids):04d}",
    }


def _handler(server: ScriptedGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def _error(self, status: int, message: str) -> None:
            # The API's error shape; a 400 is not retried (a 5xx or 429 would be).
            state = "INVALID_ARGUMENT" if status == 400 else "NOT_FOUND"
            self.send_json(status, {"error": {"code": status, "message": message, "status": state}})

        def do_GET(self) -> None:
            self._error(404, self.path)

        def do_POST(self) -> None:
            body = self.read_json()
            path = self.path.partition("?")[0]
            method = path.rpartition(":")[2]
            if method == "countTokens":
                self.send_json(200, {"totalTokens": 10})
                return
            if method == "generateContent":
                side = server.record(path, body, side=True)
                self.send_json(200, reply([text(json.dumps(SIDE_ANSWER))], side.model))
                return
            if method != "streamGenerateContent":
                self._error(404, path)
                return
            request = server.record(path, body, side=False)
            try:
                parts = server.script(request)
            except Exception as exc:
                server.errors.append(f"request {request.index}: {exc!r}")
                self._error(400, repr(exc))
                return
            data = json.dumps(reply(parts, request.model))
            self.send_events([f"data: {data}\r\n\r\n".encode()])

    return Handler


@contextmanager
def scripted_gemini(script: Script) -> Iterator[ScriptedGemini]:
    """Serve ``script`` on a free loopback port for the ``with`` block."""
    state = ScriptedGemini(script)
    with serving(_handler(state), "scripted-gemini") as state.port:
        yield state
