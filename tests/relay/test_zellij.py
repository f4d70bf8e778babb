"""ZellijTarget against a STAND-IN ``zellij`` executable, because Zellij cannot be
installed on the machine these tests run on.

The stand-in (zellij_standin.py, run through a ``zellij`` wrapper put first on PATH)
is not Zellij.  It prints canned output shaped like Zellij 0.44's documented CLI and
records the argv of every call, so these tests check what ZellijTarget asks Zellij
to do and how it reads the answers; they cannot check that a real Zellij answers as
documented.  The sources for the CLI are listed in hive_rpc/relay/zellij.py.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from hive_rpc.core.ling import Agent
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.proc import process
from hive_rpc.relay.target import DeliveryError
from hive_rpc.relay.zellij import TAIL_LINES, ZellijTarget, parse_address

STANDIN = Path(__file__).with_name("zellij_standin.py")

SESSIONS = "other [Created 3h ago]\nagents [Created 10m ago] (current)\n"
PANES = [
    {"id": 0, "is_plugin": True, "title": "tab-bar", "exited": False},
    {"id": 3, "is_plugin": True, "title": "status-bar", "exited": False},
    {"id": 1, "is_plugin": False, "title": "/bin/bash", "exited": False},
    {"id": 3, "is_plugin": False, "title": "claude", "exited": False, "exit_status": None,
     "pane_command": "claude"},
]  # fmt: skip
SCREEN = "Welcome to the ling\n\n\u276f \n\n"  # Claude Code's prompt: it takes input


@dataclass
class StandinZellij:
    """The stand-in's scenario (what it prints) and record (what it was asked)."""

    dir: Path

    def scenario(
        self,
        *,
        sessions: str = SESSIONS,
        panes: object = PANES,
        screen: str = SCREEN,
        fail: dict[str, tuple[int, str]] | None = None,
    ) -> None:
        (self.dir / "scenario.json").write_text(
            json.dumps({"sessions": sessions, "panes": panes, "screen": screen, "fail": fail or {}})
        )

    def pastes(self) -> list[list[str]]:
        return [call for call in self.calls() if call[3:4] == ["paste"]]

    def calls(self) -> list[list[str]]:
        record = self.dir / "calls.jsonl"
        if not record.exists():
            return []
        return [json.loads(line)["argv"] for line in record.read_text().splitlines()]


@pytest.fixture
def standin_zellij(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StandinZellij:
    """A stand-in ``zellij`` first on PATH (Zellij itself cannot be installed here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "zellij"
    wrapper.write_text(
        f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(STANDIN)!r}, run_name='__main__')\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("ZELLIJ_STANDIN_DIR", str(tmp_path))
    standin = StandinZellij(dir=tmp_path)
    standin.scenario()
    return standin


AGENTS = ["--session", "agents", "action"]


@pytest.mark.parametrize(
    ("address", "session", "pane"),
    [
        ("agents:terminal_3", "agents", "terminal_3"),
        ("agents:3", "agents", "terminal_3"),
        ("team:a:12", "team:a", "terminal_12"),
    ],
)
def test_addresses_name_a_session_and_a_terminal_pane(
    address: str, session: str, pane: str
) -> None:
    assert parse_address(address) == (session, pane)
    target = ZellijTarget(address)
    assert (target.session, target.pane_id, target.address) == (session, pane, address)


@pytest.mark.parametrize("address", ["agents", "agents:", ":3", "agents:plugin_2", "agents:x3"])
def test_bad_addresses_are_refused(address: str) -> None:
    with pytest.raises(ValueError, match="SESSION:PANE"):
        ZellijTarget(address)


async def test_check_uses_the_documented_commands_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    state = await ZellijTarget("agents:3").check()
    assert state.alive, state.reason
    assert state.tail == "Welcome to the ling\n\n\u276f "
    assert state.address is None
    assert standin_zellij.calls() == [
        ["list-sessions", "--no-formatting"],
        [*AGENTS, "list-panes", "--json"],
        [*AGENTS, "dump-screen", "--pane-id", "terminal_3"],
    ]


async def test_check_keeps_only_the_last_lines_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(screen="".join(f"line {i}\n" for i in range(100)) + "\n" * 50)
    tail = (await ZellijTarget("agents:3").check()).tail.split("\n")
    assert len(tail) == TAIL_LINES
    assert tail[-1] == "line 99"


async def test_a_missing_session_is_not_alive_via_standin(standin_zellij: StandinZellij) -> None:
    standin_zellij.scenario(sessions="other [Created 3h ago]\nagents-2 [Created 1m ago]\n")
    state = await ZellijTarget("agents:3").check()
    assert not state.alive
    assert state.reason == "no Zellij session named 'agents' is running"
    assert len(standin_zellij.calls()) == 1


async def test_no_sessions_at_all_is_not_alive_via_standin(standin_zellij: StandinZellij) -> None:
    standin_zellij.scenario(
        sessions="", fail={"list-sessions": (1, "No active zellij sessions found.")}
    )
    state = await ZellijTarget("agents:3").check()
    assert not state.alive
    assert state.reason == (
        "no Zellij session named 'agents' is running (zellij: No active zellij sessions found.)"
    )


async def test_an_exited_session_is_not_alive_via_standin(standin_zellij: StandinZellij) -> None:
    standin_zellij.scenario(sessions="agents [Created 2h ago] (EXITED - attach to resurrect)\n")
    state = await ZellijTarget("agents:3").check()
    assert not state.alive
    assert "has exited" in state.reason


async def test_a_missing_pane_is_not_alive_via_standin(standin_zellij: StandinZellij) -> None:
    state = await ZellijTarget("agents:7").check()
    assert not state.alive
    assert state.reason == "Zellij session 'agents' has no pane terminal_7"
    # plugin_3 exists, but is not terminal_3
    standin_zellij.scenario(panes=[p for p in PANES if p["is_plugin"]])
    assert not (await ZellijTarget("agents:3").check()).alive


async def test_a_pane_whose_command_exited_is_not_alive_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(panes=[{"id": 3, "is_plugin": False, "exited": True, "exit_status": 1}])
    state = await ZellijTarget("agents:3").check()
    assert not state.alive
    assert state.reason == (
        "the command in Zellij pane terminal_3 of session 'agents' has exited (status 1)"
    )


async def test_an_old_zellij_without_list_panes_is_reported_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(
        fail={"list-panes": (2, "error: Found argument 'list-panes' which wasn't expected")}
    )
    state = await ZellijTarget("agents:3").check()
    assert not state.alive
    assert "Zellij 0.44.1 or newer is needed" in state.reason
    assert "wasn't expected" in state.reason


async def test_output_that_is_not_json_is_reported_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(panes={"not": "a list"})
    state = await ZellijTarget("agents:3").check()
    assert not state.alive
    assert "not a list" in state.reason


async def test_type_text_pastes_then_presses_enter_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    await ZellijTarget("agents:terminal_3").type_text("-n two\nlines")
    assert standin_zellij.calls() == [
        [*AGENTS, "paste", "--pane-id", "terminal_3", "--", "-n two\nlines"],
        [*AGENTS, "write", "--pane-id", "terminal_3", "13"],
    ]


async def test_type_text_can_use_write_chars_via_standin(standin_zellij: StandinZellij) -> None:
    await ZellijTarget("agents:3", bracketed_paste=False).type_text("hello")
    assert standin_zellij.calls() == [
        [*AGENTS, "write-chars", "--pane-id", "terminal_3", "--", "hello"],
        [*AGENTS, "write", "--pane-id", "terminal_3", "13"],
    ]


async def test_a_failed_paste_raises_and_presses_no_enter_via_standin(
    standin_zellij: StandinZellij,
) -> None:
    standin_zellij.scenario(fail={"paste": (1, "Session 'agents' not found")})
    with pytest.raises(DeliveryError, match="zellij action paste failed for agents:3: Session"):
        await ZellijTarget("agents:3").type_text("hello")
    assert [call[3] for call in standin_zellij.calls()] == ["paste"]


async def test_the_relay_types_nothing_into_a_zellij_pane_via_standin(
    standin_zellij: StandinZellij, nursery: trio.Nursery
) -> None:
    """Issue 26: a ling is typed into only while the process the human approved holds
    its terminal's foreground.  Zellij's CLI names no process for a pane (its
    ``pane_command`` is a name, which any program can have), so the hub cannot check
    it: nothing is typed, whatever the pane runs and even with --allow-shell, and
    the reason says so.  (``type_text`` itself is tested above.)"""
    me = process(os.getpid())
    assert me is not None
    agent = Agent.of(me)
    relay = Relay(nursery, min_interval_s=0.0, hold_retry_s=0.0, hold_attempts=2)
    target = ZellijTarget("agents:3")
    plain = [{k: v for k, v in p.items() if k != "pane_command"} for p in PANES]
    for command in ("claude", "bash", None):
        panes = plain if command is None else [{**p, "pane_command": command} for p in PANES]
        standin_zellij.scenario(panes=panes)
        for allow_shell in (False, True):
            refused = await relay.deliver(
                "agents:3", target, "ok\ntouch FILE", agent=agent, allow_shell=allow_shell
            )
            assert not refused.delivered
            assert "Zellij's CLI names no process for a pane" in refused.reason
            assert refused.attempts == 1
    assert standin_zellij.pastes() == []
