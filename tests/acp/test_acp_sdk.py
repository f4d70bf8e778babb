"""``hive-rpc acp`` end to end with the real ACP TypeScript SDK 2.4.0: a client on the
SDK (acp_client.mjs) starts ``hive-rpc acp -- node scripted_agent.mjs``, an agent on
the SDK that asks ``session/request_permission`` for a shell command held only in the
tool call's content (as Gemini CLI sends it) and reports what it got back.  An
editor-socket client of a real hub plays the human.  Each test also checks that the
agent and the child it started are gone once the proxy has exited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from cli_support import exited
from waiting import until

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

HERE = Path(__file__).parent
COMMAND = "rm -rf build && npm test -- --grep 'permission'"
"""What the scripted agent asks to run (scripted_agent.mjs)."""
AGENT = "scripted-1"


class Run:
    """One client run: what it printed, what the agent reported, the proxy's stderr."""

    def __init__(self, done: subprocess.CompletedProcess[bytes], report: Path) -> None:
        assert done.returncode == 0, done.stderr.decode()
        self.client = [json.loads(line) for line in done.stdout.splitlines()]
        self.agent = [json.loads(line) for line in report.read_text().splitlines()]
        self.stderr = done.stderr.decode()

    def agent_event(self, name: str) -> dict[str, Any]:
        return next(e for e in self.agent if e["event"] == name)

    def client_events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.client if e["event"] == name]

    async def tree_gone(self) -> None:
        """The agent and its child have exited.  Polled: they are no children of the
        test, and the proxy's SIGKILL to their group gives no event to wait on here."""
        started = self.agent_event("started")
        pid, child = started["pid"], started["child"]
        # outside this process, no event to follow: polled (tests/waiting.py)
        await until(lambda: exited(pid) and exited(child), "the agent's tree to end", within_s=20)


async def run_client(
    acp_sdk: Path, config: HubConfig, home: Path, *options: str
) -> subprocess.CompletedProcess[bytes]:
    report = home / "agent.jsonl"
    proxy = [sys.executable, "-m", "hive_rpc", "acp", "--socket", str(config.socket)]
    proxy += ["--data-dir", str(config.data_dir), "--agent", AGENT, *options]
    agent = ["node", str(HERE / "scripted_agent.mjs"), str(report)]
    project = home / "src" / "app"
    project.mkdir(parents=True, exist_ok=True)
    return await trio.run_process(
        ["node", str(HERE / "acp_client.mjs"), str(project), *proxy, "--", *agent],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env={**os.environ, "HIVE_ACP_SDK_DIR": str(acp_sdk), "HOME": str(home)},
    )


async def with_human(
    acp_sdk: Path,
    config: HubConfig,
    home: Path,
    human: HubClient,
    answer: dict[str, Any],
) -> tuple[Run, dict[str, Any]]:
    """Run the client while ``human`` (an approver, subscribed) answers the prompt the
    proxy asks with ``answer`` (hive/respond params); the run and the prompt."""
    assert await prove_approver(human.call) is None
    await human.call("hive/subscribe", {})
    done: list[subprocess.CompletedProcess[bytes]] = []
    async with trio.open_nursery() as nursery:

        async def client() -> None:
            done.append(await run_client(acp_sdk, config, home))

        nursery.start_soon(client)
        note = await human.next_notification()
        while note.method != "hive/prompt":
            note = await human.next_notification()
        prompt: dict[str, Any] = note.params
        await human.call("hive/respond", {"id": prompt["id"], **answer})
    return Run(done[0], home / "agent.jsonl"), prompt


async def test_allow_from_the_editor_reaches_the_agent_as_allow_once(
    acp_sdk: Path, hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(60):
        run, prompt = await with_human(acp_sdk, hub_config, short_tmp, client, {"answer": "Allow"})
        await run.tree_gone()
    assert run.agent_event("permission")["outcome"] == {
        "outcome": "selected",
        "optionId": "proceed_once",
    }
    assert run.client_events("client-permission") == []  # the client was not asked
    assert run.client_events("stop") == [{"event": "stop", "stopReason": "end_turn"}]
    # what the human saw: the command itself, not only the title "Shell"
    assert prompt["question"] == (
        f"{AGENT} in ~/src/app (session sess-4f1) wants to use execute: Shell (see detail)"
    )
    assert prompt["detail"] == f"title: Shell\n\nkind: execute\n\n{COMMAND}"
    assert prompt["choices"] == ["Allow", "Allow always", "Reject"]
    assert prompt["kind"] == "permission"
    assert prompt["agent_id"] == AGENT
    # the hub's audit trail names the tool and the option the human picked
    (entry,) = await client.call("audit/list", {})
    assert (entry["tool"], entry["summary"]) == ("execute", "Shell (see detail)")
    assert (entry["prompt_id"], entry["answer"], entry["agent_id"]) == (
        prompt["id"],
        "Allow",
        AGENT,
    )
    # what the option decides, from its kind (allow_once), not guessed from its name
    assert entry["decision"] == "allow"


async def test_reject_from_the_editor_reaches_the_agent_as_its_reject_option(
    acp_sdk: Path, hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(60):
        run, _ = await with_human(acp_sdk, hub_config, short_tmp, client, {"answer": "Reject"})
        await run.tree_gone()
    assert run.agent_event("permission")["outcome"] == {"outcome": "selected", "optionId": "cancel"}
    assert run.client_events("client-permission") == []


async def test_a_declined_question_goes_to_the_clients_own_dialog(
    acp_sdk: Path, hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(60):
        run, prompt = await with_human(
            acp_sdk, hub_config, short_tmp, client, {"action": "decline"}
        )
        await run.tree_gone()
    [asked] = run.client_events("client-permission")
    content = asked["params"]["toolCall"]["content"]
    assert content == [{"type": "content", "content": {"type": "text", "text": COMMAND}}]
    # the client's handler picks allow_always: the agent got the client's answer
    assert run.agent_event("permission")["outcome"] == {
        "outcome": "selected",
        "optionId": "proceed_always",
    }
    assert (await client.call("hive/poll", {"id": prompt["id"]}))["status"] == "responded"


async def test_the_session_gets_hive_rpc_as_an_mcp_server_beside_the_clients_own(
    acp_sdk: Path, hub_config: HubConfig, short_tmp: Path
) -> None:
    """No hub at all (none is started): the request goes to the client's dialog, and
    session/new still carries the added MCP server."""
    with trio.fail_after(60):
        run = Run(await run_client(acp_sdk, hub_config, short_tmp), short_tmp / "agent.jsonl")
        await run.tree_gone()
    own, added = run.agent_event("session/new")["params"]["mcpServers"]
    assert own == {"name": "own", "command": "/bin/true", "args": [], "env": []}
    assert added["name"] == "hive-rpc"
    assert Path(added["command"]).is_absolute()
    assert added["env"] == []
    args = added["args"]
    assert args[args.index("mcp") :] == [
        "mcp",
        "--socket",
        str(hub_config.socket),
        "--data-dir",
        str(hub_config.data_dir),
        "--no-start",
        "--agent",
        AGENT,
    ]
    assert len(run.client_events("client-permission")) == 1
    assert "no answer from the hub (HubUnreachable" in run.stderr


async def test_no_hub_with_unanswered_deny_refuses_without_asking_the_client(
    acp_sdk: Path, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(60):
        done = await run_client(acp_sdk, hub_config, short_tmp, "--unanswered", "deny")
        run = Run(done, short_tmp / "agent.jsonl")
        await run.tree_gone()
    assert run.agent_event("permission")["outcome"] == {"outcome": "selected", "optionId": "cancel"}
    assert run.client_events("client-permission") == []
    assert run.client_events("exit") == [{"event": "exit", "code": 0, "signal": None}]
