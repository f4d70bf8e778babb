"""The relay's queue: one lane per target key, typed into one message at a time.

Why a queue per key: two messages typed into one terminal at once would interleave,
and a ling (an agent in a terminal) reads its input in order, so messages to one
key are typed in submission order, one at a time, at least ``min_interval_s`` apart
(a ling needs a moment to take one prompt before the next lands on it).  Different
keys do not wait for each other.

For each message a lane:

1. makes the text safe with ``text.prepare`` (the relay never types unprepared
   text; a message too large or empty fails here, typing nothing);
2. waits for the rate limit (a deadline on the trio clock, not a poll);
3. calls ``target.check()`` (or, for a message taken up at once by an idle lane,
   starts from the state its sender has just checked: ``submit``'s ``seen``, so a
   turn checks its terminal once): a dead target fails the message at once (a
   tmux pane gone is looked for again first, relay/tmux.py; a pane found holding
   the approved agent is typed into, and its address is the result's); a target
   showing a dialog is held: checked again as soon as its screen changes where the
   target can say so (``target.Watchable``: tmux, Emacs buffers), and every ``hold_retry_s`` on a
   schedule, up to ``hold_attempts`` scheduled checks, then the message fails,
   untyped, because typing would answer the dialog; so is one whose input holds text
   the human typed and has not sent (``text.draft_in``, or the target's own
   ``draft``): pasted after it and submitted, the message and the human's
   half-written prompt would reach the agent as one prompt, sent before the human
   was done; and the ticket's ``agent``, the process the human approved as the
   ling's agent (core/ling.py ``verdict``), must be the leader of the terminal's
   foreground process group: while another program holds it (``sleep``, ``less``, a
   REPL, the shell) the message is held like a dialog; an agent that has exited,
   runs another program now, or a terminal that cannot say what holds its
   foreground, fails it at once, untyped;
4. types it with ``target.type_text``.

Every outcome is a ``DeliveryResult`` on the message's ``Ticket``, a failure with
its ``cause`` (``CAUSES``: the terminal gone, held until the relay gave up, the text
refused, an error, the relay stopped), which the Agora judges the receiver by
(core/dialogue.py ``FAILED_BECAUSE``); a hold names its cause too (``HOLDS``), so an
editor can show what holds a ling.  Nothing a target does ends a lane.  Lanes are
tasks in the nursery the ``Relay`` was given: a lane idle for ``idle_exit_s`` ends
(the next message starts a new one), and when the nursery is cancelled every ticket
still waiting is finished with "the relay stopped", so no waiter hangs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from hive_rpc.core.ling import HOLD, REFUSE, Agent, Place, Proc, register_again, restarted, verdict
from hive_rpc.core.refind import Refound
from hive_rpc.relay.line_discipline import reads_lines
from hive_rpc.relay.proc import process
from hive_rpc.relay.target import Changes, DeliveryError, Target, TargetState, Watchable
from hive_rpc.relay.text import dialog_in, draft_in, fits_terminal, prepare, starting_in

STOPPED = "the relay stopped before this message was typed"
GONE, HELD, REFUSED, ERROR, STOPPED_CAUSE = "gone", "held", "refused", "error", "stopped"
CAUSES = (GONE, HELD, REFUSED, ERROR, STOPPED_CAUSE)
"""Why a message failed: its terminal is gone (killed, closed, unreachable) or the
approved agent no longer holds it (exited, another program, a shell not approved);
it was held until the relay gave up; its text was refused (too large, empty, too
long for a terminal reading whole lines); the target failed while typing; the relay
stopped."""
HOLDS = ("foreground", "dialog", "starting", "draft")
"""What holds a message (``Ticket.hold_cause``): another program leads the terminal's
foreground; a dialog shows; the program is still starting; the human's unsent text."""
HOLD_RETRY_S = 2.0
"""How often a terminal holding a message is checked again on the relay's schedule.
A terminal that says when its screen changes (``Watchable``: tmux, Emacs buffers) is
also checked as soon as it has changed, so a hold that clears (the dialog answered,
the draft sent) is seen at once; the schedule is left for what shows no change on
screen (which process holds the foreground, in /proc) and for an Emacs package
older than ``hive/watchBuffer``, which cannot say.  (A Zellij pane is never held: its
CLI names no process, so the relay refuses it at the first check, see zellij.py.)"""
SETTLE_S = 0.05
"""A terminal that changed while a message was held is checked once its screen has
not changed for this long..."""
SETTLE_MAX_S = 0.2
"""...or once it has changed for this long without settling (a spinner)."""
HOLD_ATTEMPTS = 300
"""How many checks a message waits through while a dialog shows: 10 minutes at
``HOLD_RETRY_S``.  The dialog is the human's (Claude Code's permission dialog waits
for them with no time limit), and a human answers in minutes, not in the 30 s this
once was: a turn held longer failed, untyped, and a second such failure marked its
receiver absent from the dialogue, while it was only waiting for its human."""


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """How one message ended."""

    delivered: bool
    reason: str
    """Empty when delivered; else why not, in words a person can act on."""
    attempts: int
    """How many times the target was checked (0: the text was refused first): the
    first check, one every ``hold_retry_s`` while held, and one each time a watched
    terminal changed meanwhile; not the look taken as the watch begins.  The hold
    limit (``hold_attempts``) counts the checks on the schedule alone."""
    address: str | None
    """The target's new address when ``check`` re-resolved it, else None."""
    finished_at: float
    """Wall-clock time (``time.time()``) the outcome was decided."""
    agent: Agent | None = None
    """The ling's agent once a pending ``exec`` was seen (``Agent.pending_exec``):
    the identity its owner should keep; else None."""
    cause: str = ""
    """Empty when delivered; else one of ``CAUSES``."""
    place: Place | None = None
    """Where the pane typed into is (delivered only), for its owner to keep: a pane
    moved to another window keeps its id and changes its place."""
    refound: Refound | None = None
    """What the last check found when it looked for a gone pane again
    (``TargetState.refound``): with ``NEW``, the pane in its place the human may
    approve."""
    restarted: Proc | None = None
    """Not typed because the approved agent exited, and this new process of the same
    program holds the terminal (``core.ling.restarted``): the process the human may
    approve."""


@dataclass(eq=False)
class Ticket:
    """One submitted message; ``done`` is set once ``result`` is filled in."""

    key: str
    target: Target
    text: str
    agent: Agent | None = None
    """The process approved as the ling's agent: typed into only while it holds the
    target's foreground (None: nothing is typed)."""
    allow_shell: bool = False
    """The approved process may be a shell (the human said so)."""
    held: str | None = None
    """While a dialog on the target, its program still starting, or the human's
    unsent text in its input holds this message: why, in words for the waiting
    sender (``the terminal shows a 'Do you want to proceed?' prompt; it is typed once
    that is answered``, ``the human is typing in main.c (...)``)."""
    hold_cause: str | None = None
    """What holds it (one of ``HOLDS``) while ``held`` is set."""
    was_held: bool = False
    """It was held at some point before it was typed or failed."""
    held_changed: trio.Event = field(default_factory=trio.Event)
    """Set, and replaced by a new one, each time ``held`` takes a new reason (and set
    once the ticket is done), so the sender's side can report a hold as it begins or
    changes (a dialog answered, then the human typing)."""
    attempts: int = 0
    """How many times the target was checked so far (``DeliveryResult.attempts``)."""
    checked: trio.Event = field(default_factory=trio.Event)
    """Set, and replaced by a new one, after each check that holds the message (and
    once the ticket is done), so the sender's side can tell that a hold lasts: the
    Agora's ``relay/still-held``."""
    holding_checks: int = 0
    """The checks that held it, the look taken as a watch of the target begins
    included (which ``attempts`` does not count)."""
    done: trio.Event = field(default_factory=trio.Event)
    result: DeliveryResult | None = None
    seen: TargetState | None = None
    """What the sender's own check of the target has just shown, taken for the
    lane's first check when nothing was ahead of the message (``Relay.submit``)."""

    def hold(self, why: str, cause: str) -> None:
        """Held for ``why`` (``cause``: one of ``HOLDS``); ``held_changed`` fires when
        that is a new reason."""
        self.was_held = True
        self.holding_checks += 1
        if why != self.held:
            self.held, self.hold_cause = why, cause
            changed, self.held_changed = self.held_changed, trio.Event()
            changed.set()
        checked, self.checked = self.checked, trio.Event()
        checked.set()

    async def wait(self) -> DeliveryResult:
        """The result, once there is one."""
        await self.done.wait()
        assert self.result is not None
        return self.result

    def _finish(self, result: DeliveryResult) -> None:
        if self.result is None:
            self.result = result
            self.done.set()
            self.held_changed.set()  # whoever follows the holds: there are no more
            self.checked.set()


@dataclass(frozen=True, slots=True)
class RelayStatistics:
    lanes: int
    """Keys with a running lane."""
    queued: int
    """Messages submitted and not yet taken up by their lane."""


@dataclass(eq=False)
class _Lane:
    key: str
    send: trio.MemorySendChannel[Ticket]
    receive: trio.MemoryReceiveChannel[Ticket]
    next_allowed: float = -math.inf
    busy: bool = False
    """A message is being delivered (checked, held, typed)."""


class Relay:
    """Per-key delivery lanes living in ``nursery``."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        min_interval_s: float = 0.5,
        hold_retry_s: float = HOLD_RETRY_S,
        hold_attempts: int = HOLD_ATTEMPTS,
        idle_exit_s: float = 60.0,
        processes: Callable[[int], Proc | None] = process,
    ) -> None:
        if min_interval_s < 0 or hold_retry_s < 0 or idle_exit_s < 0:
            raise ValueError("intervals cannot be negative")
        if hold_attempts < 1:
            raise ValueError("hold_attempts must be at least 1")
        self._nursery = nursery
        self.min_interval_s = min_interval_s
        self.hold_retry_s = hold_retry_s
        self.hold_attempts = hold_attempts
        # A lane that ended keeps no rate-limit deadline, so it must not end before
        # that deadline has passed.
        self.idle_exit_s = max(idle_exit_s, min_interval_s)
        self._lanes: dict[str, _Lane] = {}
        self.processes = processes
        """What /proc says of a pid now (relay/proc.py ``process``)."""

    def submit(
        self,
        key: str,
        target: Target,
        text: str,
        *,
        agent: Agent | None,
        allow_shell: bool = False,
        seen: TargetState | None = None,
    ) -> Ticket:
        """Queue ``text`` for ``target`` behind earlier messages to ``key``; at once.
        It is typed only while ``agent`` holds the target's foreground.

        ``seen``: what ``target.check()`` returned to the caller just now.  When no
        message is ahead of this one and the rate limit does not make it wait, the
        lane takes it for its first check instead of checking again: nothing was
        typed into the terminal since.  Otherwise it is dropped."""
        ticket = Ticket(key=key, target=target, text=text, agent=agent, allow_shell=allow_shell)
        lane = self._lanes.get(key)
        if lane is None or (not lane.busy and lane.receive.statistics().current_buffer_used == 0):
            ticket.seen = seen
        if lane is None:
            send, receive = trio.open_memory_channel[Ticket](math.inf)
            lane = _Lane(key=key, send=send, receive=receive)
            try:
                self._nursery.start_soon(self._run_lane, lane)
            except RuntimeError:  # the nursery has closed: no lane can run
                ticket._finish(_failed(STOPPED, attempts=0, cause=STOPPED_CAUSE))
                return ticket
            self._lanes[key] = lane
        lane.send.send_nowait(ticket)
        return ticket

    async def deliver(
        self,
        key: str,
        target: Target,
        text: str,
        *,
        agent: Agent | None,
        allow_shell: bool = False,
    ) -> DeliveryResult:
        """Submit and wait for the result.  Cancelling the wait does not withdraw
        the message: it is still typed in its turn."""
        return await self.submit(key, target, text, agent=agent, allow_shell=allow_shell).wait()

    def statistics(self) -> RelayStatistics:
        return RelayStatistics(
            lanes=len(self._lanes),
            queued=sum(
                lane.receive.statistics().current_buffer_used for lane in self._lanes.values()
            ),
        )

    async def _run_lane(self, lane: _Lane) -> None:
        current: Ticket | None = None
        try:
            while True:
                with trio.move_on_after(self.idle_exit_s):
                    current = await lane.receive.receive()
                if current is None:
                    # Idle.  No checkpoint from here to the return, so no submit can
                    # slip a ticket into a lane that is going away.
                    if lane.receive.statistics().current_buffer_used == 0:
                        return
                    continue
                lane.busy = True
                current._finish(await self._deliver(lane, current))
                current = None
                lane.busy = False
        finally:
            if self._lanes.get(lane.key) is lane:
                del self._lanes[lane.key]
            stopped = _failed(STOPPED, attempts=0, cause=STOPPED_CAUSE)
            if current is not None:
                current._finish(stopped)
            while True:
                try:
                    lane.receive.receive_nowait()._finish(stopped)
                except (trio.WouldBlock, trio.ClosedResourceError, trio.EndOfChannel):
                    break
            lane.send.close()
            lane.receive.close()

    async def _deliver(self, lane: _Lane, ticket: Ticket) -> DeliveryResult:
        try:
            text = prepare(ticket.text)
        except ValueError as exc:
            return _failed(str(exc), attempts=0, cause=REFUSED)
        seen, ticket.seen = ticket.seen, None
        if lane.next_allowed > trio.current_time():
            seen = None  # seen before the wait: check again after it
        await trio.sleep_until(lane.next_allowed)
        address: str | None = None
        bound: Agent | None = None
        due = trio.current_time()  # when the check on the schedule is due
        scheduled = 1  # checks on the schedule so far (the first is one)
        look = False  # the look taken as the watch begins: not counted as a check
        changes: Changes | None = None
        async with contextlib.AsyncExitStack() as watching:
            try:
                while True:
                    if not look:
                        ticket.attempts += 1
                    look = False
                    state, seen = seen or await ticket.target.check(), None
                    address = state.address or address
                    if not state.alive:
                        reason = state.reason or f"the {ticket.target.kind} target is gone"
                        failed = _failed(reason, ticket.attempts, address, bound, cause=GONE)
                        return dataclasses.replace(failed, refound=state.refound)
                    agent = bound or ticket.agent
                    now = self.processes(agent.pid) if agent is not None else None
                    judged = verdict(
                        agent,
                        now,
                        state.foreground,
                        kind=ticket.target.kind,
                        name=ticket.key,
                        allow_shell=ticket.allow_shell,
                        no_foreground=state.no_foreground,
                    )
                    bound = judged.bound or bound
                    if judged.action == REFUSE:
                        failed = _failed(judged.reason, ticket.attempts, address, bound, cause=GONE)
                        return dataclasses.replace(
                            failed, restarted=restarted(agent, now, state.foreground)
                        )
                    dialog = dialog_in(state.tail, cursor_line=state.cursor_line)
                    starting = starting_in(state.command, state.tail)
                    draft = state.draft
                    if draft is None:
                        draft = draft_in(state.tail, cursor_line=state.cursor_line)
                    if judged.action == HOLD:
                        held, cause = judged.reason, "foreground"
                        why = judged.reason.rpartition("; it is typed once")[0] or judged.reason
                    elif dialog is not None:
                        held = f"the terminal shows {dialog}; it is typed once that is answered"
                        why, cause = f"the pane shows a dialog ({dialog})", "dialog"
                    elif starting is not None:
                        held = f"{starting}; it is typed once the program is ready"
                        why, cause = starting, "starting"
                    elif draft:
                        held = (
                            f"the human is typing in {ticket.key} (unsent text in its input); "
                            "it is typed once they send or clear it"
                        )
                        why = f"the human's unsent text stayed in {ticket.key}'s input"
                        cause = "draft"
                    else:
                        ticket.held = ticket.hold_cause = None
                        break
                    ticket.hold(held, cause)
                    if scheduled >= self.hold_attempts:
                        again = ""
                        if judged.action == HOLD and ticket.agent is not None:
                            again = f"; if the agent was restarted, {_again(ticket)}"
                        return _failed(
                            f"{why}; not typed into; tried {ticket.attempts} times{again}",
                            ticket.attempts,
                            address,
                            bound,
                            cause=HELD,
                        )
                    if changes is None and isinstance(ticket.target, Watchable):
                        # Follow the terminal from now on, and look once more, since
                        # a change before the watch began is not reported.
                        changes = await watching.enter_async_context(ticket.target.watch())
                        look = True
                        continue
                    due += self.hold_retry_s
                    if not await _changed_before(due, changes):
                        scheduled += 1
                # What the terminal takes whole: a program reading whole lines
                # gets at most 4,095 bytes, the kernel drops the rest (line_discipline.py).
                program = state.foreground
                whole = reads_lines(program.pid) if program is not None else None
                too_long = fits_terminal(text, reads_lines=whole)
                if too_long is not None:
                    return _failed(too_long, ticket.attempts, address, bound, cause=REFUSED)
                try:
                    await ticket.target.type_text(text)
                finally:
                    lane.next_allowed = trio.current_time() + self.min_interval_s
            except DeliveryError as exc:
                return _failed(exc.message, ticket.attempts, address, bound, cause=ERROR)
            except Exception as exc:  # a broken target must not end the lane
                why = f"unexpected error from the target: {exc!r}"
                return _failed(why, ticket.attempts, address, bound, cause=ERROR)
        return DeliveryResult(
            delivered=True,
            reason="",
            attempts=ticket.attempts,
            address=address,
            finished_at=time.time(),
            agent=bound,
            place=state.place,
            refound=state.refound,
        )


async def _changed_before(due: float, changes: Changes | None) -> bool:
    """Wait for the terminal to change (``changes``, where it can say so), and then
    for its screen to settle, or for ``due``, whichever comes first; True when the
    change came first.

    The screen has settled once it stayed unchanged for ``SETTLE_S`` (a program
    redraws in several writes: checked in the middle of one, a dialog half erased
    could pass for gone), or after ``SETTLE_MAX_S`` of changes (a spinner never
    settles)."""
    with trio.move_on_at(due):
        if changes is None:
            await trio.sleep_forever()
        else:
            await changes.changed()
        with trio.move_on_after(SETTLE_MAX_S):
            while True:
                with trio.move_on_after(SETTLE_S) as quiet:
                    await changes.changed()
                if quiet.cancelled_caught:
                    break
        return True
    return False


def _again(ticket: Ticket) -> str:
    return register_again(ticket.target.kind, ticket.key)


def _failed(
    reason: str,
    attempts: int,
    address: str | None = None,
    agent: Agent | None = None,
    *,
    cause: str,
) -> DeliveryResult:
    return DeliveryResult(
        delivered=False,
        reason=reason,
        attempts=attempts,
        address=address,
        finished_at=time.time(),
        agent=agent,
        cause=cause,
    )


__all__ = [
    "CAUSES",
    "HOLDS",
    "HOLD_ATTEMPTS",
    "HOLD_RETRY_S",
    "STOPPED",
    "DeliveryResult",
    "Relay",
    "RelayStatistics",
    "Ticket",
]
