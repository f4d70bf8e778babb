"""MCP tool groups: which of the hub's tools an agent's session offers (the table).

Every tool an MCP server lists is read into the agent's context on every turn, used or
not; an agent that only asks the human needs six tools, not twenty.  So the tools come
in groups, a session offers the groups it was given, and ``ask`` is the default
(faces/mcp/groups.py applies the choice to a session).

Pure data and one parser, here rather than beside the MCP server: ``hive-rpc mcp``
checks ``--tools`` with them, and that process is a thin relay that loads no face and
no MCP SDK (mcp_relay.py).
"""

from __future__ import annotations

from collections.abc import Mapping

GROUPS: Mapping[str, tuple[str, ...]] = {
    # An agent that asks the human: the recommended pair, waiting, withdrawing, and
    # the two blocking tools older prompts expect (request_human_input, named as
    # Calva Backseat Driver names it, and the deprecated hivemind_ask).
    "ask": (
        "hivemind_ask_async",
        "hivemind_poll",
        "hivemind_await",
        "hivemind_cancel",
        "hivemind_ask",
        "request_human_input",
    ),
    # An agent that answers other agents' asks on the human's behalf.
    "coordinator": ("hivemind_respond", "hivemind_list_pending", "hivemind_await_ask"),
    # Dialogues between agents (docs/agora.md).
    "agora": ("agora_create", "agora_dispatch", "agora_status", "agora_list", "agora_abort"),
    # The terminals turns and events are typed into (also `hive-rpc ling register`).
    "lings": ("ling_register", "ling_list", "ling_remove"),
    # Parent/child events through the terminals.
    "events": ("report_to_parent", "answer_question"),
    # Task outcomes on the activity stream (docs/activity.md).
    "tasks": ("task_report",),
    # Claude Code's permission prompt tool (claude -p --permission-prompt-tool).
    "permissions": ("approve",),
}
ALL = "all"
"""Names every group."""
DEFAULT_GROUPS = frozenset({"ask"})
GROUP_OF: Mapping[str, str] = {tool: group for group, tools in GROUPS.items() for tool in tools}
COMPOSITE_TOOLS = frozenset({"approve"})
"""The tools that run several methods (``approve``: rule/check, hive/ask, hive/await,
rule/add), so no one row of the method table names them; every other tool is its
row's ``Method.mcp``."""


def parse_groups(text: str) -> frozenset[str]:
    """``"ask,agora"`` -> the groups; ``all`` names every group.  An unknown name is
    a ValueError that lists the valid ones."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"name at least one tool group: {valid_names()}")
    unknown = [n for n in names if n != ALL and n not in GROUPS]
    if unknown:
        raise ValueError(
            f"unknown tool group{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid: {valid_names()}"
        )
    return frozenset(GROUPS) if ALL in names else frozenset(names)


def valid_names() -> str:
    return ", ".join([*GROUPS, ALL])
