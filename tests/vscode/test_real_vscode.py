"""The extension in a real VS Code (code-server 4.100.3 + headless Chromium), against a
real hub, looked at and typed into as a person does; the agent's side is the
``hive-rpc`` CLI. Settings: ``hive.pythonPath`` (Machine settings) and ``hive.socket``,
no ``hive-rpc`` on PATH. Questions open on their own once the window is idle
(``hive.idleSeconds``, default) or with Hive: Answer Next Question; nothing is typed before
a question is open. ``hive.openGraceSeconds`` is 0 here: these tests answer as soon as a
box is open, where a person would first read it (keys in that first moment go back to
the editor: test_vscode_keyboard.py tests that). Screenshots and logs:
$HIVE_ARTIFACTS/vscode/test_real_vscode.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from vscode_session import EditorSetup, Hub, Window

SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "title": "Service"},
        "env": {"type": "string", "title": "Environment", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "title": "Replicas", "minimum": 1},
    },
    "required": ["service", "env", "replicas"],
}


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    return EditorSetup(
        machine={"hive.pythonPath": sys.executable}, user={"hive.openGraceSeconds": 0}
    )


def test_the_sidecar_starts_with_hive_python_path(window: Window, vscode_hub: Hub) -> None:
    # `window` waited for this window's sidecar to subscribe; PATH has no hive-rpc and
    # the system python3 no hive_rpc, so it is the setting's interpreter that runs it
    log = window.log_text()
    assert f"starting {sys.executable} -m hive_rpc lsp --socket {vscode_hub.socket}" in log, log
    assert "subscribed; 0 pending" in log, log
    assert window.status_text() is None  # nothing pending: hidden


def test_a_choices_question_is_a_quick_pick_and_enter_answers(
    window: Window, vscode_hub: Hub
) -> None:
    ask_id = vscode_hub.ask(
        "Deploy to production?", "--choices", "yes,no", "--timeout", "300", "--agent", "deployer"
    )
    window.wait_status("1", "the status bar to count the question")
    box = window.wait_quick_input("Deploy to production?", "the question to open on its own")
    assert box.rows == ["Yes", "No"], box  # yes/no choices read as Yes / No
    assert box.placeholder == "Deploy to production?", box
    # Where the agent runs (the CLI's working directory), after its name.
    assert box.title.startswith(f"Agent deployer ({vscode_hub.root}) needs input — "), box
    assert "left" in box.title, box
    window.shot("quick-pick")
    window.pick("No")
    window.wait_no_quick_input()
    window.wait_status(None, "the status bar to hide once answered")
    done = vscode_hub.poll(ask_id)
    assert (done.returncode, done.stdout.strip()) == (0, "no"), done


def test_a_free_text_question_is_an_input_box_typing_stops_the_countdown_enter_answers(
    window: Window, vscode_hub: Hub
) -> None:
    ask_id = vscode_hub.ask("Name the release", "--timeout", "300")
    box = window.wait_quick_input("Name the release", "the input box to open on its own")
    assert box.rows == [], box
    assert "Name the release" in box.message, box
    assert box.placeholder.endswith("left"), box  # the countdown, until one types
    before = vscode_hub.record(ask_id)
    assert before["typing_at"] is None
    assert before["deadline_at"] < before["max_deadline_at"]

    window.type_human("v2.4 Bumblebee")
    after = window.wait(
        lambda: (r := vscode_hub.record(ask_id))["typing_at"] is not None and r,
        "the hub to hear that the human types (hive/typing)",
    )
    assert after["deadline_at"] == after["max_deadline_at"], after  # the countdown stopped
    assert after["status"] == "pending"
    window.shot("input-box-typing")
    assert window.quick_input() is not None  # still open, with what was typed
    window.press("Enter")
    window.wait_no_quick_input()
    done = vscode_hub.poll(ask_id)
    assert (done.returncode, done.stdout.strip()) == (0, "v2.4 Bumblebee"), done


def test_status_bar_count_and_the_pending_view(window: Window, vscode_hub: Hub) -> None:
    assert window.show_pending_view() == []  # the welcome text, no rows
    first = vscode_hub.ask("Which database?", "--choices", "postgres,sqlite", "--timeout", "600")
    second = vscode_hub.ask("Any last words?", "--agent", "poet")
    window.wait_status("2", "the status bar to count both questions")
    assert "2 questions" in window.status_tooltip()
    rows = window.wait(
        lambda: (v := window.pending_view()) is not None and len(v) == 2 and v,
        "the Hive: Pending view to list both questions",
    )
    assert any("Which database?" in r for r in rows), rows
    assert any("Any last words?" in r for r in rows), rows
    # the first one opened on its own; it says one more is waiting
    box = window.wait_quick_input("Which database?")
    assert "1 more waiting" in box.title, box
    window.shot("pending-view")

    window.pick("sqlite")
    window.wait_status("1", "the count to drop to 1")
    window.wait(
        lambda: (v := window.pending_view()) is not None and len(v) == 1 and v,
        "the view to drop the answered question",
    )
    vscode_hub.cli("cancel", second, "--agent", "poet")
    window.wait_status(None, "the status bar to hide with nothing pending")
    assert vscode_hub.poll(first).stdout.strip() == "sqlite"


def test_escape_defers_and_answer_next_brings_it_back(window: Window, vscode_hub: Hub) -> None:
    ask_id = vscode_hub.ask("Rename the module?", "--choices", "rename,keep")
    window.wait_quick_input("Rename the module?")
    window.press("Escape")
    window.wait_no_quick_input("Escape to close the quick pick")
    window.wait_status_message("Hive: deferred")
    assert window.status_count() == "1"  # still waiting, for later
    assert vscode_hub.record(ask_id)["status"] == "pending"

    window.command("Hive: Answer Next Question")
    box = window.wait_quick_input("Rename the module?", "Answer Next to bring it back")
    assert box.rows == ["rename", "keep"]
    window.pick("keep")
    window.wait_no_quick_input()
    assert vscode_hub.poll(ask_id).stdout.strip() == "keep"


def test_typed_then_escape_gives_the_countdown_back(window: Window, vscode_hub: Hub) -> None:
    """Issue 14, seed 002: typing stops the countdown; Escape on the box typed into
    sends hive/defer, so the hub's record runs its whole countdown again from the
    Escape (without it the prompt, and request_human_input, waited for the 24 h
    maximum lifetime). Escape on a box nobody typed into ("hidden blank") changes
    nothing: its countdown never stopped."""
    blank_id = vscode_hub.ask("Rotate the keys?", "--timeout", "300")
    window.wait_quick_input("Rotate the keys?", "the input box to open on its own")
    before = vscode_hub.record(blank_id)
    window.press("Escape")
    window.wait_no_quick_input("Escape to close the blank box")
    window.wait_status_message("Hive: deferred")
    after = vscode_hub.record(blank_id)
    assert (after["typing_at"], after["deadline_at"]) == (None, before["deadline_at"]), after
    vscode_hub.cli("cancel", blank_id)
    window.wait_status(None, "the status bar to hide once the blank one is withdrawn")

    ask_id = vscode_hub.ask("Name the codename", "--timeout", "300")
    window.wait_quick_input("Name the codename", "the input box to open on its own")
    window.type_human("Bumble")
    window.wait(
        lambda: vscode_hub.record(ask_id)["typing_at"] is not None,
        "the hub to hear that the human types (hive/typing)",
    )
    left_at = time.time()
    window.press("Escape")
    window.wait_no_quick_input("Escape to close the box typed into")
    back = window.wait(
        lambda: (r := vscode_hub.record(ask_id))["typing_at"] is None and r,
        "the hub to give the countdown back (hive/defer)",
    )
    assert back["status"] == "pending", back
    assert left_at + 300 - 5 < back["deadline_at"] < time.time() + 300 + 1, back
    window.command("Hive: Answer Next Question")
    box = window.wait_quick_input("Name the codename", "Answer Next to bring it back")
    assert box.placeholder.endswith("left"), box  # the countdown shows again
    window.type_human("x")
    window.wait(
        lambda: vscode_hub.record(ask_id)["typing_at"] is not None,
        "typing to stop the countdown again",
    )
    window.press("Enter")
    window.wait_no_quick_input()
    assert vscode_hub.record(ask_id)["status"] == "responded"


def test_decline(window: Window, vscode_hub: Hub) -> None:
    ask_id = vscode_hub.ask("May I delete the cache?")
    box = window.wait_quick_input("May I delete the cache?")
    assert any(b.startswith("Decline") for b in box.buttons), box
    window.click_quick_input_button("Decline")
    window.wait_no_quick_input()
    window.wait_notification("declined")
    record = vscode_hub.record(ask_id)
    assert (record["status"], record["action"]) == ("responded", "decline"), record
    assert "declined by" in vscode_hub.poll(ask_id).stdout


def test_an_answer_from_the_cli_closes_the_open_box(window: Window, vscode_hub: Hub) -> None:
    ask_id = vscode_hub.ask("Which port?", "--timeout", "300")
    window.wait_quick_input("Which port?")
    done = vscode_hub.answer(ask_id, "8080", "--by", "shell")
    assert done.returncode == 0, done.stderr
    window.wait_no_quick_input("the answered question's box to close")
    window.wait_notification("that question was answered by shell")
    window.wait_status(None)
    record = vscode_hub.record(ask_id)
    assert (record["answer"], record["by"]) == ("8080", "shell")


def test_a_schema_question_goes_step_by_step(window: Window, vscode_hub: Hub) -> None:
    ask_id = vscode_hub.ask("Scale a service", "--schema", json.dumps(SCHEMA))
    box = window.wait_quick_input("Service (1/3)", "the first step, Service")
    assert "Scale a service" in box.message, box
    window.type_human("api")
    window.press("Enter")
    box = window.wait_quick_input("Environment (2/3)", "the second step, a pick list")
    assert box.rows == ["staging", "production"], box
    window.shot("schema-step-2")
    window.pick("production")
    window.wait_quick_input("Replicas (3/3)", "the third step, a number")
    window.type_human("3")
    window.press("Enter")
    window.wait_no_quick_input()
    record = vscode_hub.record(ask_id)
    assert record["answer"] == {"service": "api", "env": "production", "replicas": 3}, record


def test_a_refused_answer_is_asked_again(window: Window, vscode_hub: Hub) -> None:
    # the extension does not check formats; the hub does, and refuses
    schema = {
        "type": "object",
        "properties": {"email": {"type": "string", "title": "Email", "format": "email"}},
        "required": ["email"],
    }
    ask_id = vscode_hub.ask("Who gets the report?", "--schema", json.dumps(schema))
    window.wait_quick_input("Who gets the report?")
    window.type_human("not an address")
    window.press("Enter")
    window.wait_notification("answer refused")
    box = window.wait_quick_input("must be a valid email", "the question asked again, with why")
    assert "Who gets the report?" in box.message, box  # the reason never hides the question
    assert box.value == "not an address", box  # what was typed, to correct
    window.shot("refused")
    assert vscode_hub.record(ask_id)["status"] == "pending"
    window.press("Control+A")
    window.type_human("ops@example.com")
    window.press("Enter")
    window.wait_no_quick_input()
    assert vscode_hub.record(ask_id)["answer"] == {"email": "ops@example.com"}


def test_the_hub_killed_and_back_the_open_box_survives(window: Window, vscode_hub: Hub) -> None:
    ask_id = vscode_hub.ask("Survive a crash?", "--timeout", "600")
    window.wait_quick_input("Survive a crash?")
    window.type_human("yes, ")
    with vscode_hub.down():  # SIGKILL, and no other hub meanwhile
        window.wait(
            lambda: "lost" in window.status_tooltip() or None,
            "the status bar to say the hub is lost",
        )
        window.shot("hub-lost")
        box = window.quick_input()
        assert box is not None, "the open box closed with the hub"
        assert box.value == "yes, ", box
    vscode_hub.start()  # on the same data dir: the question is still pending there
    window.wait(
        lambda: ("lost" not in window.status_tooltip() and window.status_count() == "1") or None,
        "the status bar to count the question again once the hub is back",
    )
    box = window.quick_input()
    assert box is not None, "the open box closed when the hub came back"
    assert box.value == "yes, ", box
    window.type_human("it did")
    window.press("Enter")
    window.wait_no_quick_input()
    done = vscode_hub.poll(ask_id)
    assert (done.returncode, done.stdout.strip()) == (0, "yes, it did"), done


def test_two_windows_race_one_answer_wins(
    window: Window, vscode_hub: Hub, new_window: Callable[[str], Window]
) -> None:
    other = new_window("second")
    ask_id = vscode_hub.ask("Who takes the pager?", "--timeout", "300")
    for w in (window, other):
        w.wait_quick_input("Who takes the pager?", "the question in both windows")
    window.type_human("alice")
    other.type_human("bob")
    window.press("Enter")
    other.press("Enter")
    for w in (window, other):
        w.wait_no_quick_input("both boxes to close")
        w.wait_status(None)
    answer = vscode_hub.poll(ask_id).stdout.strip()
    assert answer in ("alice", "bob"), answer
    loser = other if answer == "alice" else window
    loser.wait(
        lambda: any("answered" in n for n in loser.notifications()) or None,
        "the losing window to say the question was answered",
    )
    window.shot("race-first")
    other.shot("race-second")


def test_a_hive_rpc_folder_in_the_workspace_does_not_shadow_the_package(
    new_window: Callable[[str], Window], tmp_path: Path
) -> None:
    """The sidecar runs in the workspace folder; ``python -m hive_rpc`` there must still
    run the installed package, not a ``hive_rpc/`` folder of the workspace (a checkout
    of this project, a namesake), which here would exit at once."""
    folder = tmp_path / "checkout"
    (folder / "hive_rpc").mkdir(parents=True)
    (folder / "hive_rpc" / "__init__.py").write_text(
        'raise SystemExit("the workspace folder\'s hive_rpc/ ran")\n'
    )
    (folder / "hive_rpc" / "__main__.py").write_text("")
    shadowed = new_window("shadowed")
    shadowed.open(folder)  # waits until this window's sidecar subscribed
    assert "the workspace folder's hive_rpc/ ran" not in shadowed.log_text()
