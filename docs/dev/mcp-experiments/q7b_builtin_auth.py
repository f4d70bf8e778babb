"""Q7b/Q6: SDK built-in bearer auth (TokenVerifier) -> per-agent identity inside tools via get_access_token()."""
import warnings
import httpx2, trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer

TOKENS = {"tok-alice": "agent-alice", "tok-bob": "agent-bob"}


class StaticVerifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        cid = TOKENS.get(token)
        return AccessToken(token=token, client_id=cid, scopes=[]) if cid else None


srv = MCPServer("authd", token_verifier=StaticVerifier(),
                auth=AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None))


@srv.tool()
async def me(ctx: Context) -> dict[str, str | None]:
    tok = get_access_token()
    return {"agent": tok.client_id if tok else None, "protocol": ctx.protocol_version}


async def main():
    warnings.simplefilter("ignore")
    shutdown = trio.Event()
    async with trio.open_nursery() as n:
        cfg = Config(); cfg.bind = ["127.0.0.1:0"]; cfg.accesslog = None
        binds = await n.start(lambda task_status: serve(srv.streamable_http_app(), cfg,
                                                        shutdown_trigger=shutdown.wait, task_status=task_status))
        url = binds[0] + "/mcp"
        for tok in TOKENS:
            for mode in ("legacy", "auto"):
                async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tok}"}) as hc:
                    async with Client(streamable_http_client(url, http_client=hc), mode=mode) as c:
                        print(tok, mode, (await c.call_tool("me", {})).structured_content)
        async with httpx2.AsyncClient() as raw:
            r = await raw.post(url, json={}, headers={"Authorization": "Bearer nope"})
            print("bad token ->", r.status_code, r.headers.get("www-authenticate"), r.text[:80])
        shutdown.set()

trio.run(main)
