"""MCP tool groups: which of the hub's tools an agent's session offers (the names).

Every tool an MCP server lists is read into the agent's context on every turn, used or
not; an agent that only asks the human needs six tools, not twenty.  So the tools come
in groups, a session offers the groups it was given, and ``ask`` is the default
(faces/mcp/groups.py applies the choice to a session).

Only the groups' names are here, with one parser: ``hive-rpc mcp`` checks ``--tools``
with them, and that process is a thin relay that loads no face and no MCP SDK
(mcp_relay.py).  Each tool names its group where it is declared (``ToolTable.tool``'s
``group``, faces/mcp/tool_table.py, which refuses a name not listed here), so a new
tool is spelled once; which tools a group holds is derived from those declarations
(faces/mcp/tools.py).
"""

from __future__ import annotations

GROUP_NAMES: tuple[str, ...] = (
    # An agent that asks the human: the recommended pair, waiting, withdrawing, and
    # the two blocking tools older prompts expect (request_human_input, named as
    # Calva Backseat Driver names it, and the deprecated hivemind_ask).
    "ask",
    # An agent that answers other agents' asks on the human's behalf.
    "coordinator",
    # Dialogues between agents (docs/agora.md).
    "agora",
    # The terminals turns and events are typed into (also `hive-rpc ling register`).
    "lings",
    # Parent/child events through the terminals.
    "events",
    # A parent agent starting its children in new terminals, each approved by the human.
    "spawn",
    # Task outcomes on the activity stream (docs/activity.md).
    "tasks",
    # Claude Code's permission prompt tool (claude -p --permission-prompt-tool).
    "permissions",
)
"""In the order flags and messages name them."""
ALL = "all"
"""Names every group."""
DEFAULT_GROUPS = frozenset({"ask"})


def parse_groups(text: str) -> frozenset[str]:
    """``"ask,agora"`` -> the groups; ``all`` names every group.  An unknown name is
    a ValueError that lists the valid ones."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"name at least one tool group: {valid_names()}")
    unknown = [n for n in names if n != ALL and n not in GROUP_NAMES]
    if unknown:
        raise ValueError(
            f"unknown tool group{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid: {valid_names()}"
        )
    return frozenset(GROUP_NAMES) if ALL in names else frozenset(names)


def valid_names() -> str:
    return ", ".join([*GROUP_NAMES, ALL])
