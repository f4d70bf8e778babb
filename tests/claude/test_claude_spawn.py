"""The real Claude Code starts a child of its own (``spawn_subtree``,
agora/spawning.py; issue 32 part 2), as docs/claude-code.md's "A session that
starts its own children" tells a human to set it up.

tests/agora/test_agora_spawn.py proves the hub's side with a small python agent; here
the parent is the real ``claude`` TUI, started by ``hive-rpc spawn main -- claude
...`` in a window of a private tmux server (its pane registered from inside, Claude
Code the approved agent), with its MCP server registered with ``--tools
ask,spawn,events`` and no ``--agent``. The hub finds the parent from Claude Code's own
process tree: the ``hive-rpc mcp`` it runs is the relay's peer, and Claude Code, its
parent, is ling main's approved agent. Its model is scripted (scripted_model.py): told
by the human to start a worker, it loads the tool (``ToolSearch``: MCP tools are
deferred) and calls it. The child runs tests/relay/scripted_ling.py, which records
what is typed into it, or is a second real Claude Code. The human answers the hub's
consent prompt from an editor, with the approver's credential, as test_agora_spawn.py
does."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import trio
from claude_session import ClaudeHome, claude_home
from scripted_model import ModelRequest, scripted_model, text, tool_use
from test_agora_spawn import LING, answered, until_ready
from test_claude_agora import (
    Agent,
    Tmux,
    dump,
    prompts,
    register_mcp,
    since_prompt,
    spawn,
    structured,
    tmux_server,
    tui_command,
)

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

SPAWN = "mcp__hive-rpc__spawn_subtree"
ANSWER = "mcp__hive-rpc__answer_question"
REPORT = "mcp__hive-rpc__report_to_parent"
QUESTION = "Should I define the JWT types locally?"
ANSWERED = "Yes, locally."
ASK = "Start a worker for the {} module"
ASKED = "Asked the human to approve the worker."
REPLIES = {
    "[CHILD SPAWNED]": "The worker runs.",
    "[SPAWN REFUSED]": "The worker was refused.",
    "[NOTE from": "Read the worker's note.",
    "[QUESTION from": "Answered the worker.",
}
"""The model's reply to each thing the hub types into its terminal: the screen shows
it once Claude Code is done with that prompt."""
ALLOW_HIVE = ("--allowedTools", "mcp__hive-rpc")
"""The hub's tools run without Claude Code's permission dialog."""
WAIT_S = 60
"""The test's own bound on each wait for Claude Code: a hang fails, a slow machine
does not."""


def starts_a_worker(child: str, command: list[str]) -> Callable[[ModelRequest], list[Any]]:
    """Told by its human to start a worker for ``child``, the model loads
    ``spawn_subtree`` and calls it with ``command``; the worker's question it answers
    with ``answer_question``; what else the hub types in it acknowledges
    (``REPLIES``)."""

    def script(request: ModelRequest) -> list[Any]:
        prompt, step, _ = since_prompt(request)
        if prompt == ASK.format(child):
            if step == 0:
                return [tool_use("ToolSearch", {"query": f"select:{SPAWN}"})]
            if step == 1:
                return [tool_use(SPAWN, {"name": child, "command": command})]
            return [text(ASKED)]
        if prompt.startswith("[QUESTION from") and step < 2:
            if step == 0:
                return [tool_use("ToolSearch", {"query": f"select:{ANSWER}"})]
            return [tool_use(ANSWER, {"agent": f"main.{child}", "message": ANSWERED})]
        said = [reply for start, reply in REPLIES.items() if prompt.startswith(start)]
        return [text(said[0] if said else "Nothing to do.")]

    return script


def parent_pid_of(pid: int) -> int:
    """``pid``'s parent process, as /proc says."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])


def windows(tmux: Tmux) -> list[str]:
    return tmux.run("list-windows", "-a", "-F", "#{window_id}").split()


def spawn_result(request: ModelRequest) -> dict[str, Any]:
    """What ``spawn_subtree`` returned, as Claude Code gave it to the model."""
    *_, result = request.tool_results()
    return structured(result)


async def a_parent_asks(
    stack: ExitStack,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
    child: str,
    command: list[str],
    *,
    agent_name: str | None,
) -> tuple[Agent, Tmux, ModelRequest]:
    """Claude Code as ling ``main`` in its tmux window, its MCP server registered with
    ``--tools ask,spawn,events`` (under ``--agent agent_name``, or none); the human
    asks it to start a worker; the model's request that carries the tool's result."""
    model = stack.enter_context(scripted_model(starts_a_worker(child, command)))
    claude = claude_home(claude_bin, claude_root / "main", model.base_url)
    register_mcp(claude, hub_config.socket, agent_name, tools="ask,spawn,events")
    agent = Agent("main", model, claude)
    tmux = stack.enter_context(tmux_server(claude_root))
    await trio.to_thread.run_sync(spawn, tmux, agent, hub_config, *ALLOW_HIVE)
    await trio.to_thread.run_sync(tmux.submit, agent.pane, ASK.format(child))
    got = await model.request_where(
        lambda r: since_prompt(r)[:2] == (ASK.format(child), 2), within_s=WAIT_S
    )
    # Claude Code is done with the human's prompt before the human looks at the hub's.
    await trio.to_thread.run_sync(tmux.wait_for, agent.pane, ASKED, WAIT_S)
    return agent, tmux, got


async def told(agent: Agent, start: str) -> str:
    """The prompt starting with ``start`` that the hub typed into the parent's TUI,
    once its model has it: whole, a prompt of its own."""
    request = await agent.model.request_where(
        lambda r: any(p.startswith(start) for p in prompts(r)), within_s=WAIT_S
    )
    return next(p for p in prompts(request) if p.startswith(start))


async def test_claude_code_starts_a_child_the_human_approves_and_hears_from_it(
    hub: HubService,
    client: HubClient,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
) -> None:
    """The MCP server registered under no ling name: the hub finds the parent from
    Claude Code's process tree alone.  The tool's result says pending, with the
    prompt's id, and nothing runs; the consent prompt names main, main.auth and the
    exact command.  Approved: a new window of main's tmux session runs the command as
    ling main.auth, whose approved agent is the child process; Claude Code is told
    ``[CHILD SPAWNED] ...`` as a prompt, and the child's note reaches it as one too."""
    record = claude_root / "auth.jsonl"
    command = [sys.executable, str(LING), str(record)]
    with ExitStack() as stack:
        parent, tmux, asked = await a_parent_asks(
            stack, hub_config, claude_bin, claude_root, "auth", command, agent_name=None
        )
        result = spawn_result(asked)
        started_before = windows(tmux)
        parent_pid = tmux.run("display", "-p", "-t", parent.pane, "#{pane_pid}").strip()
        lings_before = await client.call("ling/list", {"check": True})
        prompt_id = result["children"][0]["prompt_id"]
        consent = await client.call("hive/poll", {"id": prompt_id})
        relay = re.search(r"; asking through pid (\d+) \(hive-rpc\)\)", consent["question"])
        assert relay is not None, consent["question"]
        relay_parent = parent_pid_of(int(relay.group(1)))
        claude_exe = os.readlink(f"/proc/{parent_pid}/exe")
        ran_before = record.exists()

        spawned = await answered(hub, client, prompt_id, "approve", "ling/spawned", "main.auth")
        await until_ready(record)
        lings = {x["name"]: x for x in await client.call("ling/list", {"check": True})}
        child_pane = lings["main.auth"]["address"].partition("@")[0]
        child_pid = tmux.run("display", "-p", "-t", child_pane, "#{pane_pid}").strip()
        child_session = tmux.run("display", "-p", "-t", child_pane, "#{session_name}").strip()
        parent_session = tmux.run("display", "-p", "-t", parent.pane, "#{session_name}").strip()
        started_after = windows(tmux)
        with trio.fail_after(WAIT_S):
            spawned_text = await told(parent, "[CHILD SPAWNED]")
            await trio.to_thread.run_sync(
                tmux.wait_for, parent.pane, REPLIES["[CHILD SPAWNED]"], WAIT_S
            )
            posted = await client.call(
                "event/post", {"kind": "child-note", "from": "main.auth", "message": "tokens done"}
            )
            note = await told(parent, "[NOTE from")
        context = dump([parent], tmux)

    # The tool returned at once: pending, with the prompt's id; nothing ran yet.
    assert result["parent"] == "main", result
    (child,) = result["children"]
    assert (child["name"], child["state"], child["command"]) == ("main.auth", "pending", command)
    assert child["workdir"] == str(parent.claude.project)
    assert consent["status"] == "pending", consent
    assert len(started_before) == 2, context  # the tmux server's first window, and main's
    assert [x["name"] for x in lings_before] == ["main"]
    assert not ran_before
    (main,) = lings_before
    # Ling main's approved agent is Claude Code's process (the pane's, which
    # registered it and exec'd claude); the hub found it from the ``hive-rpc mcp``
    # Claude Code runs, its child, which gives no ling name.
    assert (main["state"], main["command"]) == ("registered", "claude"), main
    assert main["agent"]["pid"] == int(parent_pid) == relay_parent, main
    question = consent["question"]
    for said in (
        # Who asks, as it runs now: claude, not the python that registered the pane
        # (the record until something is typed into main) - it said python before.
        f"main (its agent: claude, pid {parent_pid}, {claude_exe}; asking through pid "
        f"{relay.group(1)} (hive-rpc)) asks to start a child agent, ling main.auth:",
        f"Command: {shlex.join(command)}\n",
        f"In: {parent.claude.project}\n",
        f"In a new window of tmux session {parent_session}.",
        "registers its pane as ling main.auth, child of main",
    ):
        assert said in question, (said, question)
    assert (consent["choices"], consent["urgent"]) == (["approve", "deny"], True)

    # Approved: a new window of the parent's session runs it, registered as main.auth.
    assert len(started_after) == len(started_before) + 1, context
    assert child_session == parent_session
    auth = lings["main.auth"]
    assert (auth["state"], auth["parent"], auth["alive"]) == ("registered", "main", True), auth
    assert auth["agent"]["pid"] == int(child_pid), auth  # the child process itself
    assert spawned.data["address"] == auth["address"]

    # Claude Code was told, as a prompt of its own, and so was the child's note.
    assert parent.model.errors == [], context
    assert spawned_text == (
        f"[CHILD SPAWNED] Agent 'auth' on branch main.auth is running in "
        f"{parent.claude.project} (tmux {auth['address']}).\n"
        f"Command: {shlex.join(command)}\n"
        "Its events come to you here; answer its questions with: "
        'answer_question agent=main.auth message="..."'
    ), context
    assert (posted["to"], posted["delivery"]["state"]) == ("main", "delivered"), posted
    assert note == posted["text"] == "[NOTE from auth] tokens done", context


async def test_claude_code_is_told_when_the_human_refuses_its_child(
    hub: HubService,
    client: HubClient,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
) -> None:
    """The MCP server registered under the ling's name this time (``--agent main``):
    the hub goes by the process all the same.  Denied, nothing starts, and Claude Code
    is told ``[SPAWN REFUSED] ...`` as a prompt."""
    record = claude_root / "db.jsonl"
    command = [sys.executable, str(LING), str(record)]
    with ExitStack() as stack:
        parent, tmux, asked = await a_parent_asks(
            stack, hub_config, claude_bin, claude_root, "db", command, agent_name="main"
        )
        before = windows(tmux)
        (child,) = spawn_result(asked)["children"]
        await answered(hub, client, child["prompt_id"], "deny", "ling/spawn-refused", "main.db")
        with trio.fail_after(WAIT_S):
            refused = await told(parent, "[SPAWN REFUSED]")
            await trio.to_thread.run_sync(
                tmux.wait_for, parent.pane, REPLIES["[SPAWN REFUSED]"], WAIT_S
            )
        after = windows(tmux)
        lings = await client.call("ling/list", {})
        context = dump([parent], tmux)

    assert parent.model.errors == [], context
    assert (child["name"], child["state"]) == ("main.db", "pending"), child
    assert refused == (
        "[SPAWN REFUSED] Agent 'db' (main.db) was not started: the human denied it. "
        f"Nothing was started.\nCommand: {shlex.join(command)}"
    ), context
    assert after == before
    assert [x["name"] for x in lings] == ["main"]
    assert not record.exists()


def asks_its_parent(request: ModelRequest) -> list[Any]:
    """The child's model: started with a prompt (its command's), it asks its parent a
    question with ``report_to_parent``, naming nobody (the hub knows it by its
    process); the answer it acknowledges."""
    prompt, step, _ = since_prompt(request)
    if prompt.startswith("[ANSWER from"):
        return [text("Thanks.")]
    if step == 0:
        return [tool_use("ToolSearch", {"query": f"select:{REPORT}"})]
    if step == 1:
        asked = {"kind": "child-question", "message": QUESTION}
        return [tool_use(REPORT, asked)]
    return [text("Asked my parent.")]


async def test_a_child_that_is_claude_code_asks_its_parent_and_gets_the_answer(
    hub: HubService,
    client: HubClient,
    hub_config: HubConfig,
    claude_bin: Path,
    claude_root: Path,
) -> None:
    """The child is a second real Claude Code, with its own model and HOME, in the
    parent's project directory: ``claude PROMPT ...``, its MCP server registered with
    ``--tools events``.  Approved, it asks its parent (``report_to_parent``); the
    question is the parent's prompt, the parent answers (``answer_question``), and the
    answer is the child's prompt.  Neither names itself: their MCP servers give no
    ling name (their ids are ``claude-code-PID``), and the hub takes each one's ling
    from its process (the approved agent the relay runs under).  Before, the child's
    question was refused: "'claude-code-31260' has no parent"."""
    with ExitStack() as stack:
        child_model = stack.enter_context(scripted_model(asks_its_parent))
        project = claude_root / "main" / "project"
        child = ClaudeHome(claude_bin, claude_root / "main.auth", project, child_model.base_url)
        child.write_config()
        register_mcp(child, hub_config.socket, None, tools="events")
        command = tui_command(child, "Ask your parent", *ALLOW_HIVE)
        parent, tmux, asked = await a_parent_asks(
            stack, hub_config, claude_bin, claude_root, "auth", command, agent_name=None
        )
        (request,) = spawn_result(asked)["children"]
        spawned = await answered(
            hub, client, request["prompt_id"], "approve", "ling/spawned", "main.auth"
        )
        worker = Agent("main.auth", child_model, child, spawned.data["address"].partition("@")[0])
        with trio.fail_after(WAIT_S):
            question = await told(parent, "[QUESTION from auth]")
            answer = await child_model.request_where(
                lambda r: any(p.startswith("[ANSWER from") for p in prompts(r)), within_s=WAIT_S
            )
            replied = await parent.model.request_where(
                lambda r: since_prompt(r)[:2] == (question, 2), within_s=WAIT_S
            )
        context = dump([parent, worker], tmux)

    assert parent.model.errors == child_model.errors == [], context
    assert question == (
        f"[QUESTION from auth] {QUESTION}\n"
        'Reply with: answer_question agent=main.auth message="..."'
    ), context
    *_, reported = answer.tool_results()
    assert structured(reported)["to"] == "main", reported
    assert prompts(answer) == ["Ask your parent", f"[ANSWER from main] {ANSWERED}"]
    *_, answer_result = replied.tool_results()  # what answer_question told the parent
    assert structured(answer_result)["delivery"]["state"] == "delivered", answer_result
