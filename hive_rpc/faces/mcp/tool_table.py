"""The tools as data: each tool module lists its module-level functions in a
``ToolTable``, and the hub's one server adds them once (server.py).

A tool is declared once, by its function: the function's name is the tool's name
(the only place in the face that spells it), and its declaration says the rest, its
group (core/tool_groups.py names the groups; tools.py derives what each holds), its
description, its hints (hints.py), and ``words``, its names for the hub's parameters
it fills (``{"from": "sender"}``), by which its errors speak of its own parameters
(results.tool_error).  The method table's ``mcp`` column (protocol/methods.py) names
the tools again, as data a client reads without this package; a test holds the two
to agree (tests/faces/test_mcp_errors.py), as it holds every tool not named there to
be declared ``composite``.

The tools used to be closures made by a ``register(hive)`` per module, for every agent
session, so that each could reach its session's settings; now a tool reads them from
its request (``session.session_of(ctx)``), and is a plain function a test can call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from hive_rpc.core.tool_groups import GROUP_NAMES
from hive_rpc.faces.mcp.guarded import guarded

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult, ToolAnnotations

Tool = TypeVar("Tool", bound="Callable[..., Awaitable[CallToolResult]]")


@dataclass(frozen=True)
class ToolSpec:
    fn: Callable[..., Awaitable[CallToolResult]]
    """The function as declared (the server adds it guarded)."""
    name: str
    group: str
    """Its tool group (core/tool_groups.py): a session offers it when that is enabled."""
    description: str
    hints: ToolAnnotations
    words: Mapping[str, str] = field(default_factory=dict)
    """The hub's parameter names this tool calls otherwise: hub's -> tool's."""
    structured_output: bool | None = None
    """None: from the return annotation (``Annotated[CallToolResult, Model]`` lists
    ``Model`` as the output schema); False: none (``approve``, approve_tool.py)."""
    guard: bool = True
    """Added wrapped by ``guarded`` (False: ``approve``, which fails closed itself)."""
    resumable: bool = False
    """A blocking ask a relay sends again when its hub went away (prompt_tools.RESUMABLE)."""
    composite: bool = False
    """Runs several methods (``approve``: rule/check, hive/ask, hive/await, rule/add), so
    no one row of the method table names it in its ``mcp`` column."""


class ToolTable:
    """One module's tools, in the order ``tools/list`` shows them."""

    def __init__(self) -> None:
        self.specs: list[ToolSpec] = []

    def tool(
        self,
        description: str,
        *,
        group: str,
        hints: ToolAnnotations,
        words: Mapping[str, str] | None = None,
        structured_output: bool | None = None,
        guard: bool = True,
        resumable: bool = False,
        composite: bool = False,
    ) -> Callable[[Tool], Tool]:
        """List the decorated function as a tool named as the function; the function
        is unchanged.  An unknown ``group`` fails at import, not when a session asks."""
        if group not in GROUP_NAMES:
            raise ValueError(f"unknown tool group {group!r}; valid: {', '.join(GROUP_NAMES)}")

        def add(fn: Tool) -> Tool:
            spec = ToolSpec(
                fn,
                fn.__name__,
                group,
                description,
                hints,
                dict(words or {}),
                structured_output,
                guard,
                resumable,
                composite,
            )
            self.specs.append(spec)
            return fn

        return add

    def names(self) -> set[str]:
        return {spec.name for spec in self.specs}

    def register(self, server: MCPServer[Any]) -> None:
        """Add the tools to ``server``, each with its hints, guarded."""
        for spec in self.specs:
            fn = guarded(spec.fn, name=spec.name, words=spec.words) if spec.guard else spec.fn
            server.add_tool(
                fn,
                name=spec.name,
                description=spec.description,
                annotations=spec.hints,
                structured_output=spec.structured_output,
            )
