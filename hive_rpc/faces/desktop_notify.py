"""Desktop notifications, over D-Bus (org.freedesktop.Notifications), for the
questions a session waits on the human for, and for agents' urgent notices
(``agent/notify``: Claude Code waiting in its terminal).

One task, run by the hub in its nursery::

    run_desktop_notifications(service)
      |- connects to the session bus (jeepney's trio I/O)
      |- watch task      registry changes: a question the human is waited on for
      |                  (desktop_text.wants_notification) -> Notify, on its own or
      |                  held in the summary (desktop_pacing.py); a prompt no longer
      |                  pending -> CloseNotification (answered anywhere, expired,
      |                  cancelled, its asker gone)
      |- summary task    the one "N more sessions wait on you" notification, updated
      |                  in place (replaces_id), withdrawn when it holds nothing
      |- signal task     ActionInvoked from the daemon that showed the notification
      |                  -> hive/respond (by "desktop"); NotificationClosed -> forget it
      `- notice task     the activity log: an urgent notice -> Notify, once, no buttons
                         (nothing waits on a notice, so nothing is closed either)

What the notification says is desktop_text.py; how many are raised, desktop_pacing.py.

Actions.  The hub can check that ``ActionInvoked`` comes from the daemon that showed
the notification (the bus stamps the sender), not that a person clicked: dunst
(``dunstctl action``) and mako (``makoctl invoke``) report an action for any local
process that asks.  So only what harms nobody when forged is offered (docs/security.md):
an ordinary question's choices, which the agent's own credential answers anyway, and
Deny on a question only the human answers (a permission request, the hub's consent
question).  Never Allow, never approve: those are answered in an editor, which shows
the tool's whole input and proves the human's token.

When no session bus is reachable, ``notify-send`` (if installed) shows those questions
without buttons; with neither, the task logs one line and returns.  If the bus goes
away later, the task logs it and returns: the hub never fails because of the desktop.
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

from hive_rpc.core.errors import HiveError
from hive_rpc.core.prompt import Prompt
from hive_rpc.core.terminal_text import one_line
from hive_rpc.faces.desktop_pacing import Clock, Pacing
from hive_rpc.faces.desktop_text import (
    APP_NAME,
    CHOICE_PREFIX,
    DEFAULT_ACTION,
    DEFAULT_LABEL,
    DENY_ACTION,
    QUIET,
    SOUND,
    action_list,
    answer_choices,
    body_text,
    deny_choice,
    held_summary,
    is_urgent_notice,
    notice_body,
    notice_notify_send_argv,
    notice_summary,
    notify_send_argv,
    summary_text,
    wants_notification,
)
from hive_rpc.runtime.activity import Entry
from hive_rpc.runtime.registry import Watch
from hive_rpc.service import HubService
from hive_rpc.service.approver import APPROVER

log = logging.getLogger(__name__)

BY = "desktop"
"""The ``by`` recorded when an answer comes from a notification's button."""
BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
URGENCY_NORMAL = 1
URGENCY_CRITICAL = 2
DEFAULT_EXPIRY = -1
"""The daemon's own timeout: a notice is never closed by the hub, so it must go."""
NEVER_EXPIRE = 0
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


# --- what is sent ------------------------------------------------------------


def notify_call(
    summary: str,
    body: str,
    actions: list[str],
    urgency: int,
    expire_ms: int,
    *,
    replaces: int = 0,
    hints: dict[str, tuple[str, Any]] | None = None,
) -> Any:
    """The ``org.freedesktop.Notifications.Notify`` call (no icon; a new notification,
    or an update in place of ``replaces``), as the spec orders its arguments."""
    address = DBusAddress(OBJECT_PATH, bus_name=BUS_NAME, interface=BUS_NAME)
    all_hints = {"urgency": ("y", urgency), **(hints or {})}
    args = (APP_NAME, replaces, "", summary, body, actions, all_hints, expire_ms)
    return new_method_call(address, "Notify", "susssasa{sv}i", args)


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
    clock: Clock | None = None,
) -> None:
    """Show the prompts a human is waited on for as desktop notifications until
    cancelled, paced by ``clock`` (trio's; tests move one by hand).

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
            await _run_notify_send(service, program, task_status, clock or TrioClock())
        finally:
            service.info.notifications = "off"
        return
    try:
        service.info.notifications = "dbus"
        async with conn, conn.router() as router:
            await _Notifier(service, router, clock or TrioClock()).run(task_status)
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


class TrioClock:
    """The hub's clock for the pacing rule: trio's."""

    def now(self) -> float:
        return trio.current_time()

    async def sleep_until(self, deadline: float) -> None:
        await trio.sleep_until(deadline)


@dataclass(frozen=True)
class _Shown:
    notification_id: int
    daemon: str
    """The unique bus name of the daemon that showed it: only its signals count."""
    choices: tuple[str, ...]
    deny: str | None = None
    """The choice its Deny sends (``deny_choice``), chosen here, never by a signal."""


SUMMARY_KEY = ""
"""The summary notification's place in ``_Notifier._prompt_of``: no prompt's id."""


class _Notifier:
    """Notifications on one bus connection: which prompt each one shows, and the one
    summary that holds the rest (desktop_pacing.py says when)."""

    def __init__(self, service: HubService, router: Any, clock: Clock) -> None:
        self.service = service
        self.router = router
        self.clock = clock
        self.pacing = Pacing()
        self._shown: dict[str, _Shown] = {}
        self._prompt_of: dict[tuple[str, int], str] = {}
        self._held: dict[str, Prompt] = {}
        """The prompts the summary holds (``pacing.held`` has their order)."""
        self._summary: _Shown | None = None
        self._summary_text: tuple[str, str] | None = None
        self._summary_changed = trio.Event()
        self._summary_wait = trio.CancelScope()
        """The summary's wait for its interval, cut short when it comes to hold nothing."""

    def statistics(self) -> dict[str, int]:
        return {"shown": len(self._shown), "held": len(self._held)}

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
            nursery.start_soon(self._keep_summary)
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
        for prompt_id in [i for i in [*self._shown, *self._held] if i not in ids]:
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

    async def _notify(self, message: Any, what: str) -> tuple[int, str] | None:
        """Send a Notify; the notification's id and the daemon's unique name."""
        reply = await self._call(message, what)
        if reply is None or not reply.body or not isinstance(reply.body[0], int):
            return None
        return reply.body[0], reply.header.fields.get(HeaderFields.sender, "")

    async def _show(self, prompt: Prompt) -> None:
        if not wants_notification(prompt) or prompt.id in self._shown:
            return
        if prompt.id in self._held or not self.pacing.arrive(prompt.id, self.clock.now()):
            self._held[prompt.id] = prompt
            self._summary_changed.set()
            return
        message = notify_call(
            summary_text(prompt), body_text(prompt), action_list(prompt),
            URGENCY_CRITICAL, NEVER_EXPIRE, hints=SOUND,
        )  # fmt: skip
        sent = await self._notify(message, f"Notify for prompt {prompt.id}")
        if sent is None:
            self.pacing.leave(prompt.id)
            return
        shown = _Shown(sent[0], sent[1], answer_choices(prompt), deny_choice(prompt))
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
        if self._held.pop(prompt_id, None) is not None:
            self.pacing.leave(prompt_id)
            self._summary_changed.set()
            if not self._held:
                self._summary_wait.cancel()  # withdrawn now, not when the interval ends
            return
        shown = self._forget(prompt_id)
        if shown is not None:
            await self._close_notification(shown, f"prompt {prompt_id}")

    async def _close_notification(self, shown: _Shown, what: str) -> None:
        address = DBusAddress(OBJECT_PATH, bus_name=shown.daemon, interface=BUS_NAME)
        message = new_method_call(address, "CloseNotification", "u", (shown.notification_id,))
        await self._call(message, f"CloseNotification for {what}")

    def _forget(self, prompt_id: str) -> _Shown | None:
        self.pacing.leave(prompt_id)
        shown = self._shown.pop(prompt_id, None)
        if shown is not None:
            self._prompt_of.pop((shown.daemon, shown.notification_id), None)
            if self._held:
                self._summary_changed.set()  # "N more" may now be "N"
        return shown

    # --- the summary ----------------------------------------------------------------

    async def _keep_summary(self) -> None:
        """The one task that sends the summary: withdrawn as soon as it holds nothing,
        else brought up to date at most once per ``summary_interval_s``."""
        while True:
            await self._summary_changed.wait()
            self._summary_changed = trio.Event()
            if self._held:
                with trio.CancelScope() as self._summary_wait:
                    await self.clock.sleep_until(self.pacing.summary_due(self.clock.now()))
            if not self._held:
                if self._summary is not None:
                    summary, self._summary = self._summary, None
                    self._prompt_of.pop((summary.daemon, summary.notification_id), None)
                    await self._close_notification(summary, "the summary")
                self._summary_text = None
                continue
            await self._send_summary()

    async def _send_summary(self) -> None:
        held = [self._held[i] for i in self.pacing.held if i in self._held]
        text = held_summary(held, alone=len(self._shown))
        dismissed = self._summary is None and self._summary_text is not None
        if text == self._summary_text or (dismissed and not self.pacing.grew):
            return  # nothing new; or the human dismissed it and nobody joined since
        sound = self.pacing.summary_sent(self.clock.now())
        replaces = self._summary.notification_id if self._summary is not None else 0
        message = notify_call(
            *text, [DEFAULT_ACTION, DEFAULT_LABEL], URGENCY_CRITICAL, NEVER_EXPIRE,
            replaces=replaces, hints=SOUND if sound else QUIET,
        )  # fmt: skip
        sent = await self._notify(message, "Notify for the summary")
        if sent is None:
            return
        if self._summary is not None:
            self._prompt_of.pop((self._summary.daemon, self._summary.notification_id), None)
        self._summary = _Shown(sent[0], sent[1], ())
        self._summary_text = text
        self._prompt_of[sent[1], sent[0]] = SUMMARY_KEY

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
                if prompt_id == SUMMARY_KEY:
                    self._prompt_of.pop(key, None)
                    self._summary = None  # dismissed: raised again when one joins
                else:
                    self._forget(prompt_id)
            elif member == "ActionInvoked" and signature == "us" and prompt_id != SUMMARY_KEY:
                await self._invoked(prompt_id, message.body[1])

    async def _invoked(self, prompt_id: str, action_key: str) -> None:
        """An action the daemon reports.  Any local process may make a daemon report
        one (``dunstctl action``, ``makoctl invoke``), so only what harms nobody when
        forged is offered: an ordinary question's choices (the agent's own credential
        answers those), and Deny.  A key for anything else is refused."""
        shown = self._shown.get(prompt_id)
        if shown is None or action_key == DEFAULT_ACTION:
            return  # clicking the notification itself answers nothing
        if action_key == DENY_ACTION and shown.deny is not None:
            await self._respond(prompt_id, shown.deny, approver=True)
            return
        index = action_key.removeprefix(CHOICE_PREFIX)
        if (
            not action_key.startswith(CHOICE_PREFIX)
            or not index.isdecimal()
            or int(index) >= len(shown.choices)
        ):
            log.warning("refused action %r on prompt %s", one_line(action_key)[:80], prompt_id)
            return
        await self._respond(prompt_id, shown.choices[int(index)], approver=False)

    async def _respond(self, prompt_id: str, answer: str, *, approver: bool) -> None:
        """``hive/respond`` by "desktop".  ``approver`` for a Deny only: a question only
        the human answers takes its deny choice from here, picked by ``deny_choice``
        when it was shown, as service/approver.py's one-call approver, the way
        faces/mcp/approve_tool.py answers for its own call."""
        params = {"id": prompt_id, "answer": answer, "by": BY}
        token = APPROVER.set(approver)
        try:
            await self.service.call("hive/respond", params)
        except HiveError as exc:
            log.info("answer from the desktop to prompt %s not taken: %s", prompt_id, exc)
        except Exception:
            log.exception("answer from the desktop to prompt %s failed", prompt_id)
        else:
            log.info("prompt %s answered %r from the desktop", prompt_id, answer)
        finally:
            APPROVER.reset(token)


def _error_name(reply: Any) -> str:
    return str(reply.header.fields.get(HeaderFields.error_name, "error"))


# --- fallback: notify-send ------------------------------------------------------


NOTIFY_SEND_WORKERS = 2
NOTIFY_SEND_QUEUE = 64


async def _run_notify_send(
    service: HubService, program: str, task_status: Any, clock: Clock
) -> None:
    """The same questions through ``notify-send``: shown once each, no buttons, no
    closing, paced as on D-Bus but with nothing in place of the summary
    (``notify-send`` cannot withdraw what it showed, so a summary would only stack):
    a held question is left to the editors.

    The watch never waits on the program: prompts go into a bounded queue that two
    workers drain, each run killed after ``CALL_TIMEOUT_S``.  A program that hangs
    (a bus that never finishes its handshake, say) costs one worker those seconds,
    never the hub or the next notification.
    """
    sender = _NotifySend(program, clock)
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
                for gone in sent - {p.id for p in watch.pending}:
                    sender.closed(gone, sent)
                for prompt in watch.pending:
                    sender.offer(send, prompt, sent)
                async for change in watch:
                    if change.event == "ask":
                        sender.offer(send, change.prompt, sent)
                    elif not change.prompt.is_pending:
                        sender.closed(change.prompt.id, sent)


class _NotifySend:
    """Runs ``notify-send``; says once, not per prompt, when it hangs or falls behind."""

    def __init__(self, program: str, clock: Clock) -> None:
        self.program = program
        self.clock = clock
        self.pacing = Pacing()
        self._said: set[str] = set()

    def _once(self, what: str, message: str, *args: object, level: int = logging.WARNING) -> None:
        level = logging.DEBUG if what in self._said else level
        self._said.add(what)
        log.log(level, message, *args)

    def offer(self, send: trio.MemorySendChannel[Prompt], prompt: Prompt, sent: set[str]) -> None:
        if not wants_notification(prompt) or prompt.id in sent:
            return
        sent.add(prompt.id)
        if not self.pacing.arrive(prompt.id, self.clock.now()):
            self._once(
                "held",
                "more questions wait than %s may show at once; the rest are in your editor",
                self.program,
                level=logging.INFO,
            )
            return
        try:
            send.send_nowait(prompt)
        except trio.WouldBlock:
            self._once(
                "behind",
                "%s is %d notifications behind; not showing more until it catches up",
                self.program,
                NOTIFY_SEND_QUEUE,
            )

    def closed(self, prompt_id: str, sent: set[str]) -> None:
        sent.discard(prompt_id)
        self.pacing.leave(prompt_id)

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
