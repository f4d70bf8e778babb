"""The sessions buffer (issue 30, item 1) in a real `emacs -nw` under tmux, against a
real hub, with two agent sessions reporting through the real ``hive-rpc hook
claude-code``.

Each agent is a process whose comm is ``claude`` (a symlink of that name to bash, as
tests/service/test_sessions.py's FakeClaude): the hook finds it in its ancestry and
the hub checks it, so the sessions are ``claude-code-PID`` as for the real Claude
Code.  One runs inside an Emacs vterm buffer (vterm's shell is that ``claude``), the
other outside Emacs; the outside one waits on a permission request.  The test reads
the screen: both sessions with their states, the mode line counting one waiting; RET
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
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from emacs_session import EmacsSession, log_calls, logged_calls, running

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

VTERM_DIRS = sorted(glob.glob("/usr/share/emacs/site-lisp/elpa/vterm-*"))
NEEDS_VTERM = pytest.mark.skipif(not VTERM_DIRS, reason="needs vterm (Debian package elpa-vterm)")

VTERM_BUFFER = "*vterm agent*"
JUMPS = Path("jumps.log")
"""Emacs's log, in the test's directory, of the buffer each jump selected."""

LOOP = 'exec 3<>"$1"; echo "$$" > "$2"; while read -r line <&3; do eval "$line"; done\n'
"""The fake agent's program: the pid of its ``claude`` process to a file, then each
line written to its FIFO run as a shell command (the hooks, in the background)."""


class FakeClaude:
    """A ``claude`` process (bash under that name) in ``home``, running what the test
    writes to its FIFO; its hooks are the real ``hive-rpc hook claude-code``."""

    def __init__(self, root: Path, name: str, socket: Path) -> None:
        self.root, self.name, self.socket = root, name, socket
        self.home = root / name
        self.home.mkdir()
        self.fifo = root / f"{name}.fifo"
        os.mkfifo(self.fifo)
        self.pidfile = root / f"{name}.pid"
        self.script = root / "agent-loop.sh"
        self.script.write_text(LOOP)
        self.link = root / "claude"
        if not self.link.exists():
            self.link.symlink_to("/bin/bash")
        self.events = 0

    def argv(self) -> list[str]:
        return [str(self.link), str(self.script), str(self.fifo), str(self.pidfile)]

    @property
    def pid(self) -> int:
        return int(self.pidfile.read_text())

    @property
    def agent_id(self) -> str:
        return f"claude-code-{self.pid}"

    def started(self) -> bool:
        return self.pidfile.exists() and self.pidfile.read_text().strip() != ""

    def hook_errors(self) -> str:
        """What its hooks wrote on stderr, for a failure's message."""
        err = self.root / f"{self.name}-hook.err"
        return err.read_text() if err.exists() else ""

    def hook(self, event: dict[str, Any]) -> None:
        """Claude Code's hook for ``event``, run by this process in the background."""
        self.events += 1
        path = self.root / f"{self.name}-event-{self.events}.json"
        path.write_text(json.dumps({"session_id": f"{self.name}-session", "cwd": str(self.home),
                                    **event}))  # fmt: skip
        line = (
            f"{sys.executable} -m hive_rpc hook claude-code --socket {self.socket}"
            f" --data-dir {self.root / 'data'} < {path}"
            f" >> {self.root}/{self.name}-hook.out 2>> {self.root}/{self.name}-hook.err &\n"
        )
        with self.fifo.open("w") as fifo:
            fifo.write(line)


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


@pytest.fixture
def two_agents(short_tmp: Path) -> Iterator[tuple[EmacsSession, FakeClaude, FakeClaude]]:
    """Emacs, with the ``inside`` agent as the shell of its vterm buffer, in its
    project directory (*scratch* stays shown: the buffer is not on screen until the
    sessions buffer shows it), and the ``outside`` agent, not started yet."""
    socket = short_tmp / "hub.sock"
    inside = FakeClaude(short_tmp, "inside", socket)
    outside = FakeClaude(short_tmp, "outside", socket)
    settings = (
        # The second RET follows the answer: no grace period dropping it.
        "(setq hive-rpc-open-grace 0)"
        ' (when (locate-library "vterm") (require \'vterm)'
        f" (let ((default-directory {json.dumps(str(inside.home) + '/')})"
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
    two_agents: tuple[EmacsSession, FakeClaude, FakeClaude],
) -> None:
    emacs, inside, outside = two_agents
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "ZELLIJ", "HIVE"))}
    env |= {"TMUX": "/tmp/tmux-test/default,1,0", "TMUX_PANE": "%7"}
    agent = subprocess.Popen(outside.argv(), cwd=outside.home, env=env)
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
        outside.hook(
            {
                "hook_event_name": "PermissionRequest",
                "tool_name": "Bash",
                "tool_input": {"command": "make deploy"},
            }
        )
        emacs.keys("M-x")
        emacs.wait_for(lambda _: emacs.minibuffer().startswith("M-x"))
        emacs.keys("-l", "hive-rpc-sessions")
        emacs.keys("Enter")
        screen = emacs.wait_for(
            lambda screen: "waiting: 1 permission" in line_of(screen, f"Claude Code {outside.pid}")
        )
        inside_row = line_of(screen, f"Claude Code {inside.pid}")
        assert " working " in inside_row
        assert "~/" in inside_row or str(inside.home) in inside_row
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
        decided = (emacs.root / "outside-hook.out").read_text()
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
                f"Claude Code in {inside.home} waits on you in its terminal (C-c h s: "
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
        claude = FakeClaude(emacs.root, "paned", emacs.socket)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "HIVE"))}
        env |= {"TMUX": f"{socket},1,0", "TMUX_PANE": pane}
        agent = subprocess.Popen(claude.argv(), cwd=claude.home, env=env)
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
