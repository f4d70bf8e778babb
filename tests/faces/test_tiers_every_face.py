"""The three tiers of a failed request, on every face (issue 13): an unknown method,
a refusal of the hub's (a ``HiveError`` with its code and data), and a bug of ours
(anything else) each come back as that request's error, in the face's own wire
format, and the same session serves the next request.

The faces are the real ones, driven as their own tests drive them: the editor
socket (``HubClient``), ``hive-rpc lsp`` (a JSON-RPC peer on its stdio), ``hive-rpc
epc`` (python-epc's client), ``hive-rpc mcp`` (the MCP SDK's stdio client), MCP over
the hub's Streamable HTTP (token and all), and the dashboard's HTTP API.  The faces
that run as processes of their own are clients of the in-process hub's socket.

The bug is injected once at a seam every face reaches through the hub, the
registry's ``pending_page`` (a ``hive/list`` with a ``limit``: the dashboard's
``/api/state``, ``hivemind_list_pending``, EPC's ``list``), raising
``RuntimeError("injected")``: a stand-in for a bug of ours, not for a peer.  The
hub logs it with its traceback, whichever face sent the request."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import pytest
import trio
from epc.handler import EPCError, ReturnError
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent
from test_activity_http import as_human, base_url, bearer, own_origin
from test_epc_face import epc_server, peer
from test_lsp import lsp
from test_mcp import http_client, stdio_params

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.jsonrpc import ErrorResponse
from hive_rpc.service import HubService

# The SDK's HTTP client leaves httpx2's SSE generators to the garbage collector, which
# trio reports; that is the client library's doing, not the hub's (as in test_mcp.py).
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

INJECTED = "RuntimeError: injected"
NO_SUCH_ID = "0123456789abcdef"
LIMIT = 10
TIMEOUT_S = 30


@dataclass(frozen=True)
class Failure:
    """An error as a face put it on its wire.

    ``how`` is the wire's own sort of error: a JSON-RPC code; ``return-error`` or
    ``epc-error`` (EPC) with the code its plist carries; ``isError`` (an MCP tool's
    error result); ``(status, code)`` (the dashboard's HTTP status and its JSON body's
    code)."""

    how: object
    message: str
    kind: str | None = None
    traced: bool = False
    """Whether ``data.traceback`` (where the wire carries data) ends with the bug."""


class Session(Protocol):
    """One connection (or session) of a face, kept open across the three requests."""

    async def unknown_method(self) -> Failure: ...

    async def unknown_prompt(self) -> Failure: ...

    async def pending(self) -> Failure | list[str]:
        """The ids of the pending prompts (one page of ``hive/list``), or its error."""
        ...


OpenSession = Callable[[HubService, HubConfig], AbstractAsyncContextManager[Session]]


def failure(how: object, message: str, data: object) -> Failure:
    """A failure whose wire carries JSON-RPC's ``data``."""
    if not isinstance(data, dict):
        return Failure(how, message)
    trace = data.get("traceback")
    traced = isinstance(trace, str) and trace.rstrip().endswith(INJECTED)
    return Failure(how, message, data.get("kind"), traced)


# --- the editor socket -----------------------------------------------------------------


class SocketSession:
    def __init__(self, client: HubClient) -> None:
        self.client = client

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        try:
            return await self.client.call(method, params)
        except HiveError as e:
            return failure(e.code, e.message, e.data)

    async def unknown_method(self) -> Failure:
        failed: Failure = await self._call("hive/frobnicate", {})
        return failed

    async def unknown_prompt(self) -> Failure:
        failed: Failure = await self._call("hive/poll", {"id": NO_SUCH_ID})
        return failed

    async def pending(self) -> Failure | list[str]:
        page = await self._call("hive/list", {"limit": LIMIT})
        return page if isinstance(page, Failure) else [r["id"] for r in page["prompts"]]


@asynccontextmanager
async def socket_session(hub: HubService, config: HubConfig) -> AsyncIterator[Session]:
    async with await HubClient.connect(config.socket) as client:
        yield SocketSession(client)


# --- hive-rpc lsp --------------------------------------------------------------------


class LspSession:
    def __init__(self, window: Any) -> None:
        self.window = window

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        reply = await self.window.request_message(method, params)
        if isinstance(reply, ErrorResponse):
            return failure(reply.code, reply.message, reply.data)
        return reply.result

    async def unknown_method(self) -> Failure:
        failed: Failure = await self._request("hive/frobnicate", {})
        return failed

    async def unknown_prompt(self) -> Failure:
        failed: Failure = await self._request("hive/poll", {"id": NO_SUCH_ID})
        return failed

    async def pending(self) -> Failure | list[str]:
        page = await self._request("hive/list", {"limit": LIMIT})
        return page if isinstance(page, Failure) else [r["id"] for r in page["prompts"]]


@asynccontextmanager
async def lsp_session(hub: HubService, config: HubConfig) -> AsyncIterator[Session]:
    async with lsp(config, "--no-start") as window:
        await window.initialize()
        yield LspSession(window)


# --- hive-rpc epc --------------------------------------------------------------------


class EpcSession:
    def __init__(self, agent: Any) -> None:
        self.agent = agent

    async def _call(self, method: str, *args: Any) -> Any:
        try:
            return await self.agent.call(method, *args)
        except ReturnError as e:
            return self._failure("return-error", e.args[0])
        except EPCError as e:
            return self._failure("epc-error", e.args[0])

    @staticmethod
    def _failure(how: str, error: Any) -> Failure:
        """python-epc's error value: the plist (:code :message :data), as a list."""
        plist = _plist(error)
        return failure((how, plist["code"]), plist["message"], plist.get("data"))

    async def unknown_method(self) -> Failure:
        failed: Failure = await self._call("frobnicate")
        return failed

    async def unknown_prompt(self) -> Failure:
        failed: Failure = await self._call("poll", {"id": NO_SUCH_ID})
        return failed

    async def pending(self) -> Failure | list[str]:
        page = await self._call("list", {"limit": LIMIT})
        return page if isinstance(page, Failure) else [r["id"] for r in page["prompts"]]


def _plist(value: Any) -> Any:
    """A plist python-epc read (``[Symbol(':code'), -32001, ...]``) as a dict."""
    if isinstance(value, list) and value and str(value[0]).startswith(":"):
        return {str(k)[1:]: _plist(v) for k, v in zip(value[::2], value[1::2], strict=True)}
    return value


@asynccontextmanager
async def epc_session(hub: HubService, config: HubConfig) -> AsyncIterator[Session]:
    async with epc_server(config) as port, peer(port, config) as agent:
        yield EpcSession(agent)


# --- MCP, over stdio and over HTTP ---------------------------------------------------


class McpSession:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def _tool(self, name: str, args: dict[str, Any]) -> Any:
        try:
            result: CallToolResult = await self.client.call_tool(name, args)
        except MCPError as e:  # the SDK's own JSON-RPC errors
            return Failure(e.error.code, e.error.message)
        if result.is_error:
            (text,) = result.content
            assert isinstance(text, TextContent)
            return Failure("isError", text.text)
        return result.structured_content

    async def unknown_method(self) -> Failure:
        failed: Failure = await self._tool("hivemind_frobnicate", {})
        return failed

    async def unknown_prompt(self) -> Failure:
        failed: Failure = await self._tool("hivemind_poll", {"ask_id": NO_SUCH_ID})
        return failed

    async def pending(self) -> Failure | list[str]:
        page = await self._tool("hivemind_list_pending", {"limit": LIMIT})
        return page if isinstance(page, Failure) else [p["ask_id"] for p in page["prompts"]]


TOOLS = "ask,coordinator"


@asynccontextmanager
async def mcp_stdio_session(hub: HubService, config: HubConfig) -> AsyncIterator[Session]:
    params = stdio_params(config, "--agent", "coordinator", "--tools", TOOLS)
    async with Client(params, mode="legacy") as client:
        yield McpSession(client)


@asynccontextmanager
async def mcp_http_session(hub: HubService, config: HubConfig) -> AsyncIterator[Session]:
    async with http_client(hub, "legacy", agent="coordinator", tools=TOOLS) as client:
        yield McpSession(client)


# --- the dashboard's HTTP API --------------------------------------------------------


class DashboardSession:
    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http

    @staticmethod
    def _answer(reply: httpx2.Response) -> Any:
        if reply.is_success:
            return reply.json()
        error = reply.json()["error"]
        return failure((reply.status_code, error.get("code")), error["message"], error.get("data"))

    async def unknown_method(self) -> Failure:
        failed: Failure = self._answer(await self.http.post("/api/frobnicate", json={}))
        return failed

    async def unknown_prompt(self) -> Failure:
        failed: Failure = self._answer(await self.http.post("/api/cancel", json={"id": NO_SUCH_ID}))
        return failed

    async def pending(self) -> Failure | list[str]:
        state = self._answer(await self.http.get("/api/state"))
        return state if isinstance(state, Failure) else [r["id"] for r in state["pending"]]


@asynccontextmanager
async def dashboard_session(hub: HubService, config: HubConfig) -> AsyncIterator[Session]:
    headers = {**as_human(hub), **own_origin(hub)}
    async with httpx2.AsyncClient(
        base_url=base_url(hub), headers=headers, timeout=httpx2.Timeout(TIMEOUT_S)
    ) as http:
        yield DashboardSession(http)


# --- the test --------------------------------------------------------------------------


@dataclass(frozen=True)
class Tier:
    """What a face is expected to answer for one tier: ``how`` and ``kind`` exactly,
    the message as a regular expression (a listing of what is offered may grow)."""

    how: object
    message: str
    kind: str | None = None
    traced: bool = False

    def check(self, got: Failure | list[str]) -> None:
        assert isinstance(got, Failure), f"expected an error, got {got!r}"
        assert (got.how, got.kind, got.traced) == (self.how, self.kind, self.traced), got
        assert re.fullmatch(self.message, got.message), got.message


@dataclass(frozen=True)
class Face:
    """A face, and how it words each tier."""

    open: OpenSession
    unknown_method: Tier
    unknown_prompt: Tier
    bug: Tier


NOT_FOUND = f"no prompt '{NO_SUCH_ID}'"
BUG = f"internal error in hive/list: {INJECTED}"
HUB_UNKNOWN = Tier(
    -32601, "unknown method 'hive/frobnicate'; the hub offers .*hive/list.*", "method_not_found"
)
HUB_NOT_FOUND = Tier(-32001, NOT_FOUND, "not_found")
HUB_BUG = Tier(-32603, BUG, "internal", traced=True)
MCP_UNKNOWN = Tier("isError", "Unknown tool: hivemind_frobnicate")
MCP_NOT_FOUND = Tier("isError", f"{NOT_FOUND} asked by agent 'coordinator'")

FACES: dict[str, Face] = {
    "socket": Face(socket_session, HUB_UNKNOWN, HUB_NOT_FOUND, HUB_BUG),
    "lsp": Face(lsp_session, HUB_UNKNOWN, HUB_NOT_FOUND, HUB_BUG),
    "epc": Face(
        epc_session,
        Tier(
            ("epc-error", -32601),
            "unknown method 'frobnicate'; this server offers .*list.*",
            "method_not_found",
        ),
        Tier(("return-error", -32001), NOT_FOUND, "not_found"),
        Tier(("return-error", -32603), BUG, "internal", traced=True),
    ),
    # hive-rpc mcp relays to a session in the hub, whose tool calls the service
    # in-process, as over HTTP: the tool is named.
    "mcp-stdio": Face(
        mcp_stdio_session,
        MCP_UNKNOWN,
        MCP_NOT_FOUND,
        Tier("isError", f"internal error in hivemind_list_pending: {INJECTED}"),
    ),
    # Over HTTP the tool calls the service in-process: the tool is named.
    "mcp-http": Face(
        mcp_http_session,
        MCP_UNKNOWN,
        MCP_NOT_FOUND,
        Tier("isError", f"internal error in hivemind_list_pending: {INJECTED}"),
    ),
    "dashboard": Face(
        dashboard_session,
        Tier(
            (404, -32601),
            "no API route POST /api/frobnicate; the API offers .*GET /api/state.*",
            "method_not_found",
        ),
        Tier((404, -32001), NOT_FOUND, "not_found"),
        Tier(
            (500, -32603), f"internal error in GET /api/state: {INJECTED}", "internal", traced=True
        ),
    ),
}


class Fault:
    """The registry's ``pending_page``, made to raise once when armed."""

    def __init__(self, hub: HubService, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        self.fired = 0
        real = hub.registry.pending_page

        def pending_page(**kw: Any) -> Any:
            if self.armed:
                self.armed = False
                self.fired += 1
                raise RuntimeError("injected")
            return real(**kw)

        monkeypatch.setattr(hub.registry, "pending_page", pending_page)


@pytest.mark.parametrize("face", list(FACES.values()), ids=list(FACES))
async def test_every_face_answers_each_tier_and_serves_the_next_request(
    face: Face,
    http_hub: HubService,
    hub_config: HubConfig,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fault = Fault(http_hub, monkeypatch)
    asked = await http_hub.call("hive/ask", {"question": "Still there?", "agent_id": "a1"})
    with trio.fail_after(TIMEOUT_S):
        async with face.open(http_hub, hub_config) as session:
            assert await session.pending() == [asked["id"]]  # this face reaches the seam
            face.unknown_method.check(await session.unknown_method())
            face.unknown_prompt.check(await session.unknown_prompt())
            fault.armed = True
            face.bug.check(await session.pending())
            assert fault.fired == 1
            # The same session serves the next request.
            assert await session.pending() == [asked["id"]]
    # The hub logged the bug, and only it, with its traceback.
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [repr(r.exc_info[1]) for r in logged if r.exc_info] == ["RuntimeError('injected')"]
    assert len(logged) == 1


async def test_the_dashboard_api_names_a_route_asked_with_another_method(
    http_hub: HubService,
) -> None:
    """A known route asked with the wrong HTTP method: 405 with ``Allow``, in the
    API's JSON (the first tier), not Starlette's plain text."""
    async with httpx2.AsyncClient(base_url=base_url(http_hub), headers=bearer(http_hub)) as http:
        with trio.fail_after(TIMEOUT_S):
            reply = await http.get("/api/respond")
    assert (reply.status_code, reply.headers["Allow"]) == (405, "POST")
    error = reply.json()["error"]
    assert (error["code"], error["data"]) == (-32601, {"kind": "method_not_found"})
    assert error["message"].startswith("no API route GET /api/respond; the API offers ")
    assert "POST /api/respond" in error["message"]
