"""What each MCP tool may do to the world, as MCP tool annotations (``readOnlyHint``,
``destructiveHint``, ``idempotentHint``), so that hosts can auto-approve the safe ones.

Hosts read these hints to decide which calls need the human's consent: a read-only
tool (polling, listing, a status) can run unasked; the others add a question, a turn,
a report.  Left unset, MCP's defaults are the most cautious ones (``destructiveHint``
true), which would make every ``hivemind_poll`` ask for approval.

Each tool names its hints where it is declared (``ToolTable.tool``'s ``hints``, which
has no default), so a new tool is classified on purpose, not left to the cautious
defaults.
"""

from __future__ import annotations

from mcp_types import ToolAnnotations

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
"""Looks and changes nothing (polls, lists, statuses, waits for an answer)."""
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
"""Adds something (a question, an answer, a turn, a report); each call adds again."""
ENDS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
"""Ends or forgets something (a dialogue, a ling); doing it twice changes nothing more."""

WITHDRAWS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
"""Withdraws one's own question (``hivemind_cancel``): it only closes it, the record
stays, so not destructive; doing it twice changes nothing more."""
