"""The agents whose hook runs ``hive-rpc hook AGENT``, as data: what the human reads,
which event format the hook reads, which decision format it prints, and how it fails.

Claude Code, Codex and Gemini CLI each run a command hook with one JSON object on
stdin and read a decision from stdout, but not the same JSON: Codex's
``PermissionRequest`` is Claude Code's, field for field (measured on Codex 0.171.0,
tests/agents/test_codex_mcp.py); Gemini CLI has no permission-request event, only
``BeforeTool``, which may deny (the model reads the reason) but whose allow does not
skip Gemini's own confirmation (measured on 0.61.0, docs/research.md).

Which agent asks (one id for its MCP asks and its hook's questions): the agent's
process, which the hub reads from the kernel: ``hive-rpc mcp`` and the hook are both
descendants of that one process (host/agent_process.py), and ``process_agent`` names
it.  Not a session id: Codex and Gemini give their MCP server none, and Claude Code's
changes under its hooks at ``/clear`` while its MCP server keeps the first one
(``CLAUDE_CODE_SESSION_ID``, measured on 2.1.328), so one Claude Code in one
terminal showed as two agents.  The session id is the fallback where /proc says
nothing (core/claude_code.py ``session_agent``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CLAUDE_EVENTS = "claude-code"
"""Event format: Claude Code's ``PermissionRequest`` (``tool_name``, ``tool_input``,
``session_id``, ``cwd``); its decision ``hookSpecificOutput.decision.behavior``."""
GEMINI_EVENTS = "gemini"
"""Event format: Gemini CLI's ``BeforeTool`` (the same fields); its decision a
top-level ``{"decision": "deny", "reason": ...}``."""


@dataclass(frozen=True)
class Agent:
    """One agent a hook command serves."""

    name: str
    """``hive-rpc hook NAME``, and the prefix of its agent ids."""
    display: str
    """How the human's question names it: "Codex in ~/app (session 01a2) wants ..."."""
    events: str
    """The event format its hook reads and the decision format it prints
    (``CLAUDE_EVENTS`` or ``GEMINI_EVENTS``)."""
    fails_closed: bool
    """Whether the hook denies when it has no decision (hub down, nobody answered).
    False for every agent by default: the agent's own dialog then asks, and a hook
    never answers for the human.  ``hive-rpc hook gemini --gate`` turns it on (yolo
    mode has no dialog of its own to fall back on)."""
    mcp_client: str | None
    """Its MCP client's ``clientInfo.name``, whose sessions take the process id."""
    process_names: tuple[str, ...]
    """The ``comm`` of the agent's own process (``/proc/PID/stat``, at most 15
    characters), the nearest ancestor of that name being the agent."""


CLAUDE_CODE = Agent(
    "claude-code", "Claude Code", CLAUDE_EVENTS, False, "claude-code", ("claude",)
)  # fmt: skip
CODEX = Agent("codex", "Codex", CLAUDE_EVENTS, False, "codex-mcp-client", ("codex",))
GEMINI = Agent(
    "gemini", "Gemini CLI", GEMINI_EVENTS, False, "gemini-cli-mcp-client", ("gemini", "node")
)  # fmt: skip

AGENTS: dict[str, Agent] = {a.name: a for a in (CLAUDE_CODE, CODEX, GEMINI)}
"""Every agent ``hive-rpc hook`` serves, by name."""


def of_mcp_client(client_name: str) -> Agent | None:
    """The agent whose MCP client says ``client_name`` in its initialize, or None."""
    return next((a for a in AGENTS.values() if a.mcp_client == client_name), None)


def process_agent(agent: Agent, pid: int) -> str:
    """The agent id of the agent process ``pid``: ``codex-4242``.  The same for the
    hook and the MCP server that one Codex (or Claude Code) runs, and for all its
    sessions."""
    return f"{agent.name}-{pid}"


MAX_PID = 4_194_304
"""The largest pid Linux gives (``pid_max``'s ceiling, 2**22): at most 7 digits, so
the 8 characters of a session id (``session_agent``) never read as a pid."""


def name_suffix() -> str:
    """A random suffix making a client's name an agent id of its own (``codex-e26ee0``):
    6 hex digits, never all decimal, so that ``codex-`` plus it never reads as a
    process's id (``claimed_process``) that the hub would refuse.  ``os.urandom``, the
    bytes ``secrets`` would read, without loading it into the hook (cli/hook.py
    imports this table)."""
    suffix = os.urandom(3).hex()
    return "x" + suffix[1:] if suffix.isdigit() else suffix


def claimed_process(name: str) -> tuple[Agent, int] | None:
    """The agent and pid an agent id names when it has ``process_agent``'s form
    (``codex-51007``), or None for any other name.  Such an id is a claim the hub checks
    against the kernel (service/hub.py ``acting_agent``): only the process and its
    descendants may act as it."""
    for agent in AGENTS.values():
        digits = name.removeprefix(agent.name + "-")
        if digits == name or not (digits.isascii() and digits.isdigit()):
            continue
        if digits.startswith("0") or len(digits) > len(str(MAX_PID)):
            return None
        pid = int(digits)
        return (agent, pid) if pid <= MAX_PID else None
    return None
