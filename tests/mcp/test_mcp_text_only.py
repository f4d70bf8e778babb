"""A client that hands its model only the text of a tool result (Gemini CLI never
passes ``structuredContent`` on) loses nothing: every result about an ask says, in
its text, the status, the ask id and the next step, so such a model can tell a
pending question from an expired, declined or withdrawn one and poll the kept one
(issue 29, item 3).  ``request_human_input``'s first text stays the answer or the
marker alone, which clients such as Calva Backseat Driver compare.

Driven by the MCP SDK's own client, these tests read nothing but the text contents
(``said``); what the hub holds is checked through an editor's connection."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import pytest
import trio
from mcp import Client
from test_mcp import Connect, connect, mode, stdio_params

from hive_rpc.client.async_client import HubClient
from hive_rpc.faces.mcp.results import EXPIRED_MARKER
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

__all__ = ["connect", "mode"]  # the fixtures, imported for pytest

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

HOUR = 3600
"""A countdown no test here waits out: the human (an editor) acts first."""

LINE = re.compile(
    r"^status: (?P<status>[^;]+)"
    r"(?:; action: (?P<action>[^;]+))?"
    r"(?:; ask_id: (?P<ask_id>[0-9a-f]+))?"
    r"; next step: (?P<next_step>.+)$"
)
"""The status line, as a model that reads only text would read it."""


async def texts(client: Client, name: str, /, **args: Any) -> list[str]:
    """The text contents of a call's result: all a text-only client shows its model."""
    result = await client.call_tool(name, args)
    return [c.text for c in result.content if c.type == "text"]


def said(got: list[str]) -> dict[str, str | None]:
    """The status, action, ask id and next step, read from the texts alone."""
    found = [m.groupdict() for text in got for line in text.splitlines() if (m := LINE.match(line))]
    assert len(found) == 1, got
    return found[0]


async def next_prompt_id(editor: HubClient) -> str:
    note = await editor.next_notification()
    assert note.method == "hive/prompt", note
    return str(note.params["id"])


async def test_request_human_input_says_answered_declined_dismissed_and_withdrawn(
    hub: HubService, hub_config: HubConfig, mode: str
) -> None:
    params = stdio_params(hub_config, "--agent", "asker", "--human-timeout", str(HOUR))
    with trio.fail_after(60):
        async with (
            Client(params, mode=mode) as agent,  # type: ignore[arg-type]
            await HubClient.connect(hub_config.socket) as editor,
        ):
            await editor.call("hive/subscribe")
            ids: list[str] = []

            async def human(act: str, **params: Any) -> None:
                ids.append(await next_prompt_id(editor))
                await editor.call(act, {"id": ids[-1], **params})

            async def ask(act: str, **params: Any) -> list[str]:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(functools.partial(human, act, **params))
                    got = await texts(agent, "request_human_input", prompt="Which API?")
                assert (await editor.next_notification()).method == "hive/dismiss"
                return got

            answered = await ask("hive/respond", answer="use v2", by="ada")
            assert answered[0] == "use v2"
            assert said(answered) == {
                "status": "responded",
                "action": None,
                "ask_id": ids[-1],
                "next_step": "none, the answer is above",
            }

            declined = await ask("hive/respond", answer=None, action="decline", by="ada")
            assert declined[0] == EXPIRED_MARKER
            state = said(declined)
            assert (state["status"], state["action"], state["ask_id"]) == (
                "responded",
                "decline",
                ids[-1],
            )
            assert "decide without the human" in str(state["next_step"])

            dismissed = await ask("hive/respond", answer=None, action="cancel", by="ada")
            assert dismissed[0] == EXPIRED_MARKER
            state = said(dismissed)
            assert (state["status"], state["action"], state["ask_id"]) == (
                "responded",
                "cancel",
                ids[-1],
            )
            assert "dismissed" in str(state["next_step"])

            withdrawn = await ask("hive/cancel")
            assert withdrawn[0] == EXPIRED_MARKER
            state = said(withdrawn)
            assert (state["status"], state["action"], state["ask_id"]) == (
                "cancelled",
                None,
                ids[-1],
            )
            assert "withdrawn" in str(state["next_step"])


async def test_request_human_input_expired_names_the_ask_to_poll(
    hub: HubService, hub_config: HubConfig
) -> None:
    params = stdio_params(hub_config, "--agent", "asker", "--human-timeout", "0.5")
    with trio.fail_after(60):
        async with Client(params) as agent:
            got = await texts(agent, "request_human_input", prompt="Which API?")
            assert got[0] == EXPIRED_MARKER
            state = said(got)
            assert state["status"] == "expired"
            assert "never saw it" in str(state["next_step"])  # no editor showed it
            assert state["ask_id"] is not None
            assert (await hub.registry.poll(state["ask_id"])).status == "expired"
            polled = said(await texts(agent, "hivemind_poll", ask_id=state["ask_id"]))
            assert (polled["status"], polled["ask_id"]) == ("expired", state["ask_id"])


async def test_request_human_input_cut_short_keeps_the_question_to_poll_from_text(
    hub: HubService, hub_config: HubConfig
) -> None:
    """The client's tool timeout (``MCP_TOOL_TIMEOUT``) ends the wait with the question
    kept: the text alone tells the model it is pending and which ask to poll."""
    params = stdio_params(hub_config, "--agent", "waiter", "--human-timeout", str(HOUR))
    params.env = {**os.environ, "MCP_TOOL_TIMEOUT": "3000"}
    with trio.fail_after(60):
        async with Client(params) as agent, await HubClient.connect(hub_config.socket) as editor:
            got = await texts(agent, "request_human_input", prompt="Which cache?")
            assert got[0] == EXPIRED_MARKER
            state = said(got)
            assert state["status"] == "pending"
            assert "hivemind_poll" in str(state["next_step"])
            ask_id = str(state["ask_id"])
            polled = said(await texts(agent, "hivemind_poll", ask_id=ask_id))
            assert (polled["status"], polled["ask_id"]) == ("pending", ask_id)
            await editor.call("hive/respond", {"id": ask_id, "answer": "redis", "by": "ada"})
            answered = await texts(agent, "hivemind_poll", ask_id=ask_id)
            assert answered[0] == "answer from ada: redis"
            assert said(answered)["status"] == "responded"


async def test_every_ask_tool_says_status_ask_id_and_next_step_in_text(connect: Connect) -> None:
    with trio.fail_after(60):
        async with connect("worker") as worker, connect("boss", tools="coordinator") as boss:
            asked = said(await texts(worker, "hivemind_ask_async", question="Which DB?"))
            assert asked["status"] == "pending"
            assert "hivemind_poll" in str(asked["next_step"])
            ask_id = str(asked["ask_id"])

            polled = said(await texts(worker, "hivemind_poll", ask_id=ask_id))
            assert (polled["status"], polled["ask_id"]) == ("pending", ask_id)
            assert "poll again later" in str(polled["next_step"])
            awaited = said(await texts(worker, "hivemind_await", ask_id=ask_id, timeout_s=0))
            assert (awaited["status"], awaited["ask_id"]) == ("pending", ask_id)

            listing = await texts(boss, "hivemind_list_pending")
            assert listing[0].startswith(f"{ask_id} (worker): Which DB?")
            assert "hivemind_respond" in str(said(listing)["next_step"])
            found = said(await texts(boss, "hivemind_await_ask", timeout_s=0))
            assert (found["status"], found["ask_id"]) == ("pending", ask_id)
            assert "hivemind_respond" in str(found["next_step"])
            nothing = said(await texts(boss, "hivemind_await_ask", timeout_s=0, exclude=[ask_id]))
            assert nothing["status"].startswith("timed out")  # type: ignore[union-attr]
            assert "hivemind_await_ask" in str(nothing["next_step"])

            recorded = await texts(boss, "hivemind_respond", ask_id=ask_id, decision="sqlite")
            assert recorded[0] == "recorded: answer from boss: sqlite"
            assert said(recorded) == {
                "status": "responded",
                "action": None,
                "ask_id": ask_id,
                "next_step": "none, the answer is above",
            }
            assert said(await texts(worker, "hivemind_poll", ask_id=ask_id)) == said(recorded)

            other = str(said(await texts(worker, "hivemind_ask_async", question="Why?"))["ask_id"])
            declined = said(await texts(boss, "hivemind_respond", ask_id=other, action="decline"))
            assert (declined["status"], declined["action"], declined["ask_id"]) == (
                "responded",
                "decline",
                other,
            )
            assert "decide without the human" in str(declined["next_step"])

            third = str(said(await texts(worker, "hivemind_ask_async", question="Now?"))["ask_id"])
            cancelled = said(await texts(worker, "hivemind_cancel", ask_id=third))
            assert (cancelled["status"], cancelled["ask_id"]) == ("cancelled", third)
            assert "withdrawn" in str(cancelled["next_step"])

            blocking = said(await texts(worker, "hivemind_ask", question="Quick?", timeout_s=0.5))
            assert blocking["status"] == "expired"
            assert blocking["ask_id"] is not None
            assert "not a no" in str(blocking["next_step"]) or "never saw it" in str(
                blocking["next_step"]
            )


async def test_errors_in_text_name_the_tools_own_parameters(connect: Connect) -> None:
    with trio.fail_after(60):
        async with connect("worker") as worker, connect("boss", tools="coordinator") as boss:
            (duplicate,) = await texts(
                worker, "hivemind_ask_async", question="q", options=["a", "a"]
            )
            assert duplicate == "options must be distinct"
            ask_id = str(said(await texts(worker, "hivemind_ask_async", question="q"))["ask_id"])
            (refused,) = await texts(
                boss, "hivemind_respond", ask_id=ask_id, decision="x", action="decline"
            )
            assert refused == "a decline carries no decision; leave decision out"
