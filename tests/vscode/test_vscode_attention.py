"""The human's attention in a real VS Code (issue 27): no question takes a key it was not
given, and none expires unseen.

code-server in Chromium with the extension on its DEFAULT settings (nothing opens by
itself), a real hub, and a person at a person's pace. Before: after a 3.0-3.5 s thinking
pause a question had opened by itself and Enter answered "yes" to "Deploy to
production?"; a question opened mid-sentence in the integrated terminal and took the rest
of the line; Escape opened the next question at once, and one opened over Quick Open, so
``app.py`` Enter answered "Commit message for the fix?".

The table: everyday sequences while questions arrive, each asserting that the hub's
records stay pending with nothing typed into them and no answer, that nothing opened, and
that every key landed where it was typed (the file's text, the terminal's command).
Then the deliberate paths: the key binding, the notification's links, "Not now" for all,
and the trace of a question that expired unseen."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from vscode_session import EditorSetup, Hub, Window

QUESTION = "Deploy to production?"
NOTICE = "asks: Deploy to production?"
ANSWER_KEY = "Control+Alt+H"
"""Hive: Answer Next Question's key binding."""
PACE_MS = 120
"""Between two keys: a steady typist."""
THINKS_S = 3.2
"""The person stops to think before the next key: past the 3.0-3.5 s after which a
question used to open by itself.  The scenario, not a wait for a result: on the default
settings nothing opens on a timer, and what is checked after it is waited for (the
file's text) or read from the hub's records."""


@pytest.fixture(scope="module")
def editor_setup(vscode_root: Path) -> EditorSetup:
    # None drops the test harness's own hive.autoAsk and openGraceSeconds: the defaults.
    return EditorSetup(
        user={
            "hive.autoAsk": None,
            "hive.openGraceSeconds": None,
            "terminal.integrated.gpuAcceleration": "off",
            "terminal.integrated.enablePersistentSessions": False,
            # Word suggestions from the other files written here would take an Enter
            # (accepting "ready"): VS Code's own, not the question's.
            "editor.wordBasedSuggestions": "off",
            "editor.acceptSuggestionOnEnter": "off",
        },
        machine={"hive.pythonPath": sys.executable},
    )


def ask_deploy(hub: Hub) -> str:
    return hub.ask(QUESTION, "--choices", "yes,no", "--timeout", "300", "--agent", "deployer")


def untouched(hub: Hub, ask_id: str) -> None:
    """The question is as the agent left it: pending, nothing typed, no answer."""
    record = hub.record(ask_id)
    assert record["status"] == "pending", record
    assert record["typing_at"] is None, record
    assert record["answer"] is None, record


def keyboard_in_editor(window: Window) -> bool:
    return bool(
        window.page.evaluate(
            "() => !!document.activeElement?.closest('.monaco-editor')"
            " && !document.activeElement.closest('.quick-input-widget')"
        )
    )


# -- the table ----------------------------------------------------------------------------


@dataclass
class Sequence:
    """What the person does while a question arrives, and where each key must land."""

    name: str
    run: Callable[[Window, Hub], list[str]]
    """Does it (the questions are asked inside); returns the ids of the questions asked."""


def new_file(window: Window, name: str, text: str = "") -> Path:
    """A file of the workspace, once VS Code lists it (Quick Open finds it then)."""
    path = window.server.workspace / name
    path.write_text(text)
    window.wait(
        lambda: (
            name
            in window.page.evaluate(
                "() => document.querySelector('.explorer-folders-view')?.innerText || ''"
            )
        ),
        f"the Explorer to list {name}",
    )
    return path


def type_pause_enter(pause: float) -> Callable[[Window, Hub], list[str]]:
    """Writing in a file, a question arrives, the person thinks for ``pause`` seconds,
    then presses Enter and goes on."""

    def run(window: Window, hub: Hub) -> list[str]:
        name = f"pause-{str(pause).replace('.', '_')}.txt"
        path = new_file(window, name)
        window.open_file(name)
        window.type_human("The plan ", PACE_MS)
        ask_id = ask_deploy(hub)
        window.type_human("is ready", PACE_MS)
        window.wait_notification(NOTICE)
        time.sleep(pause)  # the person thinks: the scenario, not a wait for a result
        window.press("Enter")
        window.type_human("Next.", PACE_MS)
        window.press("Control+S")
        window.wait(
            lambda: path.read_text() == "The plan is ready\nNext.", f"every key in {name}, in order"
        )
        return [ask_id]

    return run


def terminal_command(window: Window, hub: Hub) -> list[str]:
    """A long command typed in the integrated terminal while a question arrives."""
    out = window.server.workspace / "term-out.txt"
    out.unlink(missing_ok=True)
    window.command("Terminal: Create New Terminal")
    window.wait(
        lambda: window.page.evaluate("() => !!document.activeElement?.closest('.terminal')"),
        "the terminal to have the keyboard",
    )
    time.sleep(1.5)  # the shell draws its prompt; a person waits for it too
    start = "echo 'deploy the fix a"
    rest = "nd please keep the public API stable' > term-out.txt"
    window.type_human(start, PACE_MS)
    ask_id = ask_deploy(hub)
    window.type_human(rest, PACE_MS)
    time.sleep(THINKS_S)  # the person thinks
    window.press("Enter")
    window.wait(
        lambda: (
            out.exists()
            and out.read_text() == "deploy the fix and please keep the public API stable\n"
        ),
        "the whole command to run in the terminal",
    )
    window.command("Terminal: Kill All Terminals")
    return [ask_id]


def escape_then_type(window: Window, hub: Hub) -> list[str]:
    """Two questions wait; Escape, a pause, typing, Enter."""
    path = new_file(window, "escape.txt")
    window.open_file("escape.txt")
    first = ask_deploy(hub)
    second = hub.ask("Commit message for the fix?", "--agent", "committer")
    window.wait_notification("(+1 more waiting)")
    window.press("Escape")
    time.sleep(THINKS_S)  # the person thinks
    window.type_human("after escape", PACE_MS)
    window.press("Enter")
    window.press("Control+S")
    window.wait(lambda: path.read_text() == "after escape\n", "every key in escape.txt")
    return [first, second]


def quick_open(window: Window, hub: Hub) -> list[str]:
    """Questions wait; Ctrl+P, ``app.py``, Enter: the file opens, nothing is answered."""
    app = new_file(window, "app.py")
    first = hub.ask("Commit message for the fix?", "--agent", "committer")
    second = ask_deploy(hub)
    window.wait_notification("(+1 more waiting)")
    window.open_file("app.py")  # Ctrl+P, app.py at a typist's pace, Enter
    time.sleep(THINKS_S)  # the person thinks
    window.type_human("print('ok')", PACE_MS)
    window.press("Enter")
    window.press("Control+S")
    window.wait(lambda: app.read_text() == "print('ok')\n", "every key in app.py")
    return [first, second]


SEQUENCES = [
    Sequence("pause-0.5s", type_pause_enter(0.5)),
    Sequence("pause-2.6s", type_pause_enter(2.6)),
    Sequence("pause-3.0s", type_pause_enter(3.0)),
    Sequence("pause-3.5s", type_pause_enter(3.5)),
    Sequence("pause-8s", type_pause_enter(8.0)),
    Sequence("terminal", terminal_command),
    Sequence("escape", escape_then_type),
    Sequence("quick-open", quick_open),
]


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[s.name for s in SEQUENCES])
def test_no_key_answers_a_question_it_was_not_given(
    window: Window, vscode_hub: Hub, sequence: Sequence
) -> None:
    asked = sequence.run(window, vscode_hub)
    window.shot("after")
    assert window.quick_input() is None, window.describe()
    for ask_id in asked:
        untouched(vscode_hub, ask_id)
    # Announced where the eye is: the status bar counts them, with the countdown.
    status = window.status_text() or ""
    assert status.startswith(f"{len(asked)} · "), status


# -- the deliberate paths ---------------------------------------------------------------------


def test_the_key_binding_opens_it_the_question_is_shown_and_answered(
    window: Window, vscode_hub: Hub
) -> None:
    window.open_file("notes.txt")
    ask_id = ask_deploy(vscode_hub)
    window.wait_notification(NOTICE)
    window.type_human("typing on", PACE_MS)
    window.press(ANSWER_KEY)
    box = window.wait_quick_input(QUESTION, "the question, opened by its key")
    assert box.title.startswith("Agent deployer ("), box  # where it runs, after the agent
    assert box.rows == ["Yes", "No"], box
    # Opened by the human: the hub knows it was shown; the notification went away.
    window.wait(lambda: vscode_hub.record(ask_id).get("shown_at"), "hive/shown on the hub")
    window.wait(lambda: not any(NOTICE in n for n in window.notifications()), "the toast to go")
    window.pick("Yes")
    window.wait_no_quick_input()
    record = vscode_hub.record(ask_id)
    assert (record["status"], record["answer"]) == ("responded", "yes"), record


def test_the_notification_goes_away_when_answered_elsewhere(
    window: Window, vscode_hub: Hub
) -> None:
    ask_id = ask_deploy(vscode_hub)
    window.wait_notification(NOTICE)
    # A notification showing the question's text with its choices: shown to the human.
    window.wait(lambda: vscode_hub.record(ask_id).get("shown_at"), "hive/shown on the hub")
    done = vscode_hub.answer(ask_id, "no")
    assert done.returncode == 0, done.stderr
    window.wait(
        lambda: not any(NOTICE in n for n in window.notifications()),
        "the notification to go away by itself",
    )
    assert window.quick_input() is None


def test_a_choice_in_the_notification_answers_it(window: Window, vscode_hub: Hub) -> None:
    ask_id = ask_deploy(vscode_hub)
    window.wait_notification(NOTICE)
    window.page.locator(".notifications-toasts .notification-list-item-message a").filter(
        has_text="no"
    ).first.click()
    window.wait(lambda: vscode_hub.record(ask_id)["status"] == "responded", "the answer")
    assert vscode_hub.record(ask_id)["answer"] == "no"
    assert window.quick_input() is None


def test_not_now_defers_them_all_and_the_key_opens_them_again(
    window: Window, vscode_hub: Hub
) -> None:
    ids = [
        vscode_hub.ask(f"Question {i}?", "--agent", "asker", "--timeout", "300") for i in range(3)
    ]
    window.wait_notification("(+2 more waiting)")
    window.command("Hive: Not Now: Defer All Questions")
    window.wait(lambda: not window.notifications(), "every announcement to go")
    assert (window.status_text() or "").startswith("3 · ")
    for ask_id in ids:
        untouched(vscode_hub, ask_id)
    window.open_file("notes.txt")
    window.press(ANSWER_KEY)
    window.wait_quick_input("Question 0?", "the oldest, on the human's key")
    window.type_human("first")
    window.press("Enter")
    window.wait(lambda: vscode_hub.record(ids[0])["answer"] == "first", "the answer")
    # Answered: the box closed; the others wait, deferred (no toast, nothing opens).
    window.wait_no_quick_input()
    assert not window.notifications(), window.describe()


def test_a_question_that_expires_unseen_leaves_a_trace_until_dismissed(
    window: Window, vscode_hub: Hub
) -> None:
    seen = ask_deploy(vscode_hub)
    window.wait_notification(NOTICE)
    # Announced behind the first: counted, never shown.
    unseen = vscode_hub.ask("Quick one?", "--agent", "hasty", "--timeout", "5")
    window.wait(
        lambda: "1 expired unseen" in (window.status_text() or ""),
        "the status bar to say it expired unseen",
    )
    record = vscode_hub.record(unseen)
    assert (record["status"], record["unseen"]) == ("expired", True), record
    window.show_pending_view()
    window.wait(
        lambda: any("Expired unseen · hasty: Quick one?" in r for r in window.pending_view() or []),
        "the Pending view to list it",
    )
    window.command("Hive: Dismiss Expired Unseen Questions")
    window.wait(
        lambda: "expired unseen" not in (window.status_text() or ""), "the trace to be cleared"
    )
    assert vscode_hub.record(unseen)["cleared_at"] is not None
    untouched(vscode_hub, seen)


# -- the whole text before the answer ---------------------------------------------------------

TAIL = "~/.ssh"
LONG_COMMAND = "npm ci && npm run build && npm test -- --coverage && " * 4 + "rm -rf ~/.ssh"
"""Longer than the question's one-line summary (200 characters): only the detail has its
end."""

_TEXT_ON_SCREEN = """(needle) => {
  const lines = Array.from(document.querySelectorAll('.editor-group-container .view-line'));
  for (const line of lines) {
    const whole = line.textContent.replace(/\\u00a0/g, ' ');
    const at = whole.indexOf(needle);
    if (at < 0) continue;
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    let offset = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const length = node.textContent.length;
      if (offset + length > at) {
        const range = document.createRange();
        range.setStart(node, at - offset);
        range.setEnd(node, Math.min(length, at - offset + needle.length));
        const r = range.getBoundingClientRect();
        const x = r.left + r.width / 2, y = r.top + r.height / 2;
        const inside = x > 0 && y > 0 && x < window.innerWidth && y < window.innerHeight;
        const hit = inside ? document.elementFromPoint(x, y) : null;
        if (hit && line.contains(hit)) return {x, y};
        break;
      }
      offset += length;
    }
  }
  return null;
}"""
"""Where ``needle`` is drawn in an editor, on screen and not covered (by the quick input
or anything else): the element at its centre is its own line. None if it is not."""


def on_screen(window: Window, needle: str) -> dict[str, float] | None:
    got: dict[str, float] | None = window.page.evaluate(_TEXT_ON_SCREEN, needle)
    return got


def keyboard_in_quick_input(window: Window) -> bool:
    return bool(
        window.page.evaluate("() => !!document.activeElement?.closest('.quick-input-widget')")
    )


def test_a_permission_shows_the_end_of_its_command_before_the_answer(
    window: Window, vscode_hub: Hub
) -> None:
    import hook_process

    window.command("View: Close All Editors")
    event = hook_process.permission_event(
        vscode_hub.root, "Bash", {"command": LONG_COMMAND, "description": "Clean up"}
    )
    hook = hook_process.start_hook(
        event, socket=vscode_hub.socket, data_dir=vscode_hub.data_dir, home=vscode_hub.root
    )
    with hook_process.stopped_at_exit(hook):
        window.wait_notification("wants to run Bash")
        window.press(ANSWER_KEY)
        box = window.wait_quick_input("wants to run Bash", "the permission, opened by its key")
        assert TAIL not in box.placeholder, "the question's own line is cut before the end"
        # The whole input opened beside by itself, wrapped: its end is on screen, not
        # under the box, and the keyboard stayed in the box.
        window.wait(lambda: on_screen(window, TAIL), f"{TAIL!r} on screen, uncovered")
        assert keyboard_in_quick_input(window), "the detail took the keyboard"
        window.shot("permission-tail")
        window.pick("deny")
        window.wait_no_quick_input()
        out, _ = hook.communicate(timeout=60)
        assert b'"behavior": "deny"' in out, out


def test_a_long_question_is_readable_to_its_end(window: Window, vscode_hub: Hub) -> None:
    window.command("View: Close All Editors")
    end = "THE-LAST-WORDS-OF-THE-QUESTION"
    question = "Please read all of this. " * 198 + end  # 4,980 characters
    ask_id = vscode_hub.ask(question, "--agent", "verbose", "--timeout", "300")
    window.wait_notification("verbose (")
    window.press(ANSWER_KEY)
    box = window.wait_quick_input("Please read all of this.", "the question, opened by its key")
    # The box shows its start and fits in the window (it overflowed it, and the end was
    # nowhere); its whole text opened beside; the person scrolls it to its end.
    assert box.message.endswith(
        "… (the whole question is in the editor beside) (Enter answers, Escape defers)"
    ), box
    bottom = window.page.evaluate(
        "() => document.querySelector('.quick-input-widget').getBoundingClientRect().bottom"
    )
    assert bottom < window.page.viewport_size["height"] / 2, bottom
    window.wait(lambda: on_screen(window, "Please read"), "the question's text beside")
    window.page.mouse.move(1000, 500)

    def scrolled_to_end() -> dict[str, float] | None:
        window.page.mouse.wheel(0, 400)
        return on_screen(window, end)

    window.wait(scrolled_to_end, "the question's last words on screen")
    assert keyboard_in_quick_input(window)
    window.shot("long-question-end")
    window.type_human("read it")
    window.press("Enter")
    window.wait(lambda: vscode_hub.record(ask_id)["answer"] == "read it", "the answer")


def test_always_allow_shows_the_rule_before_saving_it(window: Window, vscode_hub: Hub) -> None:
    import hook_process

    window.command("View: Close All Editors")
    event = hook_process.permission_event(
        vscode_hub.root, "Bash", {"command": "npm test", "description": "Run the tests"}
    )
    hook = hook_process.start_hook(
        event, socket=vscode_hub.socket, data_dir=vscode_hub.data_dir, home=vscode_hub.root
    )
    dialog = ".monaco-dialog-box"
    with hook_process.stopped_at_exit(hook):
        window.wait_notification("wants to run Bash")
        window.press(ANSWER_KEY)
        window.wait_quick_input("wants to run Bash", "the permission, opened by its key")
        window.pick("always allow in this project")
        text = window.wait(
            lambda: window.page.evaluate(
                f"() => document.querySelector('{dialog}')?.innerText || null"
            ),
            "the dialog naming the rule",
        )
        rule = (
            "This answer saves a rule: allow Bash(npm test), for every later request in "
            "this project (~/app)."
        )
        assert rule in text, text
        window.shot("always-allow-rule")
        untouched(vscode_hub, vscode_hub.pending()[0]["id"])
        send = 'Send "always allow in this project"'
        window.page.locator(f"{dialog} .monaco-button", has_text=send).click()
        out, _ = hook.communicate(timeout=60)
    assert b'"behavior": "allow"' in out, out
    rules = vscode_hub.cli("rules", "list").stdout
    assert "Bash(npm test)" in rules, rules


def pending_view_text(window: Window) -> str:
    got: str = window.page.evaluate(
        """() => {
          const header = Array.from(document.querySelectorAll('.pane-header'))
            .find((h) => (h.getAttribute('aria-label') || h.textContent)
              .toUpperCase().includes('HIVE: PENDING'));
          const body = header && header.parentElement.querySelector('.pane-body');
          return body ? body.innerText : '';
        }"""
    )
    return got


def test_the_pending_view_says_when_the_hub_is_gone(window: Window, vscode_hub: Hub) -> None:
    window.show_pending_view()
    with vscode_hub.down():
        window.wait(
            lambda: "Not connected to the hive-rpc hub" in pending_view_text(window),
            "the Pending view to say the hub is gone",
        )
        window.shot("view-not-connected")
    vscode_hub.start()
    window.wait(
        lambda: "Not connected" not in pending_view_text(window), "the message to go once back"
    )


def test_text_typed_and_left_with_escape_comes_back(window: Window, vscode_hub: Hub) -> None:
    ask_id = vscode_hub.ask("Commit message for the fix?", "--agent", "committer")
    window.wait_notification("asks: Commit message for the fix?")
    window.press(ANSWER_KEY)
    window.wait_quick_input("Commit message for the fix?", "the question, opened by its key")
    window.type_human("Fix the race in")
    window.press("Escape")
    window.wait_no_quick_input()
    window.press(ANSWER_KEY)
    box = window.wait_quick_input("Commit message for the fix?", "the question again")
    assert box.value == "Fix the race in", box
    window.type_human(" the hub")
    window.press("Enter")
    window.wait(
        lambda: vscode_hub.record(ask_id)["answer"] == "Fix the race in the hub", "the answer"
    )


def test_a_deferred_question_is_not_taken_up_again_by_a_reload(
    window: Window, vscode_hub: Hub
) -> None:
    deferred = vscode_hub.ask("Put aside?", "--agent", "patient", "--timeout", "300")
    window.wait_notification("asks: Put aside?")
    window.command("Hive: Not Now: Defer All Questions")
    window.wait(lambda: not window.notifications(), "the announcement to go")
    window.open()  # the window reloads; its extension subscribes again
    fresh = vscode_hub.ask("Newer one?", "--agent", "eager", "--timeout", "300")
    # What is announced after the reload is the new question, the deferred one is
    # only counted.
    notice = window.wait_notification("asks: Newer one?")
    assert "Put aside?" not in notice, notice
    assert "(+1 more waiting)" in notice, notice
    untouched(vscode_hub, deferred)
    untouched(vscode_hub, fresh)
