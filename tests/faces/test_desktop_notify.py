"""Urgent prompts as desktop notifications, against real processes: a private
``dbus-daemon``, ``Xvfb`` and ``dunst`` (a real notification daemon).  The test reads
what the hub sent by monitoring the bus (``BecomeMonitor``), reads what dunst shows
through its context menu and its history, and answers the way a human does: dunst's
context menu runs the configured ``dmenu`` program, here a script that hands the menu
to the test through a FIFO and returns the line the test picks; dunst itself then
emits ``ActionInvoked``."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from jeepney import DBusAddress, HeaderFields, MatchRule, MessageType, new_method_call
from jeepney.bus_messages import Monitoring, message_bus
from jeepney.io.trio import open_dbus_router
from waiting import until

from hive_rpc.client.async_client import HubClient
from hive_rpc.faces.desktop_notify import run_desktop_notifications
from hive_rpc.service import HubService

BUS_NAME = "org.freedesktop.Notifications"
NEEDED = ["dbus-daemon", "Xvfb", "dunst", "dunstctl", "dbus-send"]

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <listen>tcp:host=127.0.0.1,bind=127.0.0.1,port=0</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
# dunst's context menu: the menu goes to the test, the test's pick comes back.
DMENU = """#!/bin/sh
cat > {dir}/menu.fifo
cat {dir}/pick.fifo
"""


def _missing() -> list[str]:
    return [tool for tool in NEEDED if shutil.which(tool) is None]


needs_desktop = pytest.mark.skipif(
    bool(_missing()), reason=f"needs {', '.join(_missing())} (installed by scripts/test-all.sh)"
)


@dataclass
class Desktop:
    dir: Path
    address: str
    tcp_address: str
    env: dict[str, str]
    bus: trio.Process

    async def dunstctl(self, *args: str) -> str:
        result = await trio.run_process(["dunstctl", *args], env=self.env, capture_stdout=True)
        return result.stdout.decode()

    async def history(self) -> list[dict[str, Any]]:
        data = json.loads(await self.dunstctl("history"))["data"][0]
        return [{k: v["data"] for k, v in entry.items()} for entry in data]

    async def displayed(self) -> int:
        return int(await self.dunstctl("count", "displayed"))

    async def context_menu(self, pick: str | None) -> list[str]:
        """Open dunst's context menu; return its lines after choosing the one that
        contains ``pick`` (or none)."""
        menu: list[str] = []

        def read_menu() -> None:
            menu.extend((self.dir / "menu.fifo").read_text().splitlines())

        def write_pick() -> None:
            chosen = [line for line in menu if pick is not None and pick in line]
            (self.dir / "pick.fifo").write_text(chosen[0] + "\n" if chosen else "")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.dunstctl, "context")
            await trio.to_thread.run_sync(read_menu, abandon_on_cancel=True)
            await trio.to_thread.run_sync(write_pick, abandon_on_cancel=True)
        return menu


async def _wait_for_owner(address: str, name: str) -> None:
    rule = MatchRule(type="signal", interface="org.freedesktop.DBus", member="NameOwnerChanged")
    rule.add_arg_condition(0, name)
    async with open_dbus_router(address) as router:
        await router.send_and_get_reply(message_bus.AddMatch(rule))
        send, changes = trio.open_memory_channel[Any](8)
        router.filter(rule, channel=send)
        reply = await router.send_and_get_reply(message_bus.NameHasOwner(name))
        if reply.body[0]:
            return
        async for change in changes:
            if change.body[2]:
                return


async def _first_line(stream: trio.abc.ReceiveStream) -> str:
    data = b""
    while b"\n" not in data:
        chunk = await stream.receive_some()
        assert chunk, "process ended before printing a line"
        data += chunk
    return data.split(b"\n", 1)[0].decode()


@pytest.fixture
async def desktop(short_tmp: Path) -> AsyncIterator[Desktop]:
    """A private session bus (unix and tcp), an X server, and dunst on both."""
    if _missing():
        pytest.skip(f"needs {', '.join(_missing())}")
    (short_tmp / "bus.conf").write_text(BUS_CONFIG.format(dir=short_tmp))
    dmenu = short_tmp / "dmenu.sh"
    dmenu.write_text(DMENU.format(dir=short_tmp))
    dmenu.chmod(0o755)
    (short_tmp / "dunstrc").write_text(f"[global]\n    dmenu = {dmenu}\n")
    for fifo in ("menu.fifo", "pick.fifo"):
        os.mkfifo(short_tmp / fifo)
    base = {"PATH": os.environ["PATH"], "HOME": str(short_tmp)}
    procs: list[trio.Process] = []
    try:
        with trio.fail_after(20):
            bus = await trio.lowlevel.open_process(
                [
                    "dbus-daemon",
                    f"--config-file={short_tmp / 'bus.conf'}",
                    "--print-address",
                    "--nofork",
                ],
                env=base,
                stdout=subprocess.PIPE,
            )
            procs.append(bus)
            assert bus.stdout is not None
            addresses = (await _first_line(bus.stdout)).split(";")
            address = next(a for a in addresses if a.startswith("unix:"))
            tcp_address = next(a for a in addresses if a.startswith("tcp:"))
            xvfb = await trio.lowlevel.open_process(
                ["Xvfb", "-displayfd", "1", "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                env=base,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            procs.append(xvfb)
            assert xvfb.stdout is not None
            display = await _first_line(xvfb.stdout)
            env = {**base, "DISPLAY": f":{display}", "DBUS_SESSION_BUS_ADDRESS": address}
            dunst = await trio.lowlevel.open_process(
                ["dunst", "-config", str(short_tmp / "dunstrc")],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(dunst)
            await _wait_for_owner(address, BUS_NAME)
        yield Desktop(short_tmp, address, tcp_address, env, bus)
    finally:
        for proc in reversed(procs):
            proc.terminate()
            with trio.move_on_after(5, shield=True):
                await proc.wait()


class Monitor:
    """Every message on the bus, as an eavesdropper sees it."""

    def __init__(self, messages: trio.MemoryReceiveChannel[Any]) -> None:
        self.messages = messages
        self._calls: dict[tuple[str, int], Any] = {}

    async def next(self, member: str) -> Any:
        async for message in self.messages:
            fields = message.header.fields
            if fields.get(HeaderFields.member) == member:
                return message
        raise AssertionError(f"the bus monitor ended before {member}")

    async def notify(self) -> tuple[tuple[Any, ...], int]:
        """The next Notify call's arguments, and the id the daemon answered with."""
        call: Any = None
        async for message in self.messages:
            fields = message.header.fields
            if call is None and fields.get(HeaderFields.member) == "Notify":
                call = message
            elif (
                call is not None
                and message.header.message_type is MessageType.method_return
                and fields.get(HeaderFields.reply_serial) == call.header.serial
                and fields.get(HeaderFields.destination) == call.header.fields[HeaderFields.sender]
            ):
                return tuple(call.body), message.body[0]
        raise AssertionError("the bus monitor ended before a Notify was answered")


@pytest.fixture
async def monitor(desktop: Desktop) -> AsyncIterator[Monitor]:
    async with open_dbus_router(desktop.address) as router:
        # Never removed (jeepney 0.9 must not see its filters change while it closes them).
        send, messages = trio.open_memory_channel[Any](10_000)
        router.filter(MatchRule(), channel=send)
        reply = await router.send_and_get_reply(Monitoring().BecomeMonitor([]))
        assert reply.header.message_type is MessageType.method_return, reply.body
        yield Monitor(messages)


@pytest.fixture
async def notifier(hub: HubService, desktop: Desktop, nursery: trio.Nursery) -> None:
    await nursery.start(partial(run_desktop_notifications, hub, bus_address=desktop.address))


ASK = {
    "question": "Deploy to production?",
    "choices": ["yes", "no"],
    "urgent": True,
    "agent_id": "deployer",
}


@needs_desktop
async def test_urgent_prompt_is_shown_with_a_button_per_choice(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    with trio.fail_after(20):
        asked = await client.call("hive/ask", ASK)
        args, note = await monitor.notify()
        app, replaces, _icon, summary, body, actions, hints, expire = args
        who = f"deployer in {asked['origin']}"  # where the asker runs, as the hub found it
        assert (app, replaces, summary, body) == (
            "hive-rpc",
            0,
            f"{who} needs input",
            "Deploy to production?",
        )
        assert actions == ["choice:0", "yes", "choice:1", "no", "default", "hive-rpc"]
        assert hints == {"urgency": ("y", 2), "sound-name": ("s", "message-new-instant")}
        assert expire == 0
        assert await desktop.displayed() == 1
        menu = await desktop.context_menu(pick=None)  # what dunst offers the human
        assert f"#yes ({who} needs input) [{note},choice:0]" in menu
        assert f"#no ({who} needs input) [{note},choice:1]" in menu


@needs_desktop
async def test_choosing_a_button_in_the_daemon_answers_the_prompt(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    with trio.fail_after(20):
        prompt = await client.call("hive/ask", ASK)
        _, note = await monitor.notify()
        await desktop.context_menu(pick=f"[{note},choice:1]")  # the human picks "no"
        invoked = await monitor.next("ActionInvoked")
        assert invoked.body == (note, "choice:1")
        done = await client.call("hive/await", {"id": prompt["id"], "timeout_s": 15})
        assert (done["status"], done["answer"], done["by"]) == ("responded", "no", "desktop")


PERMISSION = {
    "question": "Claude Code in ~/src/app (session 3f2a) wants to run Bash: npm test",
    "choices": ["allow", "allow for this session", "always allow in this project", "deny"],
    "urgent": True,
    "agent_id": "claude-code-3f2a9c1d",
    "kind": "permission",
    "detail": '{\n  "command": "npm test"\n}',
    "decisions": {
        "allow": "allow",
        "allow for this session": "allow",
        "always allow in this project": "allow",
        "deny": "deny",
    },
}


@needs_desktop
async def test_a_permission_offers_deny_and_never_allow(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    # The notification has no room for the tool's whole input, and the hub cannot
    # tell a click from a script driving the daemon: Deny only (docs/security.md).
    with trio.fail_after(20):
        asked = await client.call("hive/ask", PERMISSION)
        args, note = await monitor.notify()
        _app, _replaces, _icon, summary, body, actions, hints, _expire = args
        assert summary == f"Claude Code in {asked['origin']} (claude-code-3f2a9c1d) asks permission"
        assert body == (
            f"{PERMISSION['question']}\n\n"
            "Deny it here, or answer it in your editor, which shows the whole input."
        )
        assert actions == ["deny", "Deny", "default", "hive-rpc"]
        assert hints["urgency"] == ("y", 2)
        menu = await desktop.context_menu(pick=f"[{note},deny]")  # the human picks Deny
        assert sorted(line for line in menu if f"[{note}," in line) == [
            f"#Deny ({summary}) [{note},deny]",
            f"#hive-rpc ({summary}) [{note},default]",
        ]
        done = await client.call("hive/await", {"id": asked["id"], "timeout_s": 15})
        assert (done["answer"], done["by"]) == ("deny", "desktop")


@needs_desktop
async def test_any_process_can_make_dunst_invoke_an_action(
    desktop: Desktop, monitor: Monitor
) -> None:
    """Why the notification offers no Allow: ``dunstctl action`` (any process of the
    user, no click) makes dunst report a notification's only action as invoked, and
    the signal comes from dunst's own bus name, the one thing the hub can check.
    (mako's ``makoctl invoke -n ID KEY`` does the same for any key.)"""
    with trio.fail_after(20):
        async with open_dbus_router(desktop.address) as router:
            address = DBusAddress(
                "/org/freedesktop/Notifications", bus_name=BUS_NAME, interface=BUS_NAME
            )
            args = ("t", 0, "", "may I?", "", ["allow", "Allow"], {}, 0)
            reply = await router.send_and_get_reply(
                new_method_call(address, "Notify", "susssasa{sv}i", args)
            )
            note, daemon = reply.body[0], reply.header.fields[HeaderFields.sender]
            await desktop.dunstctl("action", "0")  # no human anywhere
            invoked = await monitor.next("ActionInvoked")
    assert invoked.body == (note, "allow")
    assert invoked.header.fields[HeaderFields.sender] == daemon


@needs_desktop
async def test_prompt_answered_elsewhere_closes_its_notification(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    with trio.fail_after(20):
        prompt = await client.call("hive/ask", ASK)
        _, note = await monitor.notify()
        await client.call("hive/respond", {"id": prompt["id"], "answer": "yes"})
        closed = await monitor.next("NotificationClosed")
        assert closed.body == (note, 3)  # 3: closed by a call to CloseNotification
        assert await desktop.displayed() == 0
        (entry,) = await desktop.history()
        summary = f"deployer in {prompt['origin']} needs input"
        assert (entry["id"], entry["summary"]) == (note, summary)


@needs_desktop
async def test_prompts_that_are_not_urgent_raise_nothing(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    with trio.fail_after(20):
        await client.call("hive/ask", {**ASK, "urgent": False, "question": "Quiet?"})
        await client.call("hive/ask", {"question": "Free text, urgent", "urgent": True})
        args, _ = await monitor.notify()  # the first Notify is the urgent prompt's
        assert args[4] == "Free text, urgent"
        assert args[5] == ["default", "hive-rpc"]  # no choices: no buttons
        assert await desktop.displayed() == 1


async def test_without_bus_or_notify_send_it_returns_quietly_and_the_hub_works(
    hub: HubService,
    client: HubClient,
    short_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_tmp))
    monkeypatch.setenv("PATH", str(short_tmp))  # no notify-send
    caplog.set_level(logging.INFO, logger="hive_rpc.faces.desktop_notify")
    with trio.fail_after(10):
        await run_desktop_notifications(hub)
        await run_desktop_notifications(hub, bus_address=f"unix:path={short_tmp}/no-bus")
        prompt = await client.call("hive/ask", {"question": "Still there?", "urgent": True})
        done = await client.call("hive/respond", {"id": prompt["id"], "answer": "yes"})
    assert done["status"] == "responded"
    off = "no session bus and no notify-send: desktop notifications are off"
    assert [r.getMessage() for r in caplog.records].count(off) == 2


@needs_desktop
@pytest.mark.skipif(shutil.which("notify-send") is None, reason="needs notify-send (libnotify-bin)")
async def test_notify_send_shows_urgent_prompts_when_the_bus_is_out_of_reach(
    hub: HubService,
    client: HubClient,
    desktop: Desktop,
    monitor: Monitor,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real notify-send: the session bus is given as a tcp address, which jeepney
    cannot use and GDBus (libnotify) can; notify-send reaches the same dunst."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.tcp_address)
    monkeypatch.setenv("HOME", str(desktop.dir))  # the bus's DBUS_COOKIE_SHA1 keyring
    with trio.fail_after(20):
        await nursery.start(run_desktop_notifications, hub)
        asked = await client.call("hive/ask", {**ASK, "agent_id": "-u low"})
        args, _ = await monitor.notify()
        app, _, _, summary, body, actions, hints, _ = args
        assert (app, summary, body, actions) == (
            "hive-rpc",
            f"-u low in {asked['origin']} needs input",
            "Deploy to production?",
            [],
        )
        assert hints["urgency"] == ("y", 2)
        assert await desktop.displayed() == 1


@needs_desktop
async def test_hostile_text_arrives_inert(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    # Invisible characters too (issue 26): soft hyphen, a tag character, a Hangul
    # filler, an interlinear annotation, the combining grapheme joiner.
    invisible = "\u00ad\U000e0041\u3164\ufff9\u034f"
    question = f"\x1b]0;pwned\x07<b>bold</b> & <a href='x'>link</a>\x1b[31m red\u202e{invisible}"
    with trio.fail_after(20):
        prompt = await client.call(
            "hive/ask",
            {
                "question": question,
                "urgent": True,
                "agent_id": "<i>x</i>&y\x1b[2J",
                "choices": ["<b>yes</b>\nno", f"o{invisible}k"],
            },
        )
        args, _ = await monitor.notify()
        assert args[3] == f"ix/iy in {prompt['origin']} needs input"
        assert args[4] == "&lt;b>bold&lt;/b> &amp; &lt;a href='x'>link&lt;/a> red"
        assert args[5][:4] == ["choice:0", "<b>yes</b> no", "choice:1", "ok"]
        await client.call("hive/cancel", {"id": prompt["id"]})
        await monitor.next("NotificationClosed")
        (entry,) = await desktop.history()
    # What dunst renders: no markup of ours, no escape sequence.
    assert "<b>bold" not in entry["message"]
    assert "<a " not in entry["message"]
    assert "&lt;b&gt;bold" in entry["message"] or "&lt;b>bold" in entry["message"]
    assert "\x1b" not in entry["message"] + entry["summary"]
    assert not set(invisible) & set(entry["message"] + entry["summary"])


@needs_desktop
async def test_when_the_bus_goes_away_it_stops_and_the_hub_works(
    hub: HubService,
    client: HubClient,
    desktop: Desktop,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="hive_rpc.faces.desktop_notify")
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                partial(run_desktop_notifications, hub, bus_address=desktop.address)
            )
            desktop.bus.kill()
            await desktop.bus.wait()
        # The task returned by itself; the hub still takes and answers prompts.
        prompt = await client.call("hive/ask", {"question": "Still there?", "urgent": True})
        done = await client.call("hive/respond", {"id": prompt["id"], "answer": "yes"})
    assert done["status"] == "responded"
    assert any("went away" in r.getMessage() for r in caplog.records)


HANGING_NOTIFY_SEND = """#!/bin/sh
for pid in $(cat {pids} 2>/dev/null); do
  kill -0 "$pid" 2>/dev/null && echo "$pid" >> {overlapped}
done
echo $$ >> {pids}
exec sleep 600
"""
"""Says, as it starts, which of the earlier ones still hang (``overlapped``)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_hanging_notify_send_is_killed_said_once_and_never_waited_on(
    hub: HubService,
    client: HubClient,
    short_tmp: Path,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A notify-send that never returns (as libnotify does when the bus never finishes
    its handshake): the next urgent prompt's notify-send starts while the first still
    hangs, both are killed when their time is up, and the hub says so once."""
    bin_dir = short_tmp / "bin"
    bin_dir.mkdir()
    pids = short_tmp / "pids"
    fake = bin_dir / "notify-send"
    overlapped = short_tmp / "overlapped"
    fake.write_text(HANGING_NOTIFY_SEND.format(pids=pids, overlapped=overlapped))
    fake.chmod(0o755)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_tmp))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    # The hub's own time limit (CALL_TIMEOUT_S, 10 s), not a shorter one: the second
    # notify-send starts within milliseconds of its ask, and must start while the first
    # still hangs even on a loaded machine (3 s was a bet on that).
    caplog.set_level(logging.DEBUG, logger="hive_rpc.faces.desktop_notify")

    def started() -> list[int]:
        return [int(line) for line in pids.read_text().split()] if pids.exists() else []

    with trio.fail_after(60):
        await nursery.start(run_desktop_notifications, hub)
        assert hub.info.notifications == "notify-send"
        # processes outside trio, which leave only traces (files, pids): polled
        await client.call("hive/ask", {**ASK, "question": "First?"})
        (first,) = await until(started, "the first notify-send", within_s=20)
        await client.call("hive/ask", {**ASK, "question": "Second?"})
        await until(lambda: len(started()) == 2, "the second notify-send", within_s=20)
        # the second did not wait: it found the first still hanging as it started
        assert overlapped.read_text().split() == [str(first)]
        await until(lambda: not any(_alive(pid) for pid in started()), "kills", within_s=40)
        # Both were killed; the hub still answers.
        asked = await client.call("hive/ask", {"question": "Still there?"})
        done = await client.call("hive/respond", {"id": asked["id"], "answer": "yes"})
    assert done["status"] == "responded"
    hangs = [r for r in caplog.records if "did not finish" in r.getMessage()]
    assert [r.levelno for r in hangs] == [logging.WARNING, logging.DEBUG]


RECORDING_NOTIFY_SEND = """#!/bin/sh
for last; do :; done
echo "$last" >> {runs}
"""
"""Writes its last argument (the body: the question) to ``runs``, one line a run."""


async def test_notify_send_is_paced_too(
    hub: HubService,
    client: HubClient,
    short_tmp: Path,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten questions at once through the fallback: three are shown, the rest are left
    to the editors (notify-send cannot withdraw a summary); once those are answered
    and the window has passed (the test moves the pacing clock), the next one shows."""
    from notification_server import HandClock

    bin_dir = short_tmp / "bin"
    bin_dir.mkdir()
    runs = short_tmp / "runs"
    fake = bin_dir / "notify-send"
    fake.write_text(RECORDING_NOTIFY_SEND.format(runs=runs))
    fake.chmod(0o755)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_tmp))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    clock = HandClock()

    def shown() -> list[str]:
        return runs.read_text().splitlines() if runs.exists() else []

    with trio.fail_after(60):
        await nursery.start(partial(run_desktop_notifications, hub, clock=clock))
        asked = [
            await client.call("hive/ask", {"question": f"Q{n}?", "urgent": True, "agent_id": "a"})
            for n in range(10)
        ]
        # notify-send runs outside trio and leaves only its file: polled.
        await until(lambda: len(shown()) == 3, "three runs", within_s=30)
        for record in asked:
            await client.call("hive/respond", {"id": record["id"], "answer": "ok"})
        clock.advance(10.0)
        await client.call("hive/ask", {"question": "Q10?", "urgent": True, "agent_id": "a"})
        await until(lambda: "Q10?" in shown(), "the next run", within_s=30)
    # Had a held one run, it would have been queued before Q10 and be among these.
    assert sorted(shown()) == sorted(["Q0?", "Q1?", "Q2?", "Q10?"])


@needs_desktop
async def test_dunst_shows_a_burst_as_three_and_one_summary(
    hub: HubService,
    client: HubClient,
    desktop: Desktop,
    monitor: Monitor,
    nursery: trio.Nursery,
) -> None:
    """The real daemon: ten questions waiting as the notifications start are four
    notifications in dunst, the summary replaced in place when one more joins (the
    pacing clock moved by hand past its interval), and none once all are answered."""
    from notification_server import HandClock

    clock = HandClock()

    def ask(n: int) -> dict[str, Any]:
        return {"urgent": True, "agent_id": f"gemini-s{n}", "question": f"Q{n}?"}

    with trio.fail_after(30):
        asked = [await client.call("hive/ask", ask(n)) for n in range(10)]
        await nursery.start(
            partial(run_desktop_notifications, hub, bus_address=desktop.address, clock=clock)
        )
        notes = [await monitor.notify() for _ in range(4)]
        assert notes[3][0][3] == "7 more sessions wait on you"
        asked.append(await client.call("hive/ask", ask(10)))
        clock.advance(2.0)
        (args, replaced) = await monitor.notify()
        assert (args[1], replaced, args[3]) == (
            notes[3][1],
            notes[3][1],
            "8 more sessions wait on you",
        )
        counts = [int(await desktop.dunstctl("count", kind)) for kind in ("displayed", "waiting")]
        assert sum(counts) == 4
        for record in asked:
            await client.call("hive/respond", {"id": record["id"], "answer": "ok"})
        closed = {(await monitor.next("NotificationClosed")).body[0] for _ in range(4)}
        assert closed == {note for _, note in notes}
        assert await desktop.displayed() == 0
