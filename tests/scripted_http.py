"""What the scripted model servers have in common (tests/claude/scripted_model.py for
Claude Code, tests/agents/scripted_responses.py for Codex, tests/agents/scripted_gemini.py
for Gemini CLI): the state that records each request and holds the test's script, a
request handler's JSON and SSE replies, and a threaded server on a free loopback port for
a ``with`` block. Each server keeps only its own API's paths, shapes and errors.

Why a plain threaded ``http.server``: it runs beside trio tests and sync tests alike, and
a script may block (e.g. until the human has answered) without holding up other calls."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Protocol, TypeVar


class Numbered(Protocol):
    @property
    def index(self) -> int: ...


RequestT = TypeVar("RequestT", bound=Numbered)
PartT = TypeVar("PartT")


def in_turns(
    *turns: Sequence[PartT] | Callable[[RequestT], list[PartT]],
) -> Callable[[RequestT], list[PartT]]:
    """A script that serves ``turns`` in order, one per request: each a list of the
    reply's parts, or a script called with the request (to read it, or to wait for the
    human). A request after the last turn is an error (the test sees it in ``errors``)."""
    served = itertools.count()

    def script(request: RequestT) -> list[PartT]:
        turn = next(served)
        if turn >= len(turns):
            raise AssertionError(f"request {request.index} after the script's last turn")
        step = turns[turn]
        return step(request) if callable(step) else list(step)

    return script


@dataclass
class ScriptedServer(Generic[RequestT, PartT]):
    """The server's state: the script (called once per model request, it returns the
    reply's parts), every request recorded, and the script's errors, which the test
    reads (the agent only sees a 400)."""

    script: Callable[[RequestT], list[PartT]]
    requests: list[RequestT] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)


class ScriptedHandler(BaseHTTPRequestHandler):
    """A handler that keeps connections as HTTP/1.1, logs nothing (the recorded
    requests are the log), and replies in JSON or as a server-sent event stream."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def read_json(self) -> dict[str, Any]:
        """The request's body (``{}`` if it has none)."""
        length = int(self.headers.get("content-length", "0"))
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        return body

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, chunks: Iterable[bytes]) -> None:
        """A 200 event stream of ``chunks``, each flushed as it is made, then the
        connection closed (the stream has no length: its end is the close)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], name: str) -> Iterator[int]:
    """Serve ``handler`` on a free loopback port (yielded) for the ``with`` block, in a
    thread called ``name``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
