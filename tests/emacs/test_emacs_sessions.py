"""The sessions buffer (issue 30, item 1) in a real `emacs -nw` under tmux, against a
real hub, with two agent sessions reporting through the real ``hive-rpc hook
claude-code``.

Each agent is a process whose comm is ``claude`` (a symlink of that name to bash:
tests/fake_claude.py's FifoClaude): the hook finds it in its ancestry and the hub
checks it, so the sessions are ``claude-code-PID`` as for the real Claude Code.  One
runs inside an Emacs vterm buffer (vterm's shell is that ``claude``), the other
outside Emacs; the outside one waits on a permission request.  The test reads the
screen: both sessions with their states, the mode line counting one waiting; RET
on the waiting one opens its permission request, and answering it moves that session
to working on screen, and RET then names its tmux pane (it says it runs in one of
another tmux server); RET on the other shows its vterm buffer, found by process
ancestry from its pid, not by a name; when that one then waits in its own dialog, the
echo area says so and RET shows its terminal again.  The second test: an agent in a
pane of the tmux server Emacs runs in, with a client attached; RET asks whether to
switch that client to the agent's pane, and "y" does."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from emacs_session import EmacsSession, log_calls, logged_calls, running
from fake_claude import FifoClaude, agent_env

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

VTERM_DIRS = sorted(glob.glob("/usr/share/emacs/site-lisp/elpa/vterm-*"))
NEEDS_VTERM = pytest.mark.skipif(not VTERM_DIRS, reason="needs vterm (Debian package elpa-vterm)")

VTERM_BUFFER = "*vterm agent*"
JUMPS = Path("jumps.log")
"""Emacs's log, in the test's directory, of the buffer each jump selected."""


def sessions(emacs: EmacsSession) -> dict[str, dict[str, Any]]:
    """The hub's sessions, by agent id, as the CLI gives them."""
    done = emacs.cli("sessions", "--json")
    assert done.returncode == 0, done.stderr
    return {s["agent_id"]: s for s in json.loads(done.stdout)}


def line_of(screen: str, text: str) -> str:
    """The screen's line holding ``text`` ("" if none)."""
    return next((line for line in screen.splitlines() if text in line), "")


def cursor_line(emacs: EmacsSession) -> str:
    """The screen's line the terminal's cursor is on."""
    y = subprocess.run(
        ["tmux", "display-message", "-p", "-t", emacs.name, "#{cursor_y}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return emacs.screen().split("\n")[int(y)]


def sessions_buffer_with_one_waiting(emacs: EmacsSession, pid: int) -> str:
    """``M-x hive-rpc-sessions``, typed; the screen once the row of Claude Code ``pid``
    says it waits on 1 permission."""
    emacs.keys("M-x")
    emacs.wait_for(lambda _: emacs.minibuffer().startswith("M-x"))
    emacs.keys("-l", "hive-rpc-sessions")
    emacs.keys("Enter")
    return emacs.wait_for(
        lambda screen: "waiting: 1 permission" in line_of(screen, f"Claude Code {pid}")
    )


@pytest.fixture
def two_agents(short_tmp: Path) -> Iterator[tuple[EmacsSession, FifoClaude, FifoClaude]]:
    """Emacs, with the ``inside`` agent as the shell of its vterm buffer, in its
    project directory (*scratch* stays shown: the buffer is not on screen until the
    sessions buffer shows it), and the ``outside`` agent, not started yet."""
    socket = short_tmp / "hub.sock"
    inside = FifoClaude(short_tmp, "inside", socket=socket, data_dir=short_tmp / "data")
    outside = FifoClaude(short_tmp, "outside", socket=socket, data_dir=short_tmp / "data")
    settings = (
        # The second RET follows the answer: no grace period dropping it.
        "(setq hive-rpc-open-grace 0)"
        ' (when (locate-library "vterm") (require \'vterm)'
        f" (let ((default-directory {json.dumps(str(inside.cwd) + '/')})"
        f" (vterm-shell {json.dumps(' '.join(inside.argv()))}))"
        f" (save-window-excursion (vterm {json.dumps(VTERM_BUFFER)}))))"
    )
    selected = "(buffer-name (window-buffer (selected-window)))"
    settings += " " + log_calls("hive-rpc-sessions-jump", short_tmp / JUMPS.name, selected)
    session = EmacsSession(short_tmp, settings, load_path=VTERM_DIRS[-1:])
    for started in running(session):
        yield started, inside, outside


@NEEDS_VTERM
def test_sessions_buffer_answers_the_waiting_one_and_jumps_to_the_others_vterm(
    two_agents: tuple[EmacsSession, FifoClaude, FifoClaude],
) -> None:
    emacs, inside, outside = two_agents
    agent = subprocess.Popen(outside.argv(), cwd=outside.cwd, env=agent_env(pane="%7"))
    try:
        # Another process's files, with no event to follow: polled.
        emacs.wait_until(lambda: inside.started() and outside.started(), "both agents run")
        # Claude Code runs these hooks in the background: each is sent once the hub
        # has the one before it (the hub's state, polled through the CLI).
        for claude in (inside, outside):
            claude.hook({"hook_event_name": "SessionStart", "source": "startup"})
            emacs.wait_until(
                lambda c=claude: sessions(emacs).get(c.agent_id, {}).get("last_event") == "start",
                f"{claude.name} started ({claude.hook_errors()})",
            )
            claude.hook({"hook_event_name": "UserPromptSubmit", "prompt": "fix the tests"})
            emacs.wait_until(
                lambda c=claude: sessions(emacs).get(c.agent_id, {}).get("state") == "working",
                f"{claude.name} works",
            )
        decision = outside.hook(
            {
                "hook_event_name": "PermissionRequest",
                "tool_name": "Bash",
                "tool_input": {"command": "make deploy"},
            }
        )
        screen = sessions_buffer_with_one_waiting(emacs, outside.pid)
        inside_row = line_of(screen, f"Claude Code {inside.pid}")
        assert " working " in inside_row
        assert "~/" in inside_row or str(inside.cwd) in inside_row
        # One question (with the hook's countdown), one session waiting.
        assert re.search(r" hive:1 [0-9:]+ · 1 waiting", screen), screen
        # Waiting first: the cursor is on it.
        assert f"Claude Code {outside.pid}" in cursor_line(emacs)

        # RET answers what it waits on: its permission request opens.
        emacs.keys("Enter")
        emacs.wait_for(lambda _: "wants to run Bash: make deploy" in emacs.wrapped_minibuffer())
        emacs.keys("-l", "allow")
        emacs.keys("Enter")
        screen = emacs.wait_for(
            lambda screen: " working " in line_of(screen, f"Claude Code {outside.pid}")
        )
        assert "hive:" not in line_of(screen, "*hive-rpc sessions*")
        decided = decision.read_text()
        assert json.loads(decided.splitlines()[-1])["hookSpecificOutput"]["decision"] == {
            "behavior": "allow"
        }

        # Outside Emacs, in a tmux pane of another server: RET (it waits on nothing
        # now) says where it runs, and nothing else moves.
        assert f"Claude Code {outside.pid}" in cursor_line(emacs)
        emacs.keys("Enter")
        emacs.wait_for(
            lambda _: emacs.minibuffer().startswith(
                "hive-rpc: the agent runs in tmux pane %7 (server /tmp/tmux-test/default)"
            )
        )
        assert f"Claude Code {outside.pid}" in cursor_line(emacs)

        # RET on the other shows its vterm buffer, found from its pid.
        rows = [line for line in emacs.screen().splitlines() if "Claude Code " in line]
        here = next(i for i, row in enumerate(rows) if row == cursor_line(emacs))
        there = next(i for i, row in enumerate(rows) if f"Claude Code {inside.pid}" in row)
        for _ in range(abs(there - here)):
            emacs.keys("Down" if there > here else "Up")
        emacs.wait_until(
            lambda: f"Claude Code {inside.pid}" in cursor_line(emacs), "point on the other"
        )
        assert VTERM_BUFFER not in emacs.screen()
        emacs.keys("Enter")
        emacs.wait_for(lambda screen: VTERM_BUFFER in screen)
        # The window RET left selected shows it (Emacs's log: vterm takes M-:).
        jumps = emacs.root / JUMPS
        emacs.wait_until(lambda: len(logged_calls(jumps)) == 2, "the jumps' log")
        # The first jump, to a tmux pane of another server, left the sessions buffer.
        assert logged_calls(jumps) == [json.dumps("*hive-rpc sessions*"), json.dumps(VTERM_BUFFER)]

        # Its own dialog (Claude Code's Notification, no hook decided): the echo
        # area says so, the mode line counts it, and RET shows its terminal.
        inside.hook(
            {
                "hook_event_name": "Notification",
                "notification_type": "permission_prompt",
                "message": "Claude needs your permission to use Bash",
            }
        )
        emacs.wait_for(
            lambda _: (
                f"Claude Code in {inside.cwd} waits on you in its terminal (C-c h s: "
                in emacs.wrapped_minibuffer()
            )
        )
        emacs.wait_for(lambda screen: "hive: 1 waiting" in screen)  # no question
        emacs.keys("C-c", "h", "s")  # from the vterm buffer: C-c is Emacs's there
        emacs.wait_for(
            lambda screen: "waiting: its own dialog" in line_of(screen, f"Claude Code {inside.pid}")
        )
        emacs.wait_until(
            lambda: f"Claude Code {inside.pid}" in cursor_line(emacs), "point on its row"
        )
        emacs.keys("Enter")
        emacs.wait_until(lambda: len(logged_calls(jumps)) == 3, "the third jump")
        assert logged_calls(jumps)[-1] == json.dumps(VTERM_BUFFER)
        # The human answers in the terminal and prompts it again: working.
        inside.hook({"hook_event_name": "UserPromptSubmit", "prompt": "go on"})
        emacs.wait_for(lambda screen: "waiting" not in screen)
    finally:
        agent.kill()
        agent.wait()


def tmux_out(*args: str) -> str:
    return subprocess.run(
        ["tmux", *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp))


def test_a_session_in_a_pane_of_emacss_own_tmux_switches_the_client_when_asked(
    emacs: EmacsSession,
) -> None:
    """Emacs runs in tmux, seen through a client (``tmux attach`` in a pty); the agent
    says it runs in a pane of another session of the same tmux server: RET on it asks
    whether to switch this client there, and ``y`` does."""
    other = f"{emacs.name}-agent"
    pane = tmux_out("new-session", "-d", "-s", other, "-P", "-F", "#{pane_id}", "sleep 600")
    client = None
    agent = None
    try:
        socket = tmux_out("display-message", "-p", "-t", emacs.name, "#{socket_path}")
        client = subprocess.Popen(
            ["script", "-qfc", f"tmux attach -t ={emacs.name}", "/dev/null"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**{k: v for k, v in os.environ.items() if k != "TMUX"}, "TERM": "xterm"},
        )

        def client_session() -> str:
            return tmux_out("list-clients", "-F", "#{client_session}")

        # The tmux server's state, another process's: polled.
        emacs.wait_until(lambda: client_session() == emacs.name, "the client attached")
        claude = FifoClaude(emacs.root, "paned", socket=emacs.socket, data_dir=emacs.root / "data")
        env = agent_env(pane=pane, server=socket)
        agent = subprocess.Popen(claude.argv(), cwd=claude.cwd, env=env)
        emacs.wait_until(claude.started, "the agent runs")
        claude.hook({"hook_event_name": "SessionStart", "source": "startup"})
        emacs.wait_until(
            lambda: (
                sessions(emacs).get(claude.agent_id, {}).get("terminal") == f"tmux:{pane}@{socket}"
            ),
            f"its session ({claude.hook_errors()})",
        )
        emacs.keys("C-c", "h", "s")
        emacs.wait_for(lambda screen: f"Claude Code {claude.pid}" in cursor_line(emacs))
        emacs.keys("Enter")
        emacs.wait_for(
            lambda _: f"Switch this tmux client to pane {pane}? (y or n)" in emacs.minibuffer()
        )
        assert client_session() == emacs.name  # nothing moved before the answer
        emacs.keys("y")
        emacs.wait_until(lambda: client_session() == other, "the client switched")
        assert tmux_out("display-message", "-p", "-t", other, "#{pane_id}") == pane
    finally:
        if agent is not None:
            agent.kill()
            agent.wait()
        if client is not None:
            client.kill()
            client.wait()
            assert client.stdin is not None
            client.stdin.close()
        subprocess.run(
            ["tmux", "kill-session", "-t", f"={other}"], capture_output=True, check=False
        )
