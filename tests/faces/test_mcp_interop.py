"""What independent MCP clients read from the server before any call, through the
MCP SDK's own client over stdio (``hive-rpc mcp``) and Streamable HTTP: the server's
version, a type for every property of every tool's schemas (MCP Inspector
``--strict`` warns on untyped ones), and the tool annotations hosts auto-approve by."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from mcp import Client
from test_mcp import MODES, TOOLS, http_client, stdio_params

from hive_rpc import __version__
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

READ_ONLY = {
    "hivemind_poll",
    "hivemind_await",
    "hivemind_list_pending",
    "hivemind_await_ask",
    "agora_status",
    "agora_list",
    "ling_list",
}
DESTRUCTIVE = {"agora_abort", "ling_remove"}
TYPED = {"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const"}


@asynccontextmanager
async def session(
    transport: str, mode: str, hub: HubService, config: HubConfig
) -> AsyncIterator[Client]:
    if transport == "http":
        async with http_client(hub, mode, tools="all") as c:
            yield c
    else:
        params = stdio_params(config, "--tools", "all")
        async with Client(params, mode=mode) as c:  # type: ignore[arg-type]
            yield c


def untyped(schema: Any, where: str) -> list[str]:
    """The properties (at any depth) whose schema names no type."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return found
    for name, prop in (schema.get("properties") or {}).items():
        if not TYPED & set(prop):
            found.append(f"{where}.{name}")
        found += untyped(prop, f"{where}.{name}")
    for key in ("items", "additionalProperties"):
        found += untyped(schema.get(key), f"{where}.{key}")
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key) or []):
            found += untyped(sub, f"{where}.{key}[{i}]")
    for name, sub in (schema.get("$defs") or {}).items():
        found += untyped(sub, f"{where}.$defs.{name}")
    return found


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_what_a_client_reads_before_calling(
    http_hub: HubService, hub_config: HubConfig, transport: str, mode: str
) -> None:
    with trio.fail_after(30):
        async with session(transport, mode, http_hub, hub_config) as c:
            info = c.server_info
            tools = {t.name: t for t in (await c.list_tools()).tools}
    if mode == "legacy" or info is not None:  # 2026-07-28 may leave serverInfo out
        assert info is not None
        assert (info.name, info.version) == ("hive-rpc", __version__)
    assert set(tools) == TOOLS
    loose = [
        place
        for t in tools.values()
        for place in untyped(t.input_schema, f"{t.name}.input")
        + untyped(t.output_schema, f"{t.name}.output")
    ]
    assert loose == []
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.destructive_hint is (name in DESTRUCTIVE), name
        if name in READ_ONLY | DESTRUCTIVE:
            assert hints.idempotent_hint is True, name
    assert tools["hivemind_ask_async"].annotations.idempotent_hint is False  # type: ignore[union-attr]


async def test_the_deprecated_blocking_ask_logs_a_warning(
    http_hub: HubService, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(30):
        async with http_client(http_hub, "legacy", agent="old-agent", tools="all") as c:
            result = await c.call_tool("hivemind_ask", {"question": "Still?", "timeout_s": 0.2})
    assert result.structured_content is not None
    assert result.structured_content["status"] == "expired"
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warned] == [
        "old-agent called the deprecated hivemind_ask (it blocks the agent until "
        "answered); use hivemind_ask_async + hivemind_poll"
    ]


async def test_await_ask_takes_the_seeds_timeout_ms(http_hub: HubService) -> None:
    with trio.fail_after(30):
        async with http_client(http_hub, "legacy", tools="all") as c:
            result = await c.call_tool("hivemind_await_ask", {"timeout_ms": 300})
    assert not result.is_error, result.content
    assert result.structured_content == {"timed_out": True, "ask": None}
    assert result.content[0].text == "no ask within 0.3 s"  # type: ignore[union-attr]
