"""The method table: one row per hub method, and the parameter check every face shares.

A row (``Method``) holds everything about a method that more than one place needs:
its name, its parameters, the words ``hive-rpc methods`` and protocol.md give it, the
handler that runs it, and its flags.  A method is declared once, where its handler
is written (``@method`` in ``prompts.py``, ``agora.py``, ``activity.py``; the
connection-scoped ones, which no handler of the service runs, with
``connection_method``).  What other modules need is derived from the rows instead
of listing method names again: ``HubService.call`` (the handler), the retry set of
``backends.RETRYABLE``, the EPC face's ``HUB_METHODS``, the notifications the editor
socket takes, ``hive-rpc methods`` and which faces offer a method (``Method.faces``).

Parameter checking lives here, once: each method names its parameters, their JSON
types and which are required, and ``check_params`` refuses anything else, so that a
typo (``quesiton``) is caught, not ignored, by every face alike.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from hive_rpc.core import limits
from hive_rpc.core.errors import InvalidParams, MethodNotFound

if TYPE_CHECKING:
    from hive_rpc.service.hub import HubService

Handler = Callable[["HubService", dict[str, Any]], Awaitable[Any]]
"""Runs one method: the hub's service and the checked params in, a JSON-ready result out."""
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])
"""What ``@method`` decorates: a handler, typed with its own narrower result."""
Scope = Literal["hub", "connection"]
Face = Literal["socket", "lsp", "epc", "mcp"]

SOCKET_ONLY: tuple[Face, ...] = ("socket",)
LSP_NAMESPACE = "hive/"
"""The names ``hive-rpc lsp`` forwards to the hub (faces/lsp_server.py takes it from here)."""

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "any": (object,),
}


@dataclass(frozen=True)
class Param:
    type: str
    required: bool = False


STR, NUM, BOOL = Param("string"), Param("number"), Param("boolean")
REQ_STR, REQ_NUM = Param("string", True), Param("number", True)


@dataclass(frozen=True)
class Method:
    """One row of the method table."""

    name: str
    params: dict[str, Param]
    doc: str
    handler: Handler | None = None
    """What runs it; None for a connection-scoped method (the transport runs it)."""
    notification_ok: bool = False
    """May also be sent as a notification (``hive/typing``)."""
    retryable: bool = False
    """Safe to send again on a new connection after the hub went away (it changes
    nothing): ``backends.RETRYABLE``."""
    epc: str | None = None
    """Its name over EPC (``hive-rpc epc``), if that face offers it."""
    scope: Scope = "hub"
    """``connection``: about the connection it arrives on (a subscription, a delivery
    offer), so each streaming transport runs it itself; ``HubService.call`` refuses it."""
    mcp: tuple[str, ...] = ()
    """The MCP tools that offer it (faces/mcp/prompt_tools.py, agora_tools.py)."""
    connection_faces: tuple[Face, ...] = ()
    """For a connection-scoped method: the faces that implement it themselves."""

    @property
    def faces(self) -> tuple[Face, ...]:
        """The faces that offer this method.  A hub-scoped method reaches every face
        that forwards it: the editor socket all of them, ``hive-rpc lsp`` the
        ``hive/`` namespace, EPC the rows with an EPC name, MCP the rows its tools
        name.  A connection-scoped one only the faces that implement it."""
        if self.scope == "connection":
            return self.connection_faces
        faces: list[Face] = ["socket"]
        if self.name.startswith(LSP_NAMESPACE):
            faces.append("lsp")
        if self.epc is not None:
            faces.append("epc")
        if self.mcp:
            faces.append("mcp")
        return tuple(faces)


METHODS: dict[str, Method] = {}
"""Every method by name, in the order declared (``hive-rpc methods`` prints them so)."""


def _add(row: Method) -> None:
    if row.name in METHODS:
        raise ValueError(f"method {row.name!r} is declared twice")
    if (row.handler is None) != (row.scope == "connection"):
        raise ValueError(f"{row.name}: a handler runs exactly the hub-scoped methods")
    METHODS[row.name] = row


def method(
    name: str,
    *,
    params: dict[str, Param],
    doc: str,
    notification_ok: bool = False,
    retryable: bool = False,
    epc: str | None = None,
    mcp: tuple[str, ...] = (),
) -> Callable[[H], H]:
    """Declare the hub method ``name`` with the handler it decorates: its one row."""

    def declare(handler: H) -> H:
        _add(
            Method(
                name,
                params,
                doc,
                handler,
                notification_ok=notification_ok,
                retryable=retryable,
                epc=epc,
                mcp=mcp,
            )
        )
        return handler

    return declare


def connection_method(
    name: str, *, params: dict[str, Param], doc: str, faces: tuple[Face, ...]
) -> None:
    """Declare a connection-scoped method: checked here like any other, run by each of
    ``faces`` itself (the service has no connection to subscribe or offer)."""
    _add(Method(name, params, doc, scope="connection", connection_faces=faces))


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
                f"{method}: parameter {name!r} must be a {param.type}, got {type(value).__name__}",
                method=method,
                param=name,
            )
    return params
