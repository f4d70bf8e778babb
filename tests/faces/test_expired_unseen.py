"""An expiry is honest (issue 27, section 3): a question that expired before any
editor showed it to the human is "expired unseen", to the agent (MCP tools, the CLI)
and to the human (a trace every editor can list until the human clears it), and not
"shown, no answer".  Only the human's credential says the human saw a question or
clears that trace.  And a question names where its asker runs, as the hub found it.

Over the real socket, the real ``hive-rpc`` command and the MCP SDK's own stdio
client; the restart test on the registry and a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from cli_support import Shell
from mcp import Client
from test_mcp import stdio_params

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import InvalidParams, NotAnApprover
from hive_rpc.core.prompt import Ask, Status
from hive_rpc.faces.mcp.results import EXPIRED_MARKER, UNSEEN_TEXT
from hive_rpc.hub import HubConfig
from hive_rpc.runtime.registry import MAX_UNSEEN, open_registry
from hive_rpc.service import HubService
from hive_rpc.store import SqliteStore

EPOCH = 1_800_000_000.0


async def approver(config: HubConfig) -> HubClient:
    editor = await HubClient.connect(config.socket)
    assert await prove_approver(editor.call) is None
    return editor


async def expire(client: HubClient, question: str, *, shown_by: HubClient | None = None) -> Any:
    asked = await client.call("hive/ask", {"question": question, "timeout_s": 0.5})
    if shown_by is not None:
        await shown_by.call("hive/shown", {"id": asked["id"]})
    return await client.call("hive/await", {"id": asked["id"], "timeout_s": 20})


async def test_an_expiry_nobody_was_shown_is_unseen_and_leaves_a_trace(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await approver(hub_config) as editor,
        ):
            await editor.call("hive/subscribe")
            record = await expire(agent, "Deploy to production?")
            assert (record["status"], record["shown_at"], record["unseen"]) == (
                "expired",
                None,
                True,
            )
            note = await editor.next_notification()
            assert note.method == "hive/prompt"
            note = await editor.next_notification()
            assert (note.method, note.params["id"], note.params["unseen"]) == (
                "hive/dismiss",
                record["id"],
                True,
            )
            traces = await editor.call("hive/list", {"expired_unseen": True})
            assert [t["id"] for t in traces] == [record["id"]]
            assert (await editor.call("hive/status", {}))["expired_unseen"] == 1
            # Pending questions are listed as before, without the expired one.
            assert await editor.call("hive/list", {}) == []


async def test_a_question_shown_then_expired_is_not_unseen(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await approver(hub_config) as editor,
        ):
            record = await expire(agent, "Which branch?", shown_by=editor)
            assert record["status"] == "expired"
            assert record["shown_at"] is not None
            assert record["unseen"] is False
            assert await editor.call("hive/list", {"expired_unseen": True}) == []


async def test_only_the_humans_credential_says_a_question_was_shown_or_clears_it(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await approver(hub_config) as editor,
        ):
            asked = await agent.call("hive/ask", {"question": "Merge?", "timeout_s": 0.5})
            # An agent cannot make its own (or any) question look seen...
            with pytest.raises(NotAnApprover) as refused:
                await agent.call("hive/shown", {"id": asked["id"]})
            assert refused.value.data["lacks"] == "approver"
            record = await agent.call("hive/await", {"id": asked["id"], "timeout_s": 20})
            assert record["unseen"] is True
            # ...nor take the trace off the human's screen.
            with pytest.raises(NotAnApprover):
                await agent.call("hive/clearUnseen", {"all": True})
            assert len(await editor.call("hive/list", {"expired_unseen": True})) == 1


async def test_clearing_the_trace_reaches_every_editor(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await approver(hub_config) as editor,
            await approver(hub_config) as other_editor,
        ):
            first = await expire(agent, "one?")
            second = await expire(agent, "two?")
            await other_editor.call("hive/subscribe")
            with pytest.raises(InvalidParams, match='either "id" or "all"'):
                await editor.call("hive/clearUnseen", {})
            with pytest.raises(InvalidParams, match='either "id" or "all"'):
                await editor.call("hive/clearUnseen", {"id": first["id"], "all": True})
            assert await editor.call("hive/clearUnseen", {"id": first["id"]}) == {"cleared": 1}
            note = await other_editor.next_notification()
            assert (note.method, note.params) == ("hive/unseenCleared", {"id": first["id"]})
            after = await agent.call("hive/poll", {"id": first["id"]})
            assert (after["unseen"], after["status"]) == (False, "expired")
            assert after["cleared_at"] is not None
            assert [t["id"] for t in await editor.call("hive/list", {"expired_unseen": True})] == [
                second["id"]
            ]
            assert await editor.call("hive/clearUnseen", {"all": True}) == {"cleared": 1}
            note = await other_editor.next_notification()
            assert (note.method, note.params) == ("hive/unseenCleared", {"id": second["id"]})
            assert await editor.call("hive/list", {"expired_unseen": True}) == []
            # A question still pending has no trace to clear.
            pending = await agent.call("hive/ask", {"question": "three?"})
            with pytest.raises(InvalidParams, match="still pending"):
                await editor.call("hive/clearUnseen", {"id": pending["id"]})


async def test_request_human_input_tells_the_agent_its_question_was_never_seen(
    hub: HubService, hub_config: HubConfig
) -> None:
    params = stdio_params(hub_config, "--agent", "asker", "--human-timeout", "0.5")
    with trio.fail_after(60):
        async with Client(params) as agent:
            result = await agent.call_tool("request_human_input", {"prompt": "Which API?"})
            texts = [c.text for c in result.content if c.type == "text"]
            # the marker alone first, then the status line (test_mcp_text_only.py)
            assert (texts[0], texts[2:]) == (EXPIRED_MARKER, [UNSEEN_TEXT])
            assert "status: expired" in texts[1]
            assert result.structured_content is not None
            assert result.structured_content["unseen"] is True
            asked = await agent.call_tool(
                "hivemind_ask_async", {"question": "Which DB?", "timeout_s": 0.5}
            )
            assert asked.structured_content is not None
            ask_id = asked.structured_content["ask_id"]
            state = await agent.call_tool("hivemind_await", {"ask_id": ask_id, "timeout_s": 20})
            text = state.content[0].text if state.content[0].type == "text" else ""
            assert "expired unseen" in text, text
            assert state.structured_content is not None
            assert state.structured_content["unseen"] is True
            assert "never saw it" in state.structured_content["next_step"]


async def test_request_human_input_shown_then_expired_says_nothing_of_unseen(
    hub: HubService, hub_config: HubConfig
) -> None:
    params = stdio_params(hub_config, "--agent", "asker", "--human-timeout", "1")
    with trio.fail_after(60):
        async with Client(params) as agent, await approver(hub_config) as editor:
            await editor.call("hive/subscribe")

            async def show_it() -> None:
                note = await editor.next_notification()
                await editor.call("hive/shown", {"id": note.params["id"]})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(show_it)
                result = await agent.call_tool("request_human_input", {"prompt": "Which API?"})
            texts = [c.text for c in result.content if c.type == "text"]
            assert texts[0] == EXPIRED_MARKER
            assert "never saw" not in " ".join(texts)
            assert len(texts) == 2  # the marker, then the status line: no unseen sentence
            assert result.structured_content is not None
            assert result.structured_content["unseen"] is False


def test_the_cli_says_an_expiry_was_unseen_and_names_where_it_was_asked(
    sh: Shell, tmp_path: Path
) -> None:
    project = tmp_path / "src" / "app"
    project.mkdir(parents=True)
    out = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "ask", "Ship it?", "--timeout", "0.5", "--wait"],
        env=sh.env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "expired unseen (timeout): no editor showed it to the human" in out.stdout, out
    found = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "ask", "Where?", "--json"],
        env={**sh.env, "HOME": str(tmp_path)},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    record_id = found.stdout.split('"id": "')[1].split('"')[0]
    record = sh.json("poll", record_id)
    # The hub read the asker's working directory itself; it runs with the test's
    # HOME, not the asker's, so the path is whole unless it is under the hub's home.
    home = os.environ.get("HOME", "")
    expected = str(project)
    if home and expected.startswith(home.rstrip("/") + "/"):
        expected = "~" + expected[len(home.rstrip("/")) :]
    assert record["origin"] == expected


async def test_the_trace_survives_a_restart_and_keeps_the_newest(
    short_tmp: Path, autojump_clock: trio.testing.MockClock
) -> None:
    store = SqliteStore(short_tmp / "p.db")
    async with open_registry(store, epoch=EPOCH) as first:
        asked = [
            await first.ask(Ask(agent_id="a", question=f"q{i}", timeout_s=10 + i))
            for i in range(MAX_UNSEEN + 2)
        ]
        shown = await first.ask(Ask(agent_id="a", question="seen", timeout_s=5))
        await first.shown(shown.id)
        await trio.sleep(10 + MAX_UNSEEN + 5)
        assert (await first.poll(shown.id)).status is Status.EXPIRED
        kept = [p.id for p in first.list_unseen()]
        assert kept == [p.id for p in asked[2:]]  # the oldest two went
    await store.aclose()
    store = SqliteStore(short_tmp / "p.db")
    async with open_registry(store, epoch=EPOCH) as second:
        assert [p.id for p in second.list_unseen()] == kept
        await second.clear_unseen(kept[0])
    await store.aclose()
    store = SqliteStore(short_tmp / "p.db")
    async with open_registry(store, epoch=EPOCH) as third:
        assert [p.id for p in third.list_unseen()] == kept[1:]
    await store.aclose()


def test_hive_rpc_list_shows_whole_agent_names(sh: Shell) -> None:
    for agent in ("claude-code-3278e209", "claude-code-3278f00d"):
        assert sh.run("ask", "Which branch?", "--agent", agent).returncode == 0
    listing = sh.run("list").stdout
    # Cut at 16 characters, both read "claude-code-3278" (issue 27, section 8).
    assert "claude-code-3278e209" in listing, listing
    assert "claude-code-3278f00d" in listing, listing


def test_hive_rpc_list_and_status_show_what_expired_unseen(sh: Shell) -> None:
    assert sh.run("list", "--expired-unseen").stdout.strip() == "no question expired unseen"
    ran = sh.run("ask", "Rename the module?", "--agent", "refactorer", "--timeout", "0.5", "--wait")
    assert ran.stdout.startswith("expired unseen"), ran
    listing = sh.run("list", "--expired-unseen").stdout
    assert "EXPIRED" in listing, listing
    assert "refactorer" in listing, listing
    assert "Rename the module?" in listing, listing
    assert "1 expired before an editor showed them" in sh.run("status").stdout
    assert sh.run("list").stdout.strip() == "no pending prompts"
