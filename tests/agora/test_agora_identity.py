"""Which process a ling's registration approves (issue 26, section 2), end to end: a
real hub, a real tmux server with an interactive bash in the pane, the CLI typed at
bash's prompt as a human types it, and the scripted ling as the agent.

The flows that must keep working: an agent registering its own pane from its shell
tool (a child of the agent, so the agent leads the pane's foreground), the human
starting the agent through ``hive-rpc ling register NAME --tmux -- COMMAND`` (the
registering process execs the agent: same pid, bound to what it runs after), and
``--allow-shell`` (the pane's own shell is what is approved, typed into only at its
prompt).  The one that cannot work is refused with what to do instead: the CLI run
alone at the prompt, where no agent runs yet.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from test_agora import LING, Pane, lings, text_of, tmux_server
from test_relay_consent import ask, screen, shell_pane, tmux, wait_screen

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.relay.proc import stat
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def cli(hub_config: HubConfig, *args: str) -> str:
    """A ``hive-rpc`` command line for this hub, to type at bash's prompt."""
    where = ["--socket", str(hub_config.socket), "--data-dir", str(hub_config.data_dir)]
    return shlex.join([sys.executable, "-m", "hive_rpc", *args, *where, "--no-start"])


def typed(socket: Path, pane: str, line: str) -> None:
    tmux(socket, "send-keys", "-t", pane, "-l", line)
    tmux(socket, "send-keys", "-t", pane, "Enter")


def foreground_pid(socket: Path, pane: str) -> int:
    shell = stat(int(tmux(socket, "display", "-p", "-t", pane, "#{pane_pid}")))
    assert shell is not None
    return shell.tpgid


async def ling_record(client: HubClient, name: str) -> dict[str, Any]:
    (found,) = [x for x in await client.call("ling/list", {}) if x["name"] == name]
    return found


async def test_the_consent_prompt_names_the_process_it_approves(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "kid") as panes:
        pane = panes["kid"]
        asked = await ask(client, "main.kid", pane.address, agent_id="sneaky")
        (prompt,) = await client.call("hive/list", {})
        agent = (await ling_record(client, "main.kid"))["agent"]
        assert agent["pid"] == foreground_pid(pane.socket, pane.id)
        assert (
            f"Approving types only into: {agent['comm']} (pid {agent['pid']}, {agent['exe']}), "
            "and only while it holds the terminal's foreground"
        ) in prompt["question"]
        assert asked["agent"] == agent


async def test_an_agent_registering_its_own_pane_from_its_shell_tool_is_the_one_approved(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """Claude Code's Bash tool runs ``hive-rpc ling register NAME --tmux`` as a child
    in the agent's process group: the agent leads the pane's foreground, so it is
    the process recorded, and typed into."""
    record = short_tmp / "agent.jsonl"
    register = cli(hub_config, "ling", "register", "main.agent", "--tmux")
    agent_code = (
        "import runpy, subprocess, sys; "
        f"subprocess.run({register!r}, shell=True, check=True); "
        f"sys.argv = [{str(LING)!r}, {str(record)!r}]; "
        f"runpy.run_path({str(LING)!r}, run_name='__main__')"
    )
    with tmux_server(short_tmp) as socket:
        pane_id = await shell_pane(socket)
        typed(socket, pane_id, shlex.join([sys.executable, "-c", agent_code]))
        pane = Pane(pane_id, record, socket)
        await pane.ready()
        assert await client.call("hive/list", {}) == []  # from inside: nobody was asked
        agent = (await ling_record(client, "main.agent"))["agent"]
        assert agent["pid"] == foreground_pid(socket, pane_id)
        assert agent["pending_exec"] is None
        sent = await client.call("agent/answer", {"agent": "main.agent", "message": "hi"})
        assert sent["delivery"]["state"] == "delivered", sent
        (raw,) = await pane.wait_for(1)
        assert text_of(raw).endswith("hi")


async def test_register_then_exec_binds_the_agent_the_same_process_becomes(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """``hive-rpc ling register NAME --tmux -- COMMAND`` at bash's prompt: the CLI
    leads the foreground, registers itself as about to exec, and becomes COMMAND;
    the first delivery finds the same process running COMMAND and binds it."""
    record = short_tmp / "agent.jsonl"
    with tmux_server(short_tmp) as socket:
        pane_id = await shell_pane(socket)
        line = cli(hub_config, "ling", "register", "main.agent", "--tmux")
        typed(socket, pane_id, f"{line} -- {shlex.join([sys.executable, str(LING), str(record)])}")
        pane = Pane(pane_id, record, socket)
        await pane.ready()
        agent = (await ling_record(client, "main.agent"))["agent"]
        assert agent["pid"] == foreground_pid(socket, pane_id)
        assert "ling register main.agent" in agent["pending_exec"]
        sent = await client.call("agent/answer", {"agent": "main.agent", "message": "hi"})
        assert sent["delivery"]["state"] == "delivered", sent
        (raw,) = await pane.wait_for(1)
        assert text_of(raw).endswith("hi")
        bound = (await ling_record(client, "main.agent"))["agent"]
        assert (bound["pid"], bound["start"]) == (agent["pid"], agent["start"])
        assert bound["pending_exec"] is None


async def test_the_cli_alone_at_the_prompt_is_refused_saying_how(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """Run at bash's prompt, the registering CLI is itself the pane's foreground and
    ends at once: no agent runs there to approve.  Refused, naming the ways that work."""
    with tmux_server(short_tmp) as socket:
        pane_id = await shell_pane(socket)
        typed(socket, pane_id, cli(hub_config, "ling", "register", "main.agent", "--tmux"))
        await wait_screen(socket, pane_id, "no agent runs in this terminal yet")
        await wait_screen(socket, pane_id, "-- COMMAND")
        assert await client.call("ling/list", {}) == []


async def test_allow_shell_approves_the_panes_shell_at_its_prompt_only(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """``--allow-shell``: the human approves typing into the pane's shell.  It is
    typed into at its prompt; while a program it started holds the pane (``sleep``)
    the message is held, not left as the shell's type-ahead."""
    assert hub.agora is not None
    hub.agora._relay.hold_retry_s, hub.agora._relay.hold_attempts = 0.05, 3
    planted = short_tmp / "PWNED"
    with tmux_server(short_tmp) as socket:
        pane_id = await shell_pane(socket)
        register = cli(hub_config, "ling", "register", "main.sh", "--tmux", "--allow-shell")
        typed(socket, pane_id, register)
        await wait_screen(socket, pane_id, "main.sh: tmux")
        agent = (await ling_record(client, "main.sh"))["agent"]
        pane_pid = int(tmux(socket, "display", "-p", "-t", pane_id, "#{pane_pid}"))
        assert (agent["pid"], agent["comm"]) == (pane_pid, "bash")
        sent = await client.call(
            "agent/answer", {"agent": "main.sh", "message": "x\necho T-$((6*7))"}
        )
        assert sent["delivery"]["state"] == "delivered", sent
        await wait_screen(socket, pane_id, "\nT-42")

        typed(socket, pane_id, "sleep 600")
        with trio.fail_after(20):
            while (sleeper := foreground_pid(socket, pane_id)) == pane_pid:  # noqa: ASYNC110
                await trio.sleep(0.05)
        sent = await client.call(
            "agent/answer", {"agent": "main.sh", "message": f"x\ntouch {planted}"}
        )
        assert sent["delivery"]["state"] == "failed", sent
        assert (
            "is not in the terminal's foreground now: sleep runs there"
            in (sent["delivery"]["reason"])
        )
        os.kill(sleeper, signal.SIGTERM)
        typed(socket, pane_id, "echo MARK-$((6*7))")
        await wait_screen(socket, pane_id, "\nMARK-42")
        assert "touch" not in screen(socket, pane_id)
        assert not planted.exists()
