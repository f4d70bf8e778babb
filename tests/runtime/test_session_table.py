"""The table's bound (runtime/sessions.py): past ``max_sessions``, made-up names give
way to each other, never push out an agent process the hub checked, and a session
waiting on the human is never dropped."""

from __future__ import annotations

import pytest

from hive_rpc.runtime import sessions as table_module
from hive_rpc.runtime.sessions import SessionTable

CHECKED = {"claude-code-4242": 4242, "claude-code-4343": 4343}
"""Agent ids that name a living agent process, for this test's table."""


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> SessionTable:
    monkeypatch.setattr(table_module, "living_agent_pid", CHECKED.get)
    monkeypatch.setattr(table_module, "working_dir", lambda pid: f"/src/app{pid}")
    clock = iter(range(1, 1000))
    return SessionTable(lambda: float(next(clock)), max_sessions=3)


def test_made_up_names_never_push_out_a_checked_agent(table: SessionTable) -> None:
    table.report("claude-code-4242", "stop")  # the oldest, idle: first to go by age
    table.report("spam-1", "start")
    table.report("spam-2", "start")
    table.report("spam-3", "start")  # room made from spam-1, not from the real agent
    assert [s.agent_id for s in table.list()] == ["spam-3", "spam-2", "claude-code-4242"]
    assert table.get("claude-code-4242") is not None
    assert table.get("claude-code-4242").pid == 4242  # type: ignore[union-attr]


def test_a_checked_agent_makes_room_even_from_another(table: SessionTable) -> None:
    table.report("claude-code-4242", "stop")
    table.report("spam-1", "start")
    table.report("spam-2", "start")
    assert table.report("claude-code-4343", "start") is not None  # spam-1 made room
    assert table.get("spam-1") is None
    table.report("spam-3", "start")  # spam-2 goes; both real agents stay
    assert {s.agent_id for s in table.list()} == {"claude-code-4242", "claude-code-4343", "spam-3"}


def test_when_only_real_or_waiting_sessions_are_left_a_made_up_name_is_not_kept(
    table: SessionTable,
) -> None:
    table.report("claude-code-4242", "stop")
    table.report("claude-code-4343", "prompt")
    table.report("waits", "notice", notice_type="permission_prompt")  # waiting: kept
    assert table.report("spam-1", "start") is None
    assert len(table) == 3
