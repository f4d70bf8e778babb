"""The method table's handlers, and the parameter check every face shares.

The rows themselves are data in protocol/methods.py (``METHODS``: name, params, doc,
flags), which imports nothing heavy, so a client reads them without loading trio or
the registry.  Here each handler is attached to its row by name (``@handles``, as
pygls attaches a feature to an lsprotocol method), into ``HANDLERS``; a name no row
declares, a connection-scoped row or a second handler for one name is refused when
the module loads, and tests/service/test_protocol_table.py checks that every hub-scoped row
has one.

Parameter checking lives here, once: each method names its parameters, their JSON
types and which are required, and ``check_params`` refuses anything else, so that a
typo (``quesiton``) is caught, not ignored, by every face alike.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from hive_rpc.core import limits
from hive_rpc.core.errors import InvalidParams, MethodNotFound
from hive_rpc.protocol.methods import (
    BOOL,
    LSP_NAMESPACE,
    METHODS,
    NUM,
    REQ_NUM,
    REQ_STR,
    SOCKET_ONLY,
    STR,
    Face,
    Method,
    Param,
    Scope,
)

if TYPE_CHECKING:
    from hive_rpc.service.hub import HubService

__all__ = [
    "BOOL",
    "HANDLERS",
    "LSP_NAMESPACE",
    "METHODS",
    "NUM",
    "REQ_NUM",
    "REQ_STR",
    "SOCKET_ONLY",
    "STR",
    "Face",
    "Handler",
    "Method",
    "Param",
    "Scope",
    "check_params",
    "handles",
]

Handler = Callable[["HubService", dict[str, Any]], Awaitable[Any]]
"""Runs one method: the hub's service and the checked params in, a JSON-ready result out."""
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])
"""What ``@handles`` decorates: a handler, typed with its own narrower result."""

HANDLERS: dict[str, Handler] = {}
"""The handler of every hub-scoped row, by method name (filled as the service's
modules load: hive_rpc.service imports them all)."""

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "any": (object,),
}
_ARTICLE = {"array": "an", "object": "an"}
"""So that the words read "must be an array", not "a array"."""


def handles(name: str) -> Callable[[H], H]:
    """Attach the decorated function as the handler of the row ``name``."""
    row = METHODS.get(name)
    if row is None:
        raise ValueError(f"{name!r} is no row of the method table (protocol/methods.py)")
    if row.scope == "connection":
        raise ValueError(f"{name}: a connection-scoped row is run by its faces, not here")

    def attach(handler: H) -> H:
        if name in HANDLERS:
            raise ValueError(f"{name!r} has a handler already")
        HANDLERS[name] = handler
        return handler

    return attach


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float: 10**400
        return False


def check_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Return ``params`` if they fit ``method``'s table, else raise an actionable error."""
    spec = METHODS.get(method)
    if spec is None:
        raise MethodNotFound(
            f"unknown method {method!r}; the hub offers {', '.join(sorted(METHODS))}",
            method=method,
        )
    unknown = sorted(set(params) - set(spec.params))
    if unknown:
        raise InvalidParams(
            f"{method}: unknown parameter {', '.join(map(repr, unknown))}; accepted: "
            f"{', '.join(spec.params) or 'none'}",
            method=method,
        )
    for name, param in spec.params.items():
        value = params.get(name)
        if value is None:
            if param.required:
                raise InvalidParams(
                    f"{method}: missing required parameter {name!r}", method=method, param=name
                )
            continue
        try:
            limits.check_value(value, f"{method}: parameter {name!r}")
        except limits.LimitError as e:
            e.data.update(method=method, param=name)
            raise
        ok = isinstance(value, _TYPES[param.type])
        if param.type == "number":
            ok = ok and not isinstance(value, bool) and _finite(value)
        if not ok:
            raise InvalidParams(
                f"{method}: parameter {name!r} must be {_ARTICLE.get(param.type, 'a')} "
                f"{param.type}, got {type(value).__name__}",
                method=method,
                param=name,
            )
    return params
