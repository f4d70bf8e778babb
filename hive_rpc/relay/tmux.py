"""A tmux pane as a relay target, driven through the ``tmux`` command line.

Every call is one ``tmux`` process started with an argv list (no shell), so nothing
in a message or an address is ever parsed by a shell; where one call needs several
tmux commands they are chained in that process (``;`` as an argument of its own),
since a process start is most of what a call costs: ``check`` is two processes,
typing one.  The text travels on the stdin
of ``tmux load-buffer``, not in argv, and is pasted with ``paste-buffer -p``: tmux
wraps it in bracketed-paste markers when the program in the pane asked for them
(Claude Code does), so a multi-line message arrives as one paste rather than as
lines each submitted by its newline.  ``-r`` keeps newlines as LF instead of tmux's
default CR, which a program without bracketed paste would take as Enter.  A
``send-keys Enter`` chained after the paste then submits it.

Addresses are what ``tmux -t`` accepts: a pane id (``%3``) or a target spec
(``work:w.0``).  A spec names whichever pane is there now, and that is what the
human meant by it: when the window is closed and opened again under the same name,
the ling is the new pane.  So the spec is kept as given and resolved again at every
``check``; the target then types into the pane id that check found (``pane``), so a
delivery never types into another pane than the one it checked.
When the address names no pane any more (or a dead one) and the Agora has told the
target its ling's approved agent and place (``expected``), ``check`` looks among all
the server's panes (``_refind``, core/refind.py): the pane holding the approved
process is the target from then on, and ``TargetState.address`` tells the owner to
keep its id; a new process in its place, or several candidates, is not alive, and
the reason says so.  A pane keeps its id when it is moved (``join-pane``,
``break-pane``), so this finds a ling registered as ``work:w.0`` whose pane moved,
or one whose session was renamed; each check also reads where the pane is
(``PLACE``), which a delivery keeps in the ling's record.
``check`` also reads ``#{pane_pid}``, from which /proc gives the process the pane
runs and the leader of its terminal's foreground process group (relay/proc.py), so
the relay types only while the ling's approved agent holds the pane,
``#{pane_current_command}`` (the foreground program's name, for people), and
``#{pane_tty}``, so the hub can tell whether a process runs inside the pane
(relay/consent.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator

import trio

from hive_rpc.core.ling import Agent, Place
from hive_rpc.core.refind import AMBIGUOUS, NEW, SAME, Pane, refind
from hive_rpc.relay.proc import foreground, process, stat, tty_device
from hive_rpc.relay.target import (
    ChangeCount,
    DeliveryError,
    Expected,
    TargetState,
    cannot_run,
)

TAIL_LINES = 40
"""How many lines (history included) ``check`` reads for dialog detection."""
WATCH_EXIT_S = 2.0
"""How long a control-mode client may take to end once its input is closed."""
PLACE = (
    "#{session_name}\t#{?automatic-rename,,#{window_name}}\t#{window_index}\t#{pane_index}"
    "\t#{pane_current_path}"
)
"""Where a pane is (core/ling.py ``Place``), in tmux's format: read at each check.  A
window's name is kept only where a person gave it (``new-window -n``, what ``hive-rpc
spawn`` does, or ``rename-window``): tmux's automatic name is the program running
there, which says nothing of which window it is."""


def find_tmux() -> str | None:
    """The path of the ``tmux`` executable on PATH, or None when it is not installed."""
    return shutil.which("tmux")


class TmuxTarget:
    """The tmux pane at ``address``; ``socket`` is a ``tmux -S`` server socket path,
    None for the user's default server (what the hub uses)."""

    kind = "tmux"

    def __init__(self, address: str, *, socket: str | None = None) -> None:
        if not address.strip():
            raise ValueError("a tmux address is a pane id like %3 or a target like agents:0.1")
        self.address = address
        """As given; not replaced by the pane id it resolves to (see the module doc),
        but by the id of the pane ``_refind`` found the approved agent in."""
        self.socket = socket
        self.pane: str | None = None
        """The pane id (``%12``) the last ``check`` resolved the address to."""
        self.tty: str | None = None
        """The pane's terminal device (``/dev/pts/3``) as the last ``check`` saw it."""
        self.session: str | None = None
        """The id (``$2``) of the pane's session as the last ``check`` saw it, which
        ``watch`` attaches to."""
        self.expected: Expected | None = None
        """The ling's approved agent and where its pane was, set by the Agora: a
        ``check`` that finds the pane gone looks for it again (``_refind``)."""

    def __repr__(self) -> str:
        return f"TmuxTarget({self.address!r}, socket={self.socket!r})"

    async def check(self) -> TargetState:
        """Is the pane there and running, and what are its last lines?

        A missing pane, a dead one (kept by ``remain-on-exit``) and a tmux that
        cannot be run all come back as ``alive=False`` with tmux's own words.
        """
        try:
            return await self._check()
        except OSError as exc:
            return TargetState(alive=False, reason=cannot_run("tmux", exc))

    async def _check(self) -> TargetState:
        state = await self._look()
        if state.alive or self.expected is None or self.expected.agent is None:
            return state
        try:
            return await self._refind(state, self.expected)
        except OSError:
            return state

    async def _look(self) -> TargetState:
        # display-message resolves the address to a pane id, but leniently (tmux 3.3):
        # a missing pane id gives an empty answer, and a stale spec such as
        # "agents:0.5" falls back to some other pane.  capture-pane resolves the
        # address strictly, so it runs second, on the address as given: if it finds
        # the pane, the id display-message named is that pane's.
        found = await self._tmux(
            "display-message",
            "-p",
            "-t",
            self.address,
            "#{pane_id}\t#{pane_dead}\t#{pane_current_command}\t#{pane_tty}"
            "\t#{cursor_y}\t#{pane_height}\t#{pane_pid}\t#{session_id}\t" + PLACE,
        )
        if found.returncode != 0:
            return self._gone(found)
        fields = [*found.stdout.decode("utf-8", "replace").rstrip("\n").split("\t"), *[""] * 13]
        pane_id, dead, command, tty, cursor_y, height, pane_pid, session = fields[:8]
        self.tty = tty or None
        self.session = session if session.startswith("$") else None
        captured, tail, cursor_line = await self._capture(cursor_y, height)
        if captured.returncode != 0:
            return self._gone(captured)
        if not pane_id.startswith("%"):
            self.pane = None
            return TargetState(
                alive=False, reason=f"tmux pane {self.address} is gone: tmux names no pane for it"
            )
        self.pane = pane_id
        if dead.strip() == "1":
            return TargetState(
                alive=False,
                reason=f"the program in tmux pane {pane_id} has exited (the pane is dead)",
            )
        root = process(int(pane_pid)) if pane_pid.isdigit() else None
        front = foreground(root.pid) if root is not None else None
        return TargetState(
            alive=True,
            tail=tail,
            cursor_line=cursor_line,
            command=command or None,
            no_command="tmux gave no #{pane_current_command}",
            foreground=front,
            root=root,
            no_foreground=(
                "tmux gave no #{pane_pid} this hub can read in /proc"
                if root is None
                else "the process group in its foreground has no leader"
            ),
            place=_place(fields[8:13], command),
        )

    async def _refind(self, gone: TargetState, expected: Expected) -> TargetState:
        """The pane is gone (or dead): look for it among all the server's panes by
        what registration recorded (core/refind.py).  The approved process found in
        another pane (moved there, its session renamed): that pane is the target
        from now on, and ``address`` tells the owner to keep it.  Another process in
        its place, or several candidates: not alive, saying so; never typed into."""
        assert expected.agent is not None
        listed = await self._tmux(
            "list-panes", "-a", "-F", "#{pane_id}\t#{pane_dead}\t#{pane_pid}\t#{pane_tty}"
            "\t#{pane_current_command}\t" + PLACE,
        )  # fmt: skip
        if listed.returncode != 0:
            return gone
        inside = _tty_of(expected.agent)
        panes: list[Pane] = []
        for line in listed.stdout.decode("utf-8", "replace").splitlines():
            fields = [*line.split("\t"), *[""] * 10]
            pane_id, dead, pane_pid, tty, command = fields[:5]
            if dead.strip() == "1" or not pane_id.startswith("%") or not pane_pid.isdigit():
                continue
            root = process(int(pane_pid))
            panes.append(
                Pane(
                    pane_id,
                    _place(fields[5:10], command),
                    foreground(root.pid) if root is not None else None,
                    root,
                    agent_inside=inside is not None and _device(tty) == inside,
                )
            )
        found = refind(
            expected.agent,
            expected.place,
            panes,
            gone=self.address,
            others=expected.others,
            taken={
                pane
                for pane, _, socket in (a.partition("@") for a in expected.taken)
                if (socket or None) == self.socket
            },
        )
        if found.outcome == SAME and found.pane is not None:
            self.address = found.pane.address
            moved = await self._look()
            if moved.alive:
                return dataclasses.replace(moved, address=self.address, refound=found)
            return moved
        if found.outcome in (NEW, AMBIGUOUS):
            return TargetState(alive=False, reason=f"tmux {found.reason}", refound=found)
        if found.reason:
            return dataclasses.replace(gone, reason=f"{gone.reason}; {found.reason}")
        return gone

    async def _capture(
        self, cursor_y: str, height: str
    ) -> tuple[subprocess.CompletedProcess[bytes], str, int | None]:
        """The pane's last lines, and which of them the cursor is on.

        With ``-e`` each line keeps its attributes as SGR escapes (a program's dimmed
        placeholder is not the human's draft: ``text.draft_in``).
        With ``-J`` a wrapped line comes back as one, so the cursor's row cannot be
        counted from the bottom of the capture.  Instead one tmux command captures up
        to the cursor's row (``-E``: the cursor's line is the last), prints a marker
        line, and captures the rows below it.  That row comes from the
        ``display-message`` before, a process of its own: tmux 3.3 (Debian 12's) reads
        ``-S``/``-E`` as plain numbers, so ``-E '#{cursor_y}'`` cannot put the two
        in one process (``tests/relay/test_turn_one_pass.py`` counts them).
        """
        head = ["capture-pane", "-p", "-e", "-J", "-t", self.address, "-S", f"-{TAIL_LINES}"]
        if not (cursor_y.isdigit() and height.isdigit()):  # an older tmux: no cursor
            done = await self._tmux(*head)
            return done, done.stdout.decode("utf-8", "replace"), None
        row, rows = int(cursor_y), int(height)
        marker = f"hive-rpc-cursor-{uuid.uuid4().hex}"
        below: list[str] = []
        if row + 1 < rows:
            below = [";", "display-message", "-p", "-t", self.address, marker]
            below += [";", "capture-pane", "-p", "-e", "-J", "-t", self.address]
            below += ["-S", str(row + 1)]
        done = await self._tmux(*head, "-E", str(row), *below)
        text = done.stdout.decode("utf-8", "replace")
        upper, sep, lower = text.partition(marker + "\n")
        if below and not sep:
            return done, text, None
        upper_lines = upper.removesuffix("\n").split("\n")
        return done, upper + lower, len(upper_lines) - 1

    def _gone(self, done: subprocess.CompletedProcess[bytes]) -> TargetState:
        self.pane = None
        return TargetState(alive=False, reason=f"tmux pane {self.address} is gone: {_stderr(done)}")

    async def type_text(self, text: str) -> None:
        """Paste ``text`` into the pane the last ``check`` found (else the address)
        and press Enter, in one tmux process (the three commands chained, as
        ``_capture`` chains its own); DeliveryError with tmux's message when a step
        fails.  tmux skips the commands after one that fails, so a paste that fails
        leaves the buffer behind: it is deleted then, which also tells that the paste
        was the step that failed."""
        pane = self.pane or self.address
        buffer = f"hive-rpc-{uuid.uuid4().hex}"
        try:
            done = await self._tmux(
                "load-buffer", "-b", buffer, "-",
                ";", "paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", pane,
                ";", "send-keys", "-t", pane, "Enter",
                stdin=text.encode("utf-8"),
            )  # fmt: skip
            if done.returncode == 0:
                return
            left = await self._tmux("delete-buffer", "-b", buffer)
        except OSError as exc:
            raise DeliveryError(cannot_run("tmux", exc)) from None
        step = "paste-buffer" if left.returncode == 0 else "load-buffer or send-keys"
        raise DeliveryError(f"tmux {step} failed for {self.address}: {_stderr(done)}")

    @contextlib.asynccontextmanager
    async def watch(self) -> AsyncIterator[PaneChanges]:
        """Follow the output of the pane the last ``check`` found while the block
        runs: ``changed()`` of what it yields returns once the pane has shown
        something new.  The relay holds a message in this block (a dialog, the
        human's draft) and checks again as soon as the pane changes.

        A control-mode client follows it (tmux 3.2 or newer: ``tmux -C
        attach-session -t SESSION -f ignore-size,read-only``), which tmux sends a
        ``%output %PANE ...`` line whenever a pane of that session writes.  It is
        attached to the session by its id (``$2``), never to the pane, which would
        make the pane's window the session's current one in front of the human;
        ``ignore-size`` keeps it out of the windows' sizes and ``read-only`` keeps
        its input out of the panes.  At the end of the block its stdin closes, which
        ends it.  Where it cannot be started (no pane found yet, an older tmux, tmux
        gone) ``changed()`` never returns, and the relay's own schedule checks again.
        """
        changes = PaneChanges(self.pane or "")
        if self.pane is None or self.session is None:
            yield changes
            return
        attach = ["-C", "attach-session", "-t", self.session, "-f", "ignore-size,read-only"]
        try:
            process = await trio.lowlevel.open_process(
                [*self._argv(), *attach],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            yield changes
            return
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_follow, process, changes)
                yield changes
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                with trio.move_on_after(WATCH_EXIT_S):
                    if process.stdin is not None:
                        await process.stdin.aclose()  # tmux -C ends at the end of its input
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()

    def _argv(self) -> list[str]:
        return ["tmux"] if self.socket is None else ["tmux", "-S", self.socket]

    async def _tmux(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return await trio.run_process(
            [*self._argv(), *args],
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


class PaneChanges(ChangeCount):
    """What a control-mode client has seen of one pane (``TmuxTarget.watch``): a
    change noted for each ``%output`` notification of the pane."""

    def __init__(self, pane: str) -> None:
        super().__init__()
        self.pane = pane
        self.ended = False
        """The client has ended (tmux gone, the session closed): no more changes."""


async def _follow(process: trio.Process, changes: PaneChanges) -> None:
    """Read the control-mode client's lines; each ``%output`` of the pane is a change.
    The pane's bytes themselves are not needed (``check`` reads the screen)."""
    assert process.stdout is not None
    prefix = f"%output {changes.pane} ".encode()
    pending = b""
    try:
        while True:
            chunk = await process.stdout.receive_some(65536)
            if not chunk:
                return
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if any(line.startswith(prefix) for line in lines):
                changes.note()
            if any(line.startswith(b"%exit") for line in lines):
                return
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return
    finally:
        changes.ended = True


def _place(fields: list[str], command: str) -> Place:
    """A ``Place`` from the fields of ``PLACE``."""
    session, window, window_index, pane_index, cwd = [*fields, *[""] * 5][:5]
    return Place(
        session,
        window,
        int(window_index) if window_index.isdigit() else None,
        int(pane_index) if pane_index.isdigit() else None,
        cwd,
        command,
    )


def _tty_of(agent: Agent) -> int | None:
    """The device of the approved process's controlling terminal, when that very
    process (pid and start time) still runs and has one."""
    found = stat(agent.pid)
    if found is None or found.start != agent.start or found.tty_nr == 0:
        return None
    return tty_device(found.tty_nr)


def _device(tty: str) -> int | None:
    try:
        return os.stat(tty).st_rdev if tty else None
    except OSError:
        return None


def _stderr(done: subprocess.CompletedProcess[bytes]) -> str:
    message = done.stderr.decode("utf-8", "replace").strip()
    return message or f"exit status {done.returncode}"


__all__ = ["TAIL_LINES", "WATCH_EXIT_S", "PaneChanges", "TmuxTarget", "find_tmux"]
