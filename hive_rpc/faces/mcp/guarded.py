"""``guarded``: every failure of a tool becomes its error result, in the tool's own
words, and the session goes on.

Every failure is sorted by dispatch.py's tiers, as on every other face: a refusal of
the hub's (a ``HiveError``, or the same error come back over the socket) says what to
change; a lost hub is -32014 ``hub_unreachable``; anything else is a bug, logged with
its traceback and answered -32603 "internal error in TOOL: TYPE: MESSAGE".
results.tool_error renders each, with its code and kind, renaming the hub's
parameters as the tool's declaration says (``ToolTable.tool``'s ``words``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import ParamSpec

from mcp_types import CallToolResult

from hive_rpc.faces.mcp.results import Words, tool_error
from hive_rpc.rpc.dispatch import error_for

P = ParamSpec("P")

ASK_WORDS: Mapping[str, str] = {"choices": "options", "answer": "decision"}
"""The ask tools' names for the hub's ``choices`` and ``answer``: the words of a
function guarded without words of its own."""


def refusal(raised: Exception, tool: str = "a tool", words: Words = ASK_WORDS) -> CallToolResult:
    """The tool error for ``raised``, by dispatch.py's tiers (a bug is logged there,
    with its traceback)."""
    error: BaseException = raised  # the heartbeat nursery wraps its body's errors
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if not isinstance(error, Exception):
        error = raised
    return tool_error(error_for(tool, error), tool, words)


def guarded(
    tool: Callable[P, Awaitable[CallToolResult]],
    *,
    name: str | None = None,
    words: Words = ASK_WORDS,
) -> Callable[P, Awaitable[CallToolResult]]:
    """Wrap a tool so that every failure is its error result (see above); ``name``:
    the tool's (by default its function's).

    ``functools.wraps`` keeps the tool's name, docstring, signature and annotations,
    from which the SDK builds the tool's input and output schemas."""
    tool_name = name or str(getattr(tool, "__name__", "a tool"))

    @functools.wraps(tool)
    async def run(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await tool(*args, **kwargs)
        except Exception as raised:
            return refusal(raised, tool_name, words)

    return run
