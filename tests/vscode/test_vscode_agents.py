"""The real Codex CLI (0.171.0) and Gemini CLI (0.61.0) answered from the real VS Code
(code-server + headless Chromium, the packaged extension) on this module's hub (issue
29: "MCP asks answered from VS Code, permission requests allowed and denied from an
editor").  Each agent runs offline against its scripted model (tests/agents/), set up
by ``hive-rpc setup codex|gemini`` run as a process on the module's hub, as a process
of its own (test_emacs_agents.started) while the test looks at the window; the
question opens by itself (the harness's ``hive.autoAsk``), the human types or picks
with the keyboard.  What is checked is what the model read next (the request its
server recorded), and for a permission whether the command ran."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

import pytest
from agent_homes import (
    AgentHome,
    Codex,
    Gemini,
    run_setup,
    write_codex_config,
    write_gemini_config,
)
from scripted_gemini import function_call as gemini_call
from scripted_gemini import in_turns as gemini_turns
from scripted_gemini import scripted_gemini, text
from scripted_responses import function_call, in_turns, message, scripted_responses
from test_codex_mcp import mcp_result
from test_emacs_agents import AgentRun, codex_exec, started
from test_gemini_hook import shell_output
from vscode_session import Hub, QuickInput, Window

NAMESPACE = "mcp__hive_rpc"
SHELL = "run_shell_command"
QUESTION = "Which database should the cache use?"
ANSWER = "Postgres, the one we run"


def opened(window: Window, run: AgentRun, contains: str, what: str) -> QuickInput:
    """The question's box once it shows ``contains``, while the agent still waits (an
    agent that ended first fails the wait at once, with what it said)."""

    def seen() -> QuickInput | None:
        run.check_alive()
        box = window.quick_input()
        return box if box is not None and contains in box.text() else None

    return window.wait(seen, what)


def pick_row(window: Window, label: str) -> None:
    """Arrow down to the row ``label`` (a row's aria-label is ``LABEL, DESCRIPTION``),
    as a person does, and press Enter."""
    for _ in range(8):
        now = window.quick_input()
        if now is not None and (now.active or "").split(",")[0] == label:
            window.press("Enter")
            return
        window.press("ArrowDown")
    pytest.fail(f"no row {label!r}: {window.quick_input()}")


def test_a_codex_mcp_question_answered_in_vscode_reaches_the_model(
    window: Window, vscode_hub: Hub, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``codex exec``: the model calls ``request_human_input``; an input box opens from
    agent ``codex-PID``, the human types the answer and presses Enter, and the model's
    next request carries it as the tool's result."""
    ask = function_call("request_human_input", {"prompt": QUESTION}, namespace=NAMESPACE)
    with scripted_responses(in_turns([ask], [message("Noted.")])) as model:
        codex = Codex(codex_bin, agent_home)
        write_codex_config(agent_home, base_url=model.base_url)
        where = ["--data-dir", str(vscode_hub.data_dir)]
        run_setup(agent_home, "codex", vscode_hub.socket, *where)
        with started("codex", codex_exec(codex, "Ask the human."), agent_home, codex.env()) as run:
            box = opened(window, run, QUESTION, "Codex's question to open")
            window.type_human(ANSWER)
            window.wait(
                lambda: (now := window.quick_input()) is not None and now.value == ANSWER,
                "the answer typed in the box",
            )
            window.shot("codex-question")
            window.press("Enter")
            window.wait_no_quick_input()
            status = run.finished()
    assert model.errors == [], model.errors
    assert status == 0, run.stderr()
    assert "Noted." in run.stdout()
    assert box.rows == [], box  # free text: an input box
    assert re.match(
        rf"Agent codex-\d+ \({re.escape(str(agent_home.project))}\) needs input", box.title
    ), box
    assert len(model.requests) == 2
    result = mcp_result(model.requests[1], ask)
    assert result["answer"] == ANSWER, result
    assert result["status"] == "responded", result


@pytest.mark.parametrize("answer", ["deny", "allow"])
def test_a_gemini_permission_answered_in_vscode(
    window: Window, vscode_hub: Hub, gemini_bin: Path, agent_home: AgentHome, answer: str
) -> None:
    """``gemini --approval-mode yolo -p`` whose model runs ``touch FILE``: setup's
    BeforeTool hook (``hive-rpc hook gemini``) asks VS Code "Gemini CLI in PROJECT ...
    wants to use run_shell_command: touch FILE"; the human picks ``answer``.  A denial
    reaches the model and the file is never made; an allow makes it."""
    window.command("View: Close All Editors")  # the details of an earlier test's prompt
    target = agent_home.project / "made-by-gemini"
    script = gemini_turns([gemini_call(SHELL, {"command": f"touch {target}"})], [text("Done.")])
    with scripted_gemini(script) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        write_gemini_config(agent_home)
        where = ["--data-dir", str(vscode_hub.data_dir)]
        run_setup(agent_home, "gemini", vscode_hub.socket, *where)
        # Yolo: Gemini asks nobody itself, the hook alone decides.
        argv = [str(gemini_bin), "--approval-mode", "yolo", "-p", "Make the file."]
        with started("gemini", argv, agent_home, gemini.env()) as run:
            box = opened(window, run, f"wants to use {SHELL}", "Gemini's permission to open")
            window.shot(f"gemini-permission-{answer}")
            pick_row(window, answer)
            window.wait_no_quick_input()
            status = run.finished()
    assert model.errors == [], model.errors
    assert status == 0, run.stderr()
    assert "Done." in run.stdout()
    assert re.match(r"Agent gemini-\d+ \(.*\) asks permission", box.title), box
    assert box.placeholder.startswith(f"Gemini CLI in {agent_home.project} (session "), box
    assert box.placeholder.endswith(f"wants to use {SHELL}: touch {target}"), box
    said = shell_output(model.requests[-1])
    if answer == "allow":
        assert target.exists(), said
    else:
        assert not target.exists()
        assert "Tool execution blocked" in said, said
        # Who answered: with ``hive.by`` unset, the extension says the login name.
        by = pwd.getpwuid(os.getuid()).pw_name
        assert f"The human denied this {SHELL} request from hive-rpc ({by})." in said, said
