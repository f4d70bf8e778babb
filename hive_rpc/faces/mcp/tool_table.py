"""The tools as data: each tool module lists its module-level functions in a
``ToolTable`` with their names and descriptions, and the hub's one server adds them
once (server.py).

The tools used to be closures made by a ``register(hive)`` per module, for every agent
session, so that each could reach its session's settings; now a tool reads them from
its request (``session.session_of(ctx)``), and is a plain function a test can call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from hive_rpc.faces.mcp.hints import HINTS

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult

Tool = TypeVar("Tool", bound="Callable[..., Awaitable[CallToolResult]]")


@dataclass(frozen=True)
class ToolSpec:
    fn: Callable[..., Awaitable[CallToolResult]]
    name: str
    description: str
    structured_output: bool | None = None
    """None: from the return annotation (``Annotated[CallToolResult, Model]`` lists
    ``Model`` as the output schema); False: none (``approve``, approve_tool.py)."""


class ToolTable:
    """One module's tools, in the order ``tools/list`` shows them."""

    def __init__(self) -> None:
        self.specs: list[ToolSpec] = []

    def tool(
        self, name: str, description: str, *, structured_output: bool | None = None
    ) -> Callable[[Tool], Tool]:
        """List the decorated function as the tool ``name``; the function is unchanged."""

        def add(fn: Tool) -> Tool:
            self.specs.append(ToolSpec(fn, name, description, structured_output))
            return fn

        return add

    def names(self) -> set[str]:
        return {spec.name for spec in self.specs}

    def register(self, server: MCPServer[Any]) -> None:
        """Add the tools to ``server``, each with its hints (a KeyError for a tool
        missing from hints.py: a new tool is classified on purpose)."""
        for spec in self.specs:
            server.add_tool(
                spec.fn,
                name=spec.name,
                description=spec.description,
                annotations=HINTS[spec.name],
                structured_output=spec.structured_output,
            )
