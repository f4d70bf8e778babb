"""Relay consent (docs/security.md, "Typing into terminals"), end to end: a real hub,
real tmux panes, the CLI run inside and outside them, and a real ``hive-rpc mcp``.

A terminal is typed into only with its owner's consent (a registration from inside
it, or the human's approval of the hub's prompt), and only while an agent, not a
shell, runs in it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters
from test_agora import LING, Pane, approve, lings, open_pane, text_of, tmux_server
from waiting import logged

from hive_rpc.agora import lings as ling_module
from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

SHELL_REFUSED = "a shell, not an agent, runs in this terminal"


def tmux(socket: Path, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-S", str(socket), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


async def shell_pane(socket: Path) -> str:
    """A pane running an interactive bash, ready for input (its prompt shows)."""
    pane = tmux(
        socket, "new-window", "-d", "-P", "-F", "#{pane_id}",
        "env PS1='bash$ ' bash --norc --noprofile -i",
    )  # fmt: skip
    await wait_screen(socket, pane, "bash$")
    return pane


def screen(socket: Path, pane: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-J", "-t", pane)


async def wait_screen(socket: Path, pane: str, text: str) -> None:
    with trio.fail_after(20):
        while text not in screen(socket, pane):  # noqa: ASYNC110 (tmux gives no event)
            await trio.sleep(0.05)


async def ask(client: HubClient, name: str, address: str, **extra: Any) -> dict[str, Any]:
    """``ling/register`` as an agent would send it: from outside the terminal."""
    result: dict[str, Any] = await client.call(
        "ling/register", {"name": name, "kind": "tmux", "address": address, **extra}
    )
    return result


async def registered(client: HubClient) -> list[str]:
    return [x["name"] for x in await client.call("ling/list", {}) if x["state"] == "registered"]


async def wait_event(hub: HubService, event: str, ling: str) -> dict[str, Any]:
    """The Agora's ``event`` about ``ling``, once the hub's own task has made it."""
    found = await logged(
        hub.activity, lambda e: e.kind == "ling" and (e.event, e.key) == (event, ling), within_s=20
    )
    return found.data


async def test_a_registration_from_outside_is_pending_and_types_nothing_until_approved(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "kid") as panes:
        pane = panes["kid"]
        asked = await ask(client, "main.kid", pane.address, agent_id="sneaky")
        assert asked["state"] == "pending"
        # The hub's own prompt: urgent, approve/deny, who asked, what runs there.
        (prompt,) = await client.call("hive/list", {})
        assert prompt["id"] == asked["prompt_id"]
        assert prompt["urgent"] is True
        assert prompt["choices"] == ["approve", "deny"]
        assert prompt["agent_id"] == "hive-rpc"
        assert prompt["question"].startswith(f"sneaky (pid {os.getpid()} ("), prompt["question"]
        assert f"asks to register tmux pane {pane.address} as ling main.kid" in prompt["question"]
        assert "Running there now: python" in prompt["question"]
        assert "\n  | ling>" in prompt["question"]  # its last lines

        assert await registered(client) == []
        with pytest.raises(HiveError, match=r"no ling named 'main\.kid' is registered yet"):
            await client.call("agent/answer", {"agent": "main.kid", "message": "too soon"})
        report = await client.call(
            "event/post", {"kind": "child-note", "from": "main.kid.x", "message": "hi"}
        )
        assert report["delivery"]["state"] == "not-relayed"

        await approve(hub, client, "main.kid", asked["prompt_id"])
        await wait_event(hub, "ling/approved", "main.kid")
        done = await client.call("agent/answer", {"agent": "main.kid", "message": "now"})
        assert done["delivery"]["state"] == "delivered"
        (raw,) = await pane.wait_for(1)
        assert text_of(raw).endswith("now")


async def test_a_denied_request_registers_nothing(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "kid") as panes:
        asked = await ask(client, "main.kid", panes["kid"].address)
        await approve(hub, client, "main.kid", asked["prompt_id"], answer="deny")
        denied = await wait_event(hub, "ling/denied", "main.kid")
        assert denied["outcome"] == "denied"
        assert await client.call("ling/list", {}) == []
        with pytest.raises(HiveError, match="no ling named"):
            await client.call("agent/answer", {"agent": "main.kid", "message": "x"})
        assert panes["kid"].received() == []


async def test_an_expired_request_registers_nothing(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    assert hub.agora is not None
    hub.agora.consent_timeout_s = 0.5
    async with lings(short_tmp, "kid") as panes:
        asked = await ask(client, "main.kid", panes["kid"].address)
        denied = await wait_event(hub, "ling/denied", "main.kid")
        assert denied["outcome"] == "expired"
        record = await client.call("hive/poll", {"id": asked["prompt_id"]})
        assert record["status"] == "expired"
        assert await client.call("ling/list", {}) == []
        # A late approval is refused: the prompt is closed.
        with pytest.raises(HiveError):
            await client.call("hive/respond", {"id": asked["prompt_id"], "answer": "approve"})
        assert await registered(client) == []


async def test_a_new_request_replaces_the_pending_one_and_remove_withdraws_it(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    async with lings(short_tmp, "kid") as panes:
        first = await ask(client, "main.kid", panes["kid"].address)
        second = await ask(client, "main.kid", panes["kid"].address)
        assert (await client.call("hive/poll", {"id": first["prompt_id"]}))["status"] == (
            "cancelled"
        )
        (listed,) = await client.call("ling/list", {})
        assert (listed["state"], listed["prompt_id"]) == ("pending", second["prompt_id"])
        assert (await client.call("ling/remove", {"name": "main.kid"}))["removed"] is True
        assert (await client.call("hive/poll", {"id": second["prompt_id"]}))["status"] == (
            "cancelled"
        )
        assert await client.call("ling/list", {}) == []


async def test_a_bash_pane_gets_nothing_even_approved_unless_allow_shell(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    with tmux_server(short_tmp) as socket:
        pane = await shell_pane(socket)
        address = f"{pane}@{socket}"
        asked = await ask(client, "main.sh", address)
        (prompt,) = await client.call("hive/list", {})
        assert "Running there now: bash - a SHELL" in prompt["question"]
        await approve(hub, client, "main.sh", asked["prompt_id"])
        planted = short_tmp / "planted"
        sent = await client.call(
            "agent/answer", {"agent": "main.sh", "message": f"ok\ntouch {planted}"}
        )
        assert sent["delivery"]["state"] == "failed"
        assert sent["delivery"]["reason"].startswith(f"{SHELL_REFUSED} (bash)")
        (checked,) = await client.call("ling/list", {"check": True})
        assert (checked["alive"], checked["command"]) == (True, "bash")
        assert checked["reason"].startswith(f"{SHELL_REFUSED} (bash); not typed")
        assert "touch" not in screen(socket, pane)

        # The human may allow the shell, explicitly: the prompt says so.
        asked = await ask(client, "main.sh", address, allow_shell=True)
        (prompt,) = await client.call("hive/list", {})
        assert "WITH --allow-shell" in prompt["question"]
        await approve(hub, client, "main.sh", asked["prompt_id"])
        await wait_event(hub, "ling/approved", "main.sh")
        sent = await client.call("agent/answer", {"agent": "main.sh", "message": "echo typed"})
        assert sent["delivery"]["state"] == "delivered", sent
        await wait_screen(socket, pane, "] echo typed")  # typed, as the human allowed
        assert not planted.exists()


def _children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(x) for x in found]


async def test_a_ling_whose_agent_exited_is_held(
    hub: HubService, client: HubClient, short_tmp: Path
) -> None:
    with tmux_server(short_tmp) as socket:
        pane_id = await shell_pane(socket)
        record = short_tmp / "agent.jsonl"
        # The test starts the "agent" from the pane's shell, as a human would.
        tmux(socket, "send-keys", "-t", pane_id, f"{sys.executable} {LING} {record}", "Enter")
        pane = Pane(pane_id, record, socket)
        await pane.ready()
        asked = await ask(client, "main.agent", pane.address)
        await approve(hub, client, "main.agent", asked["prompt_id"])
        sent = await client.call("agent/answer", {"agent": "main.agent", "message": "first"})
        assert sent["delivery"]["state"] == "delivered", sent
        await pane.wait_for(1)

        shell_pid = int(tmux(socket, "display", "-p", "-t", pane_id, "#{pane_pid}"))
        (agent_pid,) = _children(shell_pid)
        os.kill(agent_pid, signal.SIGTERM)  # the agent exits: its pane is back at bash
        with trio.fail_after(20):
            while _children(shell_pid):  # noqa: ASYNC110 (another process)
                await trio.sleep(0.05)
        planted = short_tmp / "planted"
        sent = await client.call(
            "agent/answer", {"agent": "main.agent", "message": f"ok\ntouch {planted}"}
        )
        assert sent["delivery"]["state"] == "failed"
        # The process approved is gone (issue 26): not typed, whatever runs there now.
        reason = sent["delivery"]["reason"]
        assert reason.startswith(f"the agent registered here (python, pid {agent_pid}")
        assert "has exited; not typed" in reason
        assert "`hive-rpc ling register main.agent --tmux`" in reason
        assert "touch" not in screen(socket, pane_id)
        assert not planted.exists()


async def test_registration_from_inside_the_pane_needs_no_consent(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    where = f"--socket {hub_config.socket} --data-dir {hub_config.data_dir} --no-start"
    record, said = short_tmp / "in.jsonl", short_tmp / "said.txt"
    with tmux_server(short_tmp) as socket:
        # Run in the pane: the CLI's controlling terminal is the pane's tty.
        command = (
            f"{sys.executable} -m hive_rpc ling register main.in --tmux {where} > {said} 2>&1; "
            f"exec {sys.executable} {LING} {record}"
        )
        pane_id = tmux(socket, "new-window", "-d", "-P", "-F", "#{pane_id}", command)
        pane = Pane(pane_id, record, socket)
        await pane.ready()
        assert said.read_text().strip() == f"main.in: tmux {pane.address}"
        assert await client.call("hive/list", {}) == []  # nobody was asked
        assert await registered(client) == ["main.in"]
        sent = await client.call("agent/answer", {"agent": "main.in", "message": "hello"})
        assert sent["delivery"]["state"] == "delivered"
        (raw,) = await pane.wait_for(1)
        assert text_of(raw).endswith("hello")


async def test_tmux_pane_in_the_environment_is_not_proof(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """$TMUX_PANE and $TMUX are only where the CLI looks; set by anyone, they prove
    nothing: a CLI outside the pane that claims it is inside gets a pending request."""
    async with lings(short_tmp, "kid") as panes:
        pane = panes["kid"]
        env = {**os.environ, "TMUX": f"{pane.socket},1,0", "TMUX_PANE": pane.id}
        done = await trio.run_process(
            [
                sys.executable, "-m", "hive_rpc", "ling", "register", "main.kid", "--tmux",
                "--socket", str(hub_config.socket), "--data-dir", str(hub_config.data_dir),
                "--no-start",
            ],
            env=env, capture_stdout=True, capture_stderr=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"main.kid: tmux {pane.address} is pending" in done.stdout.decode()
        assert await registered(client) == []


async def test_the_issue_reproduction_mcp_agent_cannot_run_a_command_in_a_shell(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    """Issue 11, item 1: through ``hive-rpc mcp --agent sneaky``, ling_register names a
    pane running an interactive bash, then answer_question types "ok\\ntouch FILE".
    Neither before approval nor after it is anything typed; FILE is never created."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "hive_rpc", "mcp", "--agent", "sneaky", "--tools", "ask,lings,events,coordinator",
            "--socket", str(hub_config.socket), "--data-dir", str(hub_config.data_dir),
            "--no-start",
        ],
        env=dict(os.environ),
    )  # fmt: skip
    planted = short_tmp / "FILE"
    with tmux_server(short_tmp) as socket:
        pane = await shell_pane(socket)
        async with Client(params, mode="legacy") as agent:
            got = await agent.call_tool(
                "ling_register", {"name": "victim", "kind": "tmux", "address": f"{pane}@{socket}"}
            )
            assert not got.is_error, got.content
            assert got.structured_content is not None
            assert got.structured_content["state"] == "pending"
            (prompt,) = await client.call("hive/list", {})
            assert prompt["question"].startswith("sneaky (pid ")
            typed = await agent.call_tool(
                "answer_question", {"agent": "victim", "message": f"ok\ntouch {planted}"}
            )
            assert typed.is_error  # no such ling yet
            # Nor can the agent approve its own request: only the human answers.
            approved = await agent.call_tool(
                "hivemind_respond", {"ask_id": prompt["id"], "decision": "approve"}
            )
            assert approved.is_error
            assert "only the human answers it" in approved.content[0].text  # type: ignore[union-attr]
            assert (await client.call("hive/poll", {"id": prompt["id"]}))["status"] == "pending"
            # Even a careless approval types nothing into the shell.
            await approve(hub, client, "victim", prompt["id"])
            typed = await agent.call_tool(
                "answer_question", {"agent": "victim", "message": f"ok\ntouch {planted}"}
            )
            assert typed.structured_content is not None
            delivery = typed.structured_content["delivery"]
            assert delivery["state"] == "failed"
            assert SHELL_REFUSED in delivery["reason"]
        assert "touch" not in screen(socket, pane)
        assert not planted.exists()


async def test_a_bad_zellij_address_is_refused_at_registration(client: HubClient) -> None:
    for address in ("s:not-a-pane", "no-colon", ":3"):
        with pytest.raises(HiveError) as caught:
            await client.call("ling/register", {"name": "z", "kind": "zellij", "address": address})
        assert caught.value.code == -32602
        assert "SESSION:PANE" in caught.value.message
    assert await client.call("hive/list", {}) == []  # nothing was asked of the human


async def test_pending_requests_survive_a_restart(hub_config: HubConfig, short_tmp: Path) -> None:
    from hive_rpc.hub import run_hub

    async with lings(short_tmp, "kid") as panes:
        async with trio.open_nursery() as nursery:
            first = await nursery.start(run_hub, hub_config)
            async with await HubClient.connect(hub_config.socket) as c:
                asked = await ask(c, "main.kid", panes["kid"].address)
            nursery.cancel_scope.cancel()
        assert first is not None
        async with trio.open_nursery() as nursery:
            second = await nursery.start(run_hub, hub_config)
            async with await HubClient.connect(hub_config.socket) as c:
                (listed,) = await c.call("ling/list", {})
                assert listed["state"] == "pending"
                await approve(second, c, "main.kid", asked["prompt_id"])
                sent = await c.call("agent/answer", {"agent": "main.kid", "message": "back"})
                assert sent["delivery"]["state"] == "delivered"
            nursery.cancel_scope.cancel()


async def test_open_pane_helper_still_types(short_tmp: Path) -> None:
    # The shared helper's panes run the scripted ling (python), not a shell.
    with tmux_server(short_tmp) as socket:
        pane = await open_pane(socket, short_tmp, "p")
        command = tmux(socket, "display", "-p", "-t", pane.id, "#{pane_current_command}")
        assert command.startswith("python")


async def test_requests_waiting_for_the_human_are_capped(
    client: HubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hive_rpc.core.limits import MAX_LING_REQUESTS

    # The cap of all requests; one peer's own cap has its test below.
    monkeypatch.setattr(ling_module, "MAX_LING_REQUESTS_PER_PEER", MAX_LING_REQUESTS)

    for n in range(MAX_LING_REQUESTS):
        asked = await ask(client, f"spam{n}", "%99@/nonexistent/tmux.sock", agent_id="sneaky")
        assert asked["state"] == "pending"
    with pytest.raises(HiveError) as caught:
        await ask(client, "one.more", "%99@/nonexistent/tmux.sock", agent_id="sneaky")
    assert caught.value.code == -32012
    assert "(ling_requests)" in caught.value.message
    again = await ask(client, "spam0", "%98@/nonexistent/tmux.sock")  # replaces its own
    assert again["state"] == "pending"
    assert len(await client.call("hive/list", {})) == MAX_LING_REQUESTS


async def test_one_peer_cannot_take_every_consent_slot(
    client: HubClient, hub_config: HubConfig
) -> None:
    """Issue 26, section 3: one agent took all 32 slots, under made-up agent ids. One
    peer (this process's session, as the kernel says) gets 8; another agent, the real
    CLI in a session of its own, still asks the human."""
    from hive_rpc.core.limits import MAX_LING_REQUESTS_PER_PEER

    for n in range(MAX_LING_REQUESTS_PER_PEER):
        asked = await ask(client, f"spam{n}", "%99@/nonexistent/tmux.sock", agent_id=f"a{n}")
        assert asked["state"] == "pending"
    with pytest.raises(HiveError) as caught:
        await ask(client, "one.more", "%99@/nonexistent/tmux.sock", agent_id="someone-else")
    assert caught.value.code == -32012
    assert caught.value.data["limit"] == "ling_requests_per_peer"
    assert f"session {os.getsid(0)}" in caught.value.message
    other = await trio.run_process(
        [
            sys.executable, "-m", "hive_rpc", "ling", "register", "theirs",
            "--tmux", "%98@/nonexistent/tmux.sock", "--socket", str(hub_config.socket),
            "--data-dir", str(hub_config.data_dir), "--no-start",
        ],
        capture_stdout=True, capture_stderr=True, check=False, start_new_session=True,
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert "theirs" in [x["name"] for x in await client.call("ling/list", {})]
