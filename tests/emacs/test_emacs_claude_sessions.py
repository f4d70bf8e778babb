"""The sessions buffer with the real Claude Code (issue 30, item 1): Claude Code 2.1.328
runs in a vterm buffer of a real `emacs -nw` under tmux, against the scripted model,
set up with ``hive-rpc setup claude-code`` only (a scratch HOME), reporting to a real
hub.  Asked to make a file, it asks permission through the hook setup wrote: the
sessions buffer shows it waiting on 1 permission, the mode line counts 1 waiting,
RET on it opens the request, "allow" lets it run, and its row goes idle when its turn
ends; RET then shows its vterm buffer, found from its pid by process ancestry."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from emacs_session import EmacsSession, log_calls, logged_calls
from test_emacs_sessions import (
    NEEDS_VTERM,
    VTERM_DIRS,
    cursor_line,
    line_of,
    sessions,
    sessions_buffer_with_one_waiting,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "claude"))
from claude_session import ClaudeHome, claude_binary
from scripted_model import ScriptedModel, scripted_model
from test_claude_permission_hook import TUI_ENV
from test_claude_sessions import make_the_file

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

BUFFER = "*claude app*"
HIVE_RPC = Path(sys.executable).parent / "hive-rpc"


@pytest.fixture
def claude_in_vterm(short_tmp: Path) -> Iterator[tuple[EmacsSession, ScriptedModel, Path]]:
    """A hub, Claude Code set up for it with ``hive-rpc setup claude-code --user``, and
    Emacs showing Claude Code's TUI in the vterm buffer ``BUFFER``."""
    claude_bin = claude_binary()
    target = short_tmp / "app" / "made-by-claude"
    with scripted_model(make_the_file(target)) as model:
        claude = ClaudeHome(claude_bin, short_tmp / "home", short_tmp / "app", model.base_url)
        claude.write_config()
        runner = short_tmp / "run-claude.sh"
        env = claude.env()
        runner.write_text(
            f"cd {shlex.quote(str(claude.project))}\n"
            f"exec env {' '.join(shlex.quote(f'{k}={env[k]}') for k in TUI_ENV if k in env)}"
            f" {shlex.quote(str(claude.claude))} --permission-mode default\n"
        )
        jumps = short_tmp / "jumps.log"
        selected = "(buffer-name (window-buffer (selected-window)))"
        settings = (
            "(setq hive-rpc-open-grace 0) (require 'vterm)"
            f" (let ((vterm-shell {json.dumps(f'/bin/sh {runner}')})) (vterm {json.dumps(BUFFER)}))"
            f" {log_calls('hive-rpc-sessions-jump', jumps, selected)}"
        )
        emacs = EmacsSession(short_tmp, settings, load_path=VTERM_DIRS[-1:])
        try:
            emacs.start_hub()
            done = subprocess.run(
                [str(HIVE_RPC), "setup", "claude-code", "--user", "--no-sandbox",
                 "--socket", str(emacs.socket), "--data-dir", str(short_tmp / "data")],
                cwd=claude.project, env=env, capture_output=True, text=True, timeout=60,
                check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            emacs.start_emacs()
            yield emacs, model, target
        finally:
            emacs.close()


@NEEDS_VTERM
def test_real_claude_code_in_vterm_waits_is_answered_and_is_found_by_pid(
    claude_in_vterm: tuple[EmacsSession, ScriptedModel, Path],
) -> None:
    emacs, model, target = claude_in_vterm
    jumps = emacs.root / "jumps.log"
    emacs.wait_for(lambda screen: "? for shortcuts" in screen, timeout=120)
    # SessionStart, through the hook setup wrote (in the background: the hub's
    # state, another process's, polled).
    emacs.wait_until(lambda: len(sessions(emacs)) == 1, "its session", timeout=60)
    (session,) = sessions(emacs).values()
    pid = session["pid"]
    assert session["agent_id"] == f"claude-code-{pid}"
    emacs.keys("-l", "make the file")
    emacs.wait_for(lambda screen: "make the file" in screen)
    emacs.keys("Enter")
    # Its permission request reached the hub: the mode line counts it waiting.
    emacs.wait_for(lambda screen: "· 1 waiting" in screen, timeout=120)

    # Leave its buffer (C-x is Emacs's in vterm), then list the sessions.
    emacs.keys("C-x", "b")
    emacs.wait_for(lambda _: "Switch to buffer" in emacs.minibuffer())
    emacs.keys("-l", "*scratch*")
    emacs.keys("Enter")
    emacs.wait_for(lambda screen: BUFFER not in screen)
    sessions_buffer_with_one_waiting(emacs, pid)
    assert f"Claude Code {pid}" in cursor_line(emacs)

    emacs.keys("Enter")
    emacs.wait_for(lambda _: f"wants to run Bash: touch {target}" in emacs.wrapped_minibuffer())
    emacs.keys("-l", "allow")
    emacs.keys("Enter")
    # It ran, its turn ended: idle on screen, nothing waiting in the mode line.
    screen = emacs.wait_for(lambda screen: " idle " in line_of(screen, f"Claude Code {pid}"), 120)
    assert "waiting" not in screen
    assert target.exists()

    emacs.keys("Enter")  # not waiting: its terminal
    emacs.wait_for(lambda screen: BUFFER in screen and "made it" in screen)
    emacs.wait_until(lambda: logged_calls(jumps) != [], "the jump's log")
    assert logged_calls(jumps) == [json.dumps(BUFFER)]
    assert model.errors == []
