"""The real Gemini CLI (0.61.0) as the MCP client of ``hive-rpc mcp`` (issue 29),
offline: ``gemini -p`` (headless) against the scripted Gemini API server.  The API-key
auth and the trusted project folder are the test's (written by hand,
agent_homes.write_gemini_config); the server and the BeforeTool hook are what
``hive-rpc setup gemini`` merges in, run as a process (agent_homes.run_setup): these
tests prove its entries work with the real program, and that its hook leaves
hive-rpc's own tools alone (the human is asked the question, not about it).

Facts these tests hold (for the setup step):

- Config: ``~/.gemini/settings.json`` ``mcpServers`` ``{"hive-rpc": {"command", "args",
  "trust": true}}``, with ``security.auth.selectedType = "gemini-api-key"``; the model
  is reached through ``GOOGLE_GEMINI_BASE_URL`` with ``GEMINI_API_KEY``. Headless,
  Gemini CLI also refuses an untrusted folder (exit 55): ``~/.gemini/trustedFolders.json``
  ``{PROJECT: "TRUST_FOLDER"}`` (or ``GEMINI_CLI_TRUST_WORKSPACE=true``, or
  ``--skip-trust``).
- The tools reach the model as function declarations named ``mcp_hive-rpc_TOOL``, and
  the server's instructions inside the first user turn ("The following are
  instructions provided by the tool server 'hive-rpc'"). Headless, an untrusted server's
  tools are not declared at all.
- Gemini CLI waits for its MCP servers before its first model request.
- What the model gets back from an MCP tool is the tool's text content (not its
  structuredContent), each text item wrapped in its own ``<untrusted_context>`` lines,
  as the ``functionResponse``'s ``response.output``.
- The hub sees the session as agent ``gemini-PID``, the Gemini CLI process
  (core/agents.py).
- The server inherits Gemini CLI's environment (HIVE_RPC_SOCKET and XDG_RUNTIME_DIR
  too), less the variables that look like secrets (GEMINI_API_KEY is dropped), plus
  ``GEMINI_CLI=1``.
- Each run makes a side call first, ``:generateContent`` asking the model router for
  JSON (``{"reasoning", "model_choice": "flash"|"pro"}``)."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from agent_homes import (
    AgentHome,
    Gemini,
    env_recording,
    recorded_env,
    run_setup,
    write_gemini_config,
)
from agent_runs import answered_run
from editor import human_editor, next_prompt
from scripted_gemini import GeminiRequest, function_call, in_turns, scripted_gemini, text

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

PREFIX = "mcp_hive-rpc_"
QUESTION = "Which database should the cache use?"


def set_up(agent: AgentHome, socket: Path) -> Path:
    """The user's settings (API-key auth, the project trusted), then ``hive-rpc setup
    gemini`` merged into them with the test hub's socket.  Returns settings.json."""
    write_gemini_config(agent)
    path = run_setup(agent, "gemini", socket)
    assert path == agent.home / ".gemini" / "settings.json"
    return path


def edit_server(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Change setup's ``hive-rpc`` entry in settings.json in place."""
    settings = json.loads(path.read_text())
    change(settings["mcpServers"]["hive-rpc"])
    path.write_text(json.dumps(settings, indent=2))


def tool_output(request: GeminiRequest, name: str) -> str:
    """The last ``functionResponse`` for the tool ``name``: its ``output``."""
    found = [r for r in request.function_responses() if r.get("name") == name]
    assert found, f"no functionResponse for {name}: {request.function_responses()}"
    output: str = found[-1]["response"]["output"]
    return output


def unwrapped(output: str) -> list[str]:
    """The texts inside Gemini CLI's ``<untrusted_context>`` wrapping: one block per
    text content item of the tool's result, joined by newlines."""
    block = r"<untrusted_context>\n(.*?)\n</untrusted_context>"
    assert re.fullmatch(f"{block}(?:\\n{block})*", output, re.S), output
    return re.findall(block, output, re.S)


async def test_gemini_asks_async_and_polls_the_answer(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """``gemini -p``: the model asks with ``hivemind_ask_async``, the question reaches
    the hub's editors, the human answers, and the model's poll brings the answer back
    in the next request's functionResponse, as the tool's text."""
    answered = threading.Event()
    seen: dict[str, Any] = {}

    def first(request: GeminiRequest) -> list[dict[str, Any]]:
        assert f"{PREFIX}hivemind_poll" in request.function_names, request.function_names
        seen["first"] = request
        return [function_call(f"{PREFIX}hivemind_ask_async", {"question": QUESTION})]

    def poll(request: GeminiRequest) -> list[dict[str, Any]]:
        seen["asked"] = unwrapped(tool_output(request, f"{PREFIX}hivemind_ask_async"))
        match = re.search(r"ask_id (\w+)", seen["asked"][0])
        assert match, seen["asked"]
        assert answered.wait(40), "the human never answered"
        return [function_call(f"{PREFIX}hivemind_poll", {"ask_id": match.group(1)})]

    def done(request: GeminiRequest) -> list[dict[str, Any]]:
        seen["answer"] = unwrapped(tool_output(request, f"{PREFIX}hivemind_poll"))
        return [text("The human answered.")]

    with scripted_gemini(in_turns(first, poll, done)) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        set_up(agent_home, hub_config.socket)
        async with human_editor(hub_config.socket, approver=False) as human:
            done_run, prompt = await answered_run(
                human, lambda: gemini.run("-p", "Ask."), {"answer": "Postgres"}, answered=answered
            )
            assert await human.call("hive/list", {}) == []

    assert model.errors == [], model.errors
    assert done_run.returncode == 0, done_run.stderr
    assert "The human answered." in done_run.stdout
    assert prompt["question"] == QUESTION
    assert re.fullmatch(r"gemini-\d+", prompt["agent_id"]), prompt["agent_id"]
    assert prompt["origin"] == str(agent_home.project)
    assert seen["asked"][0].startswith(f"Asked (ask_id {prompt['id']}, pending)."), seen
    # The model reads the answer as text (the first text item of the poll's result).
    assert seen["answer"][0] == "answer from human: Postgres", seen["answer"]
    # The server's instructions reach the model inside the first user turn.
    first_request: GeminiRequest = seen["first"]
    assert any("hive-rpc lets you ask the human" in t for t in first_request.user_texts())
    # The model router's side call came first, and got JSON.
    assert model.side_calls, "no router call"


async def test_gemini_starts_the_mcp_server_with_its_environment(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """What ``hive-rpc mcp`` gets from Gemini CLI: its environment, HIVE_RPC_SOCKET and
    XDG_RUNTIME_DIR included, without the API key, plus the entry's ``env`` (setup's
    MCP_TOOL_TIMEOUT, matching its ``timeout``). One turn: the server is started
    before the first model request. Setup's command is run through a shell that
    records the environment."""
    saw = agent_home.root / "mcp-env"
    with scripted_gemini(in_turns([text("nothing to do")])) as model:
        gemini = Gemini(
            gemini_bin,
            agent_home,
            model.base_url,
            extra_env={
                "HIVE_RPC_SOCKET": str(hub_config.socket),
                "XDG_RUNTIME_DIR": str(agent_home.root),
            },
        )
        path = set_up(agent_home, hub_config.socket)

        def record(entry: dict[str, Any]) -> None:
            assert entry["timeout"] == 600000
            wrapped = env_recording(saw, [entry["command"], *entry["args"]])
            entry["command"], entry["args"] = wrapped[0], wrapped[1:]

        edit_server(path, record)
        done = await trio.to_thread.run_sync(gemini.run, "-p", "Do nothing.")
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    assert any(name.startswith(PREFIX) for name in model.requests[0].function_names)
    env = recorded_env(saw)
    assert env["HIVE_RPC_SOCKET"] == str(hub_config.socket)
    assert env["XDG_RUNTIME_DIR"] == str(agent_home.root)
    assert env["HOME"] == str(agent_home.home)
    assert env["GEMINI_CLI"] == "1"
    assert env["MCP_TOOL_TIMEOUT"] == "600000"
    assert "GEMINI_API_KEY" not in env


async def test_gemini_headless_offers_no_tools_of_an_untrusted_server(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """Without ``"trust": true`` a headless Gemini CLI declares none of hive-rpc's tools
    to the model: why ``hive-rpc setup gemini`` writes the trust (taken out here)."""
    with scripted_gemini(in_turns([text("nothing to do")])) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        edit_server(set_up(agent_home, hub_config.socket), lambda entry: entry.pop("trust"))
        done = await trio.to_thread.run_sync(gemini.run, "-p", "Do nothing.")
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    names = model.requests[0].function_names
    assert names, "no function declared at all"
    assert not any(name.startswith(PREFIX) for name in names), names


async def test_setups_hook_asks_about_a_shell_command_and_not_about_its_own_tools(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """Setup's BeforeTool matcher, as the real Gemini CLI tests it: the model asks the
    human through MCP (no permission question about that call), then runs ``touch``;
    that one is put to the human, whose deny reaches the model and nothing runs.
    Yolo mode, so Gemini's own confirmation does not wait for a terminal."""
    target = agent_home.project / "made-by-gemini"
    shell = "run_shell_command"
    script = in_turns(
        [function_call(f"{PREFIX}hivemind_ask_async", {"question": QUESTION})],
        [function_call(shell, {"command": f"touch {target}"})],
        [text("done")],
    )
    with scripted_gemini(script) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        set_up(agent_home, hub_config.socket)
        async with human_editor(hub_config.socket) as human:
            prompts: list[dict[str, Any]] = []
            runs: list[subprocess.CompletedProcess[str]] = []
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    runs.append(
                        await trio.to_thread.run_sync(
                            gemini.run, "--approval-mode", "yolo", "-p", "Ask, then touch."
                        )
                    )
                    assert len(prompts) == 2, f"gemini ended first:\n{runs[0].stderr}"

                nursery.start_soon(run)
                with trio.fail_after(50):
                    prompts.append((await next_prompt(human)).params)
                with trio.fail_after(50):
                    prompts.append((await next_prompt(human)).params)
                await human.call(
                    "hive/respond", {"id": prompts[1]["id"], "answer": "deny", "by": "emacs"}
                )
            await human.call("hive/cancel", {"id": prompts[0]["id"]})
    assert model.errors == [], model.errors
    assert runs[0].returncode == 0, runs[0].stderr
    question, permission = prompts
    assert question["question"] == QUESTION
    assert question.get("kind") != "permission"
    assert permission["kind"] == "permission"
    assert permission["question"].startswith(f"Gemini CLI in {agent_home.project} ")
    assert f"wants to use {shell}: touch {target}" in permission["question"]
    assert not target.exists()
    said = json.dumps(
        [r for r in model.requests[-1].function_responses() if r.get("name") == shell]
    )
    assert "Tool execution blocked" in said, said
