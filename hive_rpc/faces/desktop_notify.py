"""Desktop notifications for urgent prompts, over D-Bus (org.freedesktop.Notifications),
and for agents' urgent notices (``agent/notify``: Claude Code waiting in its terminal).

One task, run by the hub in its nursery::

    run_desktop_notifications(service)
      |- connects to the session bus (jeepney's trio I/O)
      |- watch task      registry changes: an urgent prompt asked -> Notify,
      |                  a prompt no longer pending -> CloseNotification
      |- signal task     ActionInvoked from the daemon that showed the notification
      |                  -> hive/respond (by "desktop"); NotificationClosed -> forget it
      `- notice task     the activity log: an urgent notice -> Notify, once, no buttons
                         (nothing waits on a notice, so nothing is closed either)

When no session bus is reachable, ``notify-send`` (if installed) shows urgent prompts
without buttons; with neither, the task logs one line and returns.  If the bus goes
away later, the task logs it and returns: the hub never fails because of the desktop.

A permission prompt (a Claude Code tool use, ``kind`` permission) is shown with its
one head line and no answer buttons: a notification has no room for the tool's whole
input (the prompt's ``detail``), and the human approves what runs, not a summary; nor
is the desktop an approver (docs/security.md).  Its body says where to answer.

Text from agents is never interpreted: control characters and escape sequences are
stripped, the body's ``&`` and ``<`` are escaped (daemons such as dunst read body
markup even when they do not advertise ``body-markup``), and the agent's name in the
summary loses ``<``, ``>`` and ``&`` (the specification says summaries are plain text,
which dunst honours by escaping them itself, so escaping would show ``&lt;``).
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Awaitable, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import trio
from jeepney import (  # type: ignore[import-untyped]
    DBusAddress,
    HeaderFields,
    MatchRule,
    MessageType,
    new_method_call,
)
from jeepney.bus_messages import message_bus  # type: ignore[import-untyped]
from jeepney.io.common import RouterClosed  # type: ignore[import-untyped]
from jeepney.io.trio import open_dbus_connection  # type: ignore[import-untyped]

from hive_rpc.core.conventions import asker_label
from hive_rpc.core.errors import HiveError
from hive_rpc.core.prompt import Kind, Prompt
from hive_rpc.core.terminal_text import one_line, strip_controls
from hive_rpc.runtime.activity import Entry
from hive_rpc.runtime.registry import Watch
from hive_rpc.service import HubService

log = logging.getLogger(__name__)

APP_NAME = "hive-rpc"
BY = "desktop"
"""The ``by`` recorded when an answer comes from a notification's button."""
BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
URGENCY_NORMAL = 1
URGENCY_CRITICAL = 2
DEFAULT_EXPIRY = -1
"""The daemon's own timeout: a notice is never closed by the hub, so it must go."""
NEVER_EXPIRE = 0
DEFAULT_ACTION = "default"
DEFAULT_LABEL = "hive-rpc"
CHOICE_PREFIX = "choice:"
MAX_BODY_CHARS = 2000
CONNECT_TIMEOUT_S = 5.0
CALL_TIMEOUT_S = 10.0
SIGNAL_BUFFER = 256

# Every way a live connection's loss shows itself: the reader's end of stream, a send
# on a dead socket, a call on a stopped router.
BUS_GONE = (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError, RouterClosed)

_SIGNALS = MatchRule(type="signal", interface=BUS_NAME, path=OBJECT_PATH)
"""Local filter.  Its bus-side twin also names the sender (see ``_bus_rule``); the
sender of each signal is checked again against the daemon that showed the
notification, since a local rule cannot match a well-known name."""


def _bus_rule() -> Any:
    return MatchRule(type="signal", interface=BUS_NAME, path=OBJECT_PATH, sender=BUS_NAME)


# --- what is shown ------------------------------------------------------------


PERMISSION_NOTE = "Answer it in your editor, which shows the whole tool input."
"""Ends a permission prompt's body: the notification carries no answer."""


def _is_permission(prompt: Prompt) -> bool:
    return prompt.kind is Kind.PERMISSION


def notify_call(summary: str, body: str, actions: list[str], urgency: int, expire_ms: int) -> Any:
    """The ``org.freedesktop.Notifications.Notify`` call for a new notification (no
    icon, replacing none), as the spec orders its arguments."""
    address = DBusAddress(OBJECT_PATH, bus_name=BUS_NAME, interface=BUS_NAME)
    args = (APP_NAME, 0, "", summary, body, actions, {"urgency": ("y", urgency)}, expire_ms)
    return new_method_call(address, "Notify", "susssasa{sv}i", args)


def summary_text(prompt: Prompt) -> str:
    """``AGENT needs input`` (``AGENT asks permission``), on one line, with no
    character markup could act on."""
    name = one_line(asker_label(prompt.agent_id)).translate({ord(c): None for c in "<>&"})
    name = name or "an agent"
    return f"{name} asks permission" if _is_permission(prompt) else f"{name} needs input"


def body_text(prompt: Prompt) -> str:
    """The question as inert text: no controls, ``&`` and ``<`` escaped, bounded; a
    permission's head line, then where to answer it."""
    text = strip_controls(prompt.question).strip()
    if len(text) > MAX_BODY_CHARS:
        text = text[: MAX_BODY_CHARS - 1] + "…"
    if _is_permission(prompt):
        text = f"{text}\n\n{PERMISSION_NOTE}"
    return text.replace("&", "&amp;").replace("<", "&lt;")


def answer_choices(prompt: Prompt) -> tuple[str, ...]:
    """The choices a notification's buttons may answer: none for a permission."""
    return () if _is_permission(prompt) else (prompt.choices or ())


def action_list(prompt: Prompt) -> list[str]:
    """The flat ``[key, label, ...]`` list: one button per choice, then ``default``."""
    actions: list[str] = []
    for index, choice in enumerate(answer_choices(prompt)):
        actions += [f"{CHOICE_PREFIX}{index}", one_line(choice) or "(empty)"]
    return [*actions, DEFAULT_ACTION, DEFAULT_LABEL]


def is_urgent_notice(entry: Entry) -> bool:
    return entry.kind == "notice" and entry.data.get("urgent") is True


async def follow_urgent_notices(
    service: HubService, show: Callable[[Entry], Awaitable[None]]
) -> None:
    """``show`` every urgent notice the activity log gets from now on, in order."""
    activity = service.activity
    async with aclosing(activity.follow(activity.last_id)) as batches:
        async for batch in batches:
            for entry in batch or ():
                if is_urgent_notice(entry):
                    await show(entry)


def notice_summary(entry: Entry) -> str:
    """``AGENT needs you``, as inert as a prompt's summary."""
    agent = str(entry.data.get("agent_id") or entry.key)
    name = one_line(agent).translate({ord(c): None for c in "<>&"}) or "an agent"
    return f"{name} needs you"


def notice_body(entry: Entry) -> str:
    """The notice's message, and where the agent works, as inert text."""
    text = strip_controls(str(entry.data.get("message") or "")).strip()
    if entry.data.get("cwd"):
        text += f"\n(in {one_line(str(entry.data['cwd']))})"
    if len(text) > MAX_BODY_CHARS:
        text = text[: MAX_BODY_CHARS - 1] + "…"
    return text.replace("&", "&amp;").replace("<", "&lt;")


def notice_notify_send_argv(program: str, entry: Entry) -> list[str]:
    return [
        program,
        "-u",
        "normal",
        "-a",
        APP_NAME,
        "--",
        notice_summary(entry),
        notice_body(entry),
    ]


def notify_send_argv(program: str, prompt: Prompt) -> list[str]:
    """``notify-send`` arguments; ``--`` keeps a summary such as ``-u low`` from
    being read as an option."""
    return [
        program,
        "-u",
        "critical",
        "-a",
        APP_NAME,
        "--",
        summary_text(prompt),
        body_text(prompt),
    ]


# --- finding the bus ----------------------------------------------------------


def session_bus_address(explicit: str | None = None) -> str | None:
    """The session bus to use: ``explicit``, else ``$DBUS_SESSION_BUS_ADDRESS``, else
    ``$XDG_RUNTIME_DIR/bus`` when that socket exists (the systemd user bus, what
    GDBus and sd-bus fall back to).  None when there is none."""
    if explicit:
        return explicit
    env = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if env:
        return env
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        path = os.path.join(runtime, "bus")
        try:
            if stat.S_ISSOCK(os.stat(path).st_mode):
                return f"unix:path={path}"
        except OSError:
            pass
    return None


async def _connect(address: str | None) -> Any:
    """A connection to the bus at ``address``, or None (with the reason logged) when
    it cannot be reached.  Any failure here means "unreachable", whatever its type."""
    if address is None:
        log.info("no session bus address (DBUS_SESSION_BUS_ADDRESS is unset)")
        return None
    try:
        with trio.fail_after(CONNECT_TIMEOUT_S):
            return await open_dbus_connection(address)
    except Exception as exc:
        log.info("session bus %s unreachable: %s", address, exc)
        return None


# --- the task -------------------------------------------------------------------


async def run_desktop_notifications(
    service: HubService,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    bus_address: str | None = None,
) -> None:
    """Show urgent prompts as desktop notifications until cancelled.

    Returns early (after ``task_status.started()``, with a log line) when neither a
    session bus nor ``notify-send`` is there, or when the bus goes away.
    """
    conn = await _connect(session_bus_address(bus_address))
    if conn is None:
        program = shutil.which("notify-send")
        if program is None:
            log.info("no session bus and no notify-send: desktop notifications are off")
            task_status.started()
            return
        log.info("falling back to %s (no buttons, no closing)", program)
        service.info.notifications = "notify-send"
        try:
            await _run_notify_send(service, program, task_status)
        finally:
            service.info.notifications = "off"
        return
    try:
        service.info.notifications = "dbus"
        async with conn, conn.router() as router:
            await _Notifier(service, router).run(task_status)
    except* BUS_GONE as group:
        log.warning(
            "the session bus went away (%s): desktop notifications are off",
            group.exceptions[0],
        )
    except* OSError as group:
        log.warning(
            "the session bus failed (%s): desktop notifications are off", group.exceptions[0]
        )
    finally:
        service.info.notifications = "off"


@dataclass(frozen=True)
class _Shown:
    notification_id: int
    daemon: str
    """The unique bus name of the daemon that showed it: only its signals count."""
    choices: tuple[str, ...]


class _Notifier:
    """Notifications on one bus connection: which prompt each one shows."""

    def __init__(self, service: HubService, router: Any) -> None:
        self.service = service
        self.router = router
        self._shown: dict[str, _Shown] = {}
        self._prompt_of: dict[tuple[str, int], str] = {}

    def statistics(self) -> dict[str, int]:
        return {"shown": len(self._shown)}

    async def run(self, task_status: Any) -> None:
        await self._call(message_bus.AddMatch(_bus_rule()), "AddMatch")
        send, signals = trio.open_memory_channel[Any](SIGNAL_BUFFER)
        # Never removed: the router closes it when it stops.  Removing it ourselves
        # while the router's receiver closes its filters breaks jeepney 0.9's loop
        # over them ("dictionary changed size during iteration").
        self.router.filter(_SIGNALS, channel=send)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._receive_signals, signals)
            nursery.start_soon(self._show_notices)
            while True:  # a new subscription whenever the registry drops a slow one
                with self.service.registry.watch() as watch:
                    await self._resync(watch.pending)
                    task_status.started()
                    task_status = trio.TASK_STATUS_IGNORED
                    await self._follow(watch)
                log.info("desktop notifications fell behind the registry; resubscribing")

    async def _resync(self, pending: Iterable[Prompt]) -> None:
        """Show what is pending and not shown; close what was shown and is gone."""
        pending = list(pending)
        ids = {p.id for p in pending}
        for prompt_id in [i for i in self._shown if i not in ids]:
            await self._close(prompt_id)
        for prompt in pending:
            await self._show(prompt)

    async def _follow(self, watch: Watch) -> None:
        async for change in watch:
            if change.event == "ask":
                await self._show(change.prompt)
            elif not change.prompt.is_pending:
                await self._close(change.prompt.id)

    # --- calls --------------------------------------------------------------------

    async def _call(self, message: Any, what: str) -> Any:
        """Send a method call; the reply, or None (logged) on an error or no answer."""
        with trio.move_on_after(CALL_TIMEOUT_S):
            reply = await self.router.send_and_get_reply(message)
            if reply.header.message_type is MessageType.error:
                log.warning("%s failed: %s %s", what, _error_name(reply), reply.body)
                return None
            return reply
        log.warning("%s got no answer in %gs", what, CALL_TIMEOUT_S)
        return None

    async def _show(self, prompt: Prompt) -> None:
        if not (prompt.urgent and prompt.is_pending) or prompt.id in self._shown:
            return
        message = notify_call(
            summary_text(prompt), body_text(prompt), action_list(prompt),
            URGENCY_CRITICAL, NEVER_EXPIRE,
        )  # fmt: skip
        reply = await self._call(message, f"Notify for prompt {prompt.id}")
        if reply is None or not reply.body or not isinstance(reply.body[0], int):
            return
        shown = _Shown(
            notification_id=reply.body[0],
            daemon=reply.header.fields.get(HeaderFields.sender, ""),
            choices=answer_choices(prompt),
        )
        self._shown[prompt.id] = shown
        self._prompt_of[shown.daemon, shown.notification_id] = prompt.id
        log.debug("prompt %s shown as notification %d", prompt.id, shown.notification_id)

    async def _show_notices(self) -> None:
        await follow_urgent_notices(self.service, self._show_notice)

    async def _show_notice(self, entry: Entry) -> None:
        """Shown once: no buttons, the daemon's own timeout (nothing will close it)."""
        message = notify_call(
            notice_summary(entry), notice_body(entry), [], URGENCY_NORMAL, DEFAULT_EXPIRY
        )
        await self._call(message, f"Notify for a notice from {entry.key}")

    async def _close(self, prompt_id: str) -> None:
        shown = self._forget(prompt_id)
        if shown is None:
            return
        address = DBusAddress(OBJECT_PATH, bus_name=shown.daemon, interface=BUS_NAME)
        message = new_method_call(address, "CloseNotification", "u", (shown.notification_id,))
        await self._call(message, f"CloseNotification for prompt {prompt_id}")

    def _forget(self, prompt_id: str) -> _Shown | None:
        shown = self._shown.pop(prompt_id, None)
        if shown is not None:
            self._prompt_of.pop((shown.daemon, shown.notification_id), None)
        return shown

    # --- signals ------------------------------------------------------------------

    async def _receive_signals(self, signals: trio.MemoryReceiveChannel[Any]) -> None:
        async for message in signals:
            fields = message.header.fields
            member = fields.get(HeaderFields.member)
            signature = fields.get(HeaderFields.signature)
            key = (fields.get(HeaderFields.sender, ""), message.body[0] if message.body else -1)
            prompt_id = self._prompt_of.get(key)
            if prompt_id is None:
                continue  # another application's notification, or not from its daemon
            if member == "NotificationClosed" and signature == "uu":
                self._forget(prompt_id)
            elif member == "ActionInvoked" and signature == "us":
                await self._invoked(prompt_id, message.body[1])

    async def _invoked(self, prompt_id: str, action_key: str) -> None:
        shown = self._shown.get(prompt_id)
        if shown is None or not action_key.startswith(CHOICE_PREFIX):
            return  # "default": clicking the notification itself opens nothing
        index = action_key.removeprefix(CHOICE_PREFIX)
        if not index.isdecimal() or int(index) >= len(shown.choices):
            log.warning("unknown action %r on prompt %s", action_key, prompt_id)
            return
        answer = shown.choices[int(index)]
        params = {"id": prompt_id, "answer": answer, "by": BY}
        try:
            await self.service.call("hive/respond", params)
        except HiveError as exc:
            log.info("answer from the desktop to prompt %s not taken: %s", prompt_id, exc)
        except Exception:
            log.exception("answer from the desktop to prompt %s failed", prompt_id)
        else:
            log.info("prompt %s answered from the desktop", prompt_id)


def _error_name(reply: Any) -> str:
    return str(reply.header.fields.get(HeaderFields.error_name, "error"))


# --- fallback: notify-send ------------------------------------------------------


NOTIFY_SEND_WORKERS = 2
NOTIFY_SEND_QUEUE = 64


async def _run_notify_send(service: HubService, program: str, task_status: Any) -> None:
    """Urgent prompts through ``notify-send``: shown once each, no buttons, no closing.

    The watch never waits on the program: prompts go into a bounded queue that two
    workers drain, each run killed after ``CALL_TIMEOUT_S``.  A program that hangs
    (a bus that never finishes its handshake, say) costs one worker those seconds,
    never the hub or the next notification.
    """
    sender = _NotifySend(program)
    send, receive = trio.open_memory_channel[Prompt](NOTIFY_SEND_QUEUE)
    async with trio.open_nursery() as nursery, send, receive:
        for _ in range(NOTIFY_SEND_WORKERS):
            nursery.start_soon(sender.work, receive.clone())
        nursery.start_soon(sender.notices, service)
        sent: set[str] = set()
        while True:
            with service.registry.watch() as watch:
                task_status.started()
                task_status = trio.TASK_STATUS_IGNORED
                sent &= {p.id for p in watch.pending}
                for prompt in watch.pending:
                    sender.offer(send, prompt, sent)
                async for change in watch:
                    if change.event == "ask":
                        sender.offer(send, change.prompt, sent)
                    elif not change.prompt.is_pending:
                        sent.discard(change.prompt.id)


class _NotifySend:
    """Runs ``notify-send``; says once, not per prompt, when it hangs or falls behind."""

    def __init__(self, program: str) -> None:
        self.program = program
        self._said: set[str] = set()

    def _once(self, what: str, message: str, *args: object) -> None:
        level = logging.DEBUG if what in self._said else logging.WARNING
        self._said.add(what)
        log.log(level, message, *args)

    def offer(self, send: trio.MemorySendChannel[Prompt], prompt: Prompt, sent: set[str]) -> None:
        if not (prompt.urgent and prompt.is_pending) or prompt.id in sent:
            return
        sent.add(prompt.id)
        try:
            send.send_nowait(prompt)
        except trio.WouldBlock:
            self._once(
                "behind",
                "%s is %d notifications behind; not showing more until it catches up",
                self.program,
                NOTIFY_SEND_QUEUE,
            )

    async def work(self, receive: trio.MemoryReceiveChannel[Prompt]) -> None:
        async with receive:
            async for prompt in receive:
                await self._show(prompt)

    async def notices(self, service: HubService) -> None:
        """Urgent notices, one ``notify-send`` at a time."""

        async def show(entry: Entry) -> None:
            await self._run(notice_notify_send_argv(self.program, entry))

        await follow_urgent_notices(service, show)

    async def _show(self, prompt: Prompt) -> None:
        await self._run(notify_send_argv(self.program, prompt))

    async def _run(self, argv: list[str]) -> None:
        with trio.move_on_after(CALL_TIMEOUT_S):
            try:
                result = await trio.run_process(
                    argv,
                    check=False,
                    capture_stdout=True,
                    capture_stderr=True,
                )
            except OSError as exc:
                self._once("oserror", "%s failed: %s", self.program, exc)
                return
            if result.returncode != 0:
                stderr = one_line(result.stderr.decode(errors="replace"))
                self._once("exit", "%s exited with %d: %s", self.program, result.returncode, stderr)
            return
        self._once(
            "hang",
            "%s did not finish in %gs: killed it (later hangs are logged at debug level)",
            self.program,
            CALL_TIMEOUT_S,
        )
