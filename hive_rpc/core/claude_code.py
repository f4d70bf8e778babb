"""What hive_rpc knows of Claude Code, pure: which agent a Claude Code session is.

Claude Code (measured on 2.1.328) gives its session id to everything it starts for
that session: a hook reads it as the event's ``session_id``, and an MCP server
process inherits it as the environment variable ``CLAUDE_CODE_SESSION_ID`` (with
``clientInfo.name`` ``claude-code`` in its initialize).  Both name the agent from it
the same way here, so a session's MCP asks and its permission requests are one agent,
and two sessions stay two.
"""

from __future__ import annotations

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
"""The environment variable Claude Code sets for its MCP servers and hooks."""
CLIENT_NAME = "claude-code"
"""Claude Code's ``clientInfo.name`` in the MCP initialize."""


def session_agent(session_id: str | None) -> str:
    """The agent id of the Claude Code session ``session_id``: ``claude-code-`` and
    its first 8 characters (a UUID's first group)."""
    return f"{CLIENT_NAME}-{(session_id or 'unknown')[:8]}"
