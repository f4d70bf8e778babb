"""The real Codex CLI (0.171.0) and Gemini CLI (0.61.0) answered from a real `emacs -nw`
under tmux (issue 29: "MCP asks answered from Emacs, permission requests allowed and
denied from an editor").  Each agent runs offline against its scripted model
(tests/agents/scripted_responses.py, scripted_gemini.py), set up by ``hive-rpc setup
codex|gemini`` run as a process on the session's hub; the human is Emacs with the
package's default options: nothing opens by itself, the human sees the count in the
mode line, opens the question with ``C-c h n``, types at a person's pace and presses
RET.  What is checked is what the model read next (the request its server recorded),
and for a denial that the command never ran.

The agents run as processes of their own (``AgentRun``) while the test reads Emacs's
screen; their exit is waited for, and a run that ends before the question is seen
fails the wait at once with what the agent said."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
from emacs_session import EmacsSession, running
from emacs_session import wrapped_minibuffer as minibuffer
from scripted_gemini import function_call as gemini_call
from scripted_gemini import in_turns as gemini_turns
from scripted_gemini import scripted_gemini, text
from scripted_responses import function_call, in_turns, message, output_text, scripted_responses
from test_codex_mcp import mcp_result
from test_gemini_mcp import tool_output, unwrapped

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

NAMESPACE = "mcp__hive_rpc"
GEMINI_TOOL = "mcp_hive-rpc_request_human_input"
QUESTION = "Which database should the cache use?"
ANSWER = "Postgres, the one we run"
AGENT_WAIT_S = 90
"""How long a question may take to reach Emacs, and an agent to finish once answered:
each is a Node program starting ``hive-rpc mcp`` on a loaded 2-core machine."""


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    """The package's default options: the human opens each question."""
    yield from running(EmacsSession(short_tmp))


@pytest.fixture
def agent_home(emacs: EmacsSession) -> AgentHome:
    """The agent's HOME, project and TMPDIR, beside the session's hub."""
    agent = AgentHome(emacs.root / "agent")
    agent.make()
    return agent


@dataclass
class AgentRun:
    """An agent's process, its output in files (a pipe nobody reads while the test
    watches Emacs could fill and stall it)."""

    what: str
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def check_alive(self) -> bool:
        """True while it runs; fails the test with what it said if it ended."""
        if self.proc.poll() is not None:
            pytest.fail(f"{self.what} ended ({self.proc.returncode}) first:\n{self.stderr()}")
        return True

    def finished(self) -> int:
        """Its exit status, once it has exited."""
        return self.proc.wait(timeout=AGENT_WAIT_S)

    def stdout(self) -> str:
        return self.out.read_text(errors="replace")

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")


@contextmanager
def started(
    what: str, argv: Sequence[str], agent: AgentHome, env: dict[str, str]
) -> Iterator[AgentRun]:
    """``argv`` run in the agent's project directory, stdin closed (headless, both
    agents read a piped stdin as more prompt); killed after the block if it still
    runs."""
    out, err = agent.root / f"{what}.out", agent.root / f"{what}.err"
    with out.open("wb") as out_file, err.open("wb") as err_file:
        proc = subprocess.Popen(
            list(argv),
            cwd=agent.project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_file,
            stderr=err_file,
        )
    run = AgentRun(what, proc, out, err)
    try:
        yield run
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def codex_exec(codex: Codex, *args: str) -> list[str]:
    """The command line ``Codex.exec`` runs."""
    return [str(codex.codex), "exec", "--skip-git-repo-check", *args]


def open_and_answer(emacs: EmacsSession, run: AgentRun, asks: str, answer: str) -> str:
    """The human's part: the mode line counts one question (while the agent still
    waits), ``C-c h n`` opens it, the minibuffer asks ``asks`` and takes keys, the
    answer is typed at a person's pace, RET.  Returns the question as Emacs asked it,
    its wrapped lines joined."""
    emacs.wait_for(lambda screen: run.check_alive() and " hive:1" in screen, AGENT_WAIT_S)
    emacs.answer_next()
    # Asked in the minibuffer (its decline key said), not only announced in the echo
    # area as it was before C-c h n.
    screen = emacs.wait_for(
        lambda screen: (
            asks in (line := minibuffer(screen))
            and "C-c C-k: decline" in line
            and "(opening)" not in line
        )
    )
    emacs.type(answer, pace=0.05)
    emacs.wait_for(lambda screen: minibuffer(screen).endswith(answer))
    emacs.keys("Enter")
    return minibuffer(screen)


def set_up_codex(agent: AgentHome, base_url: str, emacs: EmacsSession) -> None:
    """The user's config.toml (the scripted provider), then ``hive-rpc setup codex``
    merged in with the session hub's socket and data dir."""
    write_codex_config(agent, base_url=base_url)
    run_setup(agent, "codex", emacs.socket, "--data-dir", str(emacs.root / "data"))


def test_a_codex_mcp_question_answered_in_emacs_reaches_the_model(
    emacs: EmacsSession, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``codex exec``: the model calls ``request_human_input``; the question shows in
    Emacs from agent ``codex-PID``, the human types the answer, and the model's next
    request carries it as the tool's result."""
    ask = function_call("request_human_input", {"prompt": QUESTION}, namespace=NAMESPACE)
    with scripted_responses(in_turns([ask], [message("Noted.")])) as model:
        codex = Codex(codex_bin, agent_home)
        set_up_codex(agent_home, model.base_url, emacs)
        with started("codex", codex_exec(codex, "Ask the human."), agent_home, codex.env()) as run:
            asked = open_and_answer(emacs, run, QUESTION, ANSWER)
            status = run.finished()
    assert model.errors == [], model.errors
    assert status == 0, run.stderr()
    assert "Noted." in run.stdout()
    # Emacs names the asker: the Codex process, where it runs.
    assert re.search(rf"\[codex-\d+ · {re.escape(str(agent_home.project))}\] {QUESTION}", asked), (
        asked
    )
    assert len(model.requests) == 2
    result = mcp_result(model.requests[1], ask)
    assert result["answer"] == ANSWER, result
    assert result["status"] == "responded", result
    assert emacs.cli("list", "--json").stdout.strip() == "[]"


def test_a_codex_permission_denied_in_emacs_reaches_the_model_and_nothing_runs(
    emacs: EmacsSession, codex_bin: Path, agent_home: AgentHome
) -> None:
    """``codex exec --approve-for-me`` whose model wants ``touch FILE`` outside the
    sandbox: setup's ``hive-rpc hook codex`` asks Emacs "Codex in PROJECT ... wants to
    run Bash: touch FILE", the human denies it, the model reads the denial and the
    file is never made."""
    target = agent_home.project / "made-by-codex"
    touch = function_call(
        "exec_command",
        {
            "cmd": f"touch {target}",
            "sandbox_permissions": "require_escalated",
            "justification": "Make the file",
        },
    )
    with scripted_responses(in_turns([touch], [message("Not made.")])) as model:
        codex = Codex(codex_bin, agent_home)
        set_up_codex(agent_home, model.base_url, emacs)
        argv = codex_exec(
            codex,
            # Headless there is no /hooks to trust the hook in (test_codex_mcp.py).
            "--dangerously-bypass-hook-trust",
            # The only exec mode whose approvals reach the hook.
            "--approve-for-me",
            "Make the file.",
        )
        with started("codex", argv, agent_home, codex.env()) as run:
            asked = open_and_answer(emacs, run, f"wants to run Bash: touch {target}", "deny")
            status = run.finished()
    assert model.errors == [], model.errors
    assert status == 0, run.stderr()
    assert "Not made." in run.stdout()
    assert f"permission: Codex in {agent_home.project} (session " in asked, asked
    assert "[allow / allow for this session / always allow in this project / deny]" in asked
    assert not target.exists()
    # The hook's answer was the decision: Codex's automatic reviewer, which asks the
    # model provider, was not asked (it would be a third request).
    assert len(model.requests) == 2
    output = model.requests[1].output_for(touch)
    assert output is not None
    assert "The human denied this Bash request from hive-rpc (human)." in output_text(output)


def test_a_gemini_mcp_question_answered_in_emacs_reaches_the_model(
    emacs: EmacsSession, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """``gemini -p``: the model calls ``request_human_input``; the question shows in
    Emacs from agent ``gemini-PID`` (setup's BeforeTool hook leaves hive-rpc's own
    tools alone: no permission question first), the human types the answer, and the
    model reads it as the tool's text."""
    script = gemini_turns([gemini_call(GEMINI_TOOL, {"prompt": QUESTION})], [text("Noted.")])
    with scripted_gemini(script) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        write_gemini_config(agent_home)
        run_setup(agent_home, "gemini", emacs.socket, "--data-dir", str(emacs.root / "data"))
        argv = [str(gemini_bin), "-p", "Ask the human."]
        with started("gemini", argv, agent_home, gemini.env()) as run:
            asked = open_and_answer(emacs, run, QUESTION, ANSWER)
            status = run.finished()
    assert model.errors == [], model.errors
    assert status == 0, run.stderr()
    assert "Noted." in run.stdout()
    assert re.search(rf"\[gemini-\d+ · {re.escape(str(agent_home.project))}\] {QUESTION}", asked), (
        asked
    )
    assert len(model.requests) == 2
    said = unwrapped(tool_output(model.requests[1], GEMINI_TOOL))
    assert said[0] == ANSWER, said
    assert emacs.cli("list", "--json").stdout.strip() == "[]"
