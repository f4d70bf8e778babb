"""The three tiers of a failed call, decided once for every face.

A request a face runs ends in one of three ways besides success, and every face
(editor socket, ``hive-rpc lsp``, EPC, MCP over stdio and HTTP, the dashboard's API)
reports them alike, each in its own wire format:

1. the method is unknown (``MethodNotFound``, raised by the method table);
2. the hub refused it for a reason the client can act on: a ``HiveError``, sent with
   its code, message and data;
3. anything else is a bug of ours: logged here with its traceback and answered as an
   ``InternalError`` (-32603) naming the method and the exception.  The session that
   sent it goes on; no other request is touched.

A face whose hub is behind a socket also sees the link fail (``HubUnreachable``):
that is reported as ``HubLost``, not logged as a bug, since the face reconnects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from hive_rpc.core.errors import HiveError, HubLost, HubUnreachable, InternalError

log = logging.getLogger(__name__)

Params = dict[str, Any]
Call = Callable[[str, Params], Awaitable[Any]]


def error_for(method: str, raised: Exception) -> HiveError:
    """The error to answer ``method`` with, for an exception its handler raised."""
    if isinstance(raised, HiveError):
        return raised
    if isinstance(raised, HubUnreachable):
        return HubLost(f"{method}: the hub could not be reached: {raised}", method=method)
    log.error("internal error in %s", method, exc_info=raised)
    return InternalError.of(method, raised)


async def dispatch(call: Call, method: str, params: Params) -> Any:
    """``call(method, params)``, raising only ``HiveError``: tiers 2 and 3 above."""
    try:
        return await call(method, params)
    except Exception as raised:
        raise error_for(method, raised) from raised


__all__ = ["Call", "dispatch", "error_for"]
