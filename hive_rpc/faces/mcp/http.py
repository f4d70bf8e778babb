"""The hub's HTTP server (``hive-rpc serve --http 127.0.0.1:PORT``): MCP over Streamable
HTTP at ``/mcp``, and the web face (``faces/web.py``: the activity stream at
``/activity``, the dashboard at ``/dashboard``), one hypercorn trio worker for both.

For agents that prefer a URL to a stdio process, the same tools as ``hive-rpc mcp``,
served by the same server (the hub's one ``HiveMcp``, server.py) on the hub's own
registry.  Secure by default, as the MCP
specification asks of local servers:

* it binds loopback addresses only (127.0.0.0/8, ::1, localhost) and refuses others;
* two credentials that never mix (docs/security.md).  The agent's: ``Authorization:
  Bearer TOKEN`` with the token in ``DATA_DIR/mcp-token`` (0600, random, made on first
  use), which opens ``/mcp`` and the web routes that read or report (the activity
  stream, ``/api/state``, ``/api/decisions``, ``/api/event``).  The human's: the
  approver token (``DATA_DIR/approver-token``, service/approver.py), as a bearer token
  or traded once at ``/dashboard?token=TOKEN`` for an HttpOnly, SameSite=Strict cookie
  holding a key derived from it; only it opens the routes that decide (answer, cancel,
  typing, defer: ``faces/web.py`` ``_deciding``), and there the request is an
  approver's.  The MCP token at the sign-in or a deciding route is refused (403) with
  what it lacks.  Every token is compared in constant time;
* a request carrying an ``Origin`` other than this endpoint's own is refused (403),
  which stops a web page in the user's browser from driving the hub; a POST to the
  web routes must carry this server's own origin (CSRF);
* ``Host`` must name this server on loopback (421): the SDK checks it for ``/mcp``,
  the Guard for the web routes (DNS rebinding);
* ``POST /hook/claude-code`` (faces/hook_http.py, Claude Code's ``"type": "http"``
  permission hook) takes a third credential, the hook token (``DATA_DIR/hook-token``),
  and nothing else: ``HookRoute`` sits in front of the Guard, which knows only the
  other two, so the hook token opens no other route and no other token opens it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework
from mcp.server.transport_security import TransportSecuritySettings

from hive_rpc.faces.accept_loop import quiet_trio_accept_errors
from hive_rpc.faces.hook_http import HookRoute
from hive_rpc.faces.mcp.server import HiveMcp
from hive_rpc.faces.web import AGENT, CREDENTIAL, HUMAN, WebFace
from hive_rpc.host.paths import load_token, parse_bind
from hive_rpc.service import HubService

log = logging.getLogger(__name__)

TOKEN_NAME = "mcp-token"
MCP_PATH = "/mcp"
COOKIE = "hive_human"
DASHBOARD_PATH = "/dashboard"
GRACEFUL_S = 1.0
"""Seconds the server waits, once stopping, for open requests to finish."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAFE_METHODS = frozenset({"GET", "HEAD"})
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _netloc(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def cookie_value(token: str) -> str:
    """What the dashboard cookie holds: a key derived from the human's token (a cookie
    reaches every port of its host, so it never carries the token itself)."""
    return hmac.new(token.encode(), b"hive-rpc dashboard cookie", hashlib.sha256).hexdigest()


def _cookies(header: bytes | None, name: str) -> list[bytes]:
    if not header:
        return []
    found = []
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name.encode():
            found.append(value.strip())
    return found


def _is_mcp(path: str) -> bool:
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


class Guard:
    """ASGI middleware in front of both apps.  In order: 403 for a foreign Origin; the
    dashboard's sign-in (the human's token for a cookie); 401 without a credential; for
    the web routes, 421 for a Host that is not this server on loopback, 403 for a POST
    without this server's own Origin.  ``/mcp`` takes the agent's token only and goes to
    the MCP app (whose SDK checks Host itself); the rest goes to the web app with
    ``scope[CREDENTIAL]`` set.  Lifespan events go to the MCP app untouched (they start
    the SDK's session manager)."""

    def __init__(
        self,
        app: App,
        token: str,
        web: App | None = None,
        token_file: Path | None = None,
        *,
        human_token: str | None = None,
        human_token_file: str | None = None,
    ) -> None:
        self.app = app
        self.web = web
        self._token = token.encode()
        self._human = human_token.encode() if human_token else None
        self._cookie = cookie_value(human_token).encode() if human_token else None
        self._token_file = token_file
        self._human_file = human_token_file
        self.origins: set[str] = set()
        self.hosts: set[str] = set()

    def allow_port(self, host: str, port: int) -> None:
        for name in {_netloc(host), *_LOOPBACK_NAMES}:
            self.origins |= {f"http://{name}:{port}", f"http://{name}"}
            self.hosts.add(f"{name}:{port}")
            if port == 80:
                self.hosts.add(name)

    def _is_human(self, given: bytes) -> bool:
        return self._human is not None and hmac.compare_digest(given, self._human)

    def _credential(self, headers: dict[bytes, bytes], web: bool) -> str | None:
        """Whose credential the request carries: the agent's, the human's, or none.
        Each token opens only its own doors: the human's is no MCP client's."""
        auth = headers.get(b"authorization", b"")
        given = auth[7:] if auth.startswith(b"Bearer ") else None
        if given is not None and hmac.compare_digest(given, self._token):
            return AGENT
        if not web:
            return None
        if given is not None and self._is_human(given):
            return HUMAN
        cookies = _cookies(headers.get(b"cookie"), COOKIE)
        if self._cookie is not None and any(hmac.compare_digest(c, self._cookie) for c in cookies):
            return HUMAN
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") not in self.origins:
            await _deny(send, 403, f"Origin {origin.decode('latin-1')!r} is not allowed")
            return
        path = str(scope.get("path", ""))
        web = not _is_mcp(path) and self.web is not None
        host = headers.get(b"host", b"").decode("latin-1")
        if web and host not in self.hosts:
            await _deny(send, 421, "Invalid Host header")
            return
        if web and path == DASHBOARD_PATH and await self._exchange(scope, send):
            return
        credential = self._credential(headers, web)
        if credential is None:
            await _deny(send, 401, self._where_is_the_token(host if web else None), _CHALLENGE)
            return
        if not web:
            await self.app(scope, receive, send)
            return
        if str(scope.get("method", "GET")).upper() not in _SAFE_METHODS:
            own = f"http://{host}"
            if origin is None or origin.decode("latin-1") != own:
                await _deny(send, 403, f"a POST here must carry the header Origin: {own}")
                return
        assert self.web is not None
        await self.web({**scope, CREDENTIAL: credential}, receive, send)

    async def _exchange(self, scope: Scope, send: Send) -> bool:
        """``GET /dashboard?token=TOKEN``: with the human's token, set the cookie and
        redirect to the bare page (so the token leaves the address bar).  False when
        there is no token to trade."""
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        given = query.get("token")
        if not given:
            return False
        token = given[0].encode()
        if self._cookie is None or not self._is_human(token):
            if hmac.compare_digest(token, self._token):
                await _deny(
                    send,
                    403,
                    "that is the agents' MCP token, which never signs in to the dashboard: "
                    f"sign in with the human's token, the contents of {self._human_place()}",
                )
            else:
                await _deny(send, 401, self._where_is_the_token(None), _CHALLENGE)
            return True
        cookie = f"{COOKIE}={self._cookie.decode()}; HttpOnly; SameSite=Strict; Path=/"
        await _deny(
            send,
            303,
            "see /dashboard",
            [
                (b"location", DASHBOARD_PATH.encode()),
                (b"set-cookie", cookie.encode()),
                (b"cache-control", b"no-store"),
                (b"referrer-policy", b"no-referrer"),
            ],
        )
        return True

    def _human_place(self) -> str:
        return self._human_file or "DATA_DIR/approver-token"

    def _where_is_the_token(self, host: str | None) -> str:
        where = f" (it is in {self._token_file})" if self._token_file else ""
        text = f"missing or wrong bearer token{where}; see `hive-rpc status --json`"
        if host is not None:
            text += (
                f"; in a browser, sign in at http://{host}{DASHBOARD_PATH}"
                f"?token=$(cat {self._human_place()})"
            )
        return text


_CHALLENGE = [(b"www-authenticate", b'Bearer realm="hive-rpc"')]


async def _deny(
    send: Send, status: int, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = message.encode() + b"\n"
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _other_tokens(service: HubService, token: str) -> dict[str, str]:
    """The tokens the hook route names when refusing them (faces/hook_http.py)."""
    named = {token: "the agents' MCP token"}
    if service.approver_token:
        named[service.approver_token] = "the human's approver token"
    return named


async def serve_mcp_http(
    service: HubService,
    bind: str,
    data_dir: Path,
    *,
    ping_s: float | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP and the web face until cancelled; ``started`` with (MCP url, token file).

    On cancellation the server stops gracefully: open activity streams end cleanly,
    other requests get ``GRACEFUL_S`` to finish."""
    host, port = parse_bind(bind)
    token, token_file = load_token(data_dir, TOKEN_NAME)
    hive = HiveMcp.for_hub(service)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted({"127.0.0.1:*", "localhost:*", "[::1]:*", f"{_netloc(host)}:*"}),
        allowed_origins=[
            "http://127.0.0.1:*",
            "http://localhost:*",
            "http://[::1]:*",
            "http://127.0.0.1",
            "http://localhost",
            "http://[::1]",
        ],
    )
    app = hive.server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, host=host
    )
    web = WebFace(service, ping_s=ping_s)
    guard = Guard(
        app,
        token,
        web,
        token_file,
        human_token=service.approver_token,
        human_token_file=service.info.approver_token_file,
    )
    # POST /hook/claude-code, with the hook token only, before the Guard (faces/hook_http.py).
    served = HookRoute(guard, guard, service, data_dir, other_tokens=_other_tokens(service, token))
    # hypercorn accepts with trio.serve_listeners, which logs a traceback ten times a
    # second while descriptors are short: one line a minute says as much.
    quiet_trio_accept_errors()
    config = Config()
    config.bind = [f"{_netloc(host)}:{port}"]
    config.accesslog = None
    config.graceful_timeout = GRACEFUL_S
    shutdown = trio.Event()
    stopped = trio.Event()
    # The server runs shielded so that, when the hub is cancelled, it can still stop in
    # order (end the streams, answer in-flight requests) instead of dropping connections.
    server_scope = trio.CancelScope(shield=True)

    async def run_server(task_status: Any) -> None:
        try:
            with server_scope:
                await serve(
                    cast("ASGIFramework", served),
                    config,
                    shutdown_trigger=shutdown.wait,
                    task_status=task_status,
                )
        finally:
            stopped.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(hive.run_updates)
        binds = await nursery.start(run_server)
        try:
            base = binds[0]
            guard.allow_port(host, int(base.rsplit(":", 1)[1]))
            url = base + MCP_PATH
            log.info(
                "MCP endpoint %s (token in %s), dashboard %s%s (sign in with %s)",
                url,
                token_file,
                base,
                DASHBOARD_PATH,
                service.info.approver_token_file or "DATA_DIR/approver-token",
            )
            task_status.started((url, token_file))
            await trio.sleep_forever()
        finally:
            web.close()
            shutdown.set()
            with trio.move_on_after(GRACEFUL_S + 1) as cleanup:
                cleanup.shield = True
                await stopped.wait()
            server_scope.cancel()
