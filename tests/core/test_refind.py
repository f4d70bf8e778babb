"""core/refind.py: what became of a ling's pane once its id is gone, decided from
what registration recorded.  Pure: the panes are written out here as the relay
reads them (tests/relay/test_pane_refind.py runs the same rule against a real tmux)."""

from __future__ import annotations

from hive_rpc.core.ling import Agent, Ling, Place, Proc, restarted
from hive_rpc.core.refind import AMBIGUOUS, NEW, NONE, SAME, Pane, Refound, refind

CLAUDE = Proc(pid=100, start=5000, exe="/usr/bin/node", comm="claude", cmdline="claude")
AGENT = Agent.of(CLAUDE)
WHERE = Place("work", "w", 1, 0, "/src/app", "claude")
RESTARTED = Proc(pid=200, start=9000, exe="/usr/bin/node", comm="claude", cmdline="claude -c")
BASH = Proc(pid=300, start=9100, exe="/usr/bin/bash", comm="bash")


def pane(address: str, place: Place = WHERE, front: Proc | None = RESTARTED) -> Pane:
    return Pane(address, place, front, root=front)


def test_the_approved_process_in_another_pane_is_the_ling_moved() -> None:
    """join-pane / break-pane / a renamed session: the very process (pid and start
    time) holds another pane; it is taken, wherever that pane now is."""
    elsewhere = Place("play", "other", 2, 1, "/src/app", "claude")
    found = refind(AGENT, WHERE, [pane("%8"), pane("%9", elsewhere, CLAUDE)], gone="%3")
    assert found.outcome == SAME
    assert found.pane is not None
    assert found.pane.address == "%9"
    assert "runs in pane %9 now (session play, window other, pane 1): moved there" in (found.reason)


def test_a_stopped_agent_is_found_by_its_terminal() -> None:
    """The agent stopped with Ctrl-Z: its shell leads the foreground, but the agent's
    controlling terminal is still the pane's (``agent_inside``)."""
    shell = Pane("%9", WHERE, BASH, BASH, agent_inside=True)
    assert refind(AGENT, WHERE, [shell], gone="%3").outcome == SAME


def test_a_new_process_in_its_place_is_found_but_needs_approval() -> None:
    found = refind(AGENT, WHERE, [pane("%9")], gone="%3")
    assert found.outcome == NEW
    assert found.pane is not None
    assert found.pane.address == "%9"
    assert found.reason == (
        "pane %3 is gone; pane %9 was found in its place (session work, window w, pane 0, "
        "running claude, pid 200), but that is a new process, not the agent the human "
        "approved, so nothing is typed into it until the human approves it"
    )


def test_a_pane_found_by_its_name_alone_is_never_taken() -> None:
    """A shell (or any other program) in the same window is not the ling."""
    found = refind(AGENT, WHERE, [pane("%9", front=BASH)], gone="%3")
    assert found.outcome == NONE
    assert "runs another program (%9 runs bash), so it is not taken for it" in found.reason
    node = Proc(pid=201, start=9001, exe="/usr/bin/node", comm="node")
    assert refind(AGENT, WHERE, [pane("%9", front=node)], gone="%3").outcome == NONE


def test_two_panes_in_its_place_are_ambiguous() -> None:
    twin = Proc(pid=201, start=9001, exe="/usr/bin/node", comm="claude")
    found = refind(AGENT, WHERE, [pane("%8"), pane("%9", front=twin)], gone="%3")
    assert found.outcome == AMBIGUOUS
    assert [p.address for p in found.among] == ["%8", "%9"]
    assert "2 panes are in its place" in found.reason
    assert "takes none and types nothing" in found.reason


def test_the_pane_index_then_the_directory_tell_panes_apart() -> None:
    other_index = Place("work", "w", 1, 1, "/src/app", "claude")
    other_dir = Place("work", "w", 1, 0, "/tmp", "claude")
    twin = Proc(pid=201, start=9001, exe="/usr/bin/node", comm="claude")
    found = refind(AGENT, WHERE, [pane("%8", other_index, twin), pane("%9")], gone="%3")
    assert (found.outcome, found.pane and found.pane.address) == (NEW, "%9")
    found = refind(AGENT, WHERE, [pane("%8", other_dir, twin), pane("%9")], gone="%3")
    assert (found.outcome, found.pane and found.pane.address) == (NEW, "%9")


def test_another_session_or_window_is_not_its_place() -> None:
    for place in (Place("other", "w", 1, 0), Place("work", "x", 1, 0)):
        assert refind(AGENT, WHERE, [pane("%9", place)], gone="%3") == Refound(NONE)


def test_an_unnamed_window_is_its_place_by_its_index() -> None:
    """tmux names a window after its program unless a person named it, which says
    nothing of where it is: such a window is matched by its index."""
    unnamed = Place("work", "", 1, 0)
    assert refind(AGENT, unnamed, [pane("%9", unnamed)], gone="%3").outcome == NEW
    other = Place("work", "", 2, 0)
    assert refind(AGENT, unnamed, [pane("%9", other)], gone="%3").outcome == NONE
    assert refind(AGENT, unnamed, [pane("%9")], gone="%3").outcome == NONE  # a named one


def test_another_lings_pane_is_never_taken() -> None:
    """The pane of another registered ling in the same place (its agent, or its
    address) is not this one's."""
    other = Agent.of(RESTARTED)
    assert refind(AGENT, WHERE, [pane("%9")], gone="%3", others=[other]).outcome == NONE
    assert refind(AGENT, WHERE, [pane("%9")], gone="%3", taken={"%9"}).outcome == NONE


def test_nothing_recorded_finds_nothing_by_place() -> None:
    """A record kept before places were: only the process itself finds it."""
    assert refind(AGENT, None, [pane("%9")], gone="%3").outcome == NONE
    assert refind(AGENT, None, [pane("%9", front=CLAUDE)], gone="%3").outcome == SAME


def test_an_agent_still_to_exec_is_known_by_the_command_it_was_to_run() -> None:
    """Registered to ``exec`` its program (``hive-rpc spawn``, ``ling register NAME
    --tmux -- COMMAND``) and closed before a delivery saw it: the program is a word
    of the registering command line; never a shell."""
    cli = Proc(100, 5000, "/usr/bin/python3.11", "python3", "python3 -m hive_rpc x -- claude")
    pending = Agent.of(cli, pending_exec=True)
    assert refind(pending, WHERE, [pane("%9")], gone="%3").outcome == NEW
    assert refind(pending, WHERE, [pane("%9", front=BASH)], gone="%3").outcome == NONE
    assert refind(pending, WHERE, [pane("%9", front=cli)], gone="%3").outcome == SAME
    plain = Agent.of(
        Proc(100, 5000, "/usr/bin/python3.11", "python3", "python3 -m x"), pending_exec=True
    )
    assert refind(plain, WHERE, [pane("%9")], gone="%3").outcome == NONE


def test_a_terminal_that_names_no_process_matches_by_its_command() -> None:
    """Zellij: ``pane_command`` only, no process; a match is never ``SAME``."""
    tab = Place("agents", "w", None, None, "/src/app", "claude")
    found = refind(None, tab, [Pane("terminal_7", tab)], gone="terminal_3")
    assert found.outcome == NEW
    shell = Place("agents", "w", None, None, "/src/app", "bash")
    assert refind(None, tab, [Pane("terminal_7", shell)], gone="terminal_3").outcome == NONE


def test_old_ling_records_are_read() -> None:
    """Records stored before places were: no ``place`` key, read as None."""
    old = {"name": "main.kid", "kind": "tmux", "address": "%3", "registered_at": 1.0}
    assert Ling.from_record(old).place is None
    ling = Ling("main.kid", "tmux", "%3", 1.0, agent=AGENT, place=WHERE)
    assert Ling.from_record(ling.record()) == ling
    assert Place.from_record({"window_index": "1", "pane_index": True}) == Place()


def test_an_agent_restarted_in_its_own_terminal_is_named_for_approval() -> None:
    """core.ling.restarted: the approved agent exited (no such process, or its pid
    now another process) and a new process of the same program holds the terminal:
    that process is the one the human may approve.  Nothing else is."""
    assert restarted(AGENT, None, RESTARTED) == RESTARTED  # exited; restarted there
    recycled = Proc(CLAUDE.pid, 7000, "/usr/bin/python3", "python3")
    assert restarted(AGENT, recycled, RESTARTED) == RESTARTED  # its pid taken since
    assert restarted(AGENT, CLAUDE, RESTARTED) is None  # the agent lives: not this rule
    assert restarted(AGENT, None, BASH) is None  # the shell it left: not an agent
    assert restarted(AGENT, None, None) is None  # the terminal cannot say
    assert restarted(None, None, RESTARTED) is None  # no agent was approved
    launching = Agent.of(CLAUDE, pending_exec=True)
    assert restarted(launching, None, RESTARTED) is None  # still becoming the agent
    unknown = Agent(CLAUDE.pid, CLAUDE.start, "", "claude")
    assert restarted(unknown, None, Proc(400, 9500, "", "claude")) is None  # no exe to match
