"""Asking for a question opens it at once, whatever ``hive.idleSeconds`` says.

A real VS Code (code-server) whose ``hive.idleSeconds`` is an hour: once the human has
typed, no question opens on its own, so what opens it here is the human asking: the
notification's Answer link, and Hive: Answer Next Question."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from vscode_session import EditorSetup, Hub, Window


@pytest.fixture(scope="module")
def editor_setup(vscode_root: Path) -> EditorSetup:
    return EditorSetup(user={"hive.idleSeconds": 3600}, machine={"hive.pythonPath": sys.executable})


def test_the_notification_and_answer_next_open_it_at_once(window: Window, vscode_hub: Hub) -> None:
    window.open_file("notes.txt")
    window.type_human("typing")
    ask_id = vscode_hub.ask("Ship it?", "--agent", "deployer")
    window.wait_notification("asks: Ship it?")
    window.wait_status("1", "the status bar to count it (no countdown: asked without one)")
    assert window.quick_input() is None, window.describe()
    window.page.locator(".notifications-toasts .notification-list-item-message a").filter(
        has_text="Answer"
    ).first.click()
    box = window.wait_quick_input("Ship it?", "the box, after the notification's Answer")
    assert box.message == "Ship it? (Enter answers, Escape defers)", box
    window.press("Escape")
    window.wait_no_quick_input("Escape to defer it")
    # Back in the editor, typing; Answer Next opens it without waiting for idleness.
    window.open_file("notes.txt")
    window.type_human(" more")
    window.command("Hive: Answer Next Question")
    window.wait_quick_input("Ship it?", "the box, after Answer Next")
    window.type_human("yes")
    window.press("Enter")
    window.wait_no_quick_input()
    done = vscode_hub.poll(ask_id)
    assert (done.returncode, done.stdout.strip()) == (0, "yes"), done
