"""A tool error as MCP puts it on the wire, JSON-RPC's error object inside: what every
face renders for a failure, here as a ``CallToolResult``.

One text block, the sentence for the model to read, and ``structuredContent.error``
holding ``{"code", "message", "data"}`` with ``data.kind``, the same code and kind the
editor socket, LSP, EPC and the dashboard answer with: an agent (or a client that
hands its model only the structured result, such as Claude Code) tells a refusal from
a lost hub (-32014, try again) from a bug (-32603) without reading the sentence.
MCP clients do not check an error result against the tool's output schema (the SDK
2.3 client skips it for ``isError``), so every tool can carry it.

Plain dicts, importing nothing: ``hive-rpc mcp`` (cli/mcp_relay.py), a relay that
loads no SDK and no face, can answer a call no hub will answer in the same shape;
faces/mcp/results.py builds the SDK's ``CallToolResult`` from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def error_result(code: int, message: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The ``CallToolResult`` of an error, as JSON (camelCase keys, as on the wire)."""
    error = {"code": code, "message": message, "data": dict(data)}
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": {"error": error},
        "isError": True,
    }
