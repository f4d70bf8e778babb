"""Finding a ling's pane again once its id is gone.  Pure: no I/O.

A ling registered by a pane id (tmux's ``%3``, what ``hive-rpc spawn`` and an
in-pane registration store) keeps pointing at that id; a target spec (``work:w.0``)
at whatever pane the name resolves to.  When that id or name names nothing any
more, the relay lists the terminal's panes (relay/tmux.py, relay/zellij.py) and
``refind`` decides, from what registration recorded (``Agent``, ``Place``), what
became of it.  The rule keeps the trust rule of docs/security.md ("Typing into
terminals"): only the process the human approved is typed into.

- ``SAME``: a pane holds the very process approved (pid and start time): the pane
  was moved (``join-pane``, ``break-pane``, ``move-pane``) or its session renamed.
  The ling follows it, silently: nothing new is typed into.
- ``NEW``: no pane holds it, and exactly one pane sits where the ling's was (the
  same session, and the same window: by the name a person gave it, else by its
  index) running the same program: the pane was closed and opened again.  Its
  process is not the one approved, so it is *not* typed into; the owner asks the
  human to approve it, as a new registration is.
- ``AMBIGUOUS``: several panes hold it or match its place and program equally:
  none is taken, and the reason says so.
- A pane that holds another ling's agent, or is another ling's, is never taken.
- ``NONE``: nothing found.  A pane found by its name alone (the same window
  running another program, a shell) is never taken: ``near`` says what was there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from hive_rpc.core.ling import Agent, Place, Proc, is_shell

SAME, NEW, AMBIGUOUS, NONE = "same", "new", "ambiguous", "none"


@dataclass(frozen=True, slots=True)
class Pane:
    """One pane of the terminal, as the relay read it."""

    address: str
    """What the target types into (``%9``, ``terminal_7``)."""
    place: Place
    foreground: Proc | None = None
    """The leader of its foreground process group (None: the terminal cannot say)."""
    root: Proc | None = None
    """The process the pane runs (its shell, or the agent started in it)."""
    agent_inside: bool = False
    """The approved process (pid and start time) has this pane as its controlling
    terminal, in the foreground or not (an agent stopped with Ctrl-Z)."""


@dataclass(frozen=True, slots=True)
class Refound:
    """What ``refind`` decided; ``reason`` in words for people."""

    outcome: str
    reason: str = ""
    pane: Pane | None = None
    """The pane found: holding the approved process (``SAME``) or in its place
    (``NEW``)."""
    among: tuple[Pane, ...] = ()
    """The panes that matched equally (``AMBIGUOUS``)."""


def _is(agent: Agent, proc: Proc | None) -> bool:
    return proc is not None and proc.pid == agent.pid and proc.start == agent.start


def _program(agent: Agent | None, place: Place, pane: Pane) -> bool:
    """Does ``pane`` run the ling's program?  Where the terminal names the process
    (tmux), its executable and name against the agent's; where it names only a
    program (Zellij), that name against the one recorded.  The command line is not
    compared: a restarted agent often has other arguments (``claude --resume``)."""
    front = pane.foreground
    if front is not None:
        if agent is None:
            return False
        if agent.pending_exec is not None:
            return _named_in(agent.pending_exec, front)
        return front.exe == agent.exe and front.comm == agent.comm
    return bool(place.command) and pane.place.command == place.command


def _named_in(pending_exec: str, front: Proc) -> bool:
    """The agent was registered to ``exec`` its program and no delivery has seen it
    since (``Agent.pending_exec``, what ``hive-rpc spawn`` and ``ling register
    NAME --tmux -- COMMAND`` record, until a delivery binds it): its program is one
    of the words of the registering command line after the first (``... -- claude``).
    Looser than an executable compared, which is why a pane so found is only ever
    asked about; a shell is never taken for it."""
    if is_shell(front.comm) or is_shell(front.exe):
        return False
    return front.comm in {word.rsplit("/", 1)[-1][:15] for word in pending_exec.split()[1:]}


def _there(place: Place, now: Place) -> bool:
    """Is ``now`` where ``place`` was: the same session, and the same window, by
    the name a person gave it, else by its index (what a window opened again in
    the place of a closed one gets)."""
    if now.session != place.session:
        return False
    if place.window:
        return now.window == place.window
    return not now.window and now.window_index == place.window_index


def _narrowed(place: Place, panes: list[Pane]) -> list[Pane]:
    """Several panes in the window run the program: the one at the same index,
    then the one in the same directory, where that leaves any."""
    if len(panes) > 1 and place.pane_index is not None:
        panes = [p for p in panes if p.place.pane_index == place.pane_index] or panes
    if len(panes) > 1 and place.cwd:
        panes = [p for p in panes if p.place.cwd == place.cwd] or panes
    return panes


def refind(
    agent: Agent | None,
    place: Place | None,
    panes: Sequence[Pane],
    *,
    gone: str,
    others: Collection[Agent] = (),
    taken: Collection[str] = (),
) -> Refound:
    """What became of the pane ``gone`` (its old address, for the reason), from
    the terminal's ``panes`` now (see the module doc).  ``others``: the other lings'
    approved agents, and ``taken``: the other lings' pane addresses; a pane of
    another ling is never this one's."""
    panes = [p for p in panes if not any(_is(a, p.foreground) for a in others)]
    if agent is not None:
        holding = [p for p in panes if p.agent_inside or _is(agent, p.foreground)]
        holding = holding or [p for p in panes if _is(agent, p.root)]
        if len(holding) == 1:
            (pane,) = holding
            return Refound(
                SAME,
                f"pane {gone} is gone, and the agent approved there ({agent.describe()}) "
                f"runs in pane {pane.address} now ({pane.place.describe()}): moved there",
                pane,
            )
        if len(holding) > 1:
            return _ambiguous(gone, holding, "hold the approved agent's process")
    if place is None or not (place.window or place.window_index is not None):
        return Refound(NONE)
    there = [p for p in panes if p.address not in taken and _there(place, p.place)]
    matching = _narrowed(place, [p for p in there if _program(agent, place, p)])
    if len(matching) > 1:
        return _ambiguous(gone, matching, f"are in its place ({place.describe()})")
    if not matching:
        if not there:
            return Refound(NONE)
        seen = ", ".join(f"{p.address} runs {_name(p)}" for p in there)
        return Refound(
            NONE,
            f"a pane is in its place ({place.describe()}) but runs another program "
            f"({seen}), so it is not taken for it",
        )
    (pane,) = matching
    front = pane.foreground
    process = f", pid {front.pid}" if front is not None else ""
    return Refound(
        NEW,
        f"pane {gone} is gone; pane {pane.address} was found in its place "
        f"({pane.place.describe()}, running {_name(pane)}{process}), but that is a new "
        "process, not the agent the human approved, so nothing is typed into it "
        "until the human approves it",
        pane,
    )


def _ambiguous(gone: str, panes: list[Pane], what: str) -> Refound:
    found = ", ".join(f"{p.address} ({p.place.describe()}, {_name(p)})" for p in panes)
    return Refound(
        AMBIGUOUS,
        f"pane {gone} is gone and {len(panes)} panes {what}: {found}; the hub cannot "
        "tell which is the ling's, so it takes none and types nothing",
        among=tuple(panes),
    )


def _name(pane: Pane) -> str:
    return pane.foreground.comm if pane.foreground is not None else pane.place.command or "?"


__all__ = ["AMBIGUOUS", "NEW", "NONE", "SAME", "Pane", "Refound", "refind"]
