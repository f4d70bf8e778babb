"""A tmux pane as a relay target, driven through the ``tmux`` command line.

Every call is one ``tmux`` process started with an argv list (no shell), so nothing
in a message or an address is ever parsed by a shell.  The text travels on the stdin
of ``tmux load-buffer``, not in argv, and is pasted with ``paste-buffer -p``: tmux
wraps it in bracketed-paste markers when the program in the pane asked for them
(Claude Code does), so a multi-line message arrives as one paste rather than as
lines each submitted by its newline.  ``-r`` keeps newlines as LF instead of tmux's
default CR, which a program without bracketed paste would take as Enter.  One
``send-keys Enter`` then submits it.

Addresses are what ``tmux -t`` accepts: a pane id (``%3``) or a target spec
(``work:w.0``).  A spec names whichever pane is there now, and that is what the
human meant by it: when the window is closed and opened again under the same name,
the ling is the new pane.  So the spec is kept as given and resolved again at every
``check``; the target then types into the pane id that check found (``pane``), so a
delivery never types into another pane than the one it checked.
``check`` also reads ``#{pane_pid}``, from which /proc gives the process the pane
runs and the leader of its terminal's foreground process group (relay/proc.py), so
the relay types only while the ling's approved agent holds the pane,
``#{pane_current_command}`` (the foreground program's name, for people), and
``#{pane_tty}``, so the hub can tell whether a process runs inside the pane
(relay/consent.py).
"""

from __future__ import annotations

import shutil
import subprocess
import uuid

import trio

from hive_rpc.relay.proc import foreground, process
from hive_rpc.relay.target import DeliveryError, TargetState, cannot_run

TAIL_LINES = 40
"""How many lines (history included) ``check`` reads for dialog detection."""


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
        """As given; never replaced by the pane id it resolves to (see the module doc)."""
        self.socket = socket
        self.pane: str | None = None
        """The pane id (``%12``) the last ``check`` resolved the address to."""
        self.tty: str | None = None
        """The pane's terminal device (``/dev/pts/3``) as the last ``check`` saw it."""

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
            "\t#{cursor_y}\t#{pane_height}\t#{pane_pid}",
        )
        if found.returncode != 0:
            return self._gone(found)
        pane_id, dead, command, tty, cursor_y, height, pane_pid = (
            [*found.stdout.decode("utf-8", "replace").rstrip("\n").split("\t"), *[""] * 7]
        )[:7]
        self.tty = tty or None
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
        )

    async def _capture(
        self, cursor_y: str, height: str
    ) -> tuple[subprocess.CompletedProcess[bytes], str, int | None]:
        """The pane's last lines, and which of them the cursor is on.

        With ``-e`` each line keeps its attributes as SGR escapes (a program's dimmed
        placeholder is not the human's draft: ``text.draft_in``).
        With ``-J`` a wrapped line comes back as one, so the cursor's row cannot be
        counted from the bottom of the capture.  Instead one tmux command captures up
        to the cursor's row (``-E``: the cursor's line is the last), prints a marker
        line, and captures the rows below it.
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
        and press Enter; DeliveryError with tmux's message when a step fails."""
        pane = self.pane or self.address
        buffer = f"hive-rpc-{uuid.uuid4().hex}"
        try:
            await self._run("load-buffer", "-b", buffer, "-", stdin=text.encode("utf-8"))
            try:
                await self._run("paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", pane)
            except DeliveryError:
                # -d deletes the buffer only after a paste; don't leave the text behind.
                await self._tmux("delete-buffer", "-b", buffer)
                raise
            await self._run("send-keys", "-t", pane, "Enter")
        except OSError as exc:
            raise DeliveryError(cannot_run("tmux", exc)) from None

    async def _run(self, *args: str, stdin: bytes = b"") -> None:
        done = await self._tmux(*args, stdin=stdin)
        if done.returncode != 0:
            raise DeliveryError(f"tmux {args[0]} failed for {self.address}: {_stderr(done)}")

    async def _tmux(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        argv = ["tmux"]
        if self.socket is not None:
            argv += ["-S", self.socket]
        return await trio.run_process(
            [*argv, *args], stdin=stdin, capture_stdout=True, capture_stderr=True, check=False
        )


def _stderr(done: subprocess.CompletedProcess[bytes]) -> str:
    message = done.stderr.decode("utf-8", "replace").strip()
    return message or f"exit status {done.returncode}"


__all__ = ["TAIL_LINES", "TmuxTarget", "find_tmux"]
