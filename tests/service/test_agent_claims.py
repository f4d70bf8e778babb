"""An agent id that names an agent's process is taken only from that process's own
descendants (issue 29, item 2).

``codex-PID``, ``gemini-PID`` and ``claude-code-PID`` are what the hub itself names an
agent's MCP sessions and what ``hive-rpc hook AGENT`` finds from its own parents: the
agent's process, read from the kernel (core/agents.py). Before, the hub took such an id
from any client as a name it chose, so any local process could act as another agent's
process: read its answers, withdraw its permission questions. Now, while that process
lives, a request with such an id is refused unless the connection's ``SO_PEERCRED`` pid
runs under that very process (its nearest ancestor of the agent's name), checked on
every request; real processes here, named ``codex`` by a symlink as a real Codex names
its own.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from cli_support import HIVE_RPC
from waiting import until

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.agents import CODEX, claimed_process, name_suffix
from hive_rpc.core.errors import HiveError
from hive_rpc.host.agent_process import stat_fields
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


@pytest.fixture
def codex_named(short_tmp: Path) -> Path:
    """A bash whose process is called ``codex`` (its comm is the name it was run by)."""
    link = short_tmp / "codex"
    link.symlink_to("/bin/bash")
    return link


@pytest.fixture
def other_codex(codex_named: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A ``codex`` process this test's client does not run under."""
    proc = subprocess.Popen([str(codex_named), "-c", "read -r line"], stdin=subprocess.PIPE)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdin is not None
        proc.stdin.close()


def zombie(pid: int) -> bool:
    found = stat_fields(pid)
    return found is not None and found[1][:1] == ["Z"]


def test_only_a_pid_form_after_an_agents_name_is_a_claim() -> None:
    assert claimed_process("codex-51007") == (CODEX, 51007)
    assert claimed_process("claude-code-48213") is not None
    # what the session fallback makes (8 characters), a leading zero, a name of one's own
    for name in ("codex-12345678", "codex-0123", "codex-", "codex-4a2", "reviewer-42", "codex"):
        assert claimed_process(name) is None, name
    assert claimed_process("codex-\u0661\u0662") is None  # Arabic-Indic digits are not a pid


def test_a_random_suffix_never_reads_as_a_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    """``hive-rpc mcp`` and ``hive-rpc acp`` name a client ``codex-`` plus 6 random hex
    digits: all decimal 6% of the time, which would be refused as a claim."""
    monkeypatch.setattr(os, "urandom", lambda n: bytes.fromhex("123456"))
    assert name_suffix() == "x23456"
    assert claimed_process(f"codex-{name_suffix()}") is None


async def test_a_client_cannot_act_as_another_agents_process(
    hub: HubService, client: HubClient, other_codex: subprocess.Popen[bytes]
) -> None:
    name = f"codex-{other_codex.pid}"
    for method, params in (
        ("hive/ask", {"question": "Deploy?", "agent_id": name}),
        ("hive/list", {"agent_id": name}),
        ("hive/poll", {"id": "0123456789abcdef", "agent_id": name}),
    ):
        with pytest.raises(HiveError) as refused:
            await client.call(method, params)
        assert refused.value.code == -32602, method
        assert f"agent_id {name!r} names Codex's process {other_codex.pid}" in str(refused.value)
        assert "does not run under it" in str(refused.value)
    assert hub.registry.list_pending() == []


async def test_a_name_of_that_form_for_no_living_agent_is_a_name_like_any_other(
    hub: HubService, client: HubClient
) -> None:
    """``codex-2`` (a user's second Codex; pid 2 is the kernel's) and a pid that is no
    Codex (this test's own) name no agent process: nobody is refused them."""
    for name in ("codex-2", f"codex-{os.getpid()}"):
        asked = await client.call("hive/ask", {"question": "Deploy?", "agent_id": name})
        assert asked["agent_id"] == name
    assert len(hub.registry.list_pending()) == 2


async def test_a_dead_agents_name_is_free(
    hub: HubService, client: HubClient, codex_named: Path
) -> None:
    """A Codex killed mid-call leaves its ``hive-rpc mcp``, now under no Codex, to
    withdraw its questions in its name (seen with a real Claude Code, SIGKILLed,
    tests/claude/test_claude_mcp_timeout.py): a zombie is no living agent."""
    proc = await trio.lowlevel.open_process([str(codex_named), "-c", "exit 0"])
    try:
        # Polled: the child's exit gives this test no event until it is reaped,
        # and reaping it would end the zombie this is about.
        await until(lambda: zombie(proc.pid), "the codex to exit", within_s=30)
        name = f"codex-{proc.pid}"
        asked = await client.call("hive/ask", {"question": "Deploy?", "agent_id": name})
        assert asked["agent_id"] == name
    finally:
        await proc.wait()


async def test_the_agents_own_descendant_acts_as_it(
    hub: HubService, hub_config: HubConfig, codex_named: Path
) -> None:
    """``hive-rpc ask --agent codex-$$`` run by the ``codex`` process itself, as
    ``hive-rpc hook codex`` is (``; true`` keeps bash from replacing itself with the
    command, which would leave no ``codex`` above it)."""
    script = (
        f"echo $$; {HIVE_RPC} ask 'Deploy?' --socket {hub_config.socket} --no-start --json "
        '--agent "codex-$$"; true'
    )
    done = await trio.run_process([str(codex_named), "-c", script], capture_stdout=True)
    pid, asked = done.stdout.decode().split("\n", 1)
    (pending,) = hub.registry.list_pending()
    assert pending.id == json.loads(asked)["id"]
    assert pending.agent_id == f"codex-{pid}"
