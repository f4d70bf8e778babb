"""How MCP tools report failures: unit tests of faces.mcp.guarded, and a tool whose
hub call raises something unexpected, in a real (in-memory) MCP session."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from hive_rpc.core.errors import HiveError, HubUnreachable, InvalidAnswer, InvalidParams
from hive_rpc.faces.mcp.groups import ToolGroups
from hive_rpc.faces.mcp.guarded import guarded
from hive_rpc.faces.mcp.identity import Identity
from hive_rpc.faces.mcp.results import ASKED_NEXT
from hive_rpc.faces.mcp.server import HiveMcp


@guarded
async def _raise(error: BaseException) -> CallToolResult:
    raise error


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            InvalidAnswer("answer 'c' is not one of the choices: a, b", choices=["a", "b"]),
            "answer 'c' is not one of the options: a, b",
        ),
        (
            InvalidParams("choices must be distinct", param="choices"),
            "options must be distinct",
        ),
        (
            HiveError.from_wire(
                -32004,
                "a decline carries no answer; send answer null",
                {"kind": "invalid_answer", "param": "answer", "action": "decline"},
            ),
            "a decline carries no decision; leave decision out",
        ),
        # A sentence whose data names no renamed parameter is the hub's own.
        (InvalidParams("schema property 'x' has choices"), "schema property 'x' has choices"),
        (HiveError.from_wire(-32004, "no data at all", None), "no data at all"),
        (
            HubUnreachable("lost the hub; a new hub starts with the next call"),
            "_raise: the hub could not be reached: lost the hub; a new hub starts with the "
            "next call",
        ),
        (
            ExceptionGroup("wrapped", [HubUnreachable("no hub")]),
            "_raise: the hub could not be reached: no hub",
        ),
    ],
)
async def test_refusals_and_a_lost_hub_become_tool_errors(error: Exception, text: str) -> None:
    result = await _raise(error)
    assert result.is_error
    assert result.content[0].text == text  # type: ignore[union-attr]


async def test_a_bug_is_an_internal_error_naming_the_tool_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The third tier (dispatch.py), as on every face: not propagated to the SDK."""
    result = await _raise(KeyError("bug"))
    assert result.is_error
    assert result.content[0].text == "internal error in _raise: KeyError: 'bug'"  # type: ignore[union-attr]
    assert any(r.exc_info and r.levelno >= logging.ERROR for r in caplog.records)


def test_the_decorated_tool_keeps_its_name_and_signature() -> None:
    """The SDK builds a tool's schemas from its signature and annotations."""
    assert _raise.__name__ == "_raise"
    assert _raise.__wrapped__.__annotations__ == _raise.__annotations__  # type: ignore[attr-defined]


class FlakyBackend:
    """A backend whose first call raises a bug; later calls answer as a hub would."""

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("injected bug")
        return {"id": "p1", "status": "pending"}


async def test_an_unexpected_exception_is_that_calls_error_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hive = HiveMcp(FlakyBackend(), Identity("agent"), groups=ToolGroups(frozenset({"ask"})))
    async with Client(hive.server) as client:
        failed = await client.call_tool("hivemind_ask_async", {"question": "q"})
        assert failed.is_error
        assert isinstance(failed.content[0], TextContent)
        assert "hivemind_ask_async" in failed.content[0].text
        logged = [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR]
        assert logged, "logged with its traceback"
        raised = logged[0].exc_info[1]  # type: ignore[index]
        assert raised is not None
        assert "injected bug" in repr(raised) + repr(raised.__cause__)
        asked = await client.call_tool("hivemind_ask_async", {"question": "q"})
        assert not asked.is_error, asked.content
        assert asked.structured_content == {
            "ask_id": "p1",
            "status": "pending",
            "next_step": ASKED_NEXT,
            "task_id": None,
            "in_reply_to": None,
        }
