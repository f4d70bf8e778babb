"""What the relay needs from a terminal that an agent ("ling") runs in.

Each kind (``tmux``, ``zellij``, ``emacs-buffer``) implements ``Target``.  The relay
calls ``check`` before every delivery: a dead target is reported (a tmux window
name is resolved again at each check, so a recreated window is found; a target that
knows its ling (``Refinding``) looks for a pane that is gone by what registration
recorded, core/refind.py), and a target
whose last lines show a dialog (a permission prompt, a y/n question) is not typed
into, nor one whose foreground is not the ling's approved agent (``foreground``).  ``type_text``
gets text already made safe by ``relay.text.prepare``: no control characters or
escape sequences, newlines kept.
It types the text as one paste where the terminal supports bracketed paste, then
submits it with Enter.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import trio

from hive_rpc.core.ling import Agent, Place, Proc
from hive_rpc.core.refind import Refound


@dataclass(frozen=True, slots=True)
class TargetState:
    """What ``check`` saw."""

    alive: bool
    tail: str = ""
    """The last lines the target shows, for dialog and draft detection: plain text,
    or with SGR escapes where the terminal gives its attributes (tmux), which tell a
    program's dimmed placeholder from what the human typed."""
    reason: str = ""
    """Why it is not alive, in words a person can act on; empty when alive."""
    address: str | None = None
    """A new address the owner should keep, else None: set when the pane was gone
    and the approved agent's process was found in another pane (``refound`` is
    ``SAME``: moved with ``join-pane``, its session renamed).  A tmux target spec
    (``work:w.0``) that still names a pane is kept as given and resolved again at
    every check, not pinned to the pane id it named once."""
    place: Place | None = None
    """Where the pane is now (session, window, pane index), where the terminal
    says: what registration records, and a delivery keeps up to date."""
    refound: Refound | None = None
    """What looking for a gone pane found (``Refinding``); None when it was not
    looked for.  With ``NEW`` (another process in the pane's place) or
    ``AMBIGUOUS`` the target is not alive and ``reason`` says so."""
    cursor_line: int | None = None
    """The index, among ``tail``'s lines (split at ``\n``), of the line the cursor is
    on, where the terminal tells it (tmux); None when it cannot.  ``dialog_in`` then
    ignores a dialog that was answered and left on screen above the cursor."""
    command: str | None = None
    """The program in the terminal's foreground (``claude``, ``bash``) where the
    terminal tells it, else None.  The relay types nothing while it is a shell, nor
    while it is None: a terminal that cannot tell may be showing a shell."""
    draft: str | None = None
    """What the human has typed, and not sent, in the program's input, where the
    target reads it itself (a comint buffer: the text after its process mark); None
    when it does not, and the relay reads ``tail`` instead (``text.draft_in``)."""
    no_command: str = ""
    """When ``command`` is None: why the terminal cannot tell, and what would make
    it (e.g. a newer Emacs package); said in the refusal."""
    foreground: Proc | None = None
    """The leader of the terminal's foreground process group (relay/proc.py): the
    process its keystrokes go to.  The relay types only while it is the ling's
    approved agent; None (cannot tell) types nothing."""
    root: Proc | None = None
    """The process the terminal itself runs (tmux's ``#{pane_pid}``, the Emacs
    buffer's process): the shell of a pane that runs one, which ``--allow-shell``
    approves."""
    no_foreground: str = ""
    """When ``foreground`` is None: why, in words for the refusal."""


@dataclass(frozen=True, slots=True)
class Expected:
    """What a target knows of its ling, to find its pane again once it is gone: the
    approved agent and where its pane was (core/ling.py ``Agent``, ``Place``)."""

    agent: Agent | None
    place: Place | None
    others: tuple[Agent, ...] = ()
    """The other lings' approved agents: a pane one of them holds is never this
    ling's."""
    taken: frozenset[str] = frozenset()
    """The other lings' addresses, as registered (a tmux one with its ``@SOCKET``):
    never this ling's."""


@runtime_checkable
class Refinding(Protocol):
    """A target that looks for its pane again when it is gone (tmux, Zellij): the
    Agora sets ``expected`` on every target it makes for a ling."""

    expected: Expected | None


class DeliveryError(Exception):
    """Typing into the target failed; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Target(Protocol):
    kind: str
    address: str

    async def check(self) -> TargetState:
        """Is the target there, and what does it show?  Never raises for a dead
        target: returns ``alive=False`` with the reason."""
        ...

    async def type_text(self, text: str) -> None:
        """Type ``text`` (already prepared) and submit it; DeliveryError on failure."""
        ...


class Changes(Protocol):
    """A terminal's changes, followed (``Watchable.watch``)."""

    async def changed(self) -> None:
        """Return once the terminal shows something new since this last returned
        (or since the watch began)."""
        ...


class ChangeCount:
    """``Changes`` as they are reported to it (``note``): what tmux's and Emacs's
    watches yield, which differ only in who reports (a control-mode client's
    ``%output`` lines; an Emacs's ``hive/bufferChanged``)."""

    def __init__(self) -> None:
        self.noted = 0
        """Changes reported so far."""
        self._seen = 0
        self._came = trio.Event()

    def note(self) -> None:
        self.noted += 1
        self._came.set()
        self._came = trio.Event()

    async def changed(self) -> None:
        """Return once a change has been reported since this last returned (or since
        the count began); never, where nothing reports."""
        while self.noted == self._seen:
            await self._came.wait()
        self._seen = self.noted


@runtime_checkable
class Watchable(Protocol):
    """A target that can say when its screen changes (tmux, through a control-mode
    client; an Emacs buffer, through its after-change hook and ``hive/bufferChanged``),
    so that a message held on what it shows is checked again as soon as that may
    have cleared, not on a schedule."""

    def watch(self) -> AbstractAsyncContextManager[Changes]:
        """Follow the terminal's changes while the block runs."""
        ...


def cannot_run(program: str, exc: OSError) -> str:
    """Why ``program`` could not be started, in words a person can act on."""
    if isinstance(exc, FileNotFoundError):
        return f"{program} is not installed or not on PATH"
    return f"cannot run {program}: {exc.strerror or exc}"


__all__ = [
    "ChangeCount",
    "Changes",
    "DeliveryError",
    "Expected",
    "Refinding",
    "Target",
    "TargetState",
    "Watchable",
    "cannot_run",
]
