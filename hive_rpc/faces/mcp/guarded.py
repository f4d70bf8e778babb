"""``@guarded``: the hub's refusals become tool errors the agent can act on, in the
tools' own words.

A tool that fails because the hub refused (a ``HiveError``, or the same error come
back over the socket) or because the hub is gone returns an error result
(``isError``) whose text says what to change; the session goes on.  Anything else is
a bug: it propagates, and the SDK logs it with its traceback and answers that call
with an error result (``Error executing tool NAME``), the session going on too.

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

from hive_rpc.core.errors import HiveError
from hive_rpc.faces.mcp.results import failed
from hive_rpc.hub_connection import HubUnreachable

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


def refusal(raised: Exception) -> CallToolResult | None:
    """The tool error for a refusal or a lost hub; None for anything else."""
    error: BaseException = raised  # the heartbeat nursery wraps its body's errors
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, HiveError):
        return failed(in_tool_words(error.message, error.data))
    if isinstance(error, HubUnreachable):
        return failed(str(error))
    return None


def guarded(
    tool: Callable[P, Awaitable[CallToolResult]],
) -> Callable[P, Awaitable[CallToolResult]]:
    """Wrap a tool so that the hub's refusals are its error results (see above).

    ``functools.wraps`` keeps the tool's name, docstring, signature and annotations,
    from which the SDK builds the tool's input and output schemas."""

    @functools.wraps(tool)
    async def run(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            return await tool(*args, **kwargs)
        except Exception as raised:
            result = refusal(raised)
            if result is None:
                raise
            return result

    return run
