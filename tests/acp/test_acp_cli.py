"""``hive-rpc acp`` as the ACP client runs it: a real process.  Told to stop
(SIGTERM), it ends the agent's whole process group, a child that ignores SIGTERM
included; killed (SIGKILL, as Emacs and Zed end what they started), its guard does;
an agent that cannot start, or none named, is
said on stderr with its exit code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from cli_support import exited
from waiting import until

from hive_rpc.cli.acp import agent_name

STUBBORN = """
import json, signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child too
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])
print(json.dumps({"jsonrpc": "2.0", "method": "x/pids", "params": [child.pid]}), flush=True)
sys.stdin.read()
"""
"""An agent, and a child of it, that ignore SIGTERM; it names the child on stdout."""
PARENT = STUBBORN.replace("signal.signal(signal.SIGTERM, signal.SIG_IGN)", "")
"""An agent that starts a child and exits when its stdin ends, leaving the child."""


def acp(short_tmp: Path, *agent: str) -> list[str]:
    where = ["--socket", str(short_tmp / "none.sock"), "--data-dir", str(short_tmp / "d")]
    return [sys.executable, "-m", "hive_rpc", "acp", *where, "--", *agent]


async def started(argv: list[str]) -> tuple[trio.Process, int]:
    """The proxy running ``argv``'s agent, and the pid of the agent's child."""
    proxy = await trio.lowlevel.open_process(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proxy.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        line += await proxy.stdout.receive_some()
    [child] = json.loads(line)["params"]
    return proxy, child


async def test_a_proxy_killed_with_sigkill_still_ends_the_agents_group(short_tmp: Path) -> None:
    """As Emacs's delete-process kills it: the guard ends the group."""
    with trio.fail_after(60):
        proxy, child = await started(acp(short_tmp, sys.executable, "-c", PARENT))
        agent = os.getpgid(child)
        proxy.kill()
        assert await proxy.wait() == -signal.SIGKILL
        # outside this process, no event to follow: polled (tests/waiting.py)
        await until(lambda: exited(agent) and exited(child), "the agent's group", within_s=20)


async def test_sigterm_ends_the_agents_whole_group_even_what_ignores_it(short_tmp: Path) -> None:
    with trio.fail_after(60):
        proxy, child = await started(acp(short_tmp, sys.executable, "-c", STUBBORN))
        agent = os.getpgid(child)  # the agent leads the group its child is in
        assert agent != os.getpgid(0)
        proxy.send_signal(signal.SIGTERM)
        assert await proxy.wait() == 0
        # outside this process, no event to follow: polled (tests/waiting.py)
        await until(lambda: exited(agent) and exited(child), "the agent's group", within_s=20)


async def test_an_agent_that_cannot_start_is_said_with_exit_127(short_tmp: Path) -> None:
    with trio.fail_after(30):
        done = await trio.run_process(
            acp(short_tmp, str(short_tmp / "no-such-agent")),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 127
    assert b"hive-rpc acp: cannot start " in done.stderr
    assert b"no-such-agent" in done.stderr


async def test_no_agent_named_is_a_usage_error(short_tmp: Path) -> None:
    with trio.fail_after(30):
        done = await trio.run_process(
            acp(short_tmp), capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 2
    assert b"name the agent after --" in done.stderr


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["gemini", "--acp"], "gemini"),
        (["/usr/local/bin/gemini", "--acp"], "gemini"),
        (["npx", "@google/gemini-cli@0.61.0", "--acp"], "gemini-cli"),
        (["npx", "-y", "@zed-industries/claude-code-acp"], "claude-code-acp"),
        (["node", "/src/agents/scripted_agent.mjs", "report"], "scripted_agent"),
        (["env", "GEMINI_API_KEY=x", "goose", "acp"], "goose"),
        (["node"], "node"),
    ],
)
def test_the_default_agent_id_is_named_after_the_agent_not_its_runner(
    argv: list[str], name: str
) -> None:
    assert agent_name(argv) == name
