"""The real Claude Code as the MCP client of ``hive-rpc mcp`` (issue 15, section 1).

Registered exactly as docs/mcp.md says (``claude mcp add hive-rpc -- .../hive-rpc mcp``,
here with ``--socket`` for the test's hub; in the local scope and in the project scope,
``.mcp.json``). The scripted model does what a model must do in Claude Code 2.1.328,
where every MCP tool is deferred: load the tools with ``ToolSearch``, call
``hivemind_ask_async``, poll while the human has not answered, and poll again after the
human answered from an editor-socket client. ``claude -p`` runs an MCP tool only when
allowed (``--allowedTools mcp__hive-rpc``; without it the tool result is "Claude
requested permissions to use ..., but you haven't granted it yet"). What Claude Code
sent back to the model (the recorded requests) must hold the ask id, then the answer."""

from __future__ import annotations

import json
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from claude_session import claude_home
from editor import next_prompt
from scripted_model import ModelRequest, result_text, scripted_model, text, tool_use

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HIVE_RPC = Path(sys.executable).parent / "hive-rpc"
ASK = "mcp__hive-rpc__hivemind_ask_async"
POLL = "mcp__hive-rpc__hivemind_poll"
QUESTION = "Which database should the cache use?"


def register(claude: Any, socket: Path, scope: str = "local") -> None:
    """docs/mcp.md's command, with the absolute path and the test hub's socket; the
    ``project`` scope writes the project's ``.mcp.json`` instead of ``~/.claude.json``."""
    done = claude.run(
        "mcp",
        "add",
        "--scope",
        scope,
        "hive-rpc",
        "--",
        str(HIVE_RPC),
        "mcp",
        "--socket",
        str(socket),
    )
    assert done.returncode == 0, done.stderr
    assert "Added stdio MCP server hive-rpc" in done.stdout
    mcp_json = claude.project / ".mcp.json"
    if scope == "project":
        assert json.loads(mcp_json.read_text())["mcpServers"]["hive-rpc"]["args"][0] == "mcp"
    else:
        assert not mcp_json.exists()


def structured(request: ModelRequest) -> dict[str, Any]:
    """The last tool result, which Claude Code gives the model as the tool's
    structuredContent serialised as JSON."""
    result = request.last_tool_result()
    assert result is not None, "no tool_result in the request"
    assert not result.get("is_error"), result
    data: dict[str, Any] = json.loads(result_text(result))
    return data


@pytest.mark.parametrize("scope", ["local", "project"])
async def test_claude_code_asks_async_and_polls_the_answer(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path, scope: str
) -> None:
    answered = threading.Event()
    polled_pending = threading.Event()
    seen: dict[str, Any] = {}

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        step = len([m for m in request.messages if m.get("role") == "assistant"])
        if step == 0:  # only ToolSearch is offered: load the two tools by name
            assert ASK not in request.tool_names
            return [tool_use("ToolSearch", {"query": f"select:{ASK},{POLL}", "max_results": 5})]
        if step == 1:
            assert ASK in request.tool_names, request.tool_names
            assert POLL in request.tool_names, request.tool_names
            return [tool_use(ASK, {"question": QUESTION, "options": ["SQLite", "Postgres"]})]
        if step == 2:  # the ask id came back; poll at once (nobody has answered yet)
            seen["asked"] = structured(request)
            return [tool_use(POLL, {"ask_id": seen["asked"]["ask_id"]})]
        if step == 3:  # still pending: "keep working" until the human has answered
            seen["pending"] = structured(request)
            polled_pending.set()
            assert answered.wait(60), "the human never answered"
            return [tool_use(POLL, {"ask_id": seen["asked"]["ask_id"]})]
        seen["answer"] = structured(request)
        return [text(f"The human chose {seen['answer']['decision']}.")]

    async def human(editor: HubClient) -> None:
        note = await next_prompt(editor)
        seen["prompt"] = note.params
        # answer only once the model has seen it pending
        assert await trio.to_thread.run_sync(polled_pending.wait, 60)
        await editor.call(
            "hive/respond", {"id": note.params["id"], "answer": "Postgres", "by": "ada"}
        )
        answered.set()

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket, scope)
        async with await HubClient.connect(hub_config.socket) as editor:
            await editor.call("hive/subscribe")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(human, editor)
                with trio.fail_after(120):
                    done = await trio.to_thread.run_sync(
                        lambda: claude.run(
                            "-p",
                            "Ask the human which database to use.",
                            "--allowedTools",
                            "mcp__hive-rpc",
                            timeout=90,
                        )
                    )
                nursery.cancel_scope.cancel()

    assert model.errors == []
    assert done.returncode == 0, done.stderr
    assert "The human chose Postgres." in done.stdout
    asked = seen["asked"]
    assert seen["prompt"]["id"] == asked["ask_id"]
    assert seen["prompt"]["question"] == QUESTION
    assert seen["pending"]["status"] == "pending"
    # Claude Code hands its model only the structured result, not the text line: the
    # advice to keep working and poll must be in it.
    assert "hivemind_poll" in asked["next_step"]
    assert "poll again later" in seen["pending"]["next_step"]
    answer = seen["answer"]
    assert answer["ask_id"] == asked["ask_id"]
    assert answer["status"] == "responded"
    assert answer["decision"] == "Postgres"
    assert answer["by"] == "ada"
    assert answer["next_step"] is None
    # Read from the recorded request itself: the last one holds the answer as its last
    # tool_result, the poll's structuredContent as JSON text.
    last = model.requests[-1].last_tool_result()
    assert last is not None
    assert json.loads(result_text(last))["decision"] == "Postgres"
    # Without --agent, each session is its own agent: the client's name plus a suffix.
    assert seen["prompt"]["agent_id"].startswith("claude-code-")
    # The server's instructions (the ask-async pattern) reach the model.
    assert "hive-rpc lets you ask the human" in json.dumps(model.requests[0].body)


async def test_a_keyword_search_finds_ask_async_first(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Every MCP tool is deferred in Claude Code, so a model that does not know the
    names finds them by ToolSearch over names and descriptions: "ask the human a
    question" must bring up the recommended tool first, and "poll answer" the poll."""
    queries = ["ask the human a question", "poll answer"]

    def script(request: ModelRequest) -> list[dict[str, Any]]:
        step = len([m for m in request.messages if m.get("role") == "assistant"])
        if step < len(queries):
            return [tool_use("ToolSearch", {"query": queries[step], "max_results": 5})]
        return [text("found")]

    with scripted_model(script) as model:
        claude = claude_home(claude_bin, claude_root, model.base_url)
        register(claude, hub_config.socket)
        done = await trio.to_thread.run_sync(lambda: claude.run("-p", "find the tools"))
    assert model.errors == []
    assert done.returncode == 0, done.stderr
    found = [
        [ref["tool_name"] for ref in result["content"] if ref.get("type") == "tool_reference"]
        for result in model.requests[-1].tool_results()
    ]
    assert found[0][0] == ASK, found[0]
    assert POLL in found[1], found[1]


async def test_two_sessions_are_two_agents(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    """Two Claude Code sessions in one project (one registration, no ``--agent``) each
    start their own ``hive-rpc mcp`` and are told apart: the second cannot collect the
    first one's answer, and Claude Code hands the refusal to its model as an error."""
    asked: dict[str, Any] = {}

    def first(request: ModelRequest) -> list[dict[str, Any]]:
        step = len([m for m in request.messages if m.get("role") == "assistant"])
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{ASK}", "max_results": 5})]
        if step == 1:
            return [tool_use(ASK, {"question": QUESTION})]
        asked.update(structured(request))
        return [text("asked")]

    def second(request: ModelRequest) -> list[dict[str, Any]]:
        step = len([m for m in request.messages if m.get("role") == "assistant"])
        if step == 0:
            return [tool_use("ToolSearch", {"query": f"select:{POLL}", "max_results": 5})]
        if step == 1:
            return [tool_use(POLL, {"ask_id": asked["ask_id"]})]
        return [text("refused")]

    runs = []
    for script in (first, second):
        with scripted_model(script) as model:
            claude = claude_home(claude_bin, claude_root, model.base_url)
            if script is first:
                register(claude, hub_config.socket)
            done = await trio.to_thread.run_sync(
                partial(claude.run, "-p", "go", "--allowedTools", "mcp__hive-rpc")
            )
        assert model.errors == []
        assert done.returncode == 0, done.stderr
        runs.append(model)

    refusal = runs[1].requests[-1].last_tool_result()
    assert refusal is not None
    assert refusal.get("is_error") is True
    words = result_text(refusal)
    prefix = f"no prompt '{asked['ask_id']}' asked by agent '"
    assert words.startswith(prefix), words
    second_agent = words[len(prefix) :].partition("'")[0]
    assert second_agent.startswith("claude-code-")
    # and the first one's ask is still there, untouched, for the first session
    async with await HubClient.connect(hub_config.socket) as editor:
        listed = await editor.call("hive/list")
    assert [p["id"] for p in listed] == [asked["ask_id"]]
    assert listed[0]["status"] == "pending"
    assert listed[0]["agent_id"].startswith("claude-code-")
    assert listed[0]["agent_id"] != second_agent
