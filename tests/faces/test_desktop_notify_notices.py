"""Agents' urgent notices (``agent/notify``, what ``hive-rpc hook claude-code`` makes of
Claude Code's Notification when it waits for the human in its terminal) as desktop
notifications, against the same real processes as test_desktop_notify.py: a private
``dbus-daemon``, ``Xvfb`` and ``dunst``, and the real ``notify-send``.  Shown once, no
buttons (nothing to answer), left to the daemon's own timeout; a notice that is not
urgent raises nothing."""

from __future__ import annotations

import shutil

import pytest
import trio
from test_desktop_notify import Desktop, Monitor, needs_desktop
from test_desktop_notify import desktop as desktop  # fixtures
from test_desktop_notify import monitor as monitor
from test_desktop_notify import notifier as notifier

from hive_rpc.client.async_client import HubClient
from hive_rpc.faces.desktop_notify import run_desktop_notifications
from hive_rpc.service import HubService

NOTICE = {
    "agent_id": "claude-code-3f2a9c1d",
    "message": "Claude needs your permission",
    "type": "permission_prompt",
    "urgent": True,
    "cwd": "/src/app",
}


@needs_desktop
async def test_an_urgent_notice_is_shown_once_without_buttons(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    with trio.fail_after(20):
        quiet = {**NOTICE, "urgent": False, "message": "Claude is waiting for your input"}
        await client.call("agent/notify", quiet)
        await client.call("agent/notify", NOTICE)
        args, _ = await monitor.notify()  # the first Notify is the urgent notice's
        app, replaces, _icon, summary, body, actions, hints, expire = args
        assert (app, replaces, summary, body) == (
            "hive-rpc",
            0,
            "claude-code-3f2a9c1d needs you",
            "Claude needs your permission\n(in /src/app)",
        )
        assert (actions, hints, expire) == ([], {"urgency": ("y", 1)}, -1)
        assert await desktop.displayed() == 1


@needs_desktop
async def test_a_notices_text_arrives_inert(
    client: HubClient, desktop: Desktop, monitor: Monitor, notifier: None
) -> None:
    with trio.fail_after(20):
        hostile = {**NOTICE, "agent_id": "<b>x</b>&", "message": "a <b>b</b> & \x1b[31mc"}
        await client.call("agent/notify", hostile)
        args, _ = await monitor.notify()
        assert args[3] == "bx/b needs you"
        assert args[4] == "a &lt;b>b&lt;/b> &amp; c\n(in /src/app)"


@needs_desktop
@pytest.mark.skipif(shutil.which("notify-send") is None, reason="needs notify-send (libnotify-bin)")
async def test_notify_send_shows_an_urgent_notice(
    hub: HubService,
    client: HubClient,
    desktop: Desktop,
    monitor: Monitor,
    nursery: trio.Nursery,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As for prompts: a tcp bus address jeepney cannot use, which notify-send can."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.tcp_address)
    monkeypatch.setenv("HOME", str(desktop.dir))
    with trio.fail_after(20):
        await nursery.start(run_desktop_notifications, hub)
        await client.call("agent/notify", NOTICE)
        args, _ = await monitor.notify()
        _, _, _, summary, body, actions, hints, _ = args
        assert (summary, body, actions) == (
            "claude-code-3f2a9c1d needs you",
            "Claude needs your permission\n(in /src/app)",
            [],
        )
        assert hints["urgency"] == ("y", 1)
