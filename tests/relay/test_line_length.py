"""Issue 26, section 7: a 31,900-character turn was reported delivered while the
terminal kept 4,095 characters of the line.  A terminal in canonical mode (a shell's
``read``, ``python3``'s ``input()``) holds at most 4,095 bytes of a line its program
has not read and drops the rest; a program in raw mode (Claude Code; the scripted
ling here) takes a paste of any length.  The relay asks the kernel which mode the
terminal of the process it types to is in (relay/line_discipline.py) and refuses,
saying why, what that terminal cannot take whole (relay/text.py ``fits_terminal``).

Real programs on a private tmux server: a ``python3`` reading one line in the
terminal's default (canonical) mode and writing how much it got, and the scripted
ling in raw mode."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
from test_tmux import LING, Ling, Tmux, tmux, until

from hive_rpc.agora import Agora, open_agora
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.line_discipline import reads_lines
from hive_rpc.relay.text import LINE_INPUT_BYTES, MAX_MESSAGE_BYTES, fits_terminal, prepare
from hive_rpc.relay.tmux import find_tmux
from hive_rpc.store.memory import MemoryStore

pytestmark = pytest.mark.skipif(
    find_tmux() is None, reason="tmux is not installed; these tests drive a real tmux"
)

__all__ = ["tmux"]  # test_tmux's fixture, for pytest to find here
TURN = "x" * 31_900
"""The reported turn."""
READ_ONE_LINE = (
    "import sys; open(sys.argv[1] + '.ready', 'w').close(); line = sys.stdin.readline(); "
    "open(sys.argv[1], 'w').write(str(len(line.rstrip(chr(10)))))"
)
"""A program that reads its terminal a line at a time, as the kernel cooks it, and
writes the length of the line it got."""


def exists(path: Path) -> bool:
    return path.exists()


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def mode_of_a_piped_process() -> tuple[bool | None, bool | None]:
    """``reads_lines`` of a process whose stdin is a pipe and that has no terminal,
    while it runs and once it is gone."""
    with subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    ) as piped:
        try:
            running = reads_lines(piped.pid)
        finally:
            assert piped.stdin is not None
            piped.stdin.close()
    return running, reads_lines(piped.pid)


async def line_reader(tmux: Tmux, name: str) -> tuple[str, int, Path]:
    """A pane running ``READ_ONE_LINE``: its id, its program's pid, the file it writes."""
    out = tmux.dir / f"{name}.len"
    pane = await tmux.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name, "-x", "200", "-y", "50",
        sys.executable, "-c", READ_ONE_LINE, str(out),
    )  # fmt: skip
    pid = int(await tmux.run("display-message", "-p", "-t", pane, "#{pane_pid}"))

    async def ready() -> bool | None:
        return True if exists(Path(f"{out}.ready")) else None

    await until(f"{name} to read its terminal", ready)
    return pane, pid, out


async def test_the_kernel_drops_what_a_line_reader_cannot_hold(tmux: Tmux) -> None:
    """The reproduction: typed into a terminal in canonical mode, the turn reaches its
    program as 4,095 characters, whatever reported it delivered."""
    pane, pid, out = await line_reader(tmux, "cooked")
    assert reads_lines(pid) is True
    turn = tmux.dir / "turn.txt"
    turn.write_text(TURN)
    await tmux.run("load-buffer", "-b", "turn", str(turn))
    await tmux.run("paste-buffer", "-b", "turn", "-t", pane)
    await tmux.run("send-keys", "-t", pane, "Enter")

    async def got() -> int | None:
        text = read(out)
        return int(text) if text else None

    assert await until("the line reader to read its line", got) == LINE_INPUT_BYTES


async def test_reads_lines_is_the_terminals_mode(tmux: Tmux, short_tmp: Path) -> None:
    _, cooked, _ = await line_reader(tmux, "lines")
    assert reads_lines(cooked) is True
    record = short_tmp / "raw.jsonl"
    raw = await tmux.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "raw",
        sys.executable, str(LING), str(record),
    )  # fmt: skip

    async def ling_ready() -> bool | None:
        return True if "ready" in read(record) else None

    await until("the scripted ling to set raw mode", ling_ready)
    ling_pid = int(await tmux.run("display-message", "-p", "-t", raw, "#{pane_pid}"))
    assert reads_lines(ling_pid) is False
    # No terminal at all (a pipe, as a comint buffer's process): takes it whole;
    # gone: cannot tell.
    assert mode_of_a_piped_process() == (False, None)


def test_what_each_mode_takes_whole() -> None:
    turn = prepare(TURN)
    refused = fits_terminal(turn, reads_lines=True)
    assert refused is not None
    assert "reads whole lines" in refused
    assert "4,095 bytes" in refused
    assert "31,900 bytes" in refused
    assert "write it to a file and send the path" in refused
    assert fits_terminal(turn, reads_lines=False) is None  # raw mode: up to 64 KiB
    unknown = fits_terminal(turn, reads_lines=None)
    assert unknown is not None
    assert "cannot tell" in unknown
    assert fits_terminal("x" * LINE_INPUT_BYTES, reads_lines=True) is None
    assert fits_terminal("é" * 2048, reads_lines=True) is not None  # bytes, not characters
    assert len(turn) < MAX_MESSAGE_BYTES


READ_LINES = (
    "import sys; out = open(sys.argv[1], 'a'); open(sys.argv[1] + '.ready', 'w').close()\n"
    "for line in sys.stdin:\n"
    "    out.write(str(len(line.rstrip(chr(10)))) + chr(10)); out.flush()"
)
"""An agent that reads its terminal a line at a time (canonical mode) and records
the length of each line it got."""


@pytest.fixture
async def agora(nursery: trio.Nursery) -> Agora:
    relay = Relay(nursery, min_interval_s=0.0)
    return await open_agora(
        MemoryStore(), time.time, DeliveryPeers(), nursery, relay=relay, dispatch_wait_s=20
    )


def lengths(path: Path) -> list[int]:
    return [int(n) for n in read(path).split()]


async def test_a_turn_a_line_reader_cannot_hold_is_refused_not_cut(
    tmux: Tmux, agora: Agora
) -> None:
    """The reported case end to end: the turn was reported delivered and the agent got
    4,095 characters of it.  Now it is refused, saying why, and nothing is typed; a
    turn that fits is typed whole."""
    out = tmux.dir / "lines.txt"
    pane = await tmux.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "reader", "-x", "200", "-y", "50",
        sys.executable, "-c", READ_LINES, str(out),
    )  # fmt: skip

    async def ready() -> bool | None:
        return True if exists(Path(f"{out}.ready")) else None

    await until("the line reader to start", ready)
    await agora.register("main.reader", "tmux", f"{pane}@{tmux.socket}", owner=True)
    first = await agora.answer("main.reader", "hello", None)
    assert first["delivery"]["state"] == "delivered", first

    async def recorded(count: int) -> list[int] | None:
        got = lengths(out)
        return got if len(got) >= count else None

    (short,) = await until("the first line", lambda: recorded(1))
    sent = await agora.answer("main.reader", TURN, None)
    delivery = sent["delivery"]
    assert delivery["state"] == "failed", delivery
    assert "reads whole lines" in delivery["reason"], delivery
    assert f"at most {LINE_INPUT_BYTES:,} bytes" in delivery["reason"], delivery
    # Nothing of it was typed: the next turn is the next line the agent reads.
    after = await agora.answer("main.reader", "after", None)
    assert after["delivery"]["state"] == "delivered", after
    got = await until("the line after", lambda: recorded(2))
    assert got == [short, len(after["text"])], got


async def test_a_raw_mode_agent_gets_the_turn_whole(tmux: Tmux, agora: Agora) -> None:
    """Claude Code reads its terminal in raw mode and takes a bracketed paste of any
    length: the turn is typed whole (the scripted ling records every byte)."""
    ling: Ling = await tmux.ling("raw")
    await agora.register("main.raw", "tmux", f"{ling.pane}@{tmux.socket}", owner=True)
    sent = await agora.answer("main.raw", TURN, None)
    assert sent["delivery"]["state"] == "delivered", sent["delivery"]
    [raw] = await ling.wait_for(1)
    assert sent["text"].encode() in raw
