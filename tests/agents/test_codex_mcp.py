"""The real Codex CLI (0.171.0) as the MCP client of ``hive-rpc mcp`` and as the caller of
``hive-rpc hook codex`` (issue 29), offline: ``codex exec`` against the scripted
Responses API server.  The scripted model provider is the test's (written by hand,
agent_homes.write_codex_config); the server and the hook are what ``hive-rpc setup
codex`` merges in, run as a process (agent_homes.run_setup): these tests prove its
entries work with the real program.

Facts these tests hold (for the setup step):

- Config: ``~/.codex/config.toml`` (``$CODEX_HOME/config.toml`` when CODEX_HOME is
  set: it moves the config and all of Codex's state) with
  ``model_provider = "scripted"`` and ``[model_providers.scripted]`` ``base_url = "http://127.0.0.1:PORT/v1"``,
  ``wire_api = "responses"``, ``env_key = VAR`` (the bearer token). The MCP server is
  ``[mcp_servers."hive-rpc"]`` ``command``, ``args``, ``env``; its tools reach the model
  as one ``namespace`` tool named ``mcp__hive_rpc`` (the dash becomes an underscore), the
  server's instructions as the namespace's description, and the model calls them as
  ``function_call`` items with ``namespace = "mcp__hive_rpc"``, ``name = TOOL``.
- ``codex exec`` runs with approval "never": an MCP call fails unless the server entry
  sets ``default_tools_approval_mode = "approve"``.
- Codex sends its first model request without waiting for an MCP server that takes
  more than about a second to start (measured with a server delayed by 1.5 s: no
  ``mcp__hive_rpc`` in the first request), unless the entry sets ``required = true``
  (then it waits up to ``startup_timeout_sec``, default 10, and ends if the server
  fails). ``hive-rpc mcp`` on a busy machine needs it.
- What the model gets back from an MCP tool is the tool's structuredContent as JSON,
  after a ``Wall time: S seconds`` and an ``Output:`` line (not the text content).
- The hub sees the session as agent ``codex-PID``, the Codex process (Codex gives
  its MCP server no session id; core/agents.py), with the project directory as its
  origin.
- The server gets a stripped environment: HOME, PATH, TMPDIR, LANG,
  SHELL, TERM and a few certificate variables, plus the entry's ``env`` table; not
  HIVE_RPC_SOCKET, not XDG_RUNTIME_DIR, not the provider's key. So the registration
  must name the socket (``--socket``) or put it in ``env``.
- The PermissionRequest hook (``[[hooks.PermissionRequest]]`` ``matcher``, then
  ``[[hooks.PermissionRequest.hooks]]`` ``type = "command"``, ``command``, ``timeout``)
  fires in ``codex exec`` only with ``--approve-for-me`` (approval "on-request", the
  workspace-write sandbox): ``-c approval_policy="on-request"`` and the config key are
  overridden to "never" by exec, and "untrusted" is refused at start. Without the
  hook's decision the approval goes to the automatic reviewer, which calls the model
  provider. A hook that was never trusted (the TUI's ``/hooks``) is skipped without a
  word; headless there is no TUI, hence ``--dangerously-bypass-hook-trust`` here.
  Trust given in the TUI's ``/hooks`` is ``[hooks.state."KEY"] trusted_hash`` in
  config.toml, and a hook trusted so runs without the bypass
  (tests/agents/test_codex_tui.py).
- The hook's stdin is Claude Code's: ``tool_name`` ``"Bash"``, ``tool_input``
  ``{"command", "description"}`` (the model's justification), ``session_id``, ``cwd``,
  ``permission_mode`` ``"default"``; the hook gets Codex's full environment (the
  provider's key too).
- Codex refuses to create its helper binaries (the ``codex-linux-sandbox`` alias its
  sandbox execs) when its home is under the temp dir, and then every sandboxed command
  fails; the tests give it a private TMPDIR."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import tomlkit
import trio
from agent_homes import (
    AgentHome,
    Codex,
    env_recording,
    recorded_env,
    run_setup,
    write_codex_config,
)
from agent_runs import answered_run
from editor import human_editor
from scripted_responses import (
    ResponsesRequest,
    function_call,
    in_turns,
    message,
    output_text,
    scripted_responses,
)

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

NAMESPACE = "mcp__hive_rpc"
QUESTION = "Which database should the cache use?"


def set_up(agent: AgentHome, base_url: str, socket: Path) -> Path:
    """The user's config.toml (the scripted provider), then ``hive-rpc setup codex``
    merged into it with the test hub's socket.  Returns the file."""
    write_codex_config(agent, base_url=base_url)
    path = run_setup(agent, "codex", socket)
    assert path == agent.home / ".codex" / "config.toml"
    return path


def mcp_result(request: ResponsesRequest, call: dict[str, Any]) -> dict[str, Any]:
    """The structured result Codex gave the model for the MCP ``call``: the JSON after
    its ``Output:`` line."""
    output = request.output_for(call)
    assert output is not None, f"no function_call_output for {call['call_id']}"
    said = output_text(output)
    assert said.startswith("Wall time: "), said
    _, found, body = said.partition("Output:\n")
    assert found, said
    data: dict[str, Any] = json.loads(body)
    return data


async def test_codex_asks_async_and_polls_the_answer(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``codex exec``: the model asks with ``hivemind_ask_async``, the question reaches
    the hub's editors, the human answers, and the model's poll brings the answer back
    in the next request's function_call_output."""
    answered = threading.Event()
    ask = function_call("hivemind_ask_async", {"question": QUESTION}, namespace=NAMESPACE)
    seen: dict[str, Any] = {}

    def first(request: ResponsesRequest) -> list[dict[str, Any]]:
        offered = request.namespace(NAMESPACE)
        assert offered is not None, request.tool_names
        seen["instructions"] = offered.get("description", "")
        assert f"{NAMESPACE}.hivemind_poll" in request.tool_names
        return [ask]

    def poll(request: ResponsesRequest) -> list[dict[str, Any]]:
        seen["asked"] = mcp_result(request, ask)
        assert answered.wait(40), "the human never answered"
        seen["poll"] = function_call(
            "hivemind_poll", {"ask_id": seen["asked"]["ask_id"]}, namespace=NAMESPACE
        )
        return [seen["poll"]]

    def done(request: ResponsesRequest) -> list[dict[str, Any]]:
        seen["answer"] = mcp_result(request, seen["poll"])
        return [message(f"The human chose {seen['answer']['decision']}.")]

    with scripted_responses(in_turns(first, poll, done)) as model:
        codex = Codex(codex_bin, agent_home)
        set_up(agent_home, model.base_url, hub_config.socket)
        async with human_editor(hub_config.socket, approver=False) as human:
            done_run, prompt = await answered_run(
                human, lambda: codex.exec("Ask the human."), {"answer": "Postgres"},
                answered=answered,
            )  # fmt: skip
            assert await human.call("hive/list", {}) == []

    assert model.errors == [], model.errors
    assert done_run.returncode == 0, done_run.stderr
    assert "The human chose Postgres." in done_run.stdout
    assert prompt["question"] == QUESTION
    assert re.fullmatch(r"codex-\d+", prompt["agent_id"]), prompt["agent_id"]
    assert prompt["origin"] == str(agent_home.project)
    asked = seen["asked"]
    assert asked["ask_id"] == prompt["id"]
    assert asked["status"] == "pending"
    answer = seen["answer"]
    assert answer["ask_id"] == prompt["id"]
    assert answer["status"] == "responded"
    assert answer["decision"] == "Postgres"
    # The server's instructions reach the model as the namespace's description.
    assert "hive-rpc lets you ask the human" in seen["instructions"]
    # Codex's own request headers: the provider's key as the bearer token.
    assert model.requests[0].headers["authorization"] == "Bearer sk-hive-rpc-tests"


async def test_codex_starts_the_mcp_server_with_a_stripped_environment(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """What ``hive-rpc mcp`` gets from Codex: not the variables hive-rpc reads to find
    its hub (HIVE_RPC_SOCKET, XDG_RUNTIME_DIR), only the entry's ``env`` table (setup's
    MCP_TOOL_TIMEOUT, matching its tool_timeout_sec) on top of a short list.  The
    setup's command is run through a shell that records the environment; it names the
    test hub's socket (a server that cannot reach a hub starts one, which would
    outlive the test)."""
    saw = agent_home.root / "mcp-env"
    with scripted_responses(in_turns([message("nothing to do")])) as model:
        codex = Codex(
            codex_bin,
            agent_home,
            extra_env={
                "HIVE_RPC_SOCKET": str(agent_home.root / "hub.sock"),
                "XDG_RUNTIME_DIR": str(agent_home.root),
                "HIVE_RPC_TESTS_MARKER": "from-the-agent",
            },
        )
        path = set_up(agent_home, model.base_url, hub_config.socket)
        config = tomlkit.parse(path.read_text())
        entry: Any = config["mcp_servers"]["hive-rpc"]  # type: ignore[index]
        assert entry["tool_timeout_sec"] == 600
        wrapped = env_recording(saw, [entry["command"], *entry["args"]])
        entry["command"], entry["args"] = wrapped[0], wrapped[1:]
        path.write_text(tomlkit.dumps(config))
        done = await trio.to_thread.run_sync(codex.exec, "Do nothing.")
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    assert "could not create PATH aliases" not in done.stderr
    env = recorded_env(saw)
    assert env["MCP_TOOL_TIMEOUT"] == "600000"
    assert env["HOME"] == str(agent_home.home)
    for stripped in ("HIVE_RPC_SOCKET", "XDG_RUNTIME_DIR", "HIVE_RPC_TESTS_MARKER"):
        assert stripped not in env, env
    assert "HIVE_RPC_TESTS_CODEX_KEY" not in env
    assert not any(name.startswith("CODEX_") for name in env), env
    assert "PATH" in env


async def permission_round(
    hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome, answer: dict[str, Any]
) -> tuple[Any, ResponsesRequest, dict[str, Any], dict[str, Any], Path]:
    """``codex exec --approve-for-me`` whose model asks to run ``touch FILE`` outside
    the sandbox (``require_escalated``), setup's ``hive-rpc hook codex`` as the
    PermissionRequest hook, and the human answering from an approver editor with
    ``answer`` (hive/respond params). Returns the run, the last model request, the
    prompt, the call, and the file."""
    target = agent_home.project / "made-by-codex"
    touch = function_call(
        "exec_command",
        {
            "cmd": f"touch {target}",
            "sandbox_permissions": "require_escalated",
            "justification": "Make the file",
        },
    )
    with scripted_responses(in_turns([touch], [message("done")])) as model:
        codex = Codex(codex_bin, agent_home)
        set_up(agent_home, model.base_url, hub_config.socket)
        async with human_editor(hub_config.socket) as human:
            done, prompt = await answered_run(
                human,
                lambda: codex.exec(
                    # Headless, the TUI's /hooks (where a hook is trusted: the one step
                    # setup leaves to the user) cannot be used: trust is bypassed for
                    # this run.
                    "--dangerously-bypass-hook-trust",
                    # The only exec mode whose approvals reach the hook.
                    "--approve-for-me",
                    "Make the file.",
                ),
                answer,
            )
            assert await human.call("hive/list", {}) == []
    assert model.errors == [], model.errors
    assert len(model.requests) == 2, "the automatic reviewer was asked too"
    return done, model.requests[-1], prompt, touch, target


async def test_codex_permission_hook_allow_runs_the_command(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    done, last, prompt, touch, target = await permission_round(
        hub_config, codex_bin, agent_home, {"answer": "allow"}
    )
    assert done.returncode == 0, done.stderr
    assert target.exists()
    output = last.output_for(touch)
    assert output is not None
    assert "Process exited with code 0" in output_text(output)
    assert prompt["kind"] == "permission"
    assert json.loads(prompt["detail"])["command"] == f"touch {target}"
    # setup registered ``hook codex``: the question names Codex, the agent is the
    # Codex process (core/agents.py).
    assert re.fullmatch(r"codex-\d+", prompt["agent_id"]), prompt["agent_id"]
    assert prompt["question"].startswith(f"Codex in {agent_home.project} "), prompt
    assert prompt["question"].endswith(f"wants to run Bash: touch {target}"), prompt


async def test_codex_permission_hook_deny_reaches_the_model_and_nothing_runs(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    done, last, _, touch, target = await permission_round(
        hub_config, codex_bin, agent_home, {"answer": "deny", "by": "emacs"}
    )
    assert done.returncode == 0, done.stderr
    assert not target.exists()
    output = last.output_for(touch)
    assert output is not None
    assert "The human denied this Bash request from hive-rpc (emacs)." in output_text(output)


SESSION_EVENTS = ("start", "prompt", "stop", "end")
"""The events an agent's hooks report (``agent/session``), not the hub's own."""


def session_entries(hub: HubService) -> list[tuple[str, str, str]]:
    """(agent id, event, state) of each session entry on the hub's activity stream
    that an agent's hook reported, in order."""
    return [
        (e.key, e.event, e.data["state"])
        for e in hub.activity.recent(1000)
        if e.kind == "session" and e.event in SESSION_EVENTS
    ]


async def test_a_codex_run_is_a_session_idle_then_working_then_idle_on_the_hub(
    hub: HubService, hub_config: HubConfig, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``codex exec`` with setup's hooks (trust bypassed: headless, see
    ``permission_round``): its SessionStart leaves the session idle, the prompt
    (UserPromptSubmit) working, the turn's Stop idle again and SessionEnd gone, all
    under the agent id of the Codex process, ``codex-PID``, the one its MCP server
    and permission requests take.  Codex runs these hooks before it goes on, so the
    entries are there once the run has ended."""
    with scripted_responses(in_turns([message("done")])) as model:
        codex = Codex(codex_bin, agent_home)
        set_up(agent_home, model.base_url, hub_config.socket)
        done = await trio.to_thread.run_sync(
            lambda: codex.exec("--dangerously-bypass-hook-trust", "Say done.")
        )
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    for hook in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert f"hook: {hook} Completed" in done.stderr, done.stderr
    entries = session_entries(hub)
    assert [(event, state) for _, event, state in entries] == [
        ("start", "idle"),
        ("prompt", "working"),
        ("stop", "idle"),
        ("end", "gone"),
    ], done.stderr
    (agent,) = {agent for agent, _, _ in entries}
    assert re.fullmatch(r"codex-\d+", agent), agent
    (session,) = [e.data for e in hub.activity.recent(1000) if e.kind == "session"][-1:]
    assert session["agent"] == "codex"
    assert session["project_dir"] == str(agent_home.project)
