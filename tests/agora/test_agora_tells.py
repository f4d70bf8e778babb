"""Dialogues tell the people in them (issue 27, item 10), end to end: a real hub, real
tmux panes, the relay, an editor subscribed on the socket.

- a ling whose pane is killed while a turn to it is queued behind a dialog: the
  delivery fails, and the sender (in its terminal), the coordinator (its news) and
  the editors watching (``hive/agora``) are told which ling, why, and that the
  dialogue is now ``paused``, not ``active``;
- a turn held on the human's draft: subscribed editors are sent the hold, why, and
  its end;
- consensus: typed into each other participant's terminal, sent to editors, and said
  in words in the result of the turn that made it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from mcp import Client, StdioServerParameters
from mcp_types import LoggingMessageNotificationParams
from test_agora import LING, Pane, kill_pane, lings, open_pane, register, text_of, tmux_server
from waiting import Collected, until

from hive_rpc.agora import open_agora
from hive_rpc.client.async_client import HubClient
from hive_rpc.core.ling import Ling
from hive_rpc.hub import HubConfig
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.target import TargetState
from hive_rpc.runtime.registry import open_registry
from hive_rpc.service import HubService
from hive_rpc.store import MemoryStore

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

A, B, C = "main.a", "main.b", "main.c"

Notes = Collected[dict[str, Any]]


@asynccontextmanager
async def editor(config: HubConfig) -> AsyncIterator[Notes]:
    """An editor subscribed on the hub's socket, as Emacs and ``hive-rpc lsp`` are:
    the params of every ``hive/agora`` notification it is sent, in order."""
    got: Notes = Collected()
    async with await HubClient.connect(config.socket) as conn, trio.open_nursery() as nursery:
        await conn.call("hive/subscribe", {})

        async def read() -> None:
            while True:
                note = await conn.next_notification()
                if note.method == "hive/agora":
                    got.append(dict(note.params or {}))

        nursery.start_soon(read)
        yield got
        nursery.cancel_scope.cancel()


async def until_note(notes: Notes, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first of ``notes`` that is ``wanted``, once it has come."""
    return await notes.first(wanted, within_s=30)


def event(name: str, **facts: Any) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["event"] == name and all(e.get(k) == v for k, v in facts.items())


async def test_a_pane_killed_while_a_turn_waits_behind_its_dialog_tells_everyone(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """The report: the turn was queued behind a dialog, the pane was closed, the
    delivery failed, nobody was told, and the dialogue stayed ``active``."""
    with tmux_server(short_tmp) as socket:
        a = await open_pane(socket, short_tmp, A)
        flag = short_tmp / "dialog"
        flag.touch()  # B shows "Allow this action? (y/n)": the turn is held
        b = await _pane_with_dialog(socket, short_tmp, B, flag)
        await register(hub, client, A, a)
        await register(hub, client, B, b)
        async with editor(hub_config) as seen:
            d = await client.call(
                "agora/create",
                {"topic": "Which cache?", "participants": [A, B], "coordinator": "lead"},
            )
            sent = await client.call(
                "agora/dispatch",
                {"dialogue_id": d["id"], "from": A, "to": B, "signal": "propose",
                 "message": "Use Redis."},
            )  # fmt: skip
            assert sent["delivery"]["state"] == "queued", sent
            assert "should it fail, you are told in your terminal" in sent["report"]
            held = await until_note(seen, event("relay/held", ling=B))
            assert (held["hold"], held["dialogue_id"], held["turn"]) == ("dialog", d["id"], 1)
            assert "a yes/no question" in held["reason"]

            await kill_pane(b)  # the human closes B's terminal

            failed = await until_note(seen, event("relay/failed", ling=B))
            assert (failed["cause"], failed["turn"], failed["was_held"]) == ("gone", 1, True)
            assert f"tmux pane {b.id} is gone" in failed["reason"]
            absent = await until_note(seen, event("agora/participant-absent", ling=B))
            assert absent["status"] == "paused"
            paused = await until_note(seen, event("agora/paused", dialogue_id=d["id"]))
            assert (paused["ling"], paused["sender"], paused["absent"]) == (B, A, [B])
            assert paused["message"].startswith(f"the dialogue {d['id']} (Which cache?) is paused")
            unavailable = await until_note(seen, event("agora/ling-unavailable", ling=B))
            assert unavailable["message"].startswith(
                f"turn 1 of {d['id']} (Which cache?) to {B} was not delivered: tmux pane"
            )

            # The sender, whose result said "queued", is told in its own terminal.
            (notice,) = [text_of(raw) for raw in await a.wait_for(1)]
            assert notice.startswith(f"---\nAGORA DIALOGUE NOTICE\nDialogue ID: {d['id']}\n")
            assert (
                f"Your turn 1 to {B} (propose) was not delivered: tmux pane {b.id} is gone"
                in notice
            )
            assert f"{B} is absent: not counted toward consensus" in notice
            assert f"The dialogue is paused: {B} is absent and {A} alone cannot" in notice
            assert "once its terminal is registered again, send your turn to it again" in notice

        status = await client.call("agora/status", {"dialogue_id": d["id"]})
        assert (status["status"], status["absent"]) == ("paused", [B])
        assert status["situation"].startswith(f"paused: {B} is absent")
        assert status["turns"][0]["delivery"]["cause"] == "gone"
        # The coordinator's news and the sender's say it in words.
        news = await client.call("agora/news", {"coordinators": ["lead"]})
        paused_news = [e for e in news["events"] if e["event"] == "agora/paused"]
        assert [e["message"] for e in paused_news] == [paused["message"]]
        mine = await client.call("agora/news", {"coordinators": [A]})
        assert {e["event"] for e in mine["events"]} >= {"agora/ling-unavailable", "agora/paused"}

        # Sent again while B is still gone: it fails at once, and the dialogue stays paused.
        again = await client.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": A, "to": B, "signal": "propose",
             "message": "Use Redis, please."},
        )  # fmt: skip
        assert (again["delivery"]["state"], again["status"]) == ("failed", "paused")
        assert f"to {B} was not delivered: tmux pane {b.id} is gone" in again["report"]
        assert "the dialogue is paused" in again["report"]

        # B's terminal registered again: A's turn goes on, the dialogue is active.
        b2 = await open_pane(socket, short_tmp, B + "-again")
        await register(hub, client, B, b2)
        back = await client.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": A, "to": B, "signal": "propose",
             "message": "Use Redis, third time."},
        )  # fmt: skip
        assert (back["delivery"]["state"], back["status"]) == ("delivered", "active")
        assert back["report"] == (
            f"turn 3 of {d['id']} to {B}: delivered; the dialogue is active: {B} is absent, "
            "and it waits for them to take a turn"
        )


async def _pane_with_dialog(socket: Path, tmp: Path, name: str, flag: Path) -> Pane:
    """A scripted ling that shows a dialog while ``flag`` exists."""
    record = tmp / f"{name}.jsonl"
    done = await trio.run_process(
        ["tmux", "-S", str(socket), "new-window", "-d", "-P", "-F", "#{pane_id}",
         f"{sys.executable} {LING} {record} {flag}"],
        capture_stdout=True,
    )  # fmt: skip
    pane = Pane(done.stdout.decode().strip(), record, socket)
    await pane.ready()
    return pane


LINE_LING = (
    "import sys\n"
    "record = open(sys.argv[1], 'a', buffering=1)\n"
    "record.write('ready\\n')\n"
    "while True:\n"
    "    record.write(input('ling> ') + '\\n')\n"
)
"""A ling that reads whole lines at a ``ling> `` prompt, echoing what is typed: what
the human types and has not sent shows on the cursor's line (their draft)."""


async def test_a_turn_held_on_the_humans_draft_is_sent_to_subscribed_editors(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    with tmux_server(short_tmp) as socket:
        record = short_tmp / "lines.txt"
        script = short_tmp / "line_ling.py"
        script.write_text(LINE_LING)
        done = await trio.run_process(
            ["tmux", "-S", str(socket), "new-window", "-d", "-P", "-F", "#{pane_id}",
             f"{sys.executable} {script} {record}"],
            capture_stdout=True,
        )  # fmt: skip
        pane = Pane(done.stdout.decode().strip(), record, socket)
        # the ling's first line (another process's file: polled)
        await until(lambda: record.exists() and record.read_text(), "the ling", within_s=20)
        await register(hub, client, B, pane)
        keys = ["tmux", "-S", str(socket), "send-keys", "-t", pane.id]
        await trio.run_process([*keys, "-l", "half a thought"])  # the human's draft

        async def draft_shown() -> bool:
            screen = await trio.run_process(
                ["tmux", "-S", str(socket), "capture-pane", "-p", "-t", pane.id],
                capture_stdout=True,
            )
            return "ling> half a thought" in screen.stdout.decode()

        # The draft is on the pane's screen before the turn comes (tmux's screen, in
        # another process: polled).  Dispatched earlier, on a loaded machine, the
        # relay once found no draft yet and typed the turn (CI of stop 36's check).
        await until(draft_shown, "the draft on the pane's screen", within_s=20)
        async with editor(hub_config) as seen:
            d = await client.call("agora/create", {"topic": "Queue?", "participants": [A, B]})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    client.call,
                    "agora/dispatch",
                    {"dialogue_id": d["id"], "from": A, "to": B, "signal": "propose",
                     "message": "Use a queue."},
                )  # fmt: skip
                held = await until_note(seen, event("relay/held", ling=B))
                assert (held["hold"], held["dialogue_id"], held["turn"]) == ("draft", d["id"], 1)
                assert held["reason"] == (
                    f"held: the human is typing in {B} (unsent text in its input); it is "
                    "typed once they send or clear it"
                )
                assert held["message"].startswith(f"not yet typed into {B}: the human is typing")
                assert (held["status"], held["topic"], held["buffer"]) == ("active", "Queue?", None)
                assert not any(e["event"] == "relay/delivered" for e in seen.items)
                await trio.run_process([*keys, "Enter"])  # the human sends the draft
                typed = await until_note(seen, event("relay/delivered", ling=B))
            assert (typed["turn"], typed["was_held"]) == (1, True)
            assert typed["message"] == f"typed into {B} once no longer held"
        # Typed is not yet read: the ling writes its lines in its own time (another
        # process's file: polled).
        lines = await until(
            lambda: (got := record.read_text().splitlines())[3:] and got,
            "the ling's record of both lines",
            within_s=20,
        )
        assert lines[:2] == ["ready", "half a thought"]  # the human's line, whole and first
        assert "AGORA DIALOGUE CONTEXT" in lines[3]


async def test_consensus_is_typed_to_every_other_participant_and_sent_to_editors(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    async with lings(short_tmp, A, B, C) as panes:
        for name, pane in panes.items():
            await register(hub, client, name, pane)
        async with editor(hub_config) as seen:
            d = await client.call(
                "agora/create",
                {"topic": "Which cache?", "participants": [A, B, C], "coordinator": "lead"},
            )
            base = {"dialogue_id": d["id"]}
            await client.call(
                "agora/dispatch",
                {**base, "from": A, "to": B, "signal": "propose", "message": "Use Redis."},
            )
            await client.call(
                "agora/dispatch",
                {**base, "from": B, "to": C, "signal": "approve", "message": "Fine."},
            )
            done = await client.call(
                "agora/dispatch",
                {**base, "from": C, "to": A, "signal": "defer", "message": "Go ahead."},
            )
            assert (done["outcome"], done["status"]) == ("consensus", "consensus")
            summary = f'{A}\'s propose of turn 1 "Use Redis.", approved by {B}, {C} deferring'
            assert done["report"] == (
                f"the dialogue {d['id']} (Which cache?) ended in consensus: {summary}; "
                f"the end typed to the others: {A} delivered, {B} delivered"
            )
            assert {k: v["state"] for k, v in done["told"].items()} == {
                A: "delivered",
                B: "delivered",
            }
            ended = await until_note(seen, event("agora/consensus", dialogue_id=d["id"]))
            assert (ended["status"], ended["summary"]) == ("consensus", summary)
            assert (
                ended["message"]
                == f"the dialogue {d['id']} (Which cache?) ended in consensus: {summary}"
            )
        closing = f"The dialogue {d['id']} ended in consensus: {summary}."
        a_got = [text_of(raw) for raw in await panes[A].wait_for(1)]  # the end (C's turn made it)
        b_got = [text_of(raw) for raw in await panes[B].wait_for(2)]  # A's turn, then the end
        for got in (a_got, b_got):
            assert got[-1].startswith("---\nAGORA DIALOGUE ENDED\n")
            assert closing in got[-1]
            assert got[-1].endswith("It takes no more turns: there is nothing to answer.")
        assert len(await panes[C].wait_for(1)) == 1  # C made it: B's turn only
        news = await client.call("agora/news", {"coordinators": ["lead"]})
        (told,) = [e for e in news["events"] if e["event"] == "agora/consensus"]
        assert told["message"] == ended["message"]


class _Buffer:
    """An Emacs buffer ling that is gone (its buffer killed)."""

    kind = "emacs-buffer"
    address = "*ling main.b*"

    async def check(self) -> TargetState:
        await trio.lowlevel.checkpoint()
        return TargetState(
            alive=False, reason="no connected Emacs has a buffer named *ling main.b*"
        )

    async def type_text(self, text: str) -> None:
        raise AssertionError("never typed")


async def test_editor_events_name_the_emacs_buffer_of_each_ling(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``buffer`` / ``buffers``: where Emacs shows what happened to a ling."""
    store = MemoryStore()

    def target(ling: Ling) -> Any:
        return _Buffer()

    async with open_registry(store, epoch=1_800_000_000.0) as registry, trio.open_nursery() as n:
        agora = await open_agora(
            store, registry.now, DeliveryPeers(), n, target=target, registry=registry
        )
        seen: Notes = Collected()

        async def follow() -> None:
            async for params in agora.follow():
                seen.append(params)

        n.start_soon(follow)
        await trio.lowlevel.checkpoint()
        await agora.register(B, "emacs-buffer", "*ling main.b*", owner=True)
        d = await agora.create("t", [A, B])
        sent = await agora.dispatch(d["id"], sender=A, to=B, signal="propose", message="m")
        assert (sent["delivery"]["cause"], sent["status"]) == ("gone", "paused")
        await until_note(seen, event("agora/paused"))
        by_event = {e["event"]: e for e in seen.items}
        assert by_event["relay/failed"]["buffer"] == "*ling main.b*"
        assert by_event["agora/paused"]["buffers"] == {B: "*ling main.b*"}
        assert by_event["agora/paused"]["buffer"] == "*ling main.b*"
        n.cancel_scope.cancel()


@asynccontextmanager
async def agent_session(config: HubConfig, name: str, told: Notes) -> AsyncIterator[Client]:
    """The MCP session of agent ``name`` with the agora tools, as ``claude mcp add``
    registers it, on the protocol that may be sent log messages (2025-11-25); the
    ``data`` of each log message it is sent goes to ``told``."""

    async def log(params: LoggingMessageNotificationParams) -> None:
        assert params.logger == "hive-rpc.agora"
        told.append(dict(params.data))

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hive_rpc", "mcp", "--socket", str(config.socket), "--data-dir",
              str(config.data_dir), "--no-start", "--agent", name, "--tools", "agora"],
        env=dict(os.environ),
    )  # fmt: skip
    async with Client(params, mode="legacy", logging_callback=log) as c:
        yield c


async def words(client: Client, tool: str, **args: Any) -> str:
    """What ``tool`` says, as the model reads it."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


async def test_an_mcp_agent_is_told_in_words_of_its_turn_that_failed_and_of_consensus(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """The sender's and coordinator's side over MCP: its dispatch said ``queued``; the
    receiver's pane is then killed, and its session is told, in words; the dialogue
    it ends with its own approval, its tool result says how, in words."""
    told: Notes = Collected()
    with tmux_server(short_tmp) as socket:
        a = await open_pane(socket, short_tmp, A)
        c = await open_pane(socket, short_tmp, C)
        flag = short_tmp / "dialog"
        flag.touch()
        b = await _pane_with_dialog(socket, short_tmp, B, flag)
        for name, pane in ((A, a), (B, b), (C, c)):
            await register(hub, client, name, pane)
        async with agent_session(hub_config, A, told) as me:
            created = await me.call_tool(
                "agora_create", {"topic": "Cache?", "participants": [A, B]}
            )
            d = created.structured_content
            assert d is not None
            said = await words(
                me, "agora_dispatch", dialogue_id=d["id"], to=B, signal="propose",
                message="Use Redis.",
            )  # fmt: skip
            assert said == (
                f"turn 1 of {d['id']} to {B}: queued, held: the terminal shows a yes/no "
                "question; it is typed once that is answered; should it fail, you are told "
                "in your terminal, and agora_status says so"
            )
            await kill_pane(b)
            unavailable = await until_note(told, event("agora/ling-unavailable"))
            assert unavailable["message"].startswith(
                f"turn 1 of {d['id']} (Cache?) to {B} was not delivered: tmux pane {b.id} is gone"
            )
            assert unavailable["message"].endswith(
                f"; {B} is absent; the dialogue is paused: {B} is absent and {A} alone cannot "
                "reach consensus; it goes on when a turn is dispatched to a participant that "
                "is back (its terminal registered again)"
            )
            status = await words(me, "agora_status", dialogue_id=d["id"])
            assert status.startswith(f"{d['id']} is paused after 1 turns")
            assert f"turn 1: delivery to {B}: failed (tmux pane {b.id} is gone" in status

            # C proposes; A, over MCP, approves: its result says so, in words.
            d2 = await client.call(
                "agora/create", {"topic": "Queue?", "participants": [A, C], "coordinator": A}
            )
            await client.call(
                "agora/dispatch",
                {"dialogue_id": d2["id"], "from": C, "to": A, "signal": "propose",
                 "message": "Use a queue.\nRabbitMQ."},
            )  # fmt: skip
            ended = await words(
                me, "agora_dispatch", dialogue_id=d2["id"], to=C, signal="approve",
                message="Agreed.",
            )  # fmt: skip
            assert ended == (
                f"the dialogue {d2['id']} (Queue?) ended in consensus: {C}'s propose of turn 1 "
                f'"Use a queue. RabbitMQ.", approved by {A}; the end typed to the others: '
                f"{C} delivered"
            )
            consensus = await until_note(told, event("agora/consensus", dialogue_id=d2["id"]))
            assert consensus["message"] == ended.partition("; the end typed")[0]
