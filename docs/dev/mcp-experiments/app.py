"""Shared MCPServer definition used by all experiments (mcp==2.3.0)."""
from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, SubscribeRequestParams, UnsubscribeRequestParams, EmptyResult

MARKER = os.environ.get("MCPX_MARKER", "/tmp/mcpx/cancel_marker.txt")

bus = InMemorySubscriptionBus()           # our own handle on the 2026 listen bus
mcp = MCPServer("hive", version="0.1", subscriptions=bus)


# ---------- Q1: structured output ----------
class AskOut(BaseModel):
    ask_id: str
    votes: int
    tags: list[str] = []


@mcp.tool()
async def make_ask(title: str, votes: int = 0, tags: list[str] | None = None) -> AskOut:
    """pydantic model return -> outputSchema + structuredContent + JSON text."""
    return AskOut(ask_id=f"ask-{title}", votes=votes, tags=tags or [])


class StatTD(TypedDict):
    count: int
    name: str


@mcp.tool()
def stat_td(name: str) -> StatTD:               # sync tool: runs in worker thread
    return {"count": len(name), "name": name}


@mcp.tool()
async def plain_dict(x: int) -> dict:            # bare `dict` -> NO structured content
    return {"x": x}


@mcp.tool()
async def typed_dict(x: int) -> dict[str, Any]:  # dict[str, T] -> structured content
    return {"x": x}


@mcp.tool()
async def just_int(x: int) -> int:               # primitive -> wrapped {"result": ...}
    return x * 2


@mcp.tool()
async def custom_result(x: int) -> Annotated[CallToolResult, AskOut]:
    """Full control: own text + own structured content; Annotated[...] keeps outputSchema + validation."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"created ask {x} (human text)")],
        structured_content={"ask_id": str(x), "votes": 1, "tags": []},
    )


# ---------- Q1: errors ----------
@mcp.tool()
async def fail_tool(msg: str) -> str:
    raise ToolError(f"nope: {msg}")              # -> isError true, text "Error executing tool fail_tool: nope: ..."


@mcp.tool()
async def crash_tool() -> str:
    raise RuntimeError("secret internals")      # -> isError true, generic text (message hidden)


@mcp.tool()
async def protocol_error_tool() -> str:
    raise MCPError(code=-32001, message="custom protocol error", data={"k": 1})  # JSON-RPC error


@mcp.tool()
async def custom_error_result(msg: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=msg)], is_error=True)  # exact text, no prefix


# ---------- Q3: progress ----------
@mcp.tool()
async def slow(steps: int, delay: float, ctx: Context) -> str:
    for i in range(steps):
        await anyio.sleep(delay)
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"done {steps}"


# ---------- Q4: cancellation ----------
@mcp.tool()
async def hang(tag: str) -> str:
    with open(MARKER, "a") as f:
        f.write(f"start {tag}\n")
    try:
        await anyio.sleep(3600)
        return "never"
    except BaseException as e:                   # trio.Cancelled / CancelledError
        with open(MARKER, "a") as f:
            f.write(f"cancelled {tag} {type(e).__module__}.{type(e).__name__}\n")
        raise
    finally:
        with open(MARKER, "a") as f:
            f.write(f"finally {tag}\n")


# ---------- Q5: resources ----------
ASKS: dict[str, str] = {"1": "first ask"}


@mcp.resource("hive://asks/{ask_id}", mime_type="application/json")
async def ask_resource(ask_id: str) -> dict:
    if ask_id not in ASKS:
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError
        raise ResourceNotFoundError(f"no ask {ask_id}")
    return {"ask_id": ask_id, "text": ASKS[ask_id]}


# legacy (2025-11-25) resources/subscribe: register on the lowlevel server
SUBSCRIBERS: dict[str, set] = {}   # uri -> set of mcp.server.connection.Connection


async def on_subscribe(ctx, params: SubscribeRequestParams) -> EmptyResult:
    conn = ctx.session._connection               # per-connection object (ServerSession is per-request!)
    uri = str(params.uri)
    if conn not in SUBSCRIBERS.setdefault(uri, set()):
        SUBSCRIBERS[uri].add(conn)
        conn.exit_stack.callback(lambda: SUBSCRIBERS.get(uri, set()).discard(conn))  # auto-clean on disconnect
    return EmptyResult()


async def on_unsubscribe(ctx, params: UnsubscribeRequestParams) -> EmptyResult:
    SUBSCRIBERS.get(str(params.uri), set()).discard(ctx.session._connection)
    return EmptyResult()


mcp._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
mcp._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)


async def publish_update(uri: str) -> None:
    """Callable from ANY task (not inside a request)."""
    for conn in list(SUBSCRIBERS.get(uri, ())):
        await conn.send_resource_updated(uri)        # legacy: connection's standalone channel (never raises)
    await bus.publish(ResourceUpdated(uri=uri))      # modern 2026-07-28: subscriptions/listen streams


@mcp.tool()
async def subscriber_count(uri: str) -> int:
    return len(SUBSCRIBERS.get(uri, ()))


@mcp.tool()
async def update_ask(ask_id: str, text: str) -> str:
    ASKS[ask_id] = text
    return "ok"


@mcp.tool()
async def update_later(ask_id: str, text: str, delay: float) -> str:
    """Schedules an update from a background task that outlives this request."""
    async def later():
        await anyio.sleep(delay)
        ASKS[ask_id] = text
        await publish_update(f"hive://asks/{ask_id}")
    TG.start_soon(later)
    return "scheduled"


TG = None  # set by runner to a long-lived task group


# ---------- Q6: identity ----------
@mcp.tool()
async def whoami(ctx: Context) -> dict[str, Any]:
    rc = ctx.request_context
    sess = ctx.session
    conn = sess._connection                      # private, but the only handle on Connection
    cp = sess.client_params
    conn.state["calls"] = conn.state.get("calls", 0) + 1
    return {
        "protocol_version": ctx.protocol_version,
        "client_name": cp.client_info.name if cp else None,
        "client_version": cp.client_info.version if cp else None,
        "session_id": conn.session_id,
        "connection_obj_id": id(conn),
        "calls_on_this_connection": conn.state["calls"],
        "has_headers": ctx.headers is not None,
        "mcp_session_header": (ctx.headers or {}).get("mcp-session-id"),
    }
