"""A private ``dbus-daemon`` (a real session bus) and, on it, a notification server the
test owns: it stands in for the desktop's daemon (dunst, mako, GNOME Shell), speaking
``org.freedesktop.Notifications`` as the specification says, so a test can count
every Notify and CloseNotification the hub sends and see what is on screen.

It also does what the real daemons let any local process do (``dunstctl action``,
``makoctl invoke -n ID KEY``): report an action as invoked, from the daemon's own
bus name, without anyone clicking.  test_desktop_notify.py checks with the real
dunst that this is so.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio
from jeepney import (
    DBusAddress,
    HeaderFields,
    MessageType,
    new_error,
    new_method_call,
    new_method_return,
    new_signal,
)
from jeepney.bus_messages import message_bus
from jeepney.io.trio import DBusConnection, open_dbus_connection

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
CLOSED_BY_CALL = 3
"""NotificationClosed's reason when CloseNotification closed it."""

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

T = TypeVar("T")


@asynccontextmanager
async def private_bus(directory: Path) -> AsyncIterator[str]:
    """A session ``dbus-daemon`` of the test's own; its unix address."""
    (directory / "bus.conf").write_text(BUS_CONFIG.format(dir=directory))
    argv = ["dbus-daemon", f"--config-file={directory / 'bus.conf'}", "--print-address", "--nofork"]
    bus = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE)
    try:
        assert bus.stdout is not None
        data = b""
        with trio.fail_after(20):
            while b"\n" not in data:
                chunk = await bus.stdout.receive_some()
                assert chunk, "dbus-daemon ended before printing its address"
                data += chunk
        yield data.split(b"\n", 1)[0].decode().split(";")[0]
    finally:
        bus.terminate()
        with trio.move_on_after(5, shield=True):
            await bus.wait()


@dataclass
class Notification:
    """One notification as the server holds it: the last Notify's arguments."""

    id: int
    app: str
    replaces: int
    summary: str
    body: str
    actions: list[str]
    hints: dict[str, Any]
    expire: int


@dataclass
class NotificationServer:
    """``org.freedesktop.Notifications`` on a real bus, recording every call."""

    conn: DBusConnection
    calls: list[tuple[str, Any]] = field(default_factory=list)
    """``("Notify", Notification)`` and ``("CloseNotification", id)``, in order."""
    open: dict[int, Notification] = field(default_factory=dict)
    """What is on screen now."""
    _next_id: int = 1
    _changed: trio.Event = field(default_factory=trio.Event)

    @property
    def unique_name(self) -> str:
        return str(self.conn.unique_name)

    def notifies(self) -> list[Notification]:
        return [args for member, args in self.calls if member == "Notify"]

    def closes(self) -> list[int]:
        return [args for member, args in self.calls if member == "CloseNotification"]

    async def until(self, check: Callable[[], T | None], what: str) -> T:
        """``check()``'s first true value, looked at after each call the server takes
        (an event per call, no polling); ``what`` names it if the test's deadline ends
        the wait."""
        while True:
            found = check()
            if found:
                return found
            changed = self._changed
            await changed.wait()

    async def serve(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await self.conn.send(message_bus.RequestName(BUS_NAME))
        started = False
        while True:
            message = await self.conn.receive()
            kind = message.header.message_type
            if kind is MessageType.method_return and not started:
                started = True  # the reply to RequestName: the name is ours
                task_status.started()
            elif kind is MessageType.method_call:
                await self._answer(message)

    async def _answer(self, message: Any) -> None:
        member = message.header.fields.get(HeaderFields.member)
        if member == "Notify":
            app, replaces, _icon, summary, body, actions, hints, expire = message.body
            note_id = replaces if replaces in self.open else self._take_id()
            note = Notification(note_id, app, replaces, summary, body, actions, hints, expire)
            self.open[note_id] = note
            self.calls.append(("Notify", note))
            reply = new_method_return(message, "u", (note_id,))
        elif member == "CloseNotification":
            (note_id,) = message.body
            self.calls.append(("CloseNotification", note_id))
            reply = new_method_return(message)
            if self.open.pop(note_id, None) is not None:
                await self.conn.send(reply)
                await self.emit("NotificationClosed", "uu", (note_id, CLOSED_BY_CALL))
                self._tell()
                return
        elif member == "GetCapabilities":
            reply = new_method_return(message, "as", (["actions", "body", "body-markup"],))
        elif member == "GetServerInformation":
            reply = new_method_return(message, "ssss", ("test", "hive-rpc tests", "1", "1.2"))
        else:
            reply = new_error(message, "org.freedesktop.DBus.Error.UnknownMethod")
        await self.conn.send(reply)
        self._tell()

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _tell(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def emit(self, member: str, signature: str, body: tuple[Any, ...]) -> None:
        """A signal from the daemon's own bus name (what the hub trusts)."""
        emitter = DBusAddress(OBJECT_PATH, interface=BUS_NAME)
        await self.conn.send(new_signal(emitter, member, signature, body))

    async def invoke(self, note_id: int, action_key: str) -> None:
        """What ``makoctl invoke -n ID KEY`` makes mako do: no click, the daemon's name."""
        await self.emit("ActionInvoked", "us", (note_id, action_key))

    async def dismiss(self, note_id: int) -> None:
        """The human closing it (reason 2)."""
        self.open.pop(note_id, None)
        await self.emit("NotificationClosed", "uu", (note_id, 2))


@asynccontextmanager
async def notification_server(address: str) -> AsyncIterator[NotificationServer]:
    """The server, owning ``org.freedesktop.Notifications`` on ``address``."""
    conn = await open_dbus_connection(address)
    async with conn, trio.open_nursery() as nursery:
        server = NotificationServer(conn)
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()


async def forge_action(address: str, note_id: int, action_key: str) -> None:
    """``ActionInvoked`` sent by another connection (not the daemon), then a round trip
    to the bus: once the bus answered it has routed the signal, so anything routed to
    the hub after this arrives after it."""
    conn = await open_dbus_connection(address)
    async with conn:
        emitter = DBusAddress(OBJECT_PATH, interface=BUS_NAME)
        await conn.send(new_signal(emitter, "ActionInvoked", "us", (note_id, action_key)))
        bus = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus")
        await conn.send(new_method_call(bus, "GetId"))
        while (await conn.receive()).header.message_type is not MessageType.method_return:
            pass


class HandClock:
    """The pacing rule's clock, moved by the test (``advance``): time stands still
    otherwise, so what the rule decides never depends on how fast the machine is."""

    def __init__(self) -> None:
        self.time = 0.0
        self._moved = trio.Event()

    def now(self) -> float:
        return self.time

    async def sleep_until(self, deadline: float) -> None:
        while self.time < deadline:
            moved = self._moved
            await moved.wait()

    def advance(self, seconds: float) -> None:
        self.time += seconds
        self._moved.set()
        self._moved = trio.Event()
