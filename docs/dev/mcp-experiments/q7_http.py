"""Q7: Streamable HTTP app from MCPServer, served by hypercorn's trio worker, bearer+Origin middleware."""
import hmac, json, sys, warnings
sys.path.insert(0, "/tmp/mcpx")
import httpx2
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation
import app as hive

TOKEN = "s3cret-token"


class BearerOriginGuard:
    """Pure ASGI middleware: 403 on a foreign Origin, 401 on a missing/wrong bearer token."""

    def __init__(self, app, token: str, allowed_origins: set[str]):
        self.app, self.token, self.allowed = app, token.encode(), allowed_origins

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":                       # lifespan must pass through (session manager!)
            return await self.app(scope, receive, send)
        h = {k.lower(): v for k, v in scope["headers"]}
        origin = h.get(b"origin")
        if origin is not None and origin.decode("latin-1") not in self.allowed:
            return await self._deny(send, 403, b"forbidden origin")
        auth = h.get(b"authorization", b"")
        if not (auth.startswith(b"Bearer ") and hmac.compare_digest(auth[7:], self.token)):
            return await self._deny(send, 401, b"unauthorized", [(b"www-authenticate", b"Bearer")])
        return await self.app(scope, receive, send)

    @staticmethod
    async def _deny(send, status, body, extra=()):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body})


async def start_server(nursery, asgi_app, shutdown: trio.Event) -> str:
    cfg = Config()
    cfg.bind = ["127.0.0.1:0"]
    cfg.accesslog = None
    cfg.errorlog = None
    binds = await nursery.start(lambda task_status: serve(asgi_app, cfg, shutdown_trigger=shutdown.wait,
                                                            task_status=task_status))
    return binds[0]          # e.g. "http://127.0.0.1:41234"


async def main():
    warnings.simplefilter("ignore")
    shutdown = trio.Event()
    async with trio.open_nursery() as n:
        hive.TG = n
        security = TransportSecuritySettings(           # SDK's own DNS-rebinding check (Host + Origin)
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*"],
            allowed_origins=["http://127.0.0.1", "http://localhost",        # exact (no port) ...
                             "http://127.0.0.1:*", "http://localhost:*"],   # ... ':*' only matches WITH a port
        )
        starlette_app = hive.mcp.streamable_http_app(streamable_http_path="/mcp", transport_security=security)
        base = await start_server(n, BearerOriginGuard(starlette_app, TOKEN, {"http://127.0.0.1", "http://localhost"}),
                                  shutdown)
        url = f"{base}/mcp"
        print("serving", url)

        # --- SDK client with bearer header, both eras ---
        for mode in ("legacy", "auto"):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                          timeout=httpx2.Timeout(30, read=300)) as hc:
                async with Client(streamable_http_client(url, http_client=hc), mode=mode,
                                  client_info=Implementation(name="agent-http", version="9")) as c:
                    r = await c.call_tool("make_ask", {"title": "http", "votes": 2})
                    w1 = (await c.call_tool("whoami", {})).structured_content
                    w2 = (await c.call_tool("whoami", {})).structured_content
                    seen = []
                    async def cb(p, t, m): seen.append(p)
                    s = await c.call_tool("slow", {"steps": 3, "delay": 0.1}, progress_callback=cb)
                    print(f"[{mode}] protocol={c.protocol_version} make_ask={r.structured_content}")
                    print(f"[{mode}] whoami#1={json.dumps(w1)}")
                    print(f"[{mode}] whoami#2 calls={w2['calls_on_this_connection']} session_id={w2['session_id']}")
                    print(f"[{mode}] progress over HTTP: {seen} -> {s.content[0].text}")

        # --- wrong token via SDK client ---
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer WRONG"}) as hc:
            try:
                async with Client(streamable_http_client(url, http_client=hc), mode="legacy") as c:
                    pass
            except* MCPError as eg:          # NB: arrives wrapped in an ExceptionGroup (transport task group)
                e = eg.exceptions[0]
                depth = 1
                while isinstance(e, BaseExceptionGroup):
                    e, depth = e.exceptions[0], depth + 1
                print(f"  (nested ExceptionGroup depth={depth})")
                print(f"SDK client, wrong token -> ExceptionGroup[MCPError code={e.code} {e.message!r}]")

        # --- raw HTTP status codes ---
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}}
        hdrs = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx2.AsyncClient() as raw:
            for label, extra in [
                ("no token", {}),
                ("wrong token", {"Authorization": "Bearer WRONG"}),
                ("good token + foreign Origin", {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}),
                ("good token + own Origin", {"Authorization": f"Bearer {TOKEN}", "Origin": "http://127.0.0.1"}),
                ("good token + evil Host (SDK check)", {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example:80"}),
                ("good token + Origin w/ port (mw allows? no)", {"Authorization": f"Bearer {TOKEN}", "Origin": "http://127.0.0.1:5173"}),
            ]:
                resp = await raw.post(url, json=init, headers={**hdrs, **extra})
                print(f"raw POST {label:45s} -> {resp.status_code} {resp.text[:60]!r}")

        # --- the SDK's own Origin check alone (second app, no guard middleware) ---
        bare = MCPServer("bare")
        @bare.tool()
        def ping() -> str: return "pong"
        base2 = await start_server(n, bare.streamable_http_app(), shutdown)   # host default 127.0.0.1 -> auto protection
        async with httpx2.AsyncClient() as raw:
            for label, extra in [("no Origin", {}), ("Origin http://localhost:3000", {"Origin": "http://localhost:3000"}),
                                 ("Origin http://evil.example", {"Origin": "http://evil.example"}),
                                 ("Host evil.example", {"Host": "evil.example"})]:
                resp = await raw.post(f"{base2}/mcp", json=init, headers={**hdrs, **extra})
                print(f"bare SDK app, {label:30s} -> {resp.status_code} {resp.text[:40]!r}")
        shutdown.set()
    print("hypercorn stopped cleanly")

trio.run(main)
