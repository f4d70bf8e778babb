"""The Agora end to end: a real hub, real tmux panes running a scripted ling, the
hub's methods over its socket and the CLI.  (The relay's own units are in
tests/relay/; the rules in tests/core/test_dialogue.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from waiting import logged

from hive_rpc.agora import open_agora
from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import HiveError, InvalidParams
from hive_rpc.hub import HubConfig
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.service import HubService
from hive_rpc.store.sqlite import SqliteStore

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

LING = Path(__file__).parents[1] / "relay" / "scripted_ling.py"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


@dataclass
class Pane:
    id: str
    record: Path
    socket: Path

    @property
    def address(self) -> str:
        return f"{self.id}@{self.socket}"

    def entries(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def received(self) -> list[bytes]:
        return [bytes.fromhex(e["raw"]) for e in self.entries() if "raw" in e]

    async def wait_for(self, count: int) -> list[bytes]:
        """The first ``count`` submissions (bounded wait: tmux gives no event)."""
        with trio.fail_after(20):
            while len(got := self.received()) < count:  # noqa: ASYNC110 (another process's file)
                await trio.sleep(0.05)
        return got

    async def ready(self) -> None:
        with trio.fail_after(20):
            while not any(e.get("ready") for e in self.entries()):  # noqa: ASYNC110
                await trio.sleep(0.05)


@contextmanager
def tmux_server(tmp: Path) -> Iterator[Path]:
    socket = tmp / "tmux.sock"
    subprocess.run(
        ["tmux", "-S", str(socket), "new-session", "-d", "-x", "200", "-y", "50", "sleep 600"],
        check=True,
    )
    try:
        yield socket
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], check=False)


async def open_pane(socket: Path, tmp: Path, name: str) -> Pane:
    record = tmp / f"{name}.jsonl"
    done = await trio.run_process(
        [
            "tmux", "-S", str(socket), "new-window", "-d", "-P", "-F", "#{pane_id}",
            f"{sys.executable} {LING} {record}",
        ],
        capture_stdout=True,
    )  # fmt: skip
    pane = Pane(done.stdout.decode().strip(), record, socket)
    await pane.ready()
    return pane


def text_of(raw: bytes) -> str:
    assert raw.startswith(PASTE_START), raw[:20]  # typed as one bracketed paste
    assert raw.endswith(PASTE_END), raw[-20:]
    return raw[len(PASTE_START) : -len(PASTE_END)].decode()


@asynccontextmanager
async def lings(short_tmp: Path, *names: str) -> AsyncIterator[dict[str, Pane]]:
    with tmux_server(short_tmp) as socket:
        yield {name: await open_pane(socket, short_tmp, name) for name in names}


async def register(hub: HubService, client: HubClient, name: str, pane: Pane, **extra: Any) -> None:
    """Register from outside the pane (this test process), so the hub asks the human;
    approve its prompt as an editor would (docs/security.md, "Typing into terminals")."""
    asked = await client.call(
        "ling/register", {"name": name, "kind": "tmux", "address": pane.address, **extra}
    )
    assert asked["state"] == "pending", asked
    await approve(hub, client, name, asked["prompt_id"])


async def approve(
    hub: HubService, client: HubClient, name: str, prompt_id: str, answer: str = "approve"
) -> None:
    """Answer the hub's consent prompt as the human's editor does: proving first that it
    holds the human's credential (the approver token); once approved, wait for the ling
    to be there (the hub's own task registers it, then says ``ling/approved``)."""
    assert await prove_approver(client.call) is None
    before = hub.activity.last_id
    await client.call("hive/respond", {"id": prompt_id, "answer": answer, "by": "human"})
    if answer != "approve":
        return
    await logged(
        hub.activity,
        lambda e: e.kind == "ling" and (e.event, e.key) == ("ling/approved", name),
        within_s=20,
        after=before,
    )


async def test_a_dialogue_relays_each_turn_into_the_receivers_pane_until_consensus(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "main.a", "main.b") as panes:
        for name, pane in panes.items():
            await register(hub, client, name, pane)
        d = await client.call(
            "agora/create", {"topic": "Which cache?", "participants": ["main.a", "main.b"]}
        )
        first = await client.call(
            "agora/dispatch",
            {
                "dialogue_id": d["id"],
                "from": "main.a",
                "to": "main.b",
                "signal": "propose",
                "message": "Use Redis.\nIt is already deployed.",
            },
        )
        assert (first["outcome"], first["status"]) == ("relay", "active")
        assert first["delivery"]["state"] == "delivered"
        (raw,) = await panes["main.b"].wait_for(1)
        text = text_of(raw)
        assert text.startswith("---\nAGORA DIALOGUE CONTEXT\n")
        assert f"Dialogue ID: {d['id']}\nFrom: main.a\nTopic: " in text
        assert text.endswith("Use Redis.\nIt is already deployed.")

        done = await client.call(
            "agora/dispatch",
            {
                "dialogue_id": d["id"],
                "from": "main.b",
                "to": "main.a",
                "signal": "approve",
                "message": "Agreed.",
            },
        )
        assert (done["outcome"], done["status"]) == ("consensus", "consensus")
        assert done["event"]["event"] == "agora/consensus"
        assert done["delivery"]["state"] == "not-relayed"  # the last turn is not relayed
        status = await client.call("agora/status", {"dialogue_id": d["id"]})
        assert status["turns"][0]["delivery"]["state"] == "delivered"
        events = [e["event"] for e in status["events"]]
        assert events[events.index("agora/consensus") + 1 :] == ["relay/delivered"]
        # The seed's facts of the turn (issue 32): who said what to whom, and how.
        (dispatched,) = [e for e in status["events"] if e["event"] == "agora/turn-dispatched"]
        assert {k: dispatched.get(k) for k in ("dialogue_id", "turn", "from", "to")} == {
            "dialogue_id": d["id"], "turn": 1, "from": "main.a", "to": "main.b"
        }  # fmt: skip
        assert (dispatched["signal"], dispatched["topic"]) == ("propose", "Which cache?")
        assert dispatched["message"] == "Use Redis.\nIt is already deployed."
        # The end is typed to A, who waits for B's answer (issue 27, item 10); B, whose
        # dispatch ended it, reads it in its result.
        assert done["told"]["main.a"]["state"] == "delivered"
        (closing,) = [text_of(raw) for raw in await panes["main.a"].wait_for(1)]
        assert closing.startswith("---\nAGORA DIALOGUE ENDED\n")
        said = f"The dialogue {d['id']} ended in consensus: main.a's propose of turn 1 "
        assert said + '"Use Redis. It is already deployed.", approved by main.b.' in closing
        assert done["report"].startswith(f"the dialogue {d['id']} (Which cache?) ended in")
        assert done["report"].endswith("; the end typed to the others: main.a delivered")
        assert len(await panes["main.b"].wait_for(1)) == 1  # B: only A's turn
        with pytest.raises(HiveError, match="takes no more turns"):
            await client.call(
                "agora/dispatch",
                {
                    "dialogue_id": d["id"],
                    "from": "main.a",
                    "to": "main.b",
                    "signal": "counter",
                    "message": "Wait",
                },
            )


async def test_unavailable_lings_and_strangers_are_reported_to_the_sender(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "main.a", "main.b") as panes:
        await register(hub, client, "main.b", panes["main.b"])
        d = await client.call(
            "agora/create", {"topic": "t", "participants": ["main.a", "main.b", "main.c"]}
        )
        base = {"dialogue_id": d["id"], "from": "main.a", "signal": "propose", "message": "m"}
        unregistered = await client.call("agora/dispatch", {**base, "to": "main.c"})
        assert unregistered["delivery"]["state"] == "not-relayed"
        assert "no ling named 'main.c' is registered" in unregistered["delivery"]["reason"]
        assert unregistered["event"]["event"] == "agora/ling-unavailable"

        await trio.run_process(
            ["tmux", "-S", str(panes["main.b"].socket), "kill-pane", "-t", panes["main.b"].id]
        )
        dead = await client.call("agora/dispatch", {**base, "to": "main.b"})
        assert dead["delivery"]["state"] == "failed"
        assert dead["event"]["event"] == "agora/ling-unavailable"

        with pytest.raises(HiveError, match=r"'main\.z' is not a participant") as refused:
            await client.call("agora/dispatch", {**base, "to": "main.z"})
        assert refused.value.code == -32005
        status = await client.call("agora/status", {"dialogue_id": d["id"]})
        assert "agora/not-a-participant" in [e["event"] for e in status["events"]]


async def test_hostile_text_arrives_inert(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "main.a", "main.b") as panes:
        await register(hub, client, "main.b", panes["main.b"])
        d = await client.call("agora/create", {"topic": "t", "participants": ["main.a", "main.b"]})
        hostile = "a\x1b]0;pwned\x07b\x1b[2Jc\rd\x1b[201~e\x00f\u202eg"
        r = await client.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.a", "to": "main.b", "signal": "propose",
             "message": hostile},
        )  # fmt: skip
        assert r["delivery"]["state"] == "delivered"
        (raw,) = await panes["main.b"].wait_for(1)
        body = raw[len(PASTE_START) : -len(PASTE_END)]
        assert b"\x1b" not in body
        assert b"\x00" not in body
        assert b"\r" not in body
        assert "\u202e".encode() not in body
        assert text_of(raw).endswith("---\n\nabc\ndefg")  # \r became a newline


async def test_children_report_to_their_parent_and_parents_answer(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "parent", "child") as panes:
        await register(hub, client, "main.feature", panes["parent"])
        await register(hub, client, "main.feature.auth", panes["child"], label="auth-module")
        asked = await client.call(
            "event/post",
            {
                "kind": "child-question",
                "from": "main.feature.auth",
                "message": "Define the JWT types locally?",
            },
        )
        assert (asked["to"], asked["delivery"]["state"]) == ("main.feature", "delivered")
        (raw,) = await panes["parent"].wait_for(1)
        assert text_of(raw) == (
            "[QUESTION from auth-module] Define the JWT types locally?\n"
            'Reply with: answer_question agent=main.feature.auth message="..."'
        )
        answered = await client.call(
            "agent/answer", {"agent": "main.feature.auth", "message": "Yes, locally."}
        )
        assert answered["delivery"]["state"] == "delivered"
        (raw,) = await panes["child"].wait_for(1)
        assert text_of(raw) == "[ANSWER from main.feature] Yes, locally."

        with pytest.raises(HiveError, match="has no parent"):
            await client.call("event/post", {"kind": "child-note", "from": "main", "message": "x"})


async def test_cli_registers_lists_and_posts_events(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    where = ["--socket", str(hub_config.socket), "--data-dir", str(hub_config.data_dir)]

    async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        return await trio.run_process(
            [sys.executable, "-m", "hive_rpc", *args, *where, "--no-start"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )

    async with lings(short_tmp, "parent", "child") as panes:
        env_pane = panes["parent"]
        done = await cli("ling", "register", "main.x", "--tmux", env_pane.address)
        assert done.returncode == 0, done.stderr
        # Run outside the pane: a request the human approves (here, as an editor would).
        said, _, prompt_id = done.stdout.decode().strip().rpartition(" (prompt ")
        assert said == (
            f"main.x: tmux {env_pane.address} is pending: not run inside that terminal, "
            "so the human must approve it"
        )
        await approve(hub, client, "main.x", prompt_id.rstrip(")"))
        child = await cli("ling", "register", "main.x.y", "--tmux", panes["child"].address)
        await approve(hub, client, "main.x.y", child.stdout.decode().strip()[-17:-1])
        listed = await cli("ling", "list", "--check")
        lines = listed.stdout.decode().splitlines()
        assert [line.split()[0] for line in lines] == ["main.x", "main.x.y"]
        assert all(line.endswith("alive") for line in lines)
        posted = await cli(
            "event", "child-complete", "--from", "main.x.y", "--pr", "42", "--ci", "passing"
        )
        assert posted.returncode == 0, posted.stderr
        assert posted.stdout.decode().strip() == "child-complete to main.x: delivered"
        (raw,) = await env_pane.wait_for(1)
        assert text_of(raw) == (
            "[CHILD COMPLETE] Agent 'y' on branch main.x.y has completed.\n"
            "PR #42 filed against your branch. CI: passing.\n"
            "Review with: gh pr view 42"
        )
        gone = await cli("ling", "remove", "main.x.y")
        assert gone.stdout.decode().strip() == "main.x.y: removed"
        again = await cli("ling", "remove", "main.x.y")
        assert again.returncode == 3
        bad = await cli("ling", "register", "not a name", "--tmux", "%1")
        assert bad.returncode == 1
        assert b"not a ling name" in bad.stderr


async def test_dialogues_and_lings_survive_a_restart(short_tmp: Path) -> None:
    path = short_tmp / "hub.db"
    async with trio.open_nursery() as nursery:
        store = SqliteStore(path)
        agora = await open_agora(store, lambda: 1.0, DeliveryPeers(), nursery)
        d = await agora.create("t", ["main.a", "main.b"])
        await agora.register("main.b", "tmux", "%9", owner=True)
        await agora.dispatch(d["id"], sender="main.a", to="main.b", signal="propose", message="m")
        await store.aclose()
        store = SqliteStore(path)
        again = await open_agora(store, lambda: 2.0, DeliveryPeers(), nursery)
        status = again.status(d["id"])
        assert status["turns"][0]["message"] == "m"
        assert status["turns"][0]["delivery"]["state"] == "failed"  # no pane %9 here
        assert [x["name"] for x in await again.lings()] == ["main.b"]
        await store.aclose()
        nursery.cancel_scope.cancel()


def test_environment_tmux_address(monkeypatch: pytest.MonkeyPatch) -> None:
    from hive_rpc.cli import _tmux_address

    monkeypatch.setenv("TMUX", "/tmp/tmux-1000/default,4242,0")
    monkeypatch.setenv("TMUX_PANE", "%7")
    assert _tmux_address(None) == "%7@/tmp/tmux-1000/default"
    assert _tmux_address("%3") == "%3@/tmp/tmux-1000/default"
    monkeypatch.delenv("TMUX")
    assert _tmux_address("%3") == "%3"
    assert os.environ["TMUX_PANE"] == "%7"


async def test_a_ling_stored_with_a_bad_address_fails_its_deliveries_cleanly(
    short_tmp: Path,
) -> None:
    """Issue 11, item 5: a Zellij address no parser takes, kept from before addresses
    were checked at registration, is a failed delivery, not an internal error."""
    async with trio.open_nursery() as nursery:
        store = SqliteStore(short_tmp / "hub.db")
        record = {"name": "z", "kind": "zellij", "address": "s:not-a-pane", "registered_at": 1.0}
        await store.put_document("ling", "z", record)
        agora = await open_agora(store, lambda: 2.0, DeliveryPeers(), nursery)
        (checked,) = await agora.lings(check=True)
        assert checked["alive"] is False
        assert "SESSION:PANE" in checked["reason"]
        answered = await agora.answer("z", "hi", None)
        assert answered["delivery"]["state"] == "failed"
        assert "SESSION:PANE" in answered["delivery"]["reason"]
        with pytest.raises(InvalidParams):
            await agora.register("z2", "zellij", "s:not-a-pane", owner=True)
        await store.aclose()
        nursery.cancel_scope.cancel()


async def kill_pane(pane: Pane) -> None:
    await trio.run_process(["tmux", "-S", str(pane.socket), "kill-pane", "-t", pane.id])


async def test_a_killed_pane_is_absent_and_the_two_live_ones_reach_consensus(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """Issue 14 (seed 001: "dead ling = dialogue continues with the others"): with
    three participants and one pane killed, the two live ones approved back and forth
    and the dialogue ended ``timeout``.  Now the dead one is found when it is the only
    one missing from consensus, marked absent, and no longer counted."""
    a, b, c = "main.a", "main.b", "main.c"
    async with lings(short_tmp, a, b, c) as panes:
        for name, pane in panes.items():
            await register(hub, client, name, pane)
        d = await client.call(
            "agora/create",
            {"topic": "Which cache?", "participants": [a, b, c], "max_turns": 8,
             "coordinator": "lead"},
        )  # fmt: skip
        await kill_pane(panes[c])
        last: dict[str, Any] = {}
        for number in range(1, 9):
            sender, to = (a, b) if number % 2 else (b, a)
            last = await client.call(
                "agora/dispatch",
                {"dialogue_id": d["id"], "from": sender, "to": to,
                 "signal": "propose" if number == 1 else "approve", "message": f"turn {number}"},
            )  # fmt: skip
            if last["status"] != "active":
                break
        assert (last["turn"], last["outcome"], last["status"]) == (2, "consensus", "consensus")
        assert last["absent"] == [c]
        status = await client.call("agora/status", {"dialogue_id": d["id"]})
        assert status["absent"] == [c]
        assert status["coordinator"] == "lead"
        (gone,) = [e for e in status["events"] if e["event"] == "agora/participant-absent"]
        assert (gone["ling"], gone["level"], gone["coordinator"]) == (c, "warn", "lead")
        assert "gone" in gone["reason"] or "not alive" in gone["reason"], gone
        assert gone["message"] == f"{c} is absent from {d['id']} (Which cache?): {gone['reason']}"
        entries = [e.record() for e in hub.activity.recent()]
        absent = [e["level"] for e in entries if e["event"] == "agora/participant-absent"]
        assert absent == ["warn"]
        assert [e["level"] for e in entries if e["event"] == "agora/consensus"] == ["info"]


async def test_a_participant_whose_pane_died_is_absent_until_it_speaks_again(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """A turn that finds a participant's pane gone marks it absent (an unregistered
    one too); when it dispatches again it rejoins.  (Two failed deliveries to a live
    terminal do the same: tests/core/test_dialogue.py.)"""
    a, b, c = "main.a", "main.b", "main.c"
    async with lings(short_tmp, a, b, c) as panes:
        for name in (a, b, c):
            await register(hub, client, name, panes[name])
        d = await client.call("agora/create", {"topic": "t", "participants": [a, b, c]})
        await kill_pane(panes[c])
        base = {"dialogue_id": d["id"], "to": c, "message": "m"}
        first = await client.call("agora/dispatch", {**base, "from": a, "signal": "propose"})
        assert (first["delivery"]["state"], first["status"]) == ("failed", "active")
        assert first["absent"] == [c]
        second = await client.call("agora/dispatch", {**base, "from": b, "signal": "counter"})
        assert second["absent"] == [c]
        status = await client.call("agora/status", {"dialogue_id": d["id"]})
        (gone,) = [e for e in status["events"] if e["event"] == "agora/participant-absent"]
        assert (gone["ling"], gone["turn"]) == (c, 1)

        back = await client.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": c, "to": a, "signal": "approve", "message": "back"},
        )
        assert back["absent"] == []
        status = await client.call("agora/status", {"dialogue_id": d["id"]})
        assert status["absent"] == []
        rejoined = [e for e in status["events"] if e["event"] == "agora/participant-rejoined"]
        assert [e["ling"] for e in rejoined] == [c]

        d2 = await client.call("agora/create", {"topic": "t", "participants": [a, "main.x"]})
        unknown = await client.call(
            "agora/dispatch",
            {"dialogue_id": d2["id"], "from": a, "to": "main.x", "signal": "propose",
             "message": "m"},
        )  # fmt: skip
        assert unknown["delivery"]["state"] == "not-relayed"
        assert unknown["absent"] == ["main.x"]  # no terminal to reach: absent at once
