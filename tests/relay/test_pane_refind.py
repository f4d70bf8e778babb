"""Issue 32, part 3 ("exomonad: panes come back"), against a real hub and a real tmux
server: a ling registered by its pane id (``%N``, what ``hive-rpc spawn`` and an
in-pane registration store), or by a window name, whose pane is moved, or closed
and opened again.

The seed (ADR-001, "Pane Resolution"): "Zellij pane ID may change if pane is
closed/recreated. Mitigation: health check before injection, re-resolve if stale."
Re-resolving keeps the trust rule (docs/security.md, "Typing into terminals"): a
pane that holds the very process the human approved is followed wherever it was
moved (``join-pane``, ``break-pane``, a renamed session); a pane opened in the
place of a closed one runs a new process, which nobody approved, so it is not typed
into until the human approves it through the hub's own consent prompt; a pane found
by its place alone (a shell there), or two candidates, get nothing.

The agents are the scripted ling (tests/relay/scripted_ling.py), which records
every byte typed into it; the hub's consent prompt is answered as an editor answers
it (``approve`` in tests/agora/test_agora.py).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from test_agora import LING, Pane, approve, register, text_of, tmux_server
from test_relay_consent import screen, tmux, wait_event, wait_screen

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import LimitReached
from hive_rpc.core.limits import MAX_LING_REQUESTS_PER_PEER
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


async def window(socket: Path, tmp: Path, name: str, tag: str, command: str = "") -> Pane:
    """A window named ``name`` in session ``work`` running the scripted ling (its
    record ``tag``.jsonl), or ``command``."""
    record = tmp / f"{tag}.jsonl"
    run = command or f"{sys.executable} {LING} {record}"
    pane_id = tmux(
        socket, "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "work:", "-n", name, run
    )
    pane = Pane(pane_id, record, socket)
    if not command:
        await pane.ready()
    return pane


def work_session(socket: Path) -> None:
    """Session ``work`` with a window ``other`` (a sleep) to move panes into."""
    tmux(
        socket,
        "new-session",
        "-d",
        "-s",
        "work",
        "-n",
        "other",
        "-x",
        "200",
        "-y",
        "50",
        "sleep 600",
    )


async def answer(client: HubClient, message: str) -> dict[str, Any]:
    sent = await client.call("agent/answer", {"agent": "main.kid", "message": message})
    delivery: dict[str, Any] = sent["delivery"]
    return delivery


async def kid(client: HubClient) -> dict[str, Any]:
    (found,) = [x for x in await client.call("ling/list", {}) if x["name"] == "main.kid"]
    return found


async def test_a_pane_moved_with_join_pane_and_break_pane_is_still_typed_into(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """Registered by its pane id; the pane is moved into another window (join-pane),
    out to a window of its own (break-pane), and its session renamed: the pane keeps
    its id and its process, so every message reaches it, and the ling's stored place
    follows it (``ling/moved``), for finding it again should it be closed later."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        pane = await window(socket, short_tmp, "w", "kid")
        await register(hub, client, "main.kid", pane)
        assert (await kid(client))["place"]["window"] == "w"
        assert (await answer(client, "one"))["state"] == "delivered"

        tmux(socket, "join-pane", "-d", "-s", pane.id, "-t", "work:other")
        assert (await answer(client, "two"))["state"] == "delivered"
        moved = await wait_event(hub, "ling/moved", "main.kid")
        assert "session work, window other, pane 1" in moved["message"]
        place = (await kid(client))["place"]
        assert (place["session"], place["window"], place["pane_index"]) == ("work", "other", 1)

        tmux(socket, "break-pane", "-d", "-s", pane.id, "-n", "alone")
        tmux(socket, "rename-session", "-t", "work", "play")
        assert (await answer(client, "three"))["state"] == "delivered"
        record = await kid(client)
        assert record["address"] == pane.address  # the same pane id all along
        assert (record["place"]["session"], record["place"]["window"]) == ("play", "alone")
        got = await pane.wait_for(3)
        assert [text_of(raw).rsplit(" ", 1)[-1] for raw in got] == ["one", "two", "three"]


async def test_a_ling_registered_by_window_name_follows_its_moved_pane(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """Registered as ``work:w.0``; the pane is moved into window ``other``, so the
    name names nothing.  The approved process (pid and start time) is found in its
    new pane: typed into, and the pane's id is stored as the ling's address."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        pane = await window(socket, short_tmp, "w", "kid")
        by_name = Pane("work:w.0", pane.record, socket)
        await register(hub, client, "main.kid", by_name)
        assert (await answer(client, "before"))["state"] == "delivered"

        tmux(socket, "join-pane", "-d", "-s", "work:w.0", "-t", "work:other")
        delivery = await answer(client, "after")
        assert delivery["state"] == "delivered", delivery
        assert (await kid(client))["address"] == pane.address
        moved = await wait_event(hub, "ling/moved", "main.kid")
        assert moved["moved_from"] == by_name.address
        assert [text_of(raw).rsplit(" ", 1)[-1] for raw in await pane.wait_for(2)] == [
            "before",
            "after",
        ]


async def test_a_check_keeps_the_moved_panes_new_address(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """``ling list --check`` (``ling/list`` with ``check``) finds the approved agent
    in the pane it was moved to, and keeps that pane as the ling's address and place
    at once, as a delivery does.  Before, it said the pane was alive and kept the old
    address, which named nothing until the next delivery looked again."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        pane = await window(socket, short_tmp, "w", "kid")
        by_name = Pane("work:w.0", pane.record, socket)
        await register(hub, client, "main.kid", by_name)
        tmux(socket, "join-pane", "-d", "-s", "work:w.0", "-t", "work:other")

        (checked,) = [
            x for x in await client.call("ling/list", {"check": True}) if x["name"] == "main.kid"
        ]
        assert checked["alive"], checked
        assert checked["address"] == pane.address, checked
        assert (checked["place"]["window"], checked["place"]["pane_index"]) == ("other", 1)
        kept = await kid(client)  # stored, not only shown
        assert (kept["address"], kept["place"]) == (checked["address"], checked["place"])
        moved = await wait_event(hub, "ling/moved", "main.kid")
        assert moved["moved_from"] == by_name.address


async def test_a_pane_recreated_in_its_place_is_typed_into_only_once_the_human_approves(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """The pane is closed and a new one opened in its place: the same window name,
    the same program.  Its process is not the one approved: the message is not typed,
    the reason says the pane was found again and needs approval, and the hub asks
    the human (one prompt, however many messages come meanwhile).  Approved, it is
    the ling's pane, typed into."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        first = await window(socket, short_tmp, "w", "first")
        await register(hub, client, "main.kid", first)
        assert (await answer(client, "to the first"))["state"] == "delivered"

        tmux(socket, "kill-window", "-t", "work:w")
        second = await window(socket, short_tmp, "w", "second")
        refused = await answer(client, "too soon")
        assert refused["state"] == "failed", refused
        assert refused["cause"] == "gone"
        reason = refused["reason"]
        assert f"tmux pane {first.id} is gone; pane {second.id} was found in its place" in reason
        assert "but that is a new process, not the agent the human approved" in reason
        (prompt,) = await client.call("hive/list", {})
        assert f"the human is asked to approve it (prompt {prompt['id']})" in reason
        assert prompt["question"].startswith(f"the hub (ling main.kid's pane {first.id} is gone")
        assert (
            f"asks to register tmux pane {second.address} as ling main.kid" in (prompt["question"])
        )
        again = await answer(client, "still too soon")
        assert again["state"] == "failed"
        assert f"the human is asked to approve it (prompt {prompt['id']})" in again["reason"]
        assert [p["id"] for p in await client.call("hive/list", {})] == [prompt["id"]]
        assert second.received() == []

        await approve(hub, client, "main.kid", prompt["id"])
        delivered = await answer(client, "to the second")
        assert delivered["state"] == "delivered", delivered
        (raw,) = await second.wait_for(1)
        assert text_of(raw).endswith("to the second")
        assert (await kid(client))["address"] == second.address
        assert len(first.received()) == 1


async def test_a_found_pane_is_asked_about_though_http_clients_hold_their_whole_share(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """The hub's own request about a pane found in a gone one's place takes a share of
    its own.  Before, it was counted as MCP over HTTP's (every client served inside
    the hub is one peer): with that share full, the human was never asked, and the
    sender was told only "the hub could not ask the human"."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        first = await window(socket, short_tmp, "w", "first")
        await register(hub, client, "main.kid", first)
        share = MAX_LING_REQUESTS_PER_PEER
        for i in range(share + 1):  # served inside the hub: no socket peer
            other = await window(socket, short_tmp, f"x{i}", f"x{i}", command="sleep 600")
            params = {"name": f"main.x{i}", "kind": "tmux", "address": other.address}
            if i < share:
                assert (await hub.call("ling/register", params))["state"] == "pending"
            else:
                with pytest.raises(LimitReached, match="asked through MCP over HTTP"):
                    await hub.call("ling/register", params)

        tmux(socket, "kill-window", "-t", "work:w")
        second = await window(socket, short_tmp, "w", "second")
        refused = await answer(client, "too soon")
        assert refused["state"] == "failed", refused
        asked = [
            p for p in await client.call("hive/list", {}) if "ling main.kid's pane" in p["question"]
        ]
        assert len(asked) == 1, refused["reason"]
        assert f"the human is asked to approve it (prompt {asked[0]['id']})" in refused["reason"]
        assert second.received() == []


async def test_a_found_pane_the_human_denied_is_not_asked_about_again_after_a_restart(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    """The human denied the pane found in a gone one's place; the hub restarts, and a
    message for the ling comes: the same pane and process are not asked about again
    (the hub keeps what it asked in its store).  Before, a restart forgot it, and the
    human was asked once more."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        first = await window(socket, short_tmp, "w", "first")
        async with trio.open_nursery() as nursery:
            hub: HubService = await nursery.start(run_hub, hub_config)
            async with await HubClient.connect(hub_config.socket) as client:
                await register(hub, client, "main.kid", first)
                tmux(socket, "kill-window", "-t", "work:w")
                second = await window(socket, short_tmp, "w", "second")
                assert (await answer(client, "too soon"))["state"] == "failed"
                (prompt,) = await client.call("hive/list", {})
                await approve(hub, client, "main.kid", prompt["id"], answer="deny")
                await wait_event(hub, "ling/denied", "main.kid")
            nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, hub_config)
            async with await HubClient.connect(hub_config.socket) as client:
                again = await answer(client, "after the restart")
                assert again["state"] == "failed", again
                assert f"pane {second.id} was found in its place" in again["reason"]
                assert "; to approve it, register the pane again" in again["reason"], again
                assert await client.call("hive/list", {}) == []  # not asked again
            nursery.cancel_scope.cancel()
        assert second.received() == []


async def test_an_agent_restarted_in_its_pane_is_typed_into_once_the_human_approves(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """The agent exits and is started again in the same pane (``respawn-pane``: the
    pane keeps its id): a new process, which nobody approved, so nothing is typed,
    and the hub asks the human about it, once, as it does for a pane found in a gone
    one's place.  Approved, it is the ling's agent.  Before, the sender was told to
    register the pane again, and nobody asked the human."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        first = await window(socket, short_tmp, "w", "first")
        await register(hub, client, "main.kid", first)
        assert (await answer(client, "to the first"))["state"] == "delivered"

        record = short_tmp / "again.jsonl"
        tmux(socket, "respawn-pane", "-k", "-t", first.id, f"{sys.executable} {LING} {record}")
        again = Pane(first.id, record, socket)
        await again.ready()
        refused = await answer(client, "too soon")
        assert refused["state"] == "failed", refused
        assert "has exited; not typed" in refused["reason"], refused
        (prompt,) = await client.call("hive/list", {})
        assert f"the human is asked to approve it (prompt {prompt['id']})" in refused["reason"]
        assert prompt["question"].startswith("the hub (ling main.kid's agent, ")
        assert "exited, and a new python" in prompt["question"]
        still = await answer(client, "still too soon")
        assert f"the human is asked to approve it (prompt {prompt['id']})" in still["reason"]
        assert [p["id"] for p in await client.call("hive/list", {})] == [prompt["id"]]
        assert again.received() == []

        await approve(hub, client, "main.kid", prompt["id"])
        delivered = await answer(client, "to the restarted agent")
        assert delivered["state"] == "delivered", delivered
        (raw,) = await again.wait_for(1)
        assert text_of(raw).endswith("to the restarted agent")


async def test_a_recreated_pane_running_a_shell_is_not_typed_into(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """A window opened in the closed one's place by its name, but a shell runs there:
    found by its name alone, it is not the ling's; nothing typed, nobody asked."""
    planted = short_tmp / "PWNED"
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        first = await window(socket, short_tmp, "w", "first")
        await register(hub, client, "main.kid", first)
        tmux(socket, "kill-window", "-t", "work:w")
        shell = await window(
            socket, short_tmp, "w", "shell", "env PS1='bash$ ' bash --norc --noprofile -i"
        )
        await wait_screen(socket, shell.id, "bash$")
        refused = await answer(client, f"x\ntouch {planted}")
        assert refused["state"] == "failed", refused
        assert f"tmux pane {first.id} is gone" in refused["reason"]
        assert (
            f"runs another program ({shell.id} runs bash), so it is not taken for it"
            in (refused["reason"])
        )
        assert await client.call("hive/list", {}) == []
        # Whatever had been typed would have run before this marker (bash reads in order).
        tmux(socket, "send-keys", "-t", shell.id, "-l", "echo MARK-$((6*7))")
        tmux(socket, "send-keys", "-t", shell.id, "Enter")
        await wait_screen(socket, shell.id, "\nMARK-42")
        assert "touch" not in screen(socket, shell.id)
        assert not planted.exists()


async def test_two_panes_in_its_place_get_nothing(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    """Two windows opened under the closed one's name, each running the same
    program: the hub cannot tell which is the ling's, takes neither, types nothing,
    asks nobody, and says so."""
    with tmux_server(short_tmp) as socket:
        work_session(socket)
        first = await window(socket, short_tmp, "w", "first")
        await register(hub, client, "main.kid", first)
        tmux(socket, "kill-window", "-t", "work:w")
        one = await window(socket, short_tmp, "w", "one")
        two = await window(socket, short_tmp, "w", "two")
        refused = await answer(client, "which one?")
        assert refused["state"] == "failed", refused
        reason = refused["reason"]
        assert f"tmux pane {first.id} is gone and 2 panes are in its place" in reason
        assert one.id in reason
        assert two.id in reason
        assert "the hub cannot tell which is the ling's, so it takes none and types nothing" in (
            reason
        )
        assert await client.call("hive/list", {}) == []
        # The delivery failed before any typing (the result is final): nothing came.
        assert one.received() == []
        assert two.received() == []
