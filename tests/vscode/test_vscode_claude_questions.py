"""Claude Code's own questions (AskUserQuestion) answered in the real VS Code
(code-server + headless Chromium) against a real hub, asked by the real ``hive-rpc
hook claude-code`` fed the call as Claude Code 2.1.328 sends it: the one prompt's
field is a quick pick titled with the question's header, each option's description
its detail line, an item to type one's own answer last; the pick goes back to the
hook as Claude Code's ``answers``.  ``hive.openGraceSeconds`` is 0 here."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import hook_process
import pytest
from ask_user_question import DATABASE, FEATURES
from hook_process import permission_event, stopped_at_exit
from vscode_session import EditorSetup, Hub, Window

OWN = "Other: type your own answer"

_ROW_TEXTS = """() => Array.from(document.querySelectorAll(
  '.quick-input-widget .quick-input-list .monaco-list-row')).map((r) => r.innerText)"""


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    return EditorSetup(
        machine={"hive.pythonPath": sys.executable}, user={"hive.openGraceSeconds": 0}
    )


def start_hook(window: Window, hub: Hub, *questions: dict[str, Any]) -> subprocess.Popen[bytes]:
    window.command("View: Close All Editors")
    event = permission_event(hub.root, "AskUserQuestion", {"questions": list(questions)})
    return hook_process.start_hook(
        event, socket=hub.socket, data_dir=hub.data_dir, home=hub.root, timeout_s=120
    )


def move_to(window: Window, label: str) -> None:
    for _ in range(8):
        now = window.quick_input()
        if now is not None and (now.active or "").startswith(label):
            return
        window.press("ArrowDown")
    pytest.fail(f"no row {label!r}: {window.quick_input()}")


def answers_of(hook: subprocess.Popen[bytes]) -> Any:
    out, err = hook.communicate(timeout=60)
    assert hook.returncode == 0, err
    return json.loads(out)["hookSpecificOutput"]["decision"]["updatedInput"]["answers"]


def test_the_options_descriptions_show_and_the_pick_goes_back(
    window: Window, vscode_hub: Hub
) -> None:
    with stopped_at_exit(start_hook(window, vscode_hub, DATABASE)) as hook:
        box = window.wait_quick_input("Which database should the cache use?", "the question")
        assert "Database" in box.title, box
        labels = [r.split(",")[0] for r in box.rows]
        assert labels[-3:] == ["SQLite", "Postgres", OWN], box
        rows = window.page.evaluate(_ROW_TEXTS)
        postgres = next(r for r in rows if r.startswith("Postgres"))
        assert "the server we already run" in postgres, rows
        window.shot("claude-question-pick")
        move_to(window, "Postgres")
        window.press("Enter")
        answers = answers_of(hook)
    assert answers == {"Which database should the cache use?": "Postgres"}
    window.wait_no_quick_input()


def test_an_answer_of_ones_own_goes_back_as_typed(window: Window, vscode_hub: Hub) -> None:
    with stopped_at_exit(start_hook(window, vscode_hub, DATABASE)) as hook:
        window.wait_quick_input("Which database should the cache use?", "the question")
        move_to(window, OWN)
        window.press("Enter")
        # The input box, not the pick (whose last row says "your own answer" too).
        window.wait(
            lambda: (
                (
                    (box := window.quick_input()) is not None
                    and not box.rows
                    and "your own answer" in box.text()
                )
                or None
            ),
            "the box for one's own answer",
        )
        window.page.keyboard.type("MariaDB, why not?")
        window.press("Enter")
        answers = answers_of(hook)
    assert answers == {"Which database should the cache use?": "MariaDB, why not?"}


def test_a_multi_select_question_takes_two_picks(window: Window, vscode_hub: Hub) -> None:
    """A multiSelect question is a quick pick with checkboxes (canSelectMany): the
    keyboard ticks two options (Space on each) and Enter sends both, joined as Claude
    Code 2.1.328 writes them."""
    with stopped_at_exit(start_hook(window, vscode_hub, FEATURES)) as hook:
        box = window.wait_quick_input("Which features should ship?", "the question")
        assert "Features" in box.title, box
        rows = window.page.evaluate(_ROW_TEXTS)
        assert any(r.startswith("Gamma") and "the third" in r for r in rows), rows
        ticks = window.page.locator(
            ".quick-input-widget .quick-input-list .monaco-list-row[role=checkbox]"
        )
        assert ticks.count() == 4, rows  # the three options and one's own answer
        for label in ("Alpha", "Gamma"):
            move_to(window, label)
            window.press("Space")
        ticked = window.page.locator(
            ".quick-input-widget .quick-input-list .monaco-list-row[aria-checked=true]"
        ).evaluate_all("rows => rows.map(r => r.getAttribute('aria-label'))")
        assert ticked == ["Alpha, the first", "Gamma, the third"], ticked
        window.shot("claude-question-multi")
        window.press("Enter")
        answers = answers_of(hook)
    assert answers == {"Which features should ship?": "Alpha, Gamma"}
    window.wait_no_quick_input()
