"""A Zellij pane as a relay target, driven through the ``zellij`` command line.

Which CLI this follows: Zellij 0.44.1 or newer.  Zellij is not installed where this
was written, so it follows the documentation, not a run against a real Zellij:

- ``CliAction`` in zellij-utils 0.44.1 (docs.rs, ``zellij_utils::cli::CliAction``):
  ``Write``, ``WriteChars``, ``Paste`` and ``SendKeys`` take ``pane_id``;
  ``DumpScreen`` has ``path: Option<PathBuf>``, ``full``, ``pane_id``, ``ansi``.
- The CLI reference (zellij-org/zellij-org.github.io, ``docs/src/cli-actions.md``,
  zellij.dev/documentation/cli-actions): ``-p, --pane-id <PANE_ID>`` on ``paste``,
  ``write-chars`` and ``write`` (``write 13`` is Enter); ``dump-screen`` prints the
  viewport to stdout when ``--path`` is omitted; ``list-panes --json`` gives
  ``id``, ``is_plugin``, ``exited`` per pane; pane ids are ``terminal_N`` or ``N``.
  ``docs/src/cli-recipes.md`` there shows ``pane_command`` (``"bash"``) in that
  JSON: the program the pane runs, which ``check`` reports so the relay does not
  type into a shell; a Zellij that leaves it out is "cannot tell", which the
  relay treats as a shell.  Its sample also shows ``tab_name`` and ``pane_cwd``: with
  ``pane_command``, where a pane is (``TargetState.place``), recorded at
  registration, so that a pane gone is looked for in its place (``_refind``).
- ``docs/src/programmatic-control.md`` there: ``zellij --session S action ...``
  targets a session from outside it; ``paste`` uses bracketed paste.
- zellij-org/zellij pull requests #4691 (``--pane-id`` for write/write-chars/
  send-keys), #4598 (``--pane-id`` for dump-screen) and #4823 (dump-screen to
  stdout), all early 2026; before them (0.43 and older) every action went to the
  focused pane only, which a relay cannot use: it would type into whatever pane the
  human is looking at.
- ``list-sessions --no-formatting`` prints one session a line, name first, with
  ``EXITED`` on sessions that ended (kept for resurrection): from the ``Sessions``
  enum in ``zellij-utils/src/cli.rs`` and the session-listing code; the exact line
  format was not checked against a running Zellij.

Addresses are ``SESSION:PANE``, e.g. ``agents:terminal_3`` or ``agents:3``.  The text
is sent with ``paste`` (bracketed paste, like tmux's ``paste-buffer -p``; the Target
contract asks for one paste where the terminal supports it) or, with
``bracketed_paste=False``, with ``write-chars``; then ``write 13`` presses Enter.
Every call is an argv list (no shell); the text follows ``--`` so a message starting
with ``-`` is not read as an option.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterable

import trio

from hive_rpc.core.ling import Place
from hive_rpc.core.refind import AMBIGUOUS, NEW, Pane, refind
from hive_rpc.relay.target import DeliveryError, Expected, TargetState, cannot_run

TAIL_LINES = 40
"""How many of the viewport's last lines ``check`` keeps for dialog detection."""

ENTER = "13"
"""The byte ``zellij action write`` sends for Enter (carriage return)."""

_PANE = re.compile(r"(?:terminal_)?(\d+)")


def find_zellij() -> str | None:
    """The path of the ``zellij`` executable on PATH, or None when it is not installed."""
    return shutil.which("zellij")


def parse_address(address: str) -> tuple[str, str]:
    """``(session, pane_id)`` from ``SESSION:PANE``, the pane as ``terminal_N``."""
    session, sep, pane = address.rpartition(":")
    match = _PANE.fullmatch(pane.strip())
    if not sep or not session or match is None:
        raise ValueError(
            f"a Zellij address is SESSION:PANE, e.g. agents:terminal_3 or agents:3 "
            f"(the pane's $ZELLIJ_PANE_ID); got {address!r}"
        )
    return session, f"terminal_{match.group(1)}"


class ZellijTarget:
    """The terminal pane ``PANE`` of the Zellij session ``SESSION`` (``SESSION:PANE``)."""

    kind = "zellij"

    def __init__(self, address: str, *, bracketed_paste: bool = True) -> None:
        self.session, self.pane_id = parse_address(address)
        self.address = address
        self.bracketed_paste = bracketed_paste
        self.expected: Expected | None = None
        """Where the ling's pane was, set by the Agora: a ``check`` that finds the
        pane gone names a pane found in its place (``_refind``)."""

    def __repr__(self) -> str:
        return f"ZellijTarget({self.address!r})"

    async def check(self) -> TargetState:
        """Is the session running and the pane's command alive, and what does it show?"""
        try:
            return await self._check()
        except OSError as exc:
            return TargetState(alive=False, reason=cannot_run("zellij", exc))

    async def _check(self) -> TargetState:
        listed = await self._zellij("list-sessions", "--no-formatting", session=False)
        lines = listed.stdout.decode("utf-8", "replace").splitlines()
        ours = [line for line in lines if line.split(" ", 1)[0] == self.session]
        if listed.returncode != 0 or not ours:
            return TargetState(
                alive=False,
                reason=f"no Zellij session named {self.session!r} is running"
                + (f" (zellij: {_stderr(listed)})" if listed.returncode != 0 else ""),
            )
        if "EXITED" in ours[0]:
            return TargetState(
                alive=False,
                reason=f"the Zellij session {self.session!r} has exited "
                "(it can be resurrected, but nothing runs in it now)",
            )

        panes = await self._zellij("action", "list-panes", "--json")
        if panes.returncode != 0:
            return TargetState(
                alive=False,
                reason=f"cannot list the panes of Zellij session {self.session!r} "
                f"(Zellij 0.44.1 or newer is needed): {_stderr(panes)}",
            )
        pane = self._find_pane(panes.stdout)
        if isinstance(pane, str):
            return self._refind(TargetState(alive=False, reason=pane), panes.stdout)
        if pane.get("exited"):
            return TargetState(
                alive=False,
                reason=f"the command in Zellij pane {self.pane_id} of session "
                f"{self.session!r} has exited (status {pane.get('exit_status')})",
            )

        screen = await self._zellij("action", "dump-screen", "--pane-id", self.pane_id)
        if screen.returncode != 0:
            return TargetState(
                alive=False,
                reason=f"cannot read Zellij pane {self.pane_id}: {_stderr(screen)}",
            )
        lines = screen.stdout.decode("utf-8", "replace").splitlines()
        while lines and not lines[-1].strip():  # the empty rows below the prompt
            lines.pop()
        command = pane.get("pane_command")
        return TargetState(
            alive=True,
            place=self._place(pane),
            tail="\n".join(lines[-TAIL_LINES:]),
            command=command if isinstance(command, str) and command else None,
            no_command="Zellij leaves pane_command out for a pane that runs the default "
            "shell; start the agent with zellij run -- COMMAND",
            no_foreground="Zellij's CLI names no process for a pane, so the hub cannot tell "
            "whether the agent approved there still holds it; use tmux or an Emacs buffer",
        )

    def _place(self, pane: dict[str, object]) -> Place:
        """Where ``pane`` (an entry of ``list-panes --json``) is: its tab's name, its
        command and its directory, which Zellij gives (cli-recipes.md's sample)."""

        def text(key: str) -> str:
            value = pane.get(key)
            return value if isinstance(value, str) else ""

        return Place(
            self.session, text("tab_name"), cwd=text("pane_cwd"), command=text("pane_command")
        )

    def _refind(self, gone: TargetState, listing: bytes) -> TargetState:
        """The pane is gone: a pane in its place (the same tab's name and command,
        core/refind.py) is named in the reason, never taken.  Zellij's CLI names no
        process for a pane, so nothing tells the approved agent moved from a new
        one opened in its place: only the human, registering it again, can."""
        place = self.expected.place if self.expected is not None else None
        if place is None:
            return gone
        panes = json.loads(listing)  # _find_pane read it: a list
        found = refind(
            None,
            place,
            [
                Pane(f"terminal_{p['id']}", self._place(p))
                for p in panes
                if isinstance(p, dict) and not p.get("is_plugin") and not p.get("exited")
            ],
            gone=f"{self.pane_id} of session {self.session!r}",
            taken=_panes_of(self.session, self.expected.taken if self.expected else ()),
        )
        if found.outcome in (NEW, AMBIGUOUS):
            return TargetState(alive=False, reason=f"Zellij {found.reason}", refound=found)
        if found.reason:
            return TargetState(alive=False, reason=f"{gone.reason}; {found.reason}")
        return gone

    def _find_pane(self, listing: bytes) -> dict[str, object] | str:
        """The pane's entry in ``list-panes --json``, or why there is none."""
        number = int(self.pane_id.removeprefix("terminal_"))
        try:
            panes = json.loads(listing)
        except ValueError:
            return f"zellij list-panes --json printed something that is not JSON: {listing[:200]!r}"
        if not isinstance(panes, list):
            return f"zellij list-panes --json printed {type(panes).__name__}, not a list"
        for pane in panes:
            if isinstance(pane, dict) and pane.get("id") == number and not pane.get("is_plugin"):
                return pane
        return f"Zellij session {self.session!r} has no pane {self.pane_id}"

    async def type_text(self, text: str) -> None:
        """Paste (or write) ``text`` into the pane, then press Enter."""
        verb = "paste" if self.bracketed_paste else "write-chars"
        try:
            await self._run("action", verb, "--pane-id", self.pane_id, "--", text)
            await self._run("action", "write", "--pane-id", self.pane_id, ENTER)
        except OSError as exc:
            raise DeliveryError(cannot_run("zellij", exc)) from None

    async def _run(self, *args: str) -> None:
        done = await self._zellij(*args)
        if done.returncode != 0:
            raise DeliveryError(
                f"zellij {' '.join(args[:2])} failed for {self.address}: {_stderr(done)}"
            )

    async def _zellij(self, *args: str, session: bool = True) -> subprocess.CompletedProcess[bytes]:
        argv = ["zellij", "--session", self.session] if session else ["zellij"]
        return await trio.run_process(
            [*argv, *args], capture_stdout=True, capture_stderr=True, check=False
        )


def _panes_of(session: str, addresses: Iterable[str]) -> set[str]:
    """The panes (``terminal_N``) of ``session`` among Zellij ``addresses``."""
    found = set()
    for address in addresses:
        with contextlib.suppress(ValueError):
            theirs, pane = parse_address(address)
            if theirs == session:
                found.add(pane)
    return found


def _stderr(done: subprocess.CompletedProcess[bytes]) -> str:
    message = done.stderr.decode("utf-8", "replace").strip()
    return message or f"exit status {done.returncode}"


__all__ = ["ENTER", "TAIL_LINES", "ZellijTarget", "find_zellij", "parse_address"]
