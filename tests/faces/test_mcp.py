"""The MCP face, driven by the MCP SDK's own client: over stdio against ``hive-rpc mcp``
and over Streamable HTTP against the hub, in both protocol modes the SDK speaks
(legacy 2025-11-25 and 2026-07-28).  Humans are played by editor-socket clients."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
import trio.testing
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_support import initialize_request
from mcp_types import Implementation, ResourceUpdatedNotification

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.faces.mcp.results import EXPIRED_MARKER
from hive_rpc.host.paths import NotLoopback, parse_bind
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

# The SDK's HTTP client leaves httpx2's SSE generators to the garbage collector, which
# trio reports; that is the client library's doing, not the hub's.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

MODES = ["legacy", "2026-07-28"]
TOOLS = {
    "hivemind_ask_async",
    "hivemind_poll",
    "hivemind_await",
    "hivemind_respond",
    "hivemind_cancel",
    "hivemind_list_pending",
    "hivemind_await_ask",
    "hivemind_ask",
    "request_human_input",
    "agora_create",
    "agora_dispatch",
    "agora_status",
    "agora_list",
    "agora_abort",
    "ling_register",
    "ling_list",
    "ling_remove",
    "report_to_parent",
    "answer_question",
    "spawn_subtree",
    "spawn_workers",
    "task_report",
    "approve",
}

Connect = Callable[..., AbstractAsyncContextManager[Client]]


def read_token(service: HubService) -> str:
    return Path(str(service.info.token_file)).read_text().strip()


def mcp_argv(config: HubConfig, *extra: str) -> list[str]:
    """``hive-rpc mcp``'s arguments after the interpreter, on ``config``'s socket
    and data dir."""
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir)]
    return ["-m", "hive_rpc", "mcp", *where, *extra]


def stdio_params(config: HubConfig, *extra: str) -> StdioServerParameters:
    """An MCP stdio server relaying to the test's hub, which it must not start."""
    args = mcp_argv(config, "--no-start", *extra)
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


@asynccontextmanager
async def http_client(
    service: HubService,
    mode: str,
    *,
    agent: str | None = None,
    name: str = "agent",
    tools: str | None = None,
    **kw: Any,
) -> AsyncIterator[Client]:
    token = read_token(service)
    headers = {"Authorization": f"Bearer {token}"}
    if tools:
        headers["X-Hive-Tools"] = tools
    if agent:
        headers["X-Hive-Agent"] = agent
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        Client(
            streamable_http_client(str(service.info.http_url), http_client=http),
            mode=mode,  # type: ignore[arg-type]
            client_info=Implementation(name=name, version="1"),
            **kw,
        ) as client,
    ):
        yield client


@pytest.fixture(
    params=[(t, m) for t in ("stdio", "http") for m in MODES], ids=lambda p: "-".join(p)
)
async def connect(
    request: pytest.FixtureRequest, http_hub: HubService, hub_config: HubConfig
) -> Connect:
    """Opens an MCP client session as a named agent, over the transport and mode under
    test, offering the tool groups ``tools`` (the default group when None)."""
    transport, mode = request.param

    @asynccontextmanager
    async def open_session(
        agent: str, *extra: str, tools: str | None = None, **kw: Any
    ) -> AsyncIterator[Client]:
        if transport == "http":
            async with http_client(http_hub, mode, agent=agent, tools=tools, **kw) as c:
                yield c
        else:
            groups = ["--tools", tools] if tools else []
            params = stdio_params(hub_config, "--agent", agent, *groups, *extra)
            async with Client(params, mode=mode, **kw) as c:  # type: ignore[arg-type]
                yield c

    return open_session


async def tool(client: Client, name: str, /, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.content[0].type == "text"
    return result.structured_content


async def tool_error(client: Client, name: str, /, **args: Any) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


async def answer_next(editor: HubClient, value: Any, *, by: str = "human") -> dict[str, Any]:
    """Play the human: take the next prompt shown on a subscribed editor and answer it."""
    note = await editor.next_notification()
    assert note.method == "hive/prompt"
    result: dict[str, Any] = await editor.call(
        "hive/respond", {"id": note.params["id"], "answer": value, "by": by}
    )
    return result


async def test_tools_are_listed_with_their_fixed_names(connect: Connect) -> None:
    with trio.fail_after(30):
        async with connect("lister", tools="all") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == TOOLS
    assert "deprecated: use hivemind_ask_async + hivemind_poll" in str(
        tools["hivemind_ask"].description
    )
    for t in tools.values():
        # approve answers Claude Code in one text block, nothing structured
        # (test_mcp_approve.py)
        assert (t.output_schema is None) == (t.name == "approve"), t.name


async def test_agora_tools(connect: Connect) -> None:
    """Dialogues, lings and events through MCP (delivery into real terminals is
    tested in tests/agora/test_agora.py; here nothing is registered, so nothing is typed)."""
    with trio.fail_after(30):
        async with connect("main.a", tools="agora,lings,events") as c:
            await c.list_tools()
            d = await tool(c, "agora_create", topic="Cache?", participants=["main.a", "main.b"])
            assert (d["status"], d["participants"]) == ("active", ["main.a", "main.b"])
            # "from" defaults to the agent's own name
            turn = await tool(
                c, "agora_dispatch", dialogue_id=d["id"], to="main.b", signal="propose",
                message="Redis",
            )  # fmt: skip
            assert (turn["outcome"], turn["delivery"]["state"]) == ("relay", "not-relayed")
            assert turn["event"]["event"] == "agora/ling-unavailable"
            done = await c.call_tool(
                "agora_dispatch",
                {"dialogue_id": d["id"], "to": "main.a", "signal": "approve",
                 "message": "ok", "sender": "main.b"},
            )  # fmt: skip
            assert done.structured_content is not None
            assert done.structured_content["outcome"] == "consensus"
            assert "consensus" in done.content[0].text  # type: ignore[union-attr]
            status = await tool(c, "agora_status", dialogue_id=d["id"])
            assert (status["status"], status["turn_count"]) == ("consensus", 2)
            listed = await tool(c, "agora_list", status="consensus")
            assert [x["id"] for x in listed["items"]] == [d["id"]]
            error = await tool_error(
                c, "agora_dispatch", dialogue_id=d["id"], to="main.b", signal="propose",
                message="again",
            )  # fmt: skip
            assert "takes no more turns" in error
            assert status["coordinator"] == "main.a"  # who created it, from its session

            other = await tool(c, "agora_create", topic="Queue?", participants=["main.a", "main.c"])
            aborted = await c.call_tool(
                "agora_abort", {"dialogue_id": other["id"], "reason": "superseded"}
            )
            assert aborted.structured_content is not None
            assert aborted.structured_content["status"] == "aborted"
            assert aborted.structured_content["end_reason"] == "superseded"
            assert "aborted after 0 turns: superseded" in aborted.content[0].text  # type: ignore[union-attr]
            assert "already aborted" in await tool_error(c, "agora_abort", dialogue_id=other["id"])

            ling = await tool(c, "ling_register", name="main.a.kid", kind="tmux", address="%99")
            assert ling["parent"] == "main.a"
            lings = await tool(c, "ling_list", check=True)
            (only,) = lings["items"]
            assert only["alive"] is False
            report = await tool(
                c,
                "report_to_parent",
                kind="child-note",
                message="halfway",
                sender="main.a.kid",
            )
            assert (report["to"], report["delivery"]["state"]) == ("main.a", "not-relayed")
            assert "no ling named" in await tool_error(
                c, "answer_question", agent="main.zz", message="yes"
            )
            removed = await tool(c, "ling_remove", name="main.a.kid")
            assert removed["removed"] is True


async def test_task_report_reaches_the_activity_stream(
    connect: Connect, http_hub: HubService
) -> None:
    with trio.fail_after(30):
        async with connect("looper", tools="tasks") as c:
            await c.list_tools()
            r = await tool(
                c, "task_report", task_id="build-412", outcome="success", result={"tests": 42}
            )
            assert (r["kind"], r["task_id"], r["outcome"]) == ("task", "build-412", "success")
            assert r["agent_id"] == "looper"
            assert "task_id must be a non-empty string" in await tool_error(
                c, "task_report", task_id=" ", outcome="failed"
            )
    (entry,) = http_hub.activity.task("build-412")
    assert (entry.data["result"], entry.data["completed_at"] is not None) == ({"tests": 42}, True)


async def test_ask_async_answered_in_an_editor_then_polled(
    connect: Connect, hub_config: HubConfig
) -> None:
    with trio.fail_after(30):
        async with (
            connect("builder") as agent,
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            asked = await tool(
                agent,
                "hivemind_ask_async",
                question="Deploy?",
                options=["yes", "no"],
                urgent=True,
                task_id="t-42",
            )
            assert asked["status"] == "pending"
            shown = await editor.next_notification()
            assert shown.params["id"] == asked["ask_id"]
            assert (shown.params["agent_id"], shown.params["choices"]) == ("builder", ["yes", "no"])
            assert (shown.params["urgent"], shown.params["task_id"]) == (True, "t-42")
            assert (await tool(agent, "hivemind_poll", ask_id=asked["ask_id"]))["status"] == (
                "pending"
            )
            await editor.call("hive/respond", {"id": asked["ask_id"], "answer": "yes", "by": "ada"})
            polled = await tool(agent, "hivemind_poll", ask_id=asked["ask_id"])
            assert polled["status"] == "responded"
            assert (polled["decision"], polled["by"], polled["action"]) == ("yes", "ada", "accept")
            assert isinstance(polled["responded_at"], float)
            assert polled["expired"] is False
            text = (await agent.call_tool("hivemind_poll", {"ask_id": asked["ask_id"]})).content[0]
            assert "answer from ada: yes" in text.text  # type: ignore[union-attr]


async def test_await_returns_when_the_answer_comes(connect: Connect, hub_config: HubConfig) -> None:
    with trio.fail_after(30):
        async with (
            connect("waiter") as agent,
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            asked = await tool(agent, "hivemind_ask_async", question="Name?")
            got: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:

                async def wait() -> None:
                    got.update(
                        await tool(agent, "hivemind_await", ask_id=asked["ask_id"], timeout_s=600)
                    )

                nursery.start_soon(wait)
                await answer_next(editor, "Ada")
            assert (got["status"], got["decision"]) == ("responded", "Ada")
            short = await tool(agent, "hivemind_ask_async", question="unanswered")
            timed = await tool(agent, "hivemind_await", ask_id=short["ask_id"], timeout_s=0.2)
            assert timed["status"] == "pending"


async def test_schema_answers_are_validated_and_structured(
    connect: Connect, hub_config: HubConfig
) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}},
        "required": ["n"],
    }
    with trio.fail_after(30):
        async with connect("counter") as agent, connect("boss", tools="coordinator") as boss:
            asked = await tool(agent, "hivemind_ask_async", question="How many?", schema=schema)
            refused = await tool_error(
                boss, "hivemind_respond", ask_id=asked["ask_id"], decision={"n": 0}
            )
            assert "'n' must be at least 1" in refused
            done = await tool(boss, "hivemind_respond", ask_id=asked["ask_id"], decision={"n": 3})
            assert (done["decision"], done["by"]) == ({"n": 3}, "boss")
            declined = await tool(agent, "hivemind_ask_async", question="Another?")
            gone = await tool(boss, "hivemind_respond", ask_id=declined["ask_id"], action="decline")
            assert (gone["action"], gone["decision"]) == ("decline", None)


async def test_coordinator_awaits_asks_lists_and_answers(connect: Connect) -> None:
    with trio.fail_after(30):
        async with (
            connect("worker") as worker,
            connect("coordinator", tools="coordinator") as boss,
        ):
            found: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:

                async def coordinate() -> None:
                    found.update(await tool(boss, "hivemind_await_ask", timeout_s=60))

                nursery.start_soon(coordinate)
                asked = await tool(
                    worker, "hivemind_ask_async", question="Which DB?", options=["sqlite", "nats"]
                )
            assert found["timed_out"] is False
            assert found["ask"]["ask_id"] == asked["ask_id"]
            assert (found["ask"]["agent_id"], found["ask"]["options"]) == (
                "worker",
                ["sqlite", "nats"],
            )
            listing = await tool(boss, "hivemind_list_pending")
            assert [p["ask_id"] for p in listing["prompts"]] == [asked["ask_id"]]
            assert listing["count"] == 1
            assert listing["next_cursor"] is None
            later = await tool(worker, "hivemind_ask_async", question="Which cache?")
            page = await tool(boss, "hivemind_list_pending", limit=1)
            assert [p["ask_id"] for p in page["prompts"]] == [asked["ask_id"]]
            rest = await tool(boss, "hivemind_list_pending", limit=1, cursor=page["next_cursor"])
            assert [p["ask_id"] for p in rest["prompts"]] == [later["ask_id"]]
            assert rest["next_cursor"] is None
            await tool(worker, "hivemind_cancel", ask_id=later["ask_id"])
            await tool(boss, "hivemind_respond", ask_id=asked["ask_id"], decision="sqlite")
            polled = await tool(worker, "hivemind_poll", ask_id=asked["ask_id"])
            assert (polled["decision"], polled["by"]) == ("sqlite", "coordinator")
            none = await tool(boss, "hivemind_await_ask", timeout_s=0.1, exclude=[asked["ask_id"]])
            assert none == {"timed_out": True, "ask": None}


async def test_two_agents_are_kept_apart(connect: Connect) -> None:
    with trio.fail_after(30):
        async with connect("alice") as alice, connect("bob") as bob:
            asked = await tool(alice, "hivemind_ask_async", question="Alice's secret?")
            for name in ("hivemind_poll", "hivemind_cancel"):
                text = await tool_error(bob, name, ask_id=asked["ask_id"])
                assert f"no prompt '{asked['ask_id']}' asked by agent 'bob'" in text
            assert "no prompt" in await tool_error(
                bob, "hivemind_await", ask_id=asked["ask_id"], timeout_s=1
            )
            with pytest.raises(Exception, match="no prompt"):
                await bob.read_resource(f"hive://asks/{asked['ask_id']}")
            record = await alice.read_resource(f"hive://asks/{asked['ask_id']}")
            assert '"question": "Alice\'s secret?"' in record.contents[0].text  # type: ignore[union-attr]
            cancelled = await tool(alice, "hivemind_cancel", ask_id=asked["ask_id"])
            assert (cancelled["status"], cancelled["by"]) == ("cancelled", "alice")


async def test_bad_arguments_say_what_to_change(connect: Connect) -> None:
    with trio.fail_after(30):
        async with connect("clumsy", tools="ask,coordinator") as c:
            assert "options must not be empty" in await tool_error(
                c, "hivemind_ask_async", question="q", options=[]
            )
            assert "question must be a non-empty string" in await tool_error(
                c, "hivemind_ask_async", question="  "
            )
            assert "timeout_s must be a positive number" in await tool_error(
                c, "hivemind_ask_async", question="q", timeout_s=-5
            )
            assert "schema.type must be" in await tool_error(
                c, "hivemind_ask_async", question="q", schema={"type": "array"}
            )
            assert "timeout_s" in await tool_error(
                c, "hivemind_await", ask_id="x", timeout_s="soon"
            )
            assert "ask_id" in await tool_error(c, "hivemind_poll")
            asked = await tool(c, "hivemind_ask_async", question="q", options=["a", "b"])
            assert "not one of the options: a, b" in await tool_error(
                c, "hivemind_respond", ask_id=asked["ask_id"], decision="c"
            )


async def test_resource_subscription_tells_when_the_answer_lands(
    connect: Connect, hub_config: HubConfig, request: pytest.FixtureRequest
) -> None:
    mode = request.node.callspec.params["connect"][1]
    updates: list[str] = []
    got = trio.Event()

    async def on_message(msg: Any) -> None:
        if isinstance(msg, ResourceUpdatedNotification):
            updates.append(str(msg.params.uri))
            got.set()

    with trio.fail_after(30):
        async with (
            connect("subscriber", message_handler=on_message) as agent,
            await HubClient.connect(hub_config.socket) as editor,
        ):
            asked = await tool(agent, "hivemind_ask_async", question="Tell me when")
            uri = f"hive://asks/{asked['ask_id']}"
            if mode == "legacy":
                with pytest.warns(MCPDeprecationWarning, match="resources/subscribe is removed"):
                    await agent.subscribe_resource(uri)
                await editor.call("hive/respond", {"id": asked["ask_id"], "answer": "now"})
                await got.wait()
                assert updates == [uri]
            else:
                async with agent.listen(resource_subscriptions=[uri]) as events:
                    await editor.call("hive/respond", {"id": asked["ask_id"], "answer": "now"})
                    async for event in events:
                        assert event == ResourceUpdated(uri=uri)
                        break
            assert (await tool(agent, "hivemind_poll", ask_id=asked["ask_id"]))["decision"] == "now"


# --- blocking tools: progress, cancellation, the smart timeout (stdio, both modes) ------


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


CLIENT_IDLE_S = 3.0
"""How long the agent's client waits without news before it gives up (agents' clients
have such a timeout): fifteen beats of progress, so a loaded machine that delays a beat
or two does not make the client give up; the call must outlast it."""
BEAT_S = 0.2
"""How often ``hive-rpc mcp`` sends progress here (``--progress-every``)."""


async def test_blocking_ask_outlives_an_idle_timeout_thanks_to_progress(
    hub: HubService, hub_config: HubConfig, mode: str
) -> None:
    """The client gives up after CLIENT_IDLE_S without news (as agents' clients do);
    the human answers only once the call has lasted longer than that, on the client's
    own clock, and the beats of progress kept the call alive until the answer came."""
    progress: list[float] = []
    outlived = trio.Event()
    params = stdio_params(hub_config, "--agent", "patient", "--progress-every", str(BEAT_S))
    with trio.fail_after(60):
        async with (
            Client(params, mode=mode) as agent,  # type: ignore[arg-type]
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            # As agents' clients do, list the tools first.  (The SDK's 2026-07-28 client
            # otherwise fetches them lazily during the first call and, seen with 2.3.0,
            # stops delivering that call's progress after a couple of notifications.)
            await agent.list_tools()

            async def slow_human() -> None:
                note = await editor.next_notification()
                await outlived.wait()
                await editor.call("hive/respond", {"id": note.params["id"], "answer": "go"})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow_human)
                began = trio.current_time()
                with trio.CancelScope(deadline=began + CLIENT_IDLE_S) as idle:

                    async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                        progress.append(p)
                        idle.deadline = trio.current_time() + CLIENT_IDLE_S
                        if trio.current_time() - began > CLIENT_IDLE_S:
                            outlived.set()

                    result = await agent.call_tool(
                        "hivemind_ask",
                        {"question": "Proceed?", "timeout_s": 60},
                        progress_callback=on_progress,
                    )
                assert not idle.cancelled_caught, progress
                assert outlived.is_set()  # answered only past the client's idle timeout
    assert result.structured_content is not None
    assert (result.structured_content["status"], result.structured_content["decision"]) == (
        "responded",
        "go",
    )
    assert len(progress) >= 2
    assert progress == sorted(progress)


async def test_cancelling_a_blocking_ask_withdraws_it_from_every_editor(
    hub: HubService, hub_config: HubConfig, mode: str
) -> None:
    params = stdio_params(hub_config, "--agent", "impatient")
    with trio.fail_after(30):
        async with (
            Client(params, mode=mode) as agent,  # type: ignore[arg-type]
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            with trio.CancelScope() as call:

                async def give_up_once_shown() -> None:
                    shown = await editor.next_notification()
                    assert shown.method == "hive/prompt"
                    call.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(give_up_once_shown)
                    await agent.call_tool("hivemind_ask", {"question": "Wait for me?"})
            dismissed = await editor.next_notification()
            assert dismissed.method == "hive/dismiss"
            assert (dismissed.params["status"], dismissed.params["by"]) == (
                "cancelled",
                "impatient",
            )
            assert hub.registry.list_pending() == []


async def test_request_human_input(hub: HubService, hub_config: HubConfig, mode: str) -> None:
    params = stdio_params(hub_config, "--agent", "asker", "--human-timeout", "2")
    with trio.fail_after(30):
        async with (
            Client(params, mode=mode) as agent,  # type: ignore[arg-type]
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")

            async def ask(prompt: str) -> dict[str, Any]:
                return await tool(agent, "request_human_input", prompt=prompt)

            # nobody answers: the 2 s countdown runs out
            timed_out = await ask("anyone?")
            assert timed_out["answer"] == EXPIRED_MARKER
            assert (timed_out["timed_out"], timed_out["status"]) == (True, "expired")
            await editor.next_notification()  # its hive/prompt
            assert (await editor.next_notification()).method == "hive/dismiss"

            # The human types at once, and answers only once the hub's clock has passed
            # the 2 s countdown: typing stopped it.  The proof that the clock went past
            # is a question the editor asks after the typing with the same countdown:
            # its deadline comes after the first one's old deadline, and it expires.
            async def typing_human(answer: str, *, past_the_countdown: bool) -> None:
                shown = await editor.next_notification()
                assert shown.method == "hive/prompt"
                first = shown.params["id"]
                await editor.notify("hive/typing", {"id": first})
                if past_the_countdown:
                    typed = await editor.next_notification()  # the hub took the typing
                    assert (typed.method, typed.params["id"]) == ("hive/update", first)
                    clock = await editor.call("hive/ask", {"question": "tick", "timeout_s": 2})
                    done = await editor.call("hive/await", {"id": clock["id"], "timeout_s": 20})
                    assert done["status"] == "expired", done
                    assert (await editor.call("hive/poll", {"id": first}))["status"] == "pending"
                    methods = [(await editor.next_notification()).method for _ in range(2)]
                    assert methods == ["hive/prompt", "hive/dismiss"]  # the clock question's
                await editor.call("hive/respond", {"id": first, "answer": answer})

            got: dict[str, Any] = {}
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(typing_human, "take the left branch", past_the_countdown=True)
                )
                got.update(await ask("which branch?"))
            assert (got["answer"], got["timed_out"]) == ("take the left branch", False)
            assert (await editor.next_notification()).method == "hive/dismiss"

            # a blank answer counts as no answer
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(typing_human, "   ", past_the_countdown=False))
                got = await ask("say something")
            assert (got["answer"], got["timed_out"], got["status"]) == (
                EXPIRED_MARKER,
                True,
                "responded",
            )


async def test_request_human_input_offers_options_as_the_vs_code_tool_does(
    hub: HubService, hub_config: HubConfig, mode: str
) -> None:
    """Issue 32: the VS Code extension's request_human_input takes ``options`` (a pick
    list), the MCP tool of the same name took none, so a prompt written for one did
    not work with the other.  The editor is shown the options as the ask's choices,
    an answer outside them is refused, and duplicates are refused in the tool's
    words."""
    params = stdio_params(hub_config, "--agent", "picker")
    with trio.fail_after(30):
        async with (
            Client(params, mode=mode) as agent,  # type: ignore[arg-type]
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            got: dict[str, Any] = {}

            async def ask() -> None:
                got.update(
                    await tool(
                        agent, "request_human_input", prompt="Deploy?", options=["now", "later"]
                    )
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                shown = await editor.next_notification()
                assert shown.method == "hive/prompt"
                assert shown.params["choices"] == ["now", "later"]
                with pytest.raises(HiveError, match="not one of the choices: now, later"):
                    await editor.call("hive/respond", {"id": shown.params["id"], "answer": "x"})
                await editor.call("hive/respond", {"id": shown.params["id"], "answer": "later"})
            assert (got["answer"], got["timed_out"]) == ("later", False)
            twice = await agent.call_tool(
                "request_human_input", {"prompt": "Deploy?", "options": ["now", "now"]}
            )
            assert twice.is_error
            assert twice.content[0].text == "options must be distinct"  # type: ignore[union-attr]


async def test_stdio_server_survives_a_hub_crash(short_tmp: Path, mode: str) -> None:
    """The agent's MCP process started the hub itself; the hub is killed; the next
    call starts a new one and finds the prompt still there."""
    config = HubConfig(socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data")
    args = mcp_argv(config, "--agent", "survivor")
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    lock = config.socket.with_name("hub.sock.lock")
    try:
        with trio.fail_after(60):
            async with Client(params, mode=mode) as agent:  # type: ignore[arg-type]
                asked = await tool(agent, "hivemind_ask_async", question="still there?")
                first_hub = int(lock.read_text())
                os.kill(first_hub, signal.SIGKILL)
                polled = await tool(agent, "hivemind_poll", ask_id=asked["ask_id"])
                assert polled["status"] == "pending"
                assert int(lock.read_text()) != first_hub
    finally:
        with contextlib.suppress(ValueError, ProcessLookupError, FileNotFoundError):
            os.kill(int(lock.read_text()), signal.SIGTERM)


# --- the HTTP endpoint's defences ----------------------------------------------------


async def raw_post(url: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(
            url,
            json=initialize_request("raw", "1"),
            headers={"Accept": "application/json, text/event-stream", **headers},
        )


async def test_http_refuses_a_wrong_token_and_a_foreign_origin(http_hub: HubService) -> None:
    url = str(http_hub.info.http_url)
    good = {"Authorization": f"Bearer {read_token(http_hub)}"}
    with trio.fail_after(30):
        assert (await raw_post(url, {})).status_code == 401
        wrong = await raw_post(url, {"Authorization": "Bearer " + "x" * 43})
        assert wrong.status_code == 401
        assert "bearer token" in wrong.text
        foreign = await raw_post(url, {**good, "Origin": "http://evil.example"})
        assert foreign.status_code == 403
        assert "evil.example" in foreign.text
        port = url.split(":")[2].split("/")[0]
        assert (
            await raw_post(url, {**good, "Origin": f"http://127.0.0.1:{port}"})
        ).status_code == 200
        assert (await raw_post(url, {**good, "Host": "evil.example"})).status_code == 421
        assert (await raw_post(url, good)).status_code == 200


async def test_http_token_file_and_status(http_hub: HubService, hub_config: HubConfig) -> None:
    token_file = Path(str(http_hub.info.token_file))
    assert token_file.parent == hub_config.data_dir
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    assert len(read_token(http_hub)) >= 32
    async with await HubClient.connect(hub_config.socket) as c:
        status = await c.call("hive/status")
    assert status["http_url"].startswith("http://127.0.0.1:")
    assert status["http_url"].endswith("/mcp")
    assert status["token_file"] == str(token_file)


async def test_http_agent_names_come_from_header_or_query(http_hub: HubService) -> None:
    with trio.fail_after(30):
        async with http_client(http_hub, "legacy", agent="named-by-header") as c:
            await tool(c, "hivemind_ask_async", question="who am I?")
        token = read_token(http_hub)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(
                streamable_http_client(
                    f"{http_hub.info.http_url}?agent=by-query", http_client=http
                ),
                mode="2026-07-28",
            ) as c,
        ):
            await tool(c, "hivemind_ask_async", question="and me?")
    assert {p.agent_id for p in http_hub.registry.list_pending()} == {
        "named-by-header",
        "by-query",
    }


@pytest.mark.parametrize(
    "bind", ["0.0.0.0:8765", "10.0.0.1:80", "example.com:80", "8765", "[::]:1"]
)
def test_http_binds_loopback_only(bind: str) -> None:
    with pytest.raises(NotLoopback):
        parse_bind(bind)


@pytest.mark.parametrize(
    ("bind", "parsed"),
    [
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:8765", ("::1", 8765)),
        ("localhost:1", ("localhost", 1)),
        ("127.1.2.3:9", ("127.1.2.3", 9)),
    ],
)
def test_loopback_binds_are_accepted(bind: str, parsed: tuple[str, int]) -> None:
    assert parse_bind(bind) == parsed


async def test_http_on_another_loopback_address(
    hub_config: HubConfig, nursery: trio.Nursery
) -> None:
    hub_config.http = "127.0.0.2:0"
    service: HubService = await nursery.start(run_hub, hub_config)
    assert str(service.info.http_url).startswith("http://127.0.0.2:")
    with trio.fail_after(30):
        reply = await raw_post(
            str(service.info.http_url), {"Authorization": f"Bearer {read_token(service)}"}
        )
    assert reply.status_code == 200


async def test_tool_texts_speak_the_tools_language(http_hub: HubService) -> None:
    with trio.fail_after(30):
        async with http_client(http_hub, "legacy", agent="boss", tools="all") as boss:
            asked = await tool(
                boss,
                "hivemind_ask_async",
                question="q",
                schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            )
            refused = await tool_error(
                boss,
                "hivemind_respond",
                ask_id=asked["ask_id"],
                decision={"n": 1},
                action="decline",
            )
            assert "leave decision out" in refused
            done = await boss.call_tool(
                "hivemind_respond", {"ask_id": asked["ask_id"], "decision": {"n": 1}}
            )
            assert 'answer from boss: {"n": 1}' in done.content[0].text  # type: ignore[union-attr]
            other = await tool(boss, "hivemind_ask_async", question="q2")
            declined = await boss.call_tool(
                "hivemind_respond", {"ask_id": other["ask_id"], "action": "decline"}
            )
            assert "boss chose to decline" in declined.content[0].text  # type: ignore[union-attr]


async def test_the_sessions_resource_shows_a_coordinator_every_session(connect: Connect) -> None:
    """``hive://sessions/all`` (issue 30): a coordinator reads every agent's session
    and what it waits on; an agent reads only its own, not another's project or
    prompts, even by name."""
    with trio.fail_after(30):
        async with (
            connect("alice") as alice,
            connect("bob") as bob,
            connect("boss", tools="ask,coordinator") as boss,
        ):
            asked = await tool(alice, "hivemind_ask_async", question="Alice's secret?")
            await tool(bob, "hivemind_ask_async", question="Bob's?")
            every = json.loads(
                (await boss.read_resource("hive://sessions/all")).contents[0].text  # type: ignore[union-attr]
            )
            assert {(s["agent_id"], s["state"], s["questions"]) for s in every} == {
                ("alice", "waiting", 1),
                ("bob", "waiting", 1),
            }
            own = json.loads(
                (await alice.read_resource("hive://sessions/all")).contents[0].text  # type: ignore[union-attr]
            )
            assert [(s["agent_id"], s["prompt_ids"]) for s in own] == [("alice", [asked["ask_id"]])]
            bobs = await alice.read_resource("hive://sessions/bob")
            assert json.loads(bobs.contents[0].text) == []  # type: ignore[union-attr]
            one = await boss.read_resource("hive://sessions/bob")
            assert [s["agent_id"] for s in json.loads(one.contents[0].text)] == ["bob"]  # type: ignore[union-attr]
