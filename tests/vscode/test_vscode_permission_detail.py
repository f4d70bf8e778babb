"""A Claude Code permission request answered in the real VS Code (code-server +
headless Chromium) against a real hub, asked by the real ``hive-rpc hook claude-code``:
the quick pick says it is a permission, its whole input opens beside in a read-only
editor as it opens, its first row "Show details" previews the tool input, Enter on
that row shows the input again and answers nothing (the pick stays open), and the
answer picked next goes back to the hook.
``hive.openGraceSeconds`` is 0 here (test_vscode_keyboard.py tests the opening moment).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hook_process
import pytest
from hook_process import permission_event, stopped_at_exit
from vscode_session import EditorSetup, Hub, Window

COMMAND = "npm test\nrm -rf build/cache-only-in-the-detail"
CHOICES = ["allow", "allow for this session", "always allow in this project", "deny"]

_EDITOR_TEXT = """() => Array.from(document.querySelectorAll(
  '.editor-group-container .monaco-editor .view-lines')).map((e) => e.innerText).join('\\n')"""
_TAB_LABELS = """() => Array.from(document.querySelectorAll('.tabs-container .tab'))
  .map((t) => t.getAttribute('aria-label') || t.textContent.trim())"""


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    return EditorSetup(
        machine={"hive.pythonPath": sys.executable}, user={"hive.openGraceSeconds": 0}
    )


def start_hook(window: Window, hub: Hub) -> subprocess.Popen[bytes]:
    """The hook as Claude Code runs it, its PermissionRequest on stdin, with no editor
    open yet (the details of an earlier test's prompt would read the same)."""
    window.command("View: Close All Editors")
    event = permission_event(hub.root, "Bash", {"command": COMMAND, "description": "Run the tests"})
    return hook_process.start_hook(
        event, socket=hub.socket, data_dir=hub.data_dir, home=hub.root, timeout_s=120
    )


def editor_text(window: Window) -> str:
    """The text of the editors shown, as it reads (Monaco renders spaces as U+00A0)."""
    return str(window.page.evaluate(_EDITOR_TEXT) or "").replace("\xa0", " ")


def row(rows: list[str], label: str) -> str:
    found = [r for r in rows if r.startswith(label)]
    assert found, f"no row {label!r} in {rows}"
    return found[0]


def test_show_details_opens_the_whole_input_then_the_answer_goes_back(
    window: Window, vscode_hub: Hub
) -> None:
    with stopped_at_exit(start_hook(window, vscode_hub)) as hook:
        box = window.wait_quick_input("wants to run Bash", "the permission to open")
        # After the agent, where it runs (the hook's working directory).
        assert box.title.startswith("Agent claude-code-3f2a9c1d ("), box
        assert ") asks permission (urgent) — " in box.title, box
        assert box.placeholder.endswith(
            "wants to run Bash: npm test rm -rf build/cache-only-in-the-detail (see detail)"
        ), box
        assert [r.split(",")[0] for r in box.rows[1:]] == [c.split(",")[0] for c in CHOICES]
        first = row(box.rows, "Show details")
        # Opened by itself (hive.autoAsk, this harness's setting): nothing is
        # pre-selected, Enter alone picks nothing; the whole input opened beside.
        assert box.active is None, box
        window.wait(lambda: "cache-only" in editor_text(window) or None, "the details beside")
        window.press("ArrowDown")
        window.wait(lambda: (window.quick_input() or box).active == first, "Show details active")
        # The preview line: the input on one line, right under the row's label.
        preview = window.page.locator(".quick-input-list .monaco-list-row").first.inner_text()
        assert '"command": "npm test\\nrm -rf build/cache-only-in-the-detail"' in preview
        assert "Show details: the whole input, in a read-only editor" in " ".join(box.buttons)
        window.shot("permission-pick")
        window.press("Enter")
        text = window.wait(
            lambda: t if "cache-only" in (t := editor_text(window)) else None,
            "the details to open in an editor",
        )
        # Wrapped (the lines break where the editor is narrow): read without the breaks.
        flat = "".join(text.split())
        assert "claude-code-3f2a9c1daskspermission(prompt" in flat
        assert '"command":"npmtest\\nrm-rfbuild/cache-only-in-the-detail",' in flat
        assert '"description":"Runthetests"' in flat
        window.shot("permission-details")
        # Nothing was answered: the pick is still open, the hook still waits.
        assert hook.poll() is None
        assert window.quick_input() is not None
        assert len(vscode_hub.pending()) == 1
        # The details are read-only: typing there changes nothing (the keyboard is still
        # the pick's anyway); the answer is picked as usual.
        for _ in range(len(CHOICES) + 1):
            now = window.quick_input()
            if now is not None and (now.active or "").startswith("deny"):
                break
            window.press("ArrowDown")
        window.press("Enter")
        out, err = hook.communicate(timeout=60)
    assert hook.returncode == 0, err
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny", decision
    window.wait_no_quick_input()


def test_the_details_document_is_read_only(window: Window, vscode_hub: Hub) -> None:
    with stopped_at_exit(start_hook(window, vscode_hub)):
        window.wait_quick_input("wants to run Bash", "the permission to open")
        window.wait(
            lambda: "cache-only" in editor_text(window) or None,
            "the details to open in an editor",
        )
        prompt_id = vscode_hub.pending()[0]["id"]
        window.wait(
            lambda: any(prompt_id in t for t in window.page.evaluate(_TAB_LABELS)) or None,
            "the details' tab to be named after the prompt",
        )
        # Escape defers the prompt; the editor with the details is then focusable and
        # refuses edits (a content provider's document).
        window.press("Escape")
        window.wait_no_quick_input()
        # Deferred, it waits in the status bar and the Hive: Pending view, which say
        # it is a permission (an agent's tool waits on it), not just a question.
        window.wait(
            lambda: "1 permission request" in window.status_tooltip() or None,
            "the status bar to count the permission request",
        )
        window.show_pending_view()
        window.wait(
            lambda: (
                any(
                    r.startswith("Permission · claude-code-3f2a9c1d: ")
                    for r in window.pending_view() or []
                )
                or None
            ),
            "the Hive: Pending row to begin with 'Permission'",
        )
        window.page.locator(".editor-group-container .monaco-editor .view-lines").last.click()
        window.type_human("EDITED")
        window.wait(
            lambda: "Cannot edit in read-only editor" in window.page.content() or None,
            "VS Code to refuse the edit",
        )
        assert "EDITED" not in editor_text(window)
    assert Path(vscode_hub.socket).exists()
