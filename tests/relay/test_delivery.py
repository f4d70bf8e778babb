"""The relay's queue against FakeTarget, a scripted stand-in for a terminal defined in
this file: these are unit tests of the queue (order, rate limit, hold while a dialog
shows, failures, cancellation), on trio's autojump clock, so no test waits in real
time.  The real terminals are tested in test_tmux.py and test_zellij.py."""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable

import pytest
import trio
import trio.testing

from hive_rpc.core.ling import Agent, Proc
from hive_rpc.relay.delivery import STOPPED, Relay
from hive_rpc.relay.proc import process
from hive_rpc.relay.target import DeliveryError, TargetState


class FakeTarget:
    """A terminal whose state the test scripts: ``states`` is what successive
    ``check`` calls return (the last one repeats); ``type_text`` records the time
    and text, taking ``typing_s`` of (mock) time."""

    kind = "fake"

    def __init__(
        self,
        *states: TargetState,
        typing_s: float = 0.1,
        fail_typing: Exception | None = None,
        on_check: Callable[[int], None] | None = None,
    ) -> None:
        self.address = "fake:1"
        self.states = list(states) or [TargetState(alive=True, tail="ling> ", command="ling")]
        self.typing_s = typing_s
        self.fail_typing = fail_typing
        self.on_check = on_check
        self.checks = 0
        self.typed: list[tuple[float, str]] = []
        self.typing_now = 0
        self.most_at_once = 0

    async def check(self) -> TargetState:
        self.checks += 1
        if self.on_check is not None:
            self.on_check(self.checks)
        await trio.lowlevel.checkpoint()
        state = self.states[min(self.checks, len(self.states)) - 1]
        if state.alive and state.foreground is None and not state.no_foreground:
            # The approved agent holds the terminal unless the test says otherwise.
            state = dataclasses.replace(state, foreground=AGENT_PROC)
        return state

    async def type_text(self, text: str) -> None:
        self.typing_now += 1
        self.most_at_once = max(self.most_at_once, self.typing_now)
        try:
            await trio.sleep(self.typing_s)
            if self.fail_typing is not None:
                raise self.fail_typing
            self.typed.append((trio.current_time(), text))
        finally:
            self.typing_now -= 1


AGENT_PROC = process(os.getpid())
"""The fake terminals' approved agent: this test process, so /proc says it is alive."""
assert AGENT_PROC is not None
AGENT = Agent.of(AGENT_PROC)

ALIVE = TargetState(alive=True, tail="ling> ", command="ling")
DIALOG = TargetState(
    alive=True, tail="Bash command\n  make deploy\nDo you want to proceed?", command="claude"
)


async def test_one_key_is_typed_in_order_one_at_a_time(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, min_interval_s=0.5)
    target = FakeTarget()
    tickets = [relay.submit("ling-a", target, f"message {i}", agent=AGENT) for i in range(6)]
    results = [await t.wait() for t in tickets]
    assert all(r.delivered and r.reason == "" and r.attempts == 1 for r in results)
    assert [text for _, text in target.typed] == [f"message {i}" for i in range(6)]
    assert target.most_at_once == 1


async def test_one_key_is_typed_at_least_min_interval_apart(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, min_interval_s=0.5)
    target = FakeTarget(typing_s=0.01)
    tickets = [relay.submit("ling-a", target, f"m{i}", agent=AGENT) for i in range(4)]
    for t in tickets:
        await t.wait()
    times = [when for when, _ in target.typed]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap >= 0.5 for gap in gaps), gaps


async def test_different_keys_do_not_wait_for_each_other(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, min_interval_s=10.0)
    slow, quick = FakeTarget(typing_s=5.0), FakeTarget(typing_s=0.1)
    start = trio.current_time()
    first = relay.submit("slow", slow, "one", agent=AGENT)
    relay.submit("slow", slow, "two", agent=AGENT)
    result = await relay.deliver("quick", quick, "hello", agent=AGENT)
    assert result.delivered
    assert trio.current_time() - start < 1.0
    assert not first.done.is_set()


async def test_a_dialog_holds_the_message_until_it_is_gone(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, hold_retry_s=2.0, hold_attempts=15)
    target = FakeTarget(DIALOG, DIALOG, DIALOG, ALIVE)
    result = await relay.deliver("ling-a", target, "your turn", agent=AGENT)
    assert result.delivered
    assert result.attempts == 4
    assert target.checks == 4
    assert [text for _, text in target.typed] == ["your turn"]


async def test_a_dialog_that_stays_fails_the_message_untyped(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, hold_retry_s=2.0, hold_attempts=3)
    target = FakeTarget(DIALOG)
    start = trio.current_time()
    result = await relay.deliver("ling-a", target, "your turn", agent=AGENT)
    assert not result.delivered
    assert result.reason == (
        "the pane shows a dialog (a 'Do you want to proceed?' prompt); not typed into; "
        "tried 3 times"
    )
    assert result.attempts == 3
    assert target.typed == []
    assert trio.current_time() - start == pytest.approx(4.0)  # two waits between three checks


async def test_by_default_a_dialog_holds_for_as_long_as_a_human_takes(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """Claude Code's permission dialog waits for its human; so does the relay, with
    its defaults, for 10 minutes (it gave up after 30 s once), saying why meanwhile."""
    relay = Relay(nursery)
    answered = FakeTarget(*[DIALOG] * 280, ALIVE)  # the human answers after 9+ minutes
    ticket = relay.submit("ling-a", answered, "your turn", agent=AGENT)
    await trio.sleep(60)
    assert ticket.held == (
        "the terminal shows a 'Do you want to proceed?' prompt; it is typed once that is answered"
    )
    result = await ticket.wait()
    assert result.delivered, result
    assert ticket.held is None
    assert trio.current_time() == pytest.approx(560.0, abs=1)  # 280 checks, 2 s apart
    start = trio.current_time()
    result = await relay.deliver("ling-b", FakeTarget(DIALOG), "your turn", agent=AGENT)
    assert not result.delivered
    assert result.attempts == 300
    assert trio.current_time() - start == pytest.approx(598.0, abs=1)


async def test_claude_code_starting_holds_the_message_until_its_prompt_shows(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    starting = TargetState(alive=True, tail="", command="claude")
    ready = TargetState(alive=True, tail="\u276f \n  ? for shortcuts", command="claude")
    relay = Relay(nursery)
    target = FakeTarget(starting, starting, ready)
    ticket = relay.submit("ling-a", target, "your turn", agent=AGENT)
    await trio.sleep(1)
    assert ticket.held == (
        "Claude Code shows no input box yet (starting); it is typed once the program is ready"
    )
    result = await ticket.wait()
    assert result.delivered
    assert result.attempts == 3
    assert [text for _, text in target.typed] == ["your turn"]
    relay = Relay(nursery, hold_attempts=2)
    result = await relay.deliver("ling-b", FakeTarget(starting), "your turn", agent=AGENT)
    assert result.reason == (
        "Claude Code shows no input box yet (starting); not typed into; tried 2 times"
    )


IDLE_BOX = "\u2500\u2500\u2500\n\u276f\u00a0\n\u2500\u2500\u2500\n  ? for shortcuts"
DRAFTING = TargetState(alive=True, tail=IDLE_BOX.replace("\u00a0", "\u00a0half a prompt"),
                       command="claude")  # fmt: skip
SENT = TargetState(alive=True, tail=IDLE_BOX, command="claude")
TYPING = (
    "the human is typing in ling-a (unsent text in its input); it is typed once they send "
    "or clear it"
)


async def test_the_humans_draft_holds_the_message_until_the_input_is_empty(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """Pasted after a half-typed prompt and submitted, the message and the draft would
    reach the agent as one prompt: held instead, saying so, then typed once the human
    has sent (or cleared) their text; nothing is typed meanwhile."""
    relay = Relay(nursery)
    target = FakeTarget(DRAFTING, DRAFTING, DRAFTING, SENT)
    ticket = relay.submit("ling-a", target, "your turn", agent=AGENT)
    changed = ticket.held_changed
    await trio.sleep(1)
    assert ticket.held == TYPING
    assert changed.is_set()  # whoever reports holds is woken once per new reason
    assert not ticket.held_changed.is_set()
    assert target.typed == []
    result = await ticket.wait()
    assert result.delivered
    assert result.attempts == 4
    assert [text for _, text in target.typed] == ["your turn"]
    assert ticket.held_changed.is_set()  # done: no more holds to wait for


async def test_a_draft_that_stays_fails_the_message_at_the_hold_limit(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    result = await Relay(nursery, hold_attempts=3).deliver(
        "ling-a", FakeTarget(DRAFTING), "x", agent=AGENT
    )
    assert not result.delivered
    assert result.reason == (
        "the human's unsent text stayed in ling-a's input; not typed into; tried 3 times"
    )


async def test_a_target_that_reads_its_own_input_line_is_believed(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """A comint buffer says what follows its process mark (``draft``); the screen's
    last lines then do not count."""
    own = TargetState(alive=True, tail="$ ", command="ling", draft="ls -")
    empty = TargetState(alive=True, tail=DRAFTING.tail, command="ling", draft="")
    relay = Relay(nursery)
    target = FakeTarget(own, empty)
    ticket = relay.submit("ling-a", target, "your turn", agent=AGENT)
    await trio.sleep(1)
    assert ticket.held == TYPING
    assert (await ticket.wait()).delivered


async def test_a_hold_that_changes_reason_wakes_its_watcher_again(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget(DIALOG, DIALOG, DRAFTING, DRAFTING, SENT)
    ticket = relay.submit("ling-a", target, "your turn", agent=AGENT)
    seen = []
    while not ticket.done.is_set():
        changed = ticket.held_changed
        seen.append(ticket.held)
        await changed.wait()
    assert seen == [
        None,
        "the terminal shows a 'Do you want to proceed?' prompt; it is typed once that is answered",
        TYPING,
    ]


async def test_a_dead_target_fails_at_once_without_retry(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget(TargetState(alive=False, reason="tmux pane %3 is gone: can't find pane"))
    result = await relay.deliver("ling-a", target, "hello", agent=AGENT)
    assert not result.delivered
    assert result.reason == "tmux pane %3 is gone: can't find pane"
    assert result.attempts == 1
    assert target.checks == 1
    assert target.typed == []


async def test_a_dead_target_without_reason_still_says_why(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    result = await relay.deliver("k", FakeTarget(TargetState(alive=False)), "hello", agent=AGENT)
    assert result.reason == "the fake target is gone"


async def test_a_target_that_cannot_tell_its_foreground_is_not_typed_into(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """A terminal that does not say which process holds its foreground (a Zellij
    pane, an older Emacs package) may be showing anything: nothing is typed, not
    even with --allow-shell, since the approved process cannot be checked."""
    relay = Relay(nursery)
    unknown = TargetState(alive=True, tail="$ ", no_foreground="an old Emacs package")
    for allow_shell in (False, True):
        target = FakeTarget(unknown)
        result = await relay.deliver(
            "k", target, "ok\ntouch /tmp/owned", agent=AGENT, allow_shell=allow_shell
        )
        assert not result.delivered
        assert target.typed == []
        assert result.attempts == 1
        assert "does not say which process holds its foreground (an old Emacs package)" in (
            result.reason
        )


async def test_a_ling_without_a_recorded_agent_is_not_typed_into(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    target = FakeTarget()
    result = await Relay(nursery).deliver("main.kid", target, "hello", agent=None)
    assert not result.delivered
    assert target.typed == []
    assert result.reason.startswith(
        "the hub does not know which program is the agent in ling main.kid's terminal"
    )


OTHER = Proc(pid=AGENT.pid + 1, start=AGENT.start, exe="/usr/bin/sleep", comm="sleep")


async def test_another_foreground_holds_the_message_until_the_agent_is_back(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """The approved agent alive but not in the foreground (stopped, a job of the
    shell it ran from in front of it): held, then typed once it is back."""
    away = TargetState(alive=True, tail="$ ", command="sleep", foreground=OTHER)
    target = FakeTarget(away, away, ALIVE)
    relay = Relay(nursery, hold_retry_s=2.0, hold_attempts=5)
    ticket = relay.submit("k", target, "hello", agent=AGENT)
    await ticket.held_changed.wait()
    assert ticket.held == (
        f"the agent registered here ({AGENT.describe()}) is not in the terminal's "
        f"foreground now: sleep runs there (pid {OTHER.pid}); it is typed once the agent "
        "is back"
    )
    result = await ticket.wait()
    assert result.delivered, result.reason
    assert result.attempts == 3
    assert [text for _, text in target.typed] == ["hello"]


async def test_an_agent_that_is_gone_or_changed_fails_at_once(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    gone = Agent(pid=AGENT.pid, start=AGENT.start + 1, exe=AGENT.exe, comm="claude")
    changed = dataclasses.replace(AGENT, exe="/usr/bin/not-the-agent")
    relay = Relay(nursery, hold_attempts=50)
    for agent, why in ((gone, "has exited"), (changed, f"runs another program now ({AGENT.exe})")):
        target = FakeTarget()
        result = await relay.deliver("k", target, "hello", agent=agent)
        assert not result.delivered
        assert result.attempts == 1
        assert f"the agent registered here ({agent.describe()}) {why}" in result.reason
        assert target.typed == []


async def test_a_pending_exec_is_held_then_bound_to_the_program_it_runs(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """Registered by the process that then execs the agent (hive-rpc spawn): held
    while it still runs what registered it, then typed, and the result carries the
    agent's identity, with what it runs now, for the owner to keep."""
    before = dataclasses.replace(AGENT_PROC, cmdline="python -m hive_rpc.cli.spawned_pane")
    registrar = Agent.of(before, pending_exec=True)
    runs: list[Proc] = [before, AGENT_PROC]
    relay = Relay(
        nursery, hold_retry_s=1.0, processes=lambda pid: runs.pop(0) if runs else AGENT_PROC
    )
    target = FakeTarget()
    result = await relay.deliver("k", target, "hello", agent=registrar)
    assert result.delivered, result.reason
    assert result.attempts == 2
    assert result.agent == AGENT
    assert [text for _, text in target.typed] == ["hello"]


async def test_a_pending_exec_through_a_launcher_binds_the_program_it_starts(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    """``spawn -- env VAR=1 claude``: the process execs ``env``, which execs the agent.
    ``env`` is never taken for the agent (a real Claude Code's turn failed: "the agent
    registered here (env, ...) runs another program now (claude.exe)")."""
    before = dataclasses.replace(AGENT_PROC, cmdline="python -m hive_rpc.cli.spawned_pane")
    env = Proc(AGENT.pid, AGENT.start, "/usr/bin/env", "env", "env VAR=1 claude")
    runs: list[Proc] = [before, env, env]
    relay = Relay(
        nursery, hold_retry_s=1.0, processes=lambda pid: runs.pop(0) if runs else AGENT_PROC
    )
    target = FakeTarget()
    ticket = relay.submit("k", target, "hello", agent=Agent.of(before, pending_exec=True))
    result = await ticket.wait()
    assert result.delivered, result.reason
    assert result.attempts == 4
    assert result.agent == AGENT
    assert [text for _, text in target.typed] == ["hello"]


async def test_too_large_text_fails_without_touching_the_target(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget()
    result = await relay.deliver("ling-a", target, "x" * 1_000_000, agent=AGENT)
    assert not result.delivered
    assert "1,000,000 bytes" in result.reason
    assert "65,536 bytes" in result.reason
    assert result.attempts == 0
    assert target.checks == 0
    assert target.typed == []


async def test_empty_text_fails_without_touching_the_target(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget()
    result = await relay.deliver("ling-a", target, "\x1b[2J \n", agent=AGENT)
    assert not result.delivered
    assert result.reason.startswith("nothing to deliver")
    assert target.checks == 0


async def test_the_relay_types_only_prepared_text(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget()
    result = await relay.deliver(
        "k", target, "a\x1b]0;pwned\x07b\rc\x1b[201~d\x00\u202ee  ", agent=AGENT
    )
    assert result.delivered
    assert [text for _, text in target.typed] == ["ab\ncde"]


async def test_a_typing_error_is_reported_and_the_lane_goes_on(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    broken = FakeTarget(fail_typing=DeliveryError("tmux paste-buffer failed: no space"))
    result = await relay.deliver("k", broken, "one", agent=AGENT)
    assert not result.delivered
    assert result.reason == "tmux paste-buffer failed: no space"
    assert result.attempts == 1

    weird = FakeTarget(fail_typing=RuntimeError("boom"))
    result = await relay.deliver("k", weird, "two", agent=AGENT)
    assert not result.delivered
    assert "RuntimeError('boom')" in result.reason

    fine = FakeTarget()
    assert (await relay.deliver("k", fine, "three", agent=AGENT)).delivered


async def test_a_re_resolved_address_is_reported(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget(TargetState(alive=True, tail="> ", address="%7", command="ling"))
    result = await relay.deliver("k", target, "hi", agent=AGENT)
    assert result.delivered
    assert result.address == "%7"
    assert (await relay.deliver("k", FakeTarget(), "again", agent=AGENT)).address is None


async def test_an_idle_lane_ends_and_a_new_message_starts_another(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery, idle_exit_s=30.0)
    target = FakeTarget()
    await relay.deliver("k", target, "one", agent=AGENT)
    assert relay.statistics().lanes == 1
    await trio.sleep(31.0)
    assert relay.statistics().lanes == 0
    assert (await relay.deliver("k", target, "two", agent=AGENT)).delivered
    assert [text for _, text in target.typed] == ["one", "two"]


async def test_statistics_count_lanes_and_queued_messages(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget(typing_s=1.0)
    tickets = [relay.submit("a", target, str(i), agent=AGENT) for i in range(3)]
    relay.submit("b", FakeTarget(), "x", agent=AGENT)
    await trio.testing.wait_all_tasks_blocked()
    stats = relay.statistics()
    assert stats.lanes == 2
    assert stats.queued == 2  # lane a took "0"; "1" and "2" wait
    for t in tickets:
        await t.wait()


async def test_cancelling_the_nursery_finishes_every_ticket(
    autojump_clock: trio.testing.MockClock,
) -> None:
    target = FakeTarget(DIALOG)  # holds the first message
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery, hold_retry_s=2.0, hold_attempts=100)
        held = relay.submit("k", target, "first", agent=AGENT)
        queued = [relay.submit("k", target, f"later {i}", agent=AGENT) for i in range(3)]
        other = relay.submit("other", FakeTarget(DIALOG), "elsewhere", agent=AGENT)
        await trio.sleep(5.0)
        nursery.cancel_scope.cancel()
    for ticket in [held, *queued, other]:
        assert ticket.done.is_set()
        assert ticket.result is not None
        assert not ticket.result.delivered
        assert ticket.result.reason == STOPPED
    assert target.typed == []
    assert relay.statistics().lanes == 0

    late = relay.submit("k", target, "after the end", agent=AGENT)  # the nursery has closed
    assert late.done.is_set()
    assert late.result is not None
    assert late.result.reason == STOPPED


async def test_a_waiter_cancelled_does_not_withdraw_the_message(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    target = FakeTarget(DIALOG, ALIVE)
    with trio.move_on_after(0.5):
        await relay.deliver("k", target, "still sent", agent=AGENT)
    await trio.sleep(5.0)
    assert [text for _, text in target.typed] == ["still sent"]


async def test_bad_settings_are_refused(nursery: trio.Nursery) -> None:
    with pytest.raises(ValueError, match="hold_attempts"):
        Relay(nursery, hold_attempts=0)
    with pytest.raises(ValueError, match="negative"):
        Relay(nursery, min_interval_s=-1)


STARTING = TargetState(alive=True, tail="", command="claude")
AWAY = TargetState(alive=True, tail="$ ", command="sleep", foreground=OTHER)


@pytest.mark.parametrize(
    ("screen", "hold"),
    [(DIALOG, "dialog"), (DRAFTING, "draft"), (STARTING, "starting"), (AWAY, "foreground")],
)
async def test_a_hold_says_what_holds_it_and_its_failure_says_held(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock, screen: TargetState, hold: str
) -> None:
    """Issue 27, item 10: an editor shows what holds a ling (``hold_cause``), and the
    Agora judges the receiver by why its message failed (``cause``)."""
    ticket = Relay(nursery, hold_attempts=3).submit("k", FakeTarget(screen), "x", agent=AGENT)
    await ticket.held_changed.wait()
    assert (ticket.hold_cause, ticket.was_held) == (hold, True)
    result = await ticket.wait()
    assert (result.delivered, result.cause) == (False, "held")


async def test_every_failure_says_its_cause(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    relay = Relay(nursery)
    gone_agent = Agent(pid=AGENT.pid, start=AGENT.start + 1, exe=AGENT.exe, comm="claude")
    dead = FakeTarget(TargetState(alive=False, reason="tmux pane %3 is gone"))
    cases = [
        (dead, "hello", AGENT, "gone"),  # the terminal is gone
        (FakeTarget(), "hello", gone_agent, "gone"),  # the approved agent exited
        (FakeTarget(), "x" * 1_000_000, AGENT, "refused"),
        (FakeTarget(fail_typing=DeliveryError("tmux paste-buffer failed")), "hi", AGENT, "error"),
    ]
    for target, text, agent, cause in cases:
        result = await relay.deliver("k", target, text, agent=agent)
        assert (result.delivered, result.cause) == (False, cause), result
    ok = await relay.deliver("k", FakeTarget(), "fine", agent=AGENT)
    assert (ok.delivered, ok.cause) == (True, "")
