"""TmuxTarget and the Relay against a real tmux, on a private tmux server (``tmux -S``
in a temp dir), typing into scripted_ling.py: a program in raw mode that records
every byte it receives.  tmux gives no event when a pane has read its input, so the
tests poll the ling's record file, briefly and always inside ``fail_after``; nothing
asserts on how long anything took."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
import trio

from hive_rpc.agora import open_agora
from hive_rpc.core.ling import Agent
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.target import DeliveryError, TargetState
from hive_rpc.relay.text import dialog_in, draft_in, prepare
from hive_rpc.relay.tmux import TmuxTarget, find_tmux
from hive_rpc.store.memory import MemoryStore

pytestmark = pytest.mark.skipif(
    find_tmux() is None, reason="tmux is not installed; these tests drive a real tmux"
)

LING = Path(__file__).with_name("scripted_ling.py")
START = b"\x1b[200~"
END = b"\x1b[201~"
T = TypeVar("T")


def pasted(text: str) -> bytes:
    """What the ling receives for ``text``: one bracketed paste (Enter ends it)."""
    return START + text.encode("utf-8") + END


async def until(what: str, probe: Callable[[], Awaitable[T | None]]) -> T:
    """Poll ``probe`` until it returns something; fail, saying ``what``, after 10 s."""
    try:
        with trio.fail_after(10):
            while True:
                found = await probe()
                if found is not None:
                    return found
                await trio.sleep(0.02)
    except trio.TooSlowError:
        pytest.fail(f"gave up waiting for {what}")


@dataclass
class Tmux:
    socket: str
    dir: Path

    async def run(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        done = await trio.run_process(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            capture_stdout=True,
            capture_stderr=True,
            env=env,
        )
        return done.stdout.decode().strip()

    async def ling(self, name: str, *, dialog: bool = False) -> Ling:
        record = self.dir / f"{name}.jsonl"
        flag = self.dir / f"{name}.dialog"
        if dialog:
            flag.touch()
        pane = await self.run(
            "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name, "-x", "200", "-y", "50",
            sys.executable, str(LING), str(record), str(flag),
        )  # fmt: skip
        ling = Ling(tmux=self, name=name, pane=pane, record=record, dialog_flag=flag)
        await until(f"ling {name} to start", ling.ready)
        return ling


@dataclass
class Ling:
    tmux: Tmux
    name: str
    pane: str
    record: Path
    dialog_flag: Path

    def target(self, address: str | None = None) -> TmuxTarget:
        return TmuxTarget(address or self.pane, socket=self.tmux.socket)

    async def agent(self) -> Agent:
        """The scripted ling's process, as registration records it: the approved agent."""
        state = await self.target().check()
        assert state.foreground is not None, state
        return Agent.of(state.foreground)

    def entries(self) -> list[dict[str, object]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def received(self) -> list[bytes]:
        return [bytes.fromhex(str(e["raw"])) for e in self.entries() if "raw" in e]

    async def ready(self) -> bool | None:
        return True if any(e.get("ready") for e in self.entries()) else None

    async def wait_for(self, count: int) -> list[bytes]:
        async def enough() -> list[bytes] | None:
            got = self.received()
            return got if len(got) >= count else None

        return await until(f"{count} submissions to ling {self.name}", enough)


async def shell_of(target: TmuxTarget) -> Agent:
    """The shell a pane runs, as ``--allow-shell`` approves it."""
    state = await target.check()
    assert state.root is not None, state
    return Agent.of(state.root)


@pytest.fixture
async def tmux(short_tmp: Path) -> AsyncIterator[Tmux]:
    """A private tmux server; a keeper session keeps it up when a test kills a ling."""
    server = Tmux(socket=str(short_tmp / "tmux.sock"), dir=short_tmp)
    await server.run(
        "new-session", "-d", "-s", "keeper", sys.executable, "-c", "import time; time.sleep(600)"
    )
    try:
        yield server
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await trio.run_process(
                ["tmux", "-S", server.socket, "kill-server"],
                check=False,
                capture_stderr=True,
            )


async def test_messages_arrive_once_intact_in_order_as_bracketed_pastes(tmux: Tmux) -> None:
    ling = await tmux.ling("order")
    messages = [
        "first",
        "-n looks like an option",
        "two lines\nof one message",
        "Grüße, 日本, 🐝 and\ttab",
        "last",
    ]
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery, min_interval_s=0.05)
        target = ling.target()
        for text in messages:
            relay.submit("order", target, text, agent=await ling.agent())
        received = await ling.wait_for(len(messages))
        nursery.cancel_scope.cancel()
    # "last" arrived last, so everything before it has arrived: exactly once, in order.
    assert received == [pasted(text) for text in messages]


async def test_hostile_messages_arrive_inert(tmux: Tmux) -> None:
    ling = await tmux.ling("hostile")
    hostile = (
        "title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H cr\r\n"
        "end-paste\x1b[201~ bare[201~ nul\x00 bell\x07 bidi\u202eevil\u202c c1\x9b31m done"
    )
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery)
        result = await relay.deliver("hostile", ling.target(), hostile, agent=await ling.agent())
        nursery.cancel_scope.cancel()
    assert result.delivered, result.reason
    [raw] = await ling.wait_for(1)
    assert raw.startswith(START)
    assert raw.endswith(END)
    inner = raw[len(START) : -len(END)]
    assert inner == prepare(hostile).encode("utf-8")
    assert b"\x1b" not in inner
    assert b"\r" not in inner
    assert b"[201~" not in inner
    assert not [b for b in inner if b < 0x20 and b not in b"\n\t"]
    assert "\u202e".encode() not in inner
    assert b"\xc2\x9b" not in inner  # the 8-bit CSI, UTF-8 encoded


async def test_a_megabyte_is_refused_and_nothing_is_typed(tmux: Tmux) -> None:
    ling = await tmux.ling("big")
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery, min_interval_s=0.05)
        refused = await relay.deliver(
            "big", ling.target(), "x" * 1_048_576, agent=await ling.agent()
        )
        sentinel = await relay.deliver("big", ling.target(), "sentinel", agent=await ling.agent())
        nursery.cancel_scope.cancel()
    assert not refused.delivered
    assert "1,048,576 bytes" in refused.reason
    assert "65,536 bytes" in refused.reason
    assert refused.attempts == 0
    assert sentinel.delivered
    assert await ling.wait_for(1) == [pasted("sentinel")]


class WatchedTarget:
    """A TmuxTarget that signals when a check has seen a dialog."""

    kind = "tmux"

    def __init__(self, inner: TmuxTarget) -> None:
        self.inner = inner
        self.address = inner.address
        self.saw_dialog = trio.Event()

    async def check(self) -> TargetState:
        state = await self.inner.check()
        if dialog_in(state.tail) is not None:
            self.saw_dialog.set()
        return state

    async def type_text(self, text: str) -> None:
        await self.inner.type_text(text)


async def test_a_pane_showing_a_dialog_is_not_typed_into(tmux: Tmux) -> None:
    ling = await tmux.ling("dialog", dialog=True)
    target = ling.target()

    async def dialog_shown() -> str | None:
        return dialog_in((await target.check()).tail)

    assert await until("the ling's dialog", dialog_shown) == "a yes/no question"

    async with trio.open_nursery() as nursery:
        impatient = Relay(nursery, hold_retry_s=0.05, hold_attempts=3)
        held = await impatient.deliver(
            "dialog", target, "do not answer the dialog", agent=await ling.agent()
        )
        nursery.cancel_scope.cancel()
    assert not held.delivered
    assert held.reason == (
        "the pane shows a dialog (a yes/no question); not typed into; tried 3 times"
    )
    assert held.attempts == 3

    watched = WatchedTarget(target)
    async with trio.open_nursery() as nursery:
        patient = Relay(nursery, hold_retry_s=0.05, hold_attempts=400)
        ticket = patient.submit("dialog", watched, "your turn", agent=await ling.agent())
        await watched.saw_dialog.wait()
        ling.dialog_flag.unlink()  # the ling erases its dialog line
        result = await ticket.wait()
        nursery.cancel_scope.cancel()
    assert result.delivered, result.reason
    assert result.attempts >= 2
    assert await ling.wait_for(1) == [pasted("your turn")]


async def test_a_killed_pane_is_not_alive(tmux: Tmux) -> None:
    ling = await tmux.ling("killed")
    target = ling.target()
    assert (await target.check()).alive
    agent = await ling.agent()
    await tmux.run("kill-pane", "-t", ling.pane)
    state = await target.check()
    assert not state.alive
    assert state.reason.startswith(f"tmux pane {ling.pane} is gone: ")
    assert "can't find pane" in state.reason
    async with trio.open_nursery() as nursery:
        result = await Relay(nursery).deliver("killed", target, "anyone there?", agent=agent)
        nursery.cancel_scope.cancel()
    assert not result.delivered
    assert result.reason == state.reason
    assert result.attempts == 1


async def test_a_pane_whose_program_exited_is_not_alive(tmux: Tmux) -> None:
    ling = await tmux.ling("exited")
    await tmux.run("set-option", "-w", "-t", ling.pane, "remain-on-exit", "on")
    pid = int(await tmux.run("display-message", "-p", "-t", ling.pane, "#{pane_pid}"))
    os.kill(pid, signal.SIGTERM)
    target = ling.target()

    async def dead() -> TargetState | None:
        state = await target.check()
        return None if state.alive else state

    state = await until("the ling's pane to die", dead)
    assert state.reason == f"the program in tmux pane {ling.pane} has exited (the pane is dead)"


async def test_a_target_spec_is_kept_and_typed_into_the_pane_it_names(tmux: Tmux) -> None:
    ling = await tmux.ling("spec")
    target = ling.target("spec:0.0")
    state = await target.check()
    assert state.alive
    assert state.address is None  # nothing for the owner to pin
    assert target.address == "spec:0.0"
    assert target.pane == ling.pane
    assert "ling> " in state.tail

    fresh = ling.target("spec:0.0")
    async with trio.open_nursery() as nursery:
        result = await Relay(nursery).deliver("spec", fresh, "by name", agent=await ling.agent())
        nursery.cancel_scope.cancel()
    assert result.delivered
    assert result.address is None
    assert await ling.wait_for(1) == [pasted("by name")]


async def test_a_stale_target_spec_is_not_taken_for_another_pane(tmux: Tmux) -> None:
    # tmux's display-message falls back to some other pane for "stale:0.5"; typing
    # there would reach the wrong ling.
    ling = await tmux.ling("stale")
    for spec in ("stale:0.5", "stale:9", "nosuch:0.0"):
        target = ling.target(spec)
        state = await target.check()
        assert not state.alive, spec
        assert state.reason.startswith(f"tmux pane {spec} is gone: can't find ")
        assert target.address == spec
    assert ling.received() == []


async def test_typing_into_a_missing_pane_raises_delivery_error(tmux: Tmux) -> None:
    target = TmuxTarget("%9999", socket=tmux.socket)
    with pytest.raises(
        DeliveryError, match=r"tmux paste-buffer failed for %9999: .*can't find pane"
    ):
        await target.type_text("nobody home")
    state = await target.check()
    assert not state.alive
    assert "can't find pane" in state.reason


async def test_no_server_is_not_alive(short_tmp: Path) -> None:
    state = await TmuxTarget("%0", socket=str(short_tmp / "nothing.sock")).check()
    assert not state.alive
    assert state.reason.startswith("tmux pane %0 is gone: ")


def test_an_empty_address_is_refused() -> None:
    with pytest.raises(ValueError, match="pane id"):
        TmuxTarget("  ")


async def test_a_ling_registered_by_name_follows_its_window_when_it_is_recreated(
    tmux: Tmux,
) -> None:
    """Issue 14: a ling registered as ``work:w.0`` was pinned to the pane id its first
    delivery found, so once the window was recreated every delivery failed with "pane
    %N is gone".  The name is kept, and resolved again at each delivery.  The new
    window runs a new process, which no one approved (issue 26): nothing is typed
    until the human registers it again, and the refusal says how."""
    await tmux.run("new-session", "-d", "-s", "work", "-n", "other", "sleep", "600")

    async def window(tag: str) -> Ling:
        record, flag = tmux.dir / f"{tag}.jsonl", tmux.dir / f"{tag}.dialog"
        pane = await tmux.run(
            "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "work:", "-n", "w",
            sys.executable, str(LING), str(record), str(flag),
        )  # fmt: skip
        ling = Ling(tmux=tmux, name=tag, pane=pane, record=record, dialog_flag=flag)
        await until(f"ling {tag} to start", ling.ready)
        return ling

    first = await window("first")
    address = f"work:w.0@{tmux.socket}"
    async with trio.open_nursery() as nursery:
        agora = await open_agora(
            MemoryStore(), time.time, DeliveryPeers(), nursery,
            relay=Relay(nursery, min_interval_s=0.05),
        )  # fmt: skip
        await agora.register("main.parent", "tmux", address, owner=True)
        one = await agora.answer("main.parent", "to the first window", None)
        assert one["delivery"]["state"] == "delivered", one
        assert await first.wait_for(1) == [pasted("[ANSWER from main] to the first window")]

        await tmux.run("kill-window", "-t", "work:w")
        second = await window("second")
        assert second.pane != first.pane
        refused = await agora.answer("main.parent", "to the new agent", None)
        assert refused["delivery"]["state"] == "failed", refused
        assert "has exited" in refused["delivery"]["reason"]
        assert "`hive-rpc ling register main.parent --tmux`" in refused["delivery"]["reason"]
        await agora.register("main.parent", "tmux", address, owner=True)
        two = await agora.answer("main.parent", "to the new window", None)
        assert two["delivery"]["state"] == "delivered", two
        assert await second.wait_for(1) == [pasted("[ANSWER from main] to the new window")]
        (ling,) = await agora.lings()
        assert ling["address"] == address  # still the name, not a pane id
        nursery.cancel_scope.cancel()


async def test_an_answered_dialog_above_the_prompt_does_not_hold_the_relay(tmux: Tmux) -> None:
    """Issue 14: a (y/n) already answered, still on screen above the program's prompt,
    held every message (15 tries, then failed).  Only the cursor's line (or, when it is
    empty, the last lines above it) can be a dialog waiting for an answer."""
    record, flag = tmux.dir / "answered.jsonl", tmux.dir / "answered.dialog"
    script = (
        "printf 'Allow this action? (y/n) y\\nok, allowed\\n'; "
        f"exec {sys.executable} {LING} {record} {flag}"
    )
    pane = await tmux.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "answered", "-x", "200", "-y", "50",
        "sh", "-c", script,
    )  # fmt: skip
    ling = Ling(tmux=tmux, name="answered", pane=pane, record=record, dialog_flag=flag)
    await until("ling answered to start", ling.ready)
    target = ling.target()
    state = await target.check()
    assert "Allow this action? (y/n) y" in state.tail
    assert state.cursor_line is not None
    assert state.tail.split("\n")[state.cursor_line] == "ling> "
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery, hold_retry_s=0.05, hold_attempts=3)
        result = await relay.deliver(
            "answered", target, "past the answered dialog", agent=await ling.agent()
        )
        nursery.cancel_scope.cancel()
    assert result.delivered, result.reason
    assert result.attempts == 1
    assert await ling.wait_for(1) == [pasted("past the answered dialog")]

    # The same dialog, unanswered, on the cursor's line: held.
    ling.dialog_flag.touch()

    async def dialog_shown() -> str | None:
        found = await target.check()
        return dialog_in(found.tail, cursor_line=found.cursor_line)

    assert await until("the ling's dialog", dialog_shown) == "a yes/no question"
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery, hold_retry_s=0.05, hold_attempts=3)
        held = await relay.deliver(
            "answered", target, "not into the dialog", agent=await ling.agent()
        )
        nursery.cancel_scope.cancel()
    assert not held.delivered
    assert "a yes/no question" in held.reason


async def test_a_draft_at_a_shell_prompt_holds_the_relay_and_stays(tmux: Tmux) -> None:
    """Issue 19: a real bash in a pane (a ling registered with --allow-shell), where the
    human has typed half a command: the relay reads the cursor's line after the prompt,
    holds the message and types nothing; once the human clears the line it is typed.
    The draft is never touched."""
    env = "env -i TERM=xterm PS1='me@host:~$ ' bash --norc --noprofile"
    pane = await tmux.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "shell", "-x", "120", "-y", "30",
        "sh", "-c", f"exec {env}",
    )  # fmt: skip
    target = TmuxTarget(pane, socket=tmux.socket)

    async def prompt_shown() -> TargetState | None:
        found = await target.check()
        return found if "me@host:~$" in found.tail else None

    await until("bash's prompt", prompt_shown)
    await tmux.run("send-keys", "-t", pane, "-l", "echo half")

    async def drafted() -> str | None:
        found = await target.check()
        return draft_in(found.tail, cursor_line=found.cursor_line) or None

    assert await until("the draft on screen", drafted) == "echo half"
    async with trio.open_nursery() as nursery:
        relay = Relay(nursery, hold_retry_s=0.05, hold_attempts=5)
        result = await relay.deliver(
            "shell", target, "echo relayed", allow_shell=True, agent=await shell_of(target)
        )
        assert not result.delivered
        assert result.reason == (
            "the human's unsent text stayed in shell's input; not typed into; tried 5 times"
        )
        screen = await tmux.run("capture-pane", "-p", "-t", pane)
        assert screen.rstrip().endswith("me@host:~$ echo half"), screen  # as the human left it
        assert "relayed" not in screen
        await tmux.run("send-keys", "-t", pane, "C-u")  # the human clears the line
        result = await relay.deliver(
            "shell", target, "echo relayed", allow_shell=True, agent=await shell_of(target)
        )
        assert result.delivered, result.reason
        nursery.cancel_scope.cancel()

    async def ran() -> str | None:
        screen = await tmux.run("capture-pane", "-p", "-t", pane)
        return screen if "\nrelayed" in screen else None

    assert "echo half" not in await until("the relayed command to run", ran)
