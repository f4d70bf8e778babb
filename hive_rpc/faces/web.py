"""The hub's web face: the activity stream (``GET /activity``, Server-Sent Events) and
the dashboard, served next to MCP by the same hypercorn server (``faces/mcp/http.py``).

Routes (every one behind ``mcp.http.Guard``: loopback Host, the agent's token or the
human's (bearer or the dashboard's cookie), same-origin ``Origin`` on POST):

* ``GET /activity``: one SSE event per activity entry (``id: N``, ``event: KIND``,
  ``data: RECORD``), resumable from ``Last-Event-ID`` or ``?last_id=N``; ``event: reset``
  when the entries after that id are gone; ``: ping`` comments every ``ping_s``;
* ``GET /activity/blobs/{sha256}``: a large result's JSON;
* ``GET /api/state``: the snapshot the dashboard starts from (pending prompts, dialogues
  with their turns, the agents' sessions, recent activity, and the ``last_id`` to
  stream from);
* ``GET /api/decisions``: the newest permission decisions (``audit/list``; ``?limit=N``,
  ``?since=UNIX``), for the Decisions panel;
* ``POST /api/typing``: the human started typing an answer (the countdown stops);
* ``POST /api/defer``: the page with an answer typed into it closed unanswered (the
  countdown starts again, ``hive/defer``);
* ``POST /api/shown``: the page showed a question to the human (open, visible, with
  the window's focus): ``hive/shown``, so its expiry is not "unseen";
* ``POST /api/clearUnseen``: the human saw the questions that expired unseen
  (``{"all": true}`` or ``{"id": ...}``): ``hive/clearUnseen``;
* ``POST /api/respond`` and ``POST /api/cancel``: the human's answer or withdrawal,
  recorded as by ``dashboard``; these and typing/defer/shown decide for the human
  (``_deciding``): they need the human's credential, and are then an approver's calls;
* ``POST /api/event``: a child's event for its parent's terminal (``event/post``), so a
  session hook or a CI job with the token posts one without running the CLI;
* any other ``/api/`` route, or a route's other HTTP methods: the API's JSON error,
  ``method_not_found`` (-32601), 404 (405 for a known route);
* ``GET /dashboard`` (the page, with ``/dashboard/app.js`` and ``/dashboard/style.css``)
  and ``GET /`` (a redirect to it).

The stream is plain trio: the sender waits on the log (``ActivityLog.after``) under
a timeout that sends the pings; one task watches for the client's disconnect, one
for the hub's stop.  Each entry is encoded once for every stream.
"""

from __future__ import annotations

import collections
import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from importlib import resources
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError, MethodNotFound, NotAnApprover
from hive_rpc.protocol.methods import ERRORS
from hive_rpc.rpc.dispatch import dispatch, error_for
from hive_rpc.runtime.activity import ActivityLog, Entry
from hive_rpc.service import HubService
from hive_rpc.service.approver import APPROVER

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

PING_S = 15.0
"""Seconds between ``: ping`` comments on an idle stream (read when a WebFace is made)."""
RETRY_MS = 2000
"""What the stream tells EventSource to wait before reconnecting."""
ENCODED_KEPT = 256
"""Entries whose SSE encoding the activity stream keeps for the streams to share."""
RECENT = 100
"""Activity entries in ``/api/state``."""
MAX_DIALOGUES = 50
"""Dialogues (newest) in ``/api/state``, each with its turns."""
MAX_BODY = 1 << 20
BY = "dashboard"
"""The ``by`` recorded for answers and withdrawals made on the page."""
CREDENTIAL = "hive_rpc.credential"
"""The ASGI scope key where the Guard says whose credential a request carries."""
AGENT, HUMAN = "agent", "human"

HTTP_STATUS = {e.code: e.http for e in ERRORS}
"""A hub error's JSON-RPC code -> the HTTP status of the API's answer (the method
table's ``ERRORS``; a code it lacks: 400)."""

ANY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

_DIGEST = re.compile(r"[0-9a-f]{64}")
_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "hub.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "prompts.js": "text/javascript; charset=utf-8",
    "answers.js": "text/javascript; charset=utf-8",
    "detail.js": "text/javascript; charset=utf-8",
    "sessions.js": "text/javascript; charset=utf-8",
    "activity.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


Handler = Callable[["WebFace", Request], Awaitable[Response]]


def _deciding(handler: Handler) -> Handler:
    """A route that decides for the human (answer, cancel, typing, defer): refused
    with 403, -32013 and ``data.lacks`` ``"human"`` to the agent's credential (the MCP
    token), before its body is read; with the human's (the sign-in made from the
    approver token) it runs as an approver's call."""

    @functools.wraps(handler)
    async def checked(face: WebFace, request: Request) -> Response:
        if request.scope.get(CREDENTIAL) != HUMAN:
            place = face.service.info.approver_token_file or "DATA_DIR/approver-token"
            return _failed(
                NotAnApprover(
                    f"POST {request.url.path} decides for the human, and this request "
                    "carries the agent's credential (the MCP token), not the human's: sign "
                    f"in to the dashboard with the contents of {place}, or send it as the "
                    "bearer token",
                    lacks="human",
                    token_file=place,
                )
            )
        proved = APPROVER.set(True)
        try:
            return await handler(face, request)
        finally:
            APPROVER.reset(proved)

    return checked


def load_assets() -> dict[str, bytes]:
    """The dashboard's files (package data in ``hive_rpc/faces/dashboard/``)."""
    folder = resources.files("hive_rpc.faces").joinpath("dashboard")
    return {name: folder.joinpath(name).read_bytes() for name in _ASSETS}


def sse_event(entry: Entry) -> bytes:
    data = json.dumps(entry.record(), separators=(",", ":"), default=str)
    return f"id: {entry.id}\nevent: {entry.kind}\ndata: {data}\n\n".encode()


def sse_reset(last_id: int) -> bytes:
    data = json.dumps({"last_id": last_id})
    return f"id: {last_id}\nevent: reset\ndata: {data}\n\n".encode()


def _error(
    status: int,
    message: str,
    code: int | None = None,
    data: Any = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"message": message}
    if code is not None:
        body["code"] = code
    if data is not None:
        body["data"] = data
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _resume_point(scope: Scope) -> int | None:
    """``Last-Event-ID`` (what EventSource sends on reconnect) or ``?last_id=N``."""
    text = _header(scope, b"last-event-id")
    if text is None:
        for part in bytes(scope.get("query_string", b"")).decode("latin-1").split("&"):
            key, _, value = part.partition("=")
            if key == "last_id":
                text = value
    if text is None or not text.strip():
        return None
    return int(text.strip())  # ValueError: a bad id, refused by the caller


class ActivityStream:
    """``GET /activity`` as a raw ASGI app (the stream is trio all the way)."""

    def __init__(self, service: HubService, ping_s: float, closing: trio.Event) -> None:
        self._service = service
        self.ping_s = ping_s
        self._closing = closing
        self.streams = 0
        """Streams open now (``statistics``)."""
        self._events: collections.OrderedDict[int, bytes] = collections.OrderedDict()
        """The newest entries as SSE events, by id: each encoded once, not once per
        stream (bench/sse_fanout.py: 100 streams encoded each entry 100 times)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            start = _resume_point(scope)
        except ValueError:
            await JSONResponse(
                {"error": {"message": "Last-Event-ID / last_id must be an integer"}},
                status_code=400,
            )(scope, receive, send)
            return
        activity = self._service.activity
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        self.streams += 1
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_disconnect, receive, nursery.cancel_scope)
                nursery.start_soon(self._watch_closing, nursery.cancel_scope)
                await self._send_body(send, f"retry: {RETRY_MS}\n\n".encode())
                await self._stream(activity, start, send)
        finally:
            self.streams -= 1
        # The client left or the hub is stopping: end the response cleanly.
        with trio.move_on_after(1) as cleanup:
            cleanup.shield = True
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except Exception:
                log.debug("activity stream: the client left before the end", exc_info=True)

    async def _watch_disconnect(self, receive: Receive, scope: trio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async def _watch_closing(self, scope: trio.CancelScope) -> None:
        await self._closing.wait()
        scope.cancel()

    @staticmethod
    async def _send_body(send: Send, body: bytes) -> None:
        await send({"type": "http.response.body", "body": body, "more_body": True})

    async def _stream(self, activity: ActivityLog, start: int | None, send: Send) -> None:
        if start is not None and start > activity.last_id:
            # An id this log never gave (the ids of an earlier run are smaller: a
            # clock that went back, or another hub's id): start over.
            start = None
            await self._send_body(send, sse_reset(activity.last_id))
        last_id = activity.last_id if start is None else start
        while True:
            batch: list[Entry] | None = []
            with trio.move_on_after(self.ping_s):
                batch = await activity.after(last_id)
            if batch == []:  # nothing for ping_s
                await self._send_body(send, b": ping\n\n")
            elif batch is None:  # the entries after last_id are gone: start again
                last_id = activity.last_id
                await self._send_body(send, sse_reset(last_id))
            else:
                last_id = batch[-1].id
                await self._send_body(send, b"".join(map(self._encoded, batch)))

    def _encoded(self, entry: Entry) -> bytes:
        """``sse_event(entry)``, encoded once for every stream (``ENCODED_KEPT``)."""
        data = self._events.get(entry.id)
        if data is None:
            data = self._events[entry.id] = sse_event(entry)
            if len(self._events) > ENCODED_KEPT:
                self._events.popitem(last=False)
        return data


class WebFace:
    """The Starlette app of the web routes, over one service."""

    def __init__(self, service: HubService, *, ping_s: float | None = None) -> None:
        self.service = service
        self.closing = trio.Event()
        self.activity = ActivityStream(service, PING_S if ping_s is None else ping_s, self.closing)
        self._assets = load_assets()
        self.app = Starlette(
            routes=[
                Route("/", self.root, methods=["GET"]),
                Route("/dashboard", self.page, methods=["GET"]),
                Route("/dashboard/{name}", self.asset, methods=["GET"]),
                Route("/activity", self.activity, methods=["GET"]),
                Route("/activity/blobs/{digest}", self.blob, methods=["GET"]),
                Route("/api/state", self.state, methods=["GET"]),
                Route("/api/decisions", self.decisions, methods=["GET"]),
                Route("/api/respond", self.respond, methods=["POST"], max_body_size=MAX_BODY),
                Route("/api/cancel", self.cancel, methods=["POST"], max_body_size=MAX_BODY),
                Route("/api/typing", self.typing, methods=["POST"], max_body_size=MAX_BODY),
                Route("/api/defer", self.defer, methods=["POST"], max_body_size=MAX_BODY),
                Route("/api/shown", self.shown, methods=["POST"], max_body_size=MAX_BODY),
                Route(
                    "/api/clearUnseen", self.clear_unseen, methods=["POST"], max_body_size=MAX_BODY
                ),
                Route("/api/event", self.event, methods=["POST"], max_body_size=MAX_BODY),
                Route("/api/{rest:path}", self.no_route, methods=ANY_METHOD),
            ]
        )

    def close(self) -> None:
        """End every open stream (the hub is stopping)."""
        self.closing.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    # --- the page ------------------------------------------------------------------

    async def root(self, request: Request) -> Response:
        return RedirectResponse("/dashboard", status_code=303)

    async def page(self, request: Request) -> Response:
        return self._asset("index.html")

    async def asset(self, request: Request) -> Response:
        name = str(request.path_params["name"])
        if name not in _ASSETS or name == "index.html":
            return _error(404, f"no dashboard file {name[:60]!r}")
        return self._asset(name)

    def _asset(self, name: str) -> Response:
        return Response(self._assets[name], media_type=_ASSETS[name], headers=PAGE_HEADERS)

    # --- data ------------------------------------------------------------------------

    async def blob(self, request: Request) -> Response:
        digest = str(request.path_params["digest"])
        if not _DIGEST.fullmatch(digest):
            return _error(404, f"no result blob {digest[:70]!r} (not a SHA-256 digest)")
        try:
            # Another hub's result, or one this hub's log dropped, from the shared
            # store: every hub serves every result, not only those it received.
            text = await self.service.activity.read_blob(digest)
        except Exception as raised:
            return _failed(error_for(f"GET /activity/blobs/{digest}", raised))
        if text is None:
            return _error(404, f"no result blob {digest[:70]!r} (unknown, or dropped)")
        return Response(text, media_type="application/json")

    async def state(self, request: Request) -> Response:
        try:
            return await self._state()
        except Exception as raised:
            return _failed(error_for("GET /api/state", raised))

    async def _state(self) -> Response:
        # One page, oldest first: the whole list can pass the reply limit (thousands
        # of long questions), and no human reads past the first thousand anyway;
        # ``pending_total`` lets the page say how many more wait.
        page = await self.service.call("hive/list", {"limit": limits.LIST_PAGE_MAX})
        pending = page["prompts"]
        pending_total = self.service.registry.statistics()["pending"]
        dialogues: list[dict[str, Any]] = []
        agora = self.service.agora
        if agora is not None:
            newest = agora.dialogues()[-MAX_DIALOGUES:]
            dialogues = [agora.status(d["id"]) for d in newest]
        activity = self.service.activity
        # Nothing above awaited after the list was read, so last_id matches the snapshot.
        return JSONResponse(
            {
                "pending": pending,
                "pending_total": pending_total,
                "expired_unseen": [p.to_record() for p in self.service.registry.list_unseen()],
                "dialogues": dialogues,
                # Every session, in hive/sessions' order; "session" entries update them.
                "sessions": [s.record() for s in self.service.sessions.list()],
                "activity": [e.record() for e in reversed(activity.recent(RECENT))],
                "last_id": activity.last_id,
                "now": self.service.registry.now(),
            }
        )

    async def decisions(self, request: Request) -> Response:
        """The audit trail's newest entries, oldest first (``audit/list``): the query's
        ``limit`` and ``since`` as numbers, checked by the method's row."""
        params: dict[str, Any] = {}
        for name in ("limit", "since"):
            text = request.query_params.get(name)
            if text is not None:
                try:
                    params[name] = float(text) if "." in text else int(text)
                except ValueError:
                    params[name] = text  # refused by the row: a number is wanted
        return await self._call("audit/list", params)

    # --- actions -----------------------------------------------------------------------

    @_deciding
    async def respond(self, request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        params: dict[str, Any] = {"id": body.get("id"), "answer": body.get("answer"), "by": BY}
        if body.get("action") is not None:
            params["action"] = body["action"]
        return await self._call("hive/respond", params)

    @_deciding
    async def cancel(self, request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        return await self._call("hive/cancel", {"id": body.get("id"), "by": BY})

    @_deciding
    async def typing(self, request: Request) -> Response:
        """The human started typing on the page: stop the prompt's countdown."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        return await self._call("hive/typing", {"id": body.get("id")})

    @_deciding
    async def defer(self, request: Request) -> Response:
        """The page closed with an answer typed and not sent: the countdown runs again."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        return await self._call("hive/defer", {"id": body.get("id")})

    @_deciding
    async def shown(self, request: Request) -> Response:
        """The page showed the question to the human (open, visible, focused): an
        expiry from now on is "shown, no answer", not unseen."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        return await self._call("hive/shown", {"id": body.get("id")})

    @_deciding
    async def clear_unseen(self, request: Request) -> Response:
        """The human saw what expired unseen: its trace comes down in every editor."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        return await self._call("hive/clearUnseen", {"id": body.get("id"), "all": body.get("all")})

    async def event(self, request: Request) -> Response:
        """A child's event for its parent: the body is ``event/post``'s params, checked by
        its row like any call's; the answer is its result (the rendered text and the
        delivery)."""
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        return await self._call("event/post", body)

    async def _call(self, method: str, params: dict[str, Any]) -> Response:
        try:
            record = await dispatch(self.service.call, method, params)
        except HiveError as e:  # dispatch's tiers: a refusal, or a bug (logged)
            return _failed(e)
        return JSONResponse(record)

    async def no_route(self, request: Request) -> Response:
        """The first tier, as every face has it: an unknown ``/api/`` route (or one
        asked with another HTTP method) is the API's JSON error, ``method_not_found``,
        so that a client of the API reads every failure one way (Starlette's own
        would be plain text)."""
        api = {  # the routes above: path -> the HTTP methods it takes
            r.path: ", ".join(sorted(r.methods - {"HEAD"}))
            for r in self.app.routes
            if isinstance(r, Route) and r.path.startswith("/api/") and r.methods
            if "{" not in r.path
        }
        path, verb = request.url.path, request.method
        offered = ", ".join(f"{methods} {p}" for p, methods in api.items())
        error = MethodNotFound(f"no API route {verb} {path[:80]}; the API offers {offered}")
        if path in api:
            return _error(405, error.message, error.code, error.data, {"Allow": api[path]})
        return _failed(error)


def _failed(error: HiveError) -> Response:
    return _error(HTTP_STATUS.get(error.code, 400), error.message, error.code, error.data)


async def _json_body(request: Request) -> dict[str, Any] | Response:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        return _error(415, "send the body as application/json")
    try:
        body = json.loads(await request.body())
    except ValueError:
        return _error(400, "the body is not valid JSON")
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    return body
