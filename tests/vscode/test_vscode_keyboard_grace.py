"""Keys typed as a question opens by itself go back to the editor.

A real VS Code (code-server) with the default ``hive.idleSeconds`` (2) and a long
``hive.openGraceSeconds`` (30), so that the test's own reaction time does not matter:
a person writing a sentence pauses to think, the question opens by itself in the
pause, and the person, who did not see it, goes on typing. Those keys are the
sentence's, not an answer: they land in the file, the box closes, and the question
opens again at the next pause."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_vscode_keyboard import HUMAN_PACE_MS, ask_in_background
from vscode_session import EditorSetup, Hub, Window


@pytest.fixture(scope="module")
def editor_setup(vscode_root: Path) -> EditorSetup:
    return EditorSetup(
        user={"hive.openGraceSeconds": 30}, machine={"hive.pythonPath": sys.executable}
    )


def test_keys_typed_as_the_question_opens_go_to_the_file(window: Window, vscode_hub: Hub) -> None:
    sentence = window.server.workspace / "pause.txt"
    sentence.write_text("")
    window.open_file("pause.txt")
    window.type_human("The quick ", HUMAN_PACE_MS)
    asking = ask_in_background(vscode_hub, "Which branch?", "--agent", "deployer")
    window.type_human("brown ", HUMAN_PACE_MS)
    out, _ = asking.communicate(timeout=60)
    ask_id = out.strip()
    # The person pauses to think: the question opens by itself.
    window.wait_quick_input("Which branch?", "the box, in the pause")
    window.shot("opened-in-a-pause")
    # ... and the person, looking at the text, goes on typing the sentence.
    window.type_human("fox jumps.", HUMAN_PACE_MS)
    window.wait_no_quick_input("the box to close at the first key")
    window.press("Enter")
    window.type_human("Next line.", HUMAN_PACE_MS)
    window.press("Control+S")
    window.wait(
        lambda: sentence.read_text() == "The quick brown fox jumps.\nNext line.",
        "every key in the file, in order",
    )
    record = vscode_hub.record(ask_id)
    assert record["status"] == "pending", record
    assert record["typing_at"] is None, "nothing was typed into the question"
    assert record["answer"] is None, record
    # At the next pause it opens again, not deferred.
    window.wait_quick_input("Which branch?", "the box, at the next pause")
