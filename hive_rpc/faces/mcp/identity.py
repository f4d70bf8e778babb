"""Which agent an MCP request acts as."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from hive_rpc.core.agents import name_suffix, of_mcp_client, process_agent
from hive_rpc.core.claude_code import CLIENT_NAME, session_agent
from hive_rpc.core.limits import check_name
from hive_rpc.host.agent_process import agent_ancestor
from hive_rpc.relay.consent import CALLER


class Identity:
    """Names the agent behind a request.

    In order: a fixed name (``hive-rpc mcp --agent NAME``); on HTTP, the
    ``X-Hive-Agent`` header or ``?agent=NAME`` in the URL; on stdio, when the client
    is Claude Code, Codex or Gemini CLI (core/agents.py) and the relay process (its
    ``SO_PEERCRED`` pid, ``CALLER``) runs under that agent's process,
    ``claude-code-PID`` / ``codex-PID`` / ``gemini-PID`` of that process, the id
    ``hive-rpc hook AGENT`` finds from its own ancestry: what the kernel says, not the
    names the client chose, so one agent process is one agent for its MCP asks and its
    hook's permission requests, across Claude Code's ``/clear``; on stdio, when the
    client is Claude Code run by no process /proc shows and gave its session id
    (``claude_session``, from ``CLAUDE_CODE_SESSION_ID``), the agent its hooks name
    then (core/claude_code.py); else the client's own name (``clientInfo.name``) plus
    a suffix that is per session on stdio (``suffix``: the relay's, one ``hive-rpc
    mcp`` process is one session, kept when it reconnects to a new hub) and the
    session id on stateful HTTP.
    """

    def __init__(
        self,
        fixed: str | None = None,
        *,
        claude_session: str | None = None,
        suffix: str | None = None,
    ) -> None:
        self.fixed = check_name(fixed, "agent") if fixed is not None else None
        self.suffix = suffix or name_suffix()
        self.claude_session = claude_session or None
        self._process: str | None = None
        """The process-derived agent, once looked up ("" when there is none)."""

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
            process = self._process_agent(client)
            if process is not None:
                return process
            if client == CLIENT_NAME and self.claude_session is not None:
                return session_agent(self.claude_session)
            return f"{client}-{self.suffix}"
        session = request.headers.get("mcp-session-id")
        return f"{client}-{session[:8]}" if session else client

    def _process_agent(self, client: str) -> str | None:
        """``codex-PID`` for an agent's MCP client run by that agent's process (read
        once per session: a connection's peer is fixed at ``connect``), or None."""
        agent = of_mcp_client(client)
        caller = CALLER.get()
        if agent is None or caller is None or caller.pid is None:
            return None
        if self._process is None:
            pid = agent_ancestor(caller.pid, agent.process_names)
            self._process = "" if pid is None else process_agent(agent, pid)
        return self._process or None
