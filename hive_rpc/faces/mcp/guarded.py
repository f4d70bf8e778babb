"""``@guarded``: the hub's refusals become tool errors the agent can act on, in the
tools' own words.

Every failure of a tool is sorted by dispatch.py's tiers, as on every other face, and
returned as an error result (``isError``); the session goes on.  A refusal of the
hub's (a ``HiveError``, or the same error come back over the socket) says what to
change; a lost hub says so; anything else is a bug, logged with its traceback and
answered "internal error in TOOL: TYPE: MESSAGE".

The tools name two things otherwise than the hub: the hub's ``choices`` are the
tools' ``options``, and a decline's missing answer is a ``decision`` left out.  The
wording is chosen from the error's data (``param``, ``choices``, ``action``), which
every raise site fills, never guessed from the sentence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import ParamSpec

from mcp_types import CallToolResult

from hive_rpc.core.errors import InternalError
from hive_rpc.faces.mcp.results import failed
from hive_rpc.rpc.dispatch import error_for

P = ParamSpec("P")

TOOL_NAMES: Mapping[str, str] = {"choices": "options"}
"""The hub's parameter names that the tools call otherwise."""


def in_tool_words(message: str, data: object) -> str:
    """The hub's sentence ``message`` as the tools would say it, going by ``data``:
    ``param`` names the parameter the sentence is about, ``choices`` (the list) says
    it mentions the prompt's choices, ``action`` a decline or cancel that carried an
    answer."""
    if not isinstance(data, Mapping):
        data = {}
    param = data.get("param")
    action = data.get("action")
    if param == "answer" and isinstance(action, str) and action != "accept":
        return f"a {action} carries no decision; leave decision out"
    named = {param, *(["choices"] if "choices" in data else [])}
    for hub_name, tool_name in TOOL_NAMES.items():
        if hub_name in named:
            message = re.sub(rf"\b{hub_name}\b", tool_name, message)
    return message


def refusal(raised: Exception, tool: str = "a tool") -> CallToolResult:
    """The tool error for ``raised``, by dispatch.py's tiers: a refusal in the tools'
    words, a lost hub as it is, and a bug (logged there with its traceback) as an
    internal error naming the tool and the exception."""
    error: BaseException = raised  # the heartbeat nursery wraps its body's errors
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if not isinstance(error, Exception):
        error = raised
    answer = error_for(tool, error)
    if isinstance(answer, InternalError):
        return failed(answer.message)
    return failed(in_tool_words(answer.message, answer.data))


def guarded(
    tool: Callable[P, Awaitable[CallToolResult]],
) -> Callable[P, Awaitable[CallToolResult]]:
    """Wrap a tool so that every failure is its error result (see above).

    ``functools.wraps`` keeps the tool's name, docstring, signature and annotations,
    from which the SDK builds the tool's input and output schemas."""
    name = getattr(tool, "__name__", "a tool")

    @functools.wraps(tool)
    async def run(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await tool(*args, **kwargs)
        except Exception as raised:
            return refusal(raised, name)

    return run
