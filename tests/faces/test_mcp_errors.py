"""One error model on the MCP face too (issue 28 section 2): a tool error says what
went wrong in the tool's own words (its parameter names, not the hub's), and carries
the error's JSON-RPC code and ``data.kind`` as every other face does, in
``structuredContent.error`` (``{"code", "message", "data"}``, JSON-RPC's error object)
beside the one text block.  A lost hub is -32014 ``hub_unreachable``, not -32603, on
the relayed stdio path as in the hub.  And each tool's name is spelled once, in its
declaration: the method table's ``mcp`` column is checked against the tool tables.

Driven by the MCP SDK's own client, over HTTP (the tools in the hub) and over stdio
(``hive-rpc mcp``, a relay to a session in the hub)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from mcp import Client
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from test_mcp import http_client, stdio_params

from hive_rpc.core.errors import HiveError, HubUnreachable, InternalError
from hive_rpc.core.tool_groups import GROUP_NAMES
from hive_rpc.faces.mcp.guarded import refusal
from hive_rpc.faces.mcp.tool_table import ToolSpec, ToolTable
from hive_rpc.faces.mcp.tools import COMPOSITE_TOOLS, GROUP_OF, TABLES
from hive_rpc.faces.mcp.tools import GROUPS as TOOLS_OF
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.protocol.methods import CODES, METHODS, PROMPT_RECORD
from hive_rpc.service import HubService

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

TIMEOUT_S = 30
NO_SUCH_ID = "0123456789abcdef"
GROUPS = "ask,coordinator,agora,lings,events,tasks"


def error_of(result: CallToolResult) -> tuple[str, dict[str, Any]]:
    """A tool error's one text block and its ``structuredContent.error``."""
    assert result.is_error, result.content
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert result.structured_content is not None, f"no code or kind: {block.text!r}"
    error: dict[str, Any] = result.structured_content["error"]
    assert error["message"] == block.text
    return block.text, error


def specs() -> list[ToolSpec]:
    return [spec for table in TABLES for spec in table.specs]


@asynccontextmanager
async def session(hub: HubService, config: HubConfig, transport: str) -> AsyncIterator[Client]:
    if transport == "http":
        async with http_client(hub, "legacy", agent="main.a", tools=GROUPS) as c:
            yield c
    else:
        params = stdio_params(config, "--agent", "main.a", "--tools", GROUPS)
        async with Client(params, mode="legacy") as c:
            yield c


@pytest.fixture(params=["http", "stdio"])
def transport(request: pytest.FixtureRequest) -> str:
    param: str = request.param
    return param


async def test_refusals_name_the_tools_parameters_and_carry_code_and_kind(
    http_hub: HubService, hub_config: HubConfig, transport: str
) -> None:
    with trio.fail_after(TIMEOUT_S):
        async with session(http_hub, hub_config, transport) as c:
            # report_to_parent fills the hub's "from" with its own "sender"
            text, error = error_of(
                await c.call_tool(
                    "report_to_parent",
                    {"kind": "child-note", "message": "m", "sender": "Bad Name"},
                )
            )
            assert text.startswith("sender: 'Bad Name' is not a ling name"), text
            assert "from" not in text.split(";")[0]
            assert error["code"] == CODES["invalid_params"] == -32602
            assert error["data"]["kind"] == "invalid_params"
            assert error["data"]["param"] == "sender"

            # the hub's choices are the tool's options
            text, error = error_of(
                await c.call_tool("hivemind_ask_async", {"question": "q", "options": ["a", "a"]})
            )
            assert text == "options must be distinct"
            assert (error["code"], error["data"]["kind"], error["data"]["param"]) == (
                -32602,
                "invalid_params",
                "options",
            )

            # a decline's answer is the tool's decision
            asked = await c.call_tool("hivemind_ask_async", {"question": "q", "options": ["a"]})
            assert asked.structured_content is not None
            text, error = error_of(
                await c.call_tool(
                    "hivemind_respond",
                    {
                        "ask_id": asked.structured_content["ask_id"],
                        "decision": "a",
                        "action": "decline",
                    },
                )
            )
            assert text == "a decline carries no decision; leave decision out"
            assert (error["code"], error["data"]["kind"], error["data"]["param"]) == (
                CODES["invalid_answer"],
                "invalid_answer",
                "decision",
            )

            # not found: -32001, with the hub's facts
            text, error = error_of(await c.call_tool("hivemind_poll", {"ask_id": NO_SUCH_ID}))
            assert text == f"no prompt '{NO_SUCH_ID}' asked by agent 'main.a'"
            assert (error["code"], error["data"]["kind"]) == (-32001, "not_found")

            # a parameter the tool and the hub name alike stays as it is
            text, error = error_of(await c.call_tool("hivemind_list_pending", {"limit": 0}))
            assert text.startswith("limit must be an integer from 1 to 1000"), text
            assert error["data"]["param"] == "limit"

            # a dialogue that is over: -32003 dialogue_closed
            created = await c.call_tool(
                "agora_create", {"topic": "t", "participants": ["main.a", "main.b"]}
            )
            assert created.structured_content is not None
            dialogue = created.structured_content["id"]
            await c.call_tool("agora_abort", {"dialogue_id": dialogue})
            text, error = error_of(
                await c.call_tool(
                    "agora_dispatch",
                    {"dialogue_id": dialogue, "to": "main.b", "signal": "propose", "message": "m"},
                )
            )
            assert "takes no more turns" in text
            assert (error["code"], error["data"]["kind"]) == (-32003, "dialogue_closed")


async def test_the_hubs_own_question_is_refused_with_a_code(
    http_hub: HubService, hub_config: HubConfig
) -> None:
    """hivemind_respond's own refusal (the hub's question to the human: may this
    terminal be typed into?) is an error like the hub's: -32013 not_an_approver."""
    with trio.fail_after(TIMEOUT_S):
        async with session(http_hub, hub_config, "http") as c:
            ling = await c.call_tool(
                "ling_register", {"name": "main.a.kid", "kind": "tmux", "address": "%99"}
            )
            assert ling.structured_content is not None
            prompt = ling.structured_content["prompt_id"]
            text, error = error_of(
                await c.call_tool("hivemind_respond", {"ask_id": prompt, "decision": "yes"})
            )
    assert "only the human answers it" in text
    assert (error["code"], error["data"]["kind"]) == (-32013, "not_an_approver")
    assert error["data"]["ask_id"] == prompt


async def test_a_sender_who_is_no_participant_is_named_sender(
    http_hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(TIMEOUT_S):
        async with session(http_hub, hub_config, "http") as c:
            created = await c.call_tool(
                "agora_create", {"topic": "t", "participants": ["main.a", "main.b"]}
            )
            assert created.structured_content is not None
            text, error = error_of(
                await c.call_tool(
                    "agora_dispatch",
                    {
                        "dialogue_id": created.structured_content["id"],
                        "to": "main.b",
                        "signal": "propose",
                        "message": "m",
                        "sender": "main.zz",
                    },
                )
            )
    assert (error["code"], error["data"]["kind"]) == (-32005, "not_a_participant")
    assert text.startswith("sender 'main.zz' is not a participant"), text


async def test_an_empty_prompt_is_named_prompt(http_hub: HubService, hub_config: HubConfig) -> None:
    with trio.fail_after(TIMEOUT_S):
        async with session(http_hub, hub_config, "http") as c:
            text, error = error_of(await c.call_tool("request_human_input", {"prompt": " "}))
    assert error["data"]["kind"] == "invalid_params"
    assert text == "prompt must be a non-empty string"


# --- the one conversion, unit by unit ---------------------------------------------------


def test_a_hub_method_and_parameter_become_the_tools() -> None:
    """check_params's sentence ("an array", not "a array") names the hub's method and
    parameter: the tool says its own, going by data.method and data.param."""
    raised = HiveError.from_wire(
        -32602,
        "hive/ask: parameter 'choices' must be an array, got str",
        {"kind": "invalid_params", "method": "hive/ask", "param": "choices"},
    )
    text, error = error_of(refusal(raised, "hivemind_ask_async", {"choices": "options"}))
    assert text == "hivemind_ask_async: parameter 'options' must be an array, got str"
    assert error == {
        "code": -32602,
        "message": text,
        "data": {"kind": "invalid_params", "tool": "hivemind_ask_async", "param": "options"},
    }


def test_a_lost_hub_in_the_hub_is_hub_unreachable() -> None:
    text, error = error_of(refusal(HubUnreachable("no hub"), "hivemind_poll"))
    assert text == "hivemind_poll: the hub could not be reached: no hub"
    assert (error["code"], error["data"]["kind"]) == (-32014, "hub_unreachable")
    assert error["data"]["tool"] == "hivemind_poll"


def test_a_bug_is_internal_and_its_traceback_stays_in_the_hubs_log() -> None:
    text, error = error_of(refusal(KeyError("bug"), "hivemind_poll"))
    assert text == "internal error in hivemind_poll: KeyError: 'bug'"
    assert error == {
        "code": InternalError.code,
        "message": text,
        "data": {"kind": "internal", "tool": "hivemind_poll"},
    }


async def test_a_tool_call_with_the_hub_stopped_is_hub_unreachable(hub_config: HubConfig) -> None:
    """``hive-rpc mcp --no-start``, its hub stopped between two calls: the relay
    answers the call itself, -32014 hub_unreachable (a bug would be -32603)."""
    stopped = trio.Event()
    serving = trio.CancelScope()

    async def serve(*, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with serving:
            await run_hub(hub_config, task_status=task_status)
        stopped.set()

    with trio.fail_after(TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(serve)
            async with Client(stdio_params(hub_config, "--agent", "a"), mode="legacy") as c:
                asked = await c.call_tool("hivemind_ask_async", {"question": "q"})
                assert not asked.is_error, asked.content
                serving.cancel()
                await stopped.wait()
                text, error = error_of(await c.call_tool("hivemind_ask_async", {"question": "q"}))
    assert "hive-rpc serve" in text
    assert (error["code"], error["data"]["kind"]) == (CODES["hub_unreachable"], "hub_unreachable")


# --- tool names: spelled once ---------------------------------------------------------


def test_the_method_tables_mcp_column_is_the_tool_tables() -> None:
    """Every tool the method table names is declared, under that name, and every
    declared tool but the composite ones (approve) is some row's."""
    declared = {spec.name for spec in specs()}
    named = [tool for method in METHODS.values() for tool in method.mcp]
    assert len(named) == len(set(named)), "a tool named by two rows"
    assert set(named) == declared - COMPOSITE_TOOLS
    assert declared >= COMPOSITE_TOOLS
    assert set(GROUP_OF) == declared


def test_each_group_is_read_from_its_tools_declarations() -> None:
    """core/tool_groups.py names the groups (``hive-rpc mcp`` loads no tool); each
    tool declares its group, and every group named there holds some tool, so neither
    list can name a group the other lacks."""
    assert {spec.name: spec.group for spec in specs()} == GROUP_OF
    assert tuple(TOOLS_OF) == GROUP_NAMES
    assert all(TOOLS_OF.values()), {g: t for g, t in TOOLS_OF.items() if not t}
    assert sorted(t for tools in TOOLS_OF.values() for t in tools) == sorted(GROUP_OF)


def test_a_tool_declared_in_an_unknown_group_fails_at_its_declaration() -> None:
    with pytest.raises(ValueError, match="unknown tool group 'nope'; valid: ask, "):
        ToolTable().tool("d", group="nope", hints=ToolAnnotations())


def test_a_tools_name_is_its_functions_and_each_is_declared_once() -> None:
    names = [spec.name for spec in specs()]
    assert len(names) == len(set(names))
    for spec in specs():
        assert spec.name == getattr(spec.fn, "__name__", None)
        assert spec.hints is not None, spec.name


def test_the_parameter_mappings_name_real_parameters() -> None:
    """A mapping declared beside a tool renames a parameter of a method the tool calls
    (or a field of the prompt record, which the hub's data names: an answer outside
    the ask's ``choices``) to a parameter of one of the tools (the ask's ``options``),
    so that a rename cannot go stale unseen."""
    tool_params = {p for spec in specs() for p in inspect.signature(spec.fn).parameters}
    for spec in specs():
        rows = [m for m in METHODS.values() if spec.name in m.mcp]
        hub_names = {p for m in rows for p in m.params} | set(PROMPT_RECORD)
        for hub_name, tool_name in spec.words.items():
            assert hub_name in hub_names, (spec.name, hub_name)
            assert tool_name in tool_params, (spec.name, tool_name)
