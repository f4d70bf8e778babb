"""What each MCP tool may do to the world, as MCP tool annotations (``readOnlyHint``,
``destructiveHint``, ``idempotentHint``), so that hosts can auto-approve the safe ones.

Hosts read these hints to decide which calls need the human's consent: a read-only
tool (polling, listing, a status) can run unasked; the others add a question, a turn,
a report.  Left unset, MCP's defaults are the most cautious ones (``destructiveHint``
true), which would make every ``hivemind_poll`` ask for approval.

One table by tool name, as ``groups.py`` keeps the tool groups: every tool the
server registers must appear here (``HiveMcp`` checks), so a new tool is classified
on purpose, not left to the cautious defaults.
"""

from __future__ import annotations

from mcp_types import ToolAnnotations

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
"""Looks and changes nothing (polls, lists, statuses, waits for an answer)."""
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
"""Adds something (a question, an answer, a turn, a report); each call adds again."""
ENDS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
"""Ends or forgets something (a dialogue, a ling); doing it twice changes nothing more."""

HINTS: dict[str, ToolAnnotations] = {
    # prompt_tools.py
    "hivemind_ask_async": ADDS,
    "hivemind_poll": READS,
    "hivemind_await": READS,
    "hivemind_respond": ADDS,
    # withdrawing one's own question only closes it (the record stays): not destructive
    "hivemind_cancel": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True
    ),
    "hivemind_list_pending": READS,
    "hivemind_await_ask": READS,
    "hivemind_ask": ADDS,
    "request_human_input": ADDS,
    # agora_tools.py
    "agora_create": ADDS,
    "agora_dispatch": ADDS,
    "agora_status": READS,
    "agora_list": READS,
    "agora_abort": ENDS,
    "ling_register": ADDS,
    "ling_list": READS,
    "ling_remove": ENDS,
    "report_to_parent": ADDS,
    "answer_question": ADDS,
    "task_report": ADDS,
    # approve_tool.py: asks the human (and may save the answer rule they pick)
    "approve": ADDS,
}
