"""The hub's MCP endpoint over Streamable HTTP (``hive-rpc serve --http 127.0.0.1:PORT``).

For agents that prefer a URL to a stdio process.  The same tools as ``hive-rpc mcp``,
served in-process on the hub's own registry by hypercorn's trio worker.  Secure by
default, as the MCP specification asks of local servers:

* it binds loopback addresses only (127.0.0.0/8, ::1, localhost) and refuses others;
* every request needs ``Authorization: Bearer TOKEN``; the token is random, made on
  first use and kept in ``DATA_DIR/mcp-token`` (0600), compared in constant time;
* a request carrying an ``Origin`` other than this endpoint's own is refused (403),
  which stops a web page in the user's browser from driving the hub; the SDK's own
  DNS-rebinding protection checks ``Host`` as well (421).
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework
from mcp.server.transport_security import TransportSecuritySettings

from hive_rpc.backends import LocalBackend
from hive_rpc.faces.mcp_tools import HiveMcp
from hive_rpc.paths import load_token, parse_bind
from hive_rpc.service import HubService

log = logging.getLogger(__name__)

TOKEN_NAME = "mcp-token"
MCP_PATH = "/mcp"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def _netloc(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class Guard:
    """ASGI middleware: 403 for a foreign Origin, 401 without the bearer token.
    Lifespan events pass through untouched (they start the SDK's session manager)."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self._token = token.encode()
        self.origins: set[str] = set()

    def allow_port(self, host: str, port: int) -> None:
        for name in {_netloc(host), "127.0.0.1", "localhost", "[::1]"}:
            self.origins |= {f"http://{name}:{port}", f"http://{name}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") not in self.origins:
            await _deny(send, 403, f"Origin {origin.decode('latin-1')!r} is not allowed")
            return
        auth = headers.get(b"authorization", b"")
        if not (auth.startswith(b"Bearer ") and hmac.compare_digest(auth[7:], self._token)):
            await _deny(
                send,
                401,
                "missing or wrong bearer token; see `hive-rpc status --json`",
                [(b"www-authenticate", b'Bearer realm="hive-rpc"')],
            )
            return
        await self.app(scope, receive, send)


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


async def serve_mcp_http(
    service: HubService,
    bind: str,
    data_dir: Path,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over Streamable HTTP until cancelled; ``started`` with (url, token file)."""
    host, port = parse_bind(bind)
    token, token_file = load_token(data_dir, TOKEN_NAME)
    hive = HiveMcp(LocalBackend(service))
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
    guard = Guard(app, token)
    config = Config()
    config.bind = [f"{_netloc(host)}:{port}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(hive.run_updates)
        binds = await nursery.start(
            lambda task_status: serve(
                cast("ASGIFramework", guard),
                config,
                shutdown_trigger=shutdown.wait,
                task_status=task_status,
            )
        )
        base = binds[0]
        guard.allow_port(host, int(base.rsplit(":", 1)[1]))
        url = base + MCP_PATH
        log.info("MCP endpoint %s (token in %s)", url, token_file)
        task_status.started((url, token_file))
        try:
            await trio.sleep_forever()
        finally:
            shutdown.set()
