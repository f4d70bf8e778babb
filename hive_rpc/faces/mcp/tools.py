"""Every tool: the tool tables, and what is derived from the tools' declarations.

A tool is declared once, in its module's ``ToolTable``, with its group; the groups'
tools (``GROUPS``, ``GROUP_OF``) and the tools no method-table row names
(``COMPOSITE_TOOLS``) are read from those declarations here, so a new tool is added
in one place.  ``hive-rpc mcp`` loads none of this: it checks ``--tools`` against the
groups' names alone (core/tool_groups.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from hive_rpc.core.tool_groups import GROUP_NAMES
from hive_rpc.faces.mcp import agora_tools, approve_tool, prompt_tools, spawn_tools

TABLES = (prompt_tools.TOOLS, agora_tools.TOOLS, spawn_tools.TOOLS, approve_tool.TOOLS)
"""Every tool, in the order ``tools/list`` shows them."""
GROUP_OF: Mapping[str, str] = {spec.name: spec.group for t in TABLES for spec in t.specs}
GROUPS: Mapping[str, tuple[str, ...]] = {
    group: tuple(tool for tool, its in GROUP_OF.items() if its == group) for group in GROUP_NAMES
}
"""Each group's tools, in ``GROUP_NAMES``'s order, then ``tools/list``'s."""
COMPOSITE_TOOLS = frozenset(spec.name for t in TABLES for spec in t.specs if spec.composite)
"""The tools that run several methods (``approve``), so no one row of the method table
names them; every other tool is its row's ``Method.mcp``."""
