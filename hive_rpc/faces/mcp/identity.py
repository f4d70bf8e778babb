"""Which agent an MCP request acts as."""

from __future__ import annotations

import secrets

from mcp.server.mcpserver import Context

from hive_rpc.core.prompt import check_name


class Identity:
    """Names the agent behind a request.

    In order: a fixed name (``hive-rpc mcp --agent NAME``); on HTTP, the
    ``X-Hive-Agent`` header or ``?agent=NAME`` in the URL; the client's own name
    (``clientInfo.name``) plus a suffix that is per process on stdio (one process is
    one session) and the session id on stateful HTTP.
    """

    def __init__(self, fixed: str | None = None) -> None:
        self.fixed = check_name(fixed, "agent") if fixed is not None else None
        self.suffix = secrets.token_hex(3)

    def __call__(self, ctx: Context) -> str:
        if self.fixed is not None:
            return self.fixed
        request = getattr(ctx.request_context, "request", None)
        if request is not None:
            named = request.headers.get("x-hive-agent") or request.query_params.get("agent")
            if named:
                return check_name(named, "agent")
        params = ctx.session.client_params
        client = params.client_info.name if params is not None else "agent"
        if request is None:
            return f"{client}-{self.suffix}"
        session = request.headers.get("mcp-session-id")
        return f"{client}-{session[:8]}" if session else client
