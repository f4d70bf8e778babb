"""``hive-rpc hook gemini`` as the real Gemini CLI's (0.61.0) ``BeforeTool`` hook, in
yolo mode (``--approval-mode yolo``: Gemini asks nobody itself): the human's deny reaches
the model as "Tool execution blocked: REASON" and nothing runs, an allow runs the tool;
with the hub down, ``--gate`` denies and the default leaves the call to Gemini's own
flow (in yolo: it runs).  Settings written by hand until ``hive-rpc setup gemini``
registers the hook: ``hooks.BeforeTool`` ``[{"matcher", "hooks": [{"type": "command",
"command", "timeout" (ms)}]}]`` in ~/.gemini/settings.json."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from agent_homes import HIVE_RPC, AgentHome, Gemini, run_setup, write_gemini_config
from agent_runs import answered_run
from editor import human_editor
from scripted_gemini import GeminiRequest, function_call, in_turns, scripted_gemini, text

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

SHELL = "run_shell_command"


def with_hook(agent: AgentHome, socket: Path, *extra: str) -> None:
    """``hive-rpc hook gemini`` registered as a BeforeTool hook for every tool."""
    path = write_gemini_config(agent)
    settings = json.loads(path.read_text())
    command = " ".join([str(HIVE_RPC), "hook", "gemini", "--socket", str(socket), *extra])
    hook = {"type": "command", "command": command, "timeout": 90000}
    settings["hooks"] = {"BeforeTool": [{"matcher": "*", "hooks": [hook]}]}
    path.write_text(json.dumps(settings, indent=2))


def shell_output(request: GeminiRequest) -> str:
    found = [r for r in request.function_responses() if r.get("name") == SHELL]
    assert found, request.function_responses()
    return json.dumps(found[-1]["response"])


def touch_script(target: Path) -> Any:
    return in_turns([function_call(SHELL, {"command": f"touch {target}"})], [text("done")])


async def yolo_run_answered(
    gemini: Gemini, human: Any, words: str, answer: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``gemini --approval-mode yolo -p WORDS`` whose first question the human answers
    with ``answer`` (hive/respond's params); fails if Gemini ends before it asks."""
    return await answered_run(
        human, lambda: gemini.run("--approval-mode", "yolo", "-p", words), answer
    )


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_gemini_before_tool_asks_the_human(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome, answer: str
) -> None:
    target = agent_home.project / "made-by-gemini"
    with scripted_gemini(touch_script(target)) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        with_hook(agent_home, hub_config.socket, "--gate", "--timeout", "60")
        async with human_editor(hub_config.socket) as human:
            done, prompt = await yolo_run_answered(
                gemini, human, "Make the file.", {"answer": answer, "by": "emacs"}
            )
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    assert prompt["question"].startswith(f"Gemini CLI in {agent_home.project} (session "), prompt
    # The Gemini process the hook runs under (the id its MCP sessions take too).
    assert re.fullmatch(r"gemini-\d+", prompt["agent_id"]), prompt["agent_id"]
    said = shell_output(model.requests[-1])
    if answer == "allow":
        assert target.exists(), said
    else:
        assert not target.exists()
        assert "Tool execution blocked" in said, said
        assert f"The human denied this {SHELL} request from hive-rpc (emacs)." in said, said


@pytest.mark.parametrize("gate", [True, False])
async def test_gemini_hub_down(
    hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome, gate: bool
) -> None:
    """No hub: ``--gate`` denies (fails closed); without it Gemini's own flow decides,
    which in yolo runs the tool."""
    target = agent_home.project / "made-by-gemini"
    with scripted_gemini(touch_script(target)) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        with_hook(agent_home, hub_config.socket, *(["--gate"] if gate else []))
        done = await trio.to_thread.run_sync(
            gemini.run, "--approval-mode", "yolo", "-p", "Make the file."
        )
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    said = shell_output(model.requests[-1])
    assert target.exists() is not gate, said
    if gate:
        assert "hook gemini --gate" in said, said
    else:  # the hook says {} on stdout: its stderr is no "Hook system message" for the human
        assert "Hook system message" not in done.stdout + done.stderr, done.stdout + done.stderr


async def test_setups_gate_asks_about_a_tool_no_list_names(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """``hive-rpc setup gemini --gate`` in yolo mode: the model's ``read_file`` (a tool
    setup's default matcher leaves to Gemini, which in yolo runs it unasked) is put to
    the human, whose deny keeps the file's words from the model."""
    secret = agent_home.project / "notes.txt"
    secret.write_text("the launch code is 0000\n")
    script = in_turns([function_call("read_file", {"file_path": str(secret)})], [text("done")])
    with scripted_gemini(script) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        write_gemini_config(agent_home)
        run_setup(agent_home, "gemini", hub_config.socket, "--gate")
        async with human_editor(hub_config.socket) as human:
            done, prompt = await yolo_run_answered(
                gemini, human, "Read the notes.", {"answer": "deny"}
            )
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    assert f"wants to use read_file: {secret}" in prompt["question"], prompt["question"]
    said = json.dumps(model.requests[-1].function_responses())
    assert "Tool execution blocked" in said, said
    assert "launch code" not in said


SESSION_EVENTS = ("start", "prompt", "stop", "end")
"""The events an agent's hooks report (``agent/session``), not the hub's own."""


async def test_a_gemini_run_is_a_session_idle_then_working_then_idle_on_the_hub(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """``gemini -p`` with setup's hooks: SessionStart leaves the session idle,
    BeforeAgent (the prompt is in) working, AfterAgent (the answer is whole) idle,
    SessionEnd gone; one agent id, ``gemini-PID``, the Gemini process's.  Gemini
    awaits each hook before it goes on, so the entries are there once it has ended;
    the hook's ``{}`` on stdout leaves Gemini's output as it was (a hook's text on
    stderr alone would show as "Hook system message: ...")."""
    with scripted_gemini(in_turns([text("done")])) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        write_gemini_config(agent_home)
        run_setup(agent_home, "gemini", hub_config.socket)
        done = await trio.to_thread.run_sync(gemini.run, "-p", "Say done.")
    assert model.errors == [], model.errors
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "Hook system message" not in done.stderr, done.stderr
    entries = [
        (e.key, e.event, e.data["state"], e.data)
        for e in hub.activity.recent(1000)
        if e.kind == "session" and e.event in SESSION_EVENTS
    ]
    assert [(event, state) for _, event, state, _ in entries] == [
        ("start", "idle"),
        ("prompt", "working"),
        ("stop", "idle"),
        ("end", "gone"),
    ], done.stderr
    (agent,) = {agent for agent, _, _, _ in entries}
    assert re.fullmatch(r"gemini-\d+", agent), agent
    last = entries[-1][3]
    assert (last["agent"], last["project_dir"]) == ("gemini", str(agent_home.project))
