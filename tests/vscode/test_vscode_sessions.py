"""The Hive: Sessions view in a real VS Code (issue 30, item 1): code-server in
Chromium with the extension on its default settings (nothing opens by itself), a real
hub, and two agent sessions reported by the real ``hive-rpc hook claude-code``, each
run under a process whose comm is ``claude`` (a symlink named ``claude`` to
``/bin/bash``, as Claude Code runs its hooks: tests/fake_claude.py), so the hub names
each by its process and watches it.

One session works; the other waits on a permission. The view lists both, the waiting
one first, each with its state; a click on the waiting one opens its question (the
human's act: nothing opened before it), the answer goes back to its hook, and the row
moves to working.  A click on the working one, which runs in no terminal of this
window, says where it runs; a click on one started in a terminal of this window shows
that terminal.

The view follows the hub's ``hive/session`` notifications through ``hive-rpc lsp``
alone: the extension asks for no list and keeps no timer for it (vscode-ext/src/
sessions.ts), so each row seen to change here came by push."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_claude import PipedClaude, claude_link
from vscode_session import EditorSetup, Hub, Window, wait_for

VIEW = "HIVE: SESSIONS"


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    # None drops the test harness's own hive.autoAsk and openGraceSeconds: the defaults.
    return EditorSetup(
        user={
            "hive.autoAsk": None,
            "hive.openGraceSeconds": None,
            "terminal.integrated.gpuAcceleration": "off",
            "terminal.integrated.enablePersistentSessions": False,
        },
        machine={"hive.pythonPath": sys.executable},
    )


@pytest.fixture
def claudes(vscode_root: Path, vscode_hub: Hub) -> Iterator[tuple[PipedClaude, PipedClaude]]:
    """Two fake Claude Codes (tests/fake_claude.py), each hook waiting 300 s for the
    human."""
    root = vscode_root / "claudes"
    one, two = (
        PipedClaude(root, name, socket=vscode_hub.socket, data_dir=vscode_hub.data_dir,
                    options=("--timeout", "300")).start()
        for name in ("api", "web")
    )  # fmt: skip
    try:
        yield one, two
    finally:
        one.stop()
        two.stop()


def session_states(hub: Hub) -> dict[str, str]:
    """``hive-rpc sessions --json``: each session's state, by agent id."""
    return {s["agent_id"]: s["state"] for s in hub.json("sessions")}


def sessions_view(window: Window) -> list[str] | None:
    """The rows of the Hive: Sessions view (label and description), or None while the
    view is collapsed or hidden."""
    got: list[str] | None = window.page.evaluate(
        """(title) => {
          const header = Array.from(document.querySelectorAll('.pane-header'))
            .find((h) => (h.getAttribute('aria-label') || h.textContent)
              .toUpperCase().includes(title));
          if (!header || !header.classList.contains('expanded')) return null;
          const body = header.parentElement.querySelector('.pane-body');
          if (!body) return null;
          return Array.from(body.querySelectorAll('.monaco-list-row'))
            .map((r) => r.textContent.trim().replace(/\\s+/g, ' '));
        }""",
        VIEW,
    )
    return got


def wait_rows(window: Window, want: list[str], what: str) -> list[str]:
    """Wait until the view's rows start with ``want``, in that order."""

    def seen() -> list[str] | None:
        rows = sessions_view(window) or []
        # The label and the description are spans of their own: spaces between them vary.
        ok = len(rows) == len(want) and all(
            squash(r).startswith(squash(w)) for r, w in zip(rows, want, strict=True)
        )
        return rows if ok else None

    return window.wait(seen, what)


def explorer_badge(window: Window) -> str | None:
    """The badge on the Explorer's activity bar icon (the sum of its views' badges)."""
    got: str | None = window.page.evaluate(
        """() => {
          const item = Array.from(document.querySelectorAll('.activitybar .action-item'))
            .find((i) => (i.querySelector('.action-label')?.getAttribute('aria-label') || '')
              .startsWith('Explorer'));
          const badge = item?.querySelector('.badge-content');
          return badge && badge.offsetParent !== null ? badge.textContent.trim() : null;
        }"""
    )
    return got


def squash(text: str) -> str:
    return "".join(text.split())


def decision_in(out: Path) -> dict[str, Any] | None:
    """The decision the hook printed into ``out``, once it has printed it whole."""
    try:
        decision: dict[str, Any] = json.loads(out.read_text())["hookSpecificOutput"]["decision"]
    except (OSError, ValueError, KeyError):
        return None
    return decision


def click_row(window: Window, label: str) -> None:
    header = window.page.locator(".pane-header", has_text="Hive: Sessions")
    body = header.locator("xpath=..").locator(".pane-body")
    body.locator(".monaco-list-row", has_text=label).first.click()


def test_the_sessions_view_shows_both_and_the_waiting_one_opens_its_question(
    window: Window, vscode_hub: Hub, claudes: tuple[PipedClaude, PipedClaude]
) -> None:
    api, web = claudes
    # As Claude Code starts, then takes the human's prompt: one event after the other
    # (the hook reports SessionStart in the background, so the next one waits for it).
    # The hooks are processes of their own, with no event to follow: the hub's list,
    # polled with wait_for's deadline, says when each has been taken.
    for event, state in (
        ({"hook_event_name": "SessionStart", "source": "startup"}, "idle"),
        ({"hook_event_name": "UserPromptSubmit", "prompt": "fix the tests"}, "working"),
    ):
        for claude in claudes:
            claude.hook(event)
        want = {api.agent_id: state, web.agent_id: state}
        wait_for(
            lambda want=want: session_states(vscode_hub) == want,
            f"both sessions to be {state}",
            on_timeout=lambda: f"; the hub has {session_states(vscode_hub)}",
        )
    window.command("Focus on Hive: Sessions View")
    api_label, web_label = f"Claude Code {api.proc.pid}", f"Claude Code {web.proc.pid}"
    rows = window.wait(
        lambda: (lambda r: r if r is not None and len(r) == 2 else None)(sessions_view(window)),
        "the Hive: Sessions view to show two sessions",
    )
    for label in (api_label, web_label):
        assert any(squash(r).startswith(squash(f"{label} working · ")) for r in rows), rows
    assert all(r.endswith("<1m") for r in rows), rows

    decision = web.hook(
        {
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": "make deploy", "description": "Deploy the site"},
        }
    )
    rows = wait_rows(
        window,
        [f"{web_label}1 permission · ", f"{api_label}working · "],
        "the waiting session first, with its permission",
    )
    assert str(web.cwd) in rows[0], rows
    assert session_states(vscode_hub) == {api.agent_id: "working", web.agent_id: "waiting"}
    # The view's badge counts the sessions waiting: on the Explorer's icon.
    window.wait(lambda: explorer_badge(window) == "1", "the Explorer's badge to count 1 waiting")
    window.shot("sessions-waiting")
    # Nothing opened by itself: the permission waits for the human (its notification
    # announces it), untouched.
    assert window.quick_input() is None
    (prompt,) = vscode_hub.pending()
    assert prompt["agent_id"] == web.agent_id
    assert prompt["typing_at"] is None

    click_row(window, web_label)
    box = window.wait_quick_input("wants to run Bash", "the session's permission to open")
    assert "make deploy" in box.placeholder, box
    for _ in range(len(box.rows) + 1):
        now = window.quick_input()
        if now is not None and (now.active or "").split(",")[0] == "allow":
            break
        window.press("ArrowDown")
    window.press("Enter")
    window.wait_no_quick_input()
    # The hook is a process outside this one, with no event to follow: its output file,
    # polled with wait_for's deadline, says when it has decided.
    decided = wait_for(lambda: decision_in(decision), "the hook to print its decision")
    assert decided["behavior"] == "allow", decided
    wait_rows(
        window,
        [f"{web_label}working · ", f"{api_label}working · "],
        "the answered session to be working again",
    )
    assert vscode_hub.pending() == []
    window.wait(lambda: explorer_badge(window) is None, "the Explorer's badge to go")
    window.shot("sessions-answered")

    # The other one runs in no terminal of this window: a click says where it runs.
    click_row(window, api_label)
    message = window.wait_notification(f"Hive: {api_label} runs in ")
    assert f"as pid {api.proc.pid}; no terminal of this window runs it." in message, message


_VISIBLE_TERMINAL = """() => Array.from(document.querySelectorAll('.terminal-wrapper'))
  .filter((w) => w.offsetParent !== null)
  .map((w) => w.querySelector('.xterm-rows')?.textContent || '').join('\\n')"""


def visible_terminal(window: Window) -> str:
    """The text of the integrated terminal on screen."""
    return str(window.page.evaluate(_VISIBLE_TERMINAL) or "")


def new_terminal(window: Window, command: str, marker: str) -> None:
    """A new integrated terminal that runs ``command``, typed as a person types it;
    ``marker`` is what it prints first."""
    window.command("Terminal: Create New Terminal")
    window.wait(
        lambda: window.page.evaluate("() => !!document.activeElement?.closest('.terminal')"),
        "the terminal to have the keyboard",
    )
    # The shell draws its prompt; the line typed before it would be drawn with it, which
    # is harmless: the marker is looked for in what the command printed.
    window.type_human(command, 10)
    window.press("Enter")
    window.wait(
        lambda: visible_terminal(window).count(marker) >= 2 or None,
        f"the terminal to print {marker} (typed, then printed)",
    )


def test_a_click_on_a_session_run_in_a_terminal_of_this_window_shows_that_terminal(
    window: Window, vscode_hub: Hub, vscode_root: Path
) -> None:
    """Claude Code started in VS Code's integrated terminal: its shell is the agent's
    parent, which the extension reads from /proc; another terminal is in front when the
    row is clicked, and the agent's comes to the front."""
    here = vscode_root / "in-terminal"
    app = here / "app"
    app.mkdir(parents=True)
    claude = claude_link(here)
    start = here / "start.json"
    start.write_text(
        json.dumps({"session_id": "s-term", "cwd": str(app), "hook_event_name": "SessionStart"})
    )
    where = f"--socket {vscode_hub.socket} --data-dir {vscode_hub.data_dir}"
    # The agent: a ``claude`` that reports its start through the real hook, then waits.
    (here / "agent.sh").write_text(
        f"cd {app}\necho AGENT-TERMINAL\n"
        f"{sys.executable} -m hive_rpc hook claude-code {where} < {start} 2>> {here}/hook.err\n"
        "read -r _\n"
    )
    agent_pid: int | None = None
    try:
        new_terminal(window, f"echo AGENT-TERMINAL; {claude} {here}/agent.sh", "AGENT-TERMINAL")
        # The hook is a process of its own: the hub's list, polled, says when it reported.
        session = wait_for(
            lambda: next(
                (s for s in vscode_hub.json("sessions") if s["project_dir"] == str(app)), None
            ),
            "the terminal's agent to report its start",
        )
        agent_pid = int(session["pid"])
        new_terminal(window, "echo OTHER-TERMINAL; echo OTHER-TERMINAL", "OTHER-TERMINAL")
        assert "AGENT-TERMINAL" not in visible_terminal(window)
        window.command("Focus on Hive: Sessions View")
        label = f"Claude Code {agent_pid}"
        window.wait(
            lambda: (
                any(
                    squash(r).startswith(squash(f"{label} idle"))
                    for r in sessions_view(window) or []
                )
                or None
            ),
            "the terminal's agent in the Sessions view, idle",
        )
        click_row(window, label)
        window.wait(
            lambda: "AGENT-TERMINAL" in visible_terminal(window) or None,
            "the agent's terminal to come to the front",
        )
        window.shot("terminal-shown")
    finally:
        if agent_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent_pid, signal.SIGKILL)
        window.command("Terminal: Kill All Terminals")
