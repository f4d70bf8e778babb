"""Issue 32, part 3, for Zellij: a pane gone is looked for in its place.

A MOCK: Zellij cannot run on the machine these tests run on, so ZellijTarget talks
to the stand-in ``zellij`` of tests/relay/test_zellij.py (zellij_standin.py), which
prints the recorded, documented ``list-panes --json`` output those tests use (with
the ``tab_name`` and ``pane_cwd`` of Zellij's cli-recipes.md sample).  These tests
check how ZellijTarget reads that output and applies core/refind.py; they cannot
check that a real Zellij answers so.

Zellij's CLI names no process for a pane, so nothing tells the approved agent moved
from a new program opened in its place: a pane found there is named in the reason,
never taken (and a Zellij ling is never typed into anyway, see test_zellij.py).
"""

from __future__ import annotations

from test_zellij import PANES, StandinZellij, standin_zellij

from hive_rpc.core.ling import Place
from hive_rpc.core.refind import AMBIGUOUS, NEW
from hive_rpc.relay.target import Expected
from hive_rpc.relay.zellij import ZellijTarget

__all__ = ["standin_zellij"]  # test_zellij's fixture, for pytest to find here

AGENT_PANE = {**PANES[3], "tab_name": "w", "pane_cwd": "/src/app"}
HERE = Place("agents", "w", cwd="/src/app", command="claude")


def panes_with(*extra: dict[str, object]) -> list[dict[str, object]]:
    """The recorded panes without the agent's (terminal_3), and ``extra``."""
    return [*PANES[:3], *extra]


async def test_check_records_where_the_pane_is_via_standin_mock(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(panes=[*PANES[:3], AGENT_PANE])
    state = await ZellijTarget("agents:3").check()
    assert state.alive
    assert state.place == HERE


async def test_a_pane_opened_in_its_place_is_named_not_taken_via_standin_mock(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(panes=panes_with({**AGENT_PANE, "id": 7}))
    target = ZellijTarget("agents:3")
    target.expected = Expected(None, HERE)
    state = await target.check()
    assert not state.alive
    assert state.refound is not None
    assert state.refound.outcome == NEW
    assert state.reason.startswith(
        "Zellij pane terminal_3 of session 'agents' is gone; pane terminal_7 was found in "
        "its place (session agents, window w, running claude), but that is a new process"
    )
    assert standin_zellij.pastes() == []


async def test_a_shell_in_its_place_or_two_candidates_are_not_it_via_standin_mock(
    standin_zellij: StandinZellij,
) -> None:
    target = ZellijTarget("agents:3")
    target.expected = Expected(None, HERE)
    standin_zellij.scenario(panes=panes_with({**AGENT_PANE, "id": 7, "pane_command": "bash"}))
    state = await target.check()
    assert not state.alive
    assert state.refound is None
    assert state.reason == (
        "Zellij session 'agents' has no pane terminal_3; a pane is in its place (session "
        "agents, window w) but runs another program (terminal_7 runs bash), so it is not "
        "taken for it"
    )
    standin_zellij.scenario(panes=panes_with({**AGENT_PANE, "id": 7}, {**AGENT_PANE, "id": 8}))
    state = await target.check()
    assert state.refound is not None
    assert state.refound.outcome == AMBIGUOUS
    assert "2 panes are in its place" in state.reason
    assert "takes none and types nothing" in state.reason


async def test_without_a_recorded_place_a_gone_pane_is_only_gone_via_standin_mock(
    standin_zellij: StandinZellij,
) -> None:
    """A ling stored before places were: the pane is reported gone, as before."""
    standin_zellij.scenario(panes=panes_with({**AGENT_PANE, "id": 7}))
    target = ZellijTarget("agents:3")
    target.expected = Expected(None, None)
    state = await target.check()
    assert state.reason == "Zellij session 'agents' has no pane terminal_3"
    assert state.refound is None
