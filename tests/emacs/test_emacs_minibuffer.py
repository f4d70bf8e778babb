"""End to end in a real interactive Emacs: `emacs -nw -Q` under tmux loads
elisp/hive-rpc.el, turns on `hive-rpc-mode` against a hub started here, and an agent
asks through the CLI.  The tests read the screen with `tmux capture-pane` and type
with `tmux send-keys`, as a person would.  These tests are about what happens inside a
question, so questions open at once here (emacs_session.FAST); test_emacs_keyboard.py
tests when they open, with the default options."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from emacs_session import FAST, ORIGIN, EmacsSession, log_calls, logged_calls, running, tag

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)


CHECKS = "ask-queued.log"
"""Where Emacs writes, each time it has looked whether a queued question may open by
itself (``hive-rpc--ask-queued``), how many were queued then."""


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    checks = log_calls("hive-rpc--ask-queued", short_tmp / CHECKS, "(length (hive-rpc--queue))")
    yield from running(EmacsSession(short_tmp, FAST + checks))


def test_answer_typed_in_the_minibuffer_reaches_the_agent(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Deploy build 412?", "--choices", "yes,no", "--agent", "deployer")
    emacs.wait_prompt(f"{tag('deployer')} Deploy build 412? [yes / no] (C-c C-k: decline")
    assert "hive:1" in emacs.screen()
    emacs.keys("yes", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes"
    emacs.wait_for(lambda screen: "hive:" not in screen)


def test_prompt_waits_for_the_users_own_read_string(emacs: EmacsSession) -> None:
    emacs.keys("M-:", '(setq hive-test-other (read-string "Other: "))', "Enter")
    emacs.wait_for(lambda _: emacs.minibuffer().startswith("Other:"))
    prompt_id = emacs.ask("Rebase onto main?", "--agent", "claude-1")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    # Emacs looked whether the question may open with it queued, and let it wait (had
    # it opened, that look would not have returned: the prompt shows instead).
    emacs.wait_until(
        lambda: "1" in logged_calls(emacs.root / CHECKS) or "Rebase" in emacs.minibuffer(),
        "Emacs to look at the queued question",
    )
    assert emacs.minibuffer().startswith("Other:")
    assert "Rebase onto main? (C-c" not in emacs.minibuffer()  # only announced
    emacs.keys("mine", "Enter")
    emacs.wait_prompt(f"{tag('claude-1')} Rebase onto main? (C-c")
    emacs.keys("yes, rebase", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes, rebase"
    # The user's own read got the user's own text.
    emacs.keys("M-:", '(message "other=%s" hive-test-other)', "Enter")
    emacs.wait_for(lambda _: "other=mine" in emacs.minibuffer())


def test_prompt_answered_from_the_cli_leaves_the_minibuffer(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Ship it?", "--agent", "shipper")
    emacs.wait_prompt(f"{tag('shipper')} Ship it? (C-c")
    assert emacs.cli("answer", prompt_id, "done elsewhere", "--by", "bob").returncode == 0
    emacs.wait_for(lambda _: "that question was answered by bob" in emacs.minibuffer())
    emacs.wait_for(lambda screen: "hive:" not in screen)


def test_typing_stops_the_countdown(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Merge PR 91?", "--timeout", "300", "--agent", "merger")
    emacs.wait_prompt(f"{tag('merger')} Merge PR 91? (C-c")
    assert emacs.minibuffer().startswith("(4m5")  # the countdown shows
    before = emacs.record(prompt_id)
    assert before["deadline_at"] < before["max_deadline_at"]
    emacs.keys("y")
    emacs.wait_for(lambda _: emacs.record(prompt_id)["typing_at"] is not None)
    after = emacs.record(prompt_id)
    assert after["deadline_at"] == after["max_deadline_at"]
    emacs.wait_for(lambda _: emacs.minibuffer().startswith(f"{tag('merger')}"))  # countdown gone
    emacs.keys("es", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes"


def test_typed_then_c_g_gives_the_countdown_back(emacs: EmacsSession) -> None:
    """Issue 14, seed 002: typing at a person's pace stops the countdown; C-g then
    sends hive/defer, so the hub's record runs its whole countdown again from the
    C-g (without it the prompt waited for the 24 h maximum lifetime).  The draft is
    kept, and typing again stops the countdown again."""
    prompt_id = emacs.ask("Name the release?", "--timeout", "300", "--agent", "namer")
    emacs.wait_prompt(f"{tag('namer')} Name the release? (C-c")
    emacs.type("Bumble")
    emacs.wait_for(lambda _: emacs.record(prompt_id)["typing_at"] is not None)
    assert emacs.record(prompt_id)["deadline_at"] == emacs.record(prompt_id)["max_deadline_at"]
    left_at = time.time()
    emacs.keys("C-g")
    emacs.wait_for(lambda _: "deferred" in emacs.minibuffer())
    emacs.wait_for(lambda _: emacs.record(prompt_id)["typing_at"] is None)
    back = emacs.record(prompt_id)
    assert back["status"] == "pending"
    assert left_at + 300 - 5 < back["deadline_at"] < time.time() + 300 + 1
    emacs.keys("M-x", "hive-rpc-answer-next", "Enter")
    emacs.wait_prompt(f"{tag('namer')} Name the release? (C-c")
    assert emacs.minibuffer().startswith("(4m5")  # the countdown shows again
    emacs.type("bee")
    emacs.wait_for(lambda _: emacs.record(prompt_id)["typing_at"] is not None)
    emacs.keys("Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "Bumblebee"


def test_c_g_without_typing_leaves_the_countdown_running(emacs: EmacsSession) -> None:
    """Hidden blank: nothing was typed, so nothing stopped and nothing is restored."""
    prompt_id = emacs.ask("Rotate the keys?", "--timeout", "300", "--agent", "keeper")
    emacs.wait_prompt(f"{tag('keeper')} Rotate the keys? (C-c")
    before = emacs.record(prompt_id)
    emacs.keys("C-g")
    emacs.wait_for(lambda _: "deferred" in emacs.minibuffer())
    after = emacs.record(prompt_id)
    assert (after["typing_at"], after["deadline_at"]) == (None, before["deadline_at"])


def test_c_c_c_k_declines_and_c_g_defers(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Delete the cache?", "--agent", "cleaner")
    emacs.wait_prompt(f"{tag('cleaner')} Delete the cache? (C-c")
    emacs.keys("C-g")
    emacs.wait_for(lambda _: "deferred" in emacs.minibuffer())
    assert emacs.cli("poll", prompt_id).returncode == 8  # still pending
    assert "hive:1" in emacs.screen()
    emacs.keys("M-x", "hive-rpc-answer-next", "Enter")
    emacs.wait_prompt(f"{tag('cleaner')} Delete the cache? (C-c")
    emacs.keys("C-c", "C-k")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 7)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "declined by human"
    emacs.wait_for(lambda _: "hive-rpc: declined; told cleaner" in emacs.minibuffer())


def test_schema_fields_are_asked_one_after_another(emacs: EmacsSession) -> None:
    schema = {
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["staging", "prod"]},
            "replicas": {"type": "integer", "minimum": 1},
            "notify": {"type": "boolean"},
            "size": {"type": "integer", "enum": [1, 2, 3]},
            "note": {"type": "string"},
        },
        "required": ["env", "replicas", "notify", "size"],
    }
    prompt_id = emacs.ask("Deploy where?", "--schema", json.dumps(schema), "--agent", "d")
    emacs.wait_prompt(f"{tag('d')} Deploy where? (env) [staging / prod] (C-c")
    emacs.keys("prod", "Enter")
    emacs.wait_prompt(f"{tag('d')} Deploy where? (replicas: integer, at least 1) (C-c")
    emacs.keys("3", "Enter")
    emacs.wait_prompt(f"{tag('d')} Deploy where? (notify) (C-c")
    emacs.keys("y")
    emacs.wait_prompt(f"{tag('d')} Deploy where? (size) [1 / 2 / 3] (C-c")
    emacs.keys("2", "Enter")
    emacs.wait_prompt(f"{tag('d')} Deploy where? (note: optional) (C-c")
    emacs.keys("Enter")  # optional: left out
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    answer = {"env": "prod", "replicas": 3, "notify": True, "size": 2}
    assert emacs.record(prompt_id)["answer"] == answer


def test_list_buffer_answers_with_ret(emacs: EmacsSession) -> None:
    emacs.eval("(setq hive-rpc-auto-ask nil)")
    prompt_id = emacs.ask("Pick a colour", "--agent", "painter", "--timeout", "600")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    # Announced, without promising to open by itself.
    emacs.wait_for(
        lambda _: f'hive-rpc: painter · {ORIGIN} asks "Pick a colour"' in emacs.minibuffer()
    )
    assert "opens when you pause" not in emacs.minibuffer()
    emacs.keys("M-x", "hive-rpc-list", "Enter")
    emacs.wait_for(lambda screen: "painter" in screen and "Pick a colour" in screen)
    emacs.eval('(pop-to-buffer "*hive-rpc*")')
    emacs.keys("M-<", "Enter")
    emacs.wait_prompt(f"{tag('painter')} Pick a colour (C-c")
    emacs.keys("teal", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "teal"
    emacs.wait_for(lambda screen: "Pick a colour" not in screen)


def test_next_question_follows_without_another_key(emacs: EmacsSession) -> None:
    first = emacs.ask("First?", "--agent", "one")
    emacs.wait_prompt(f"{tag('one')} First? (C-c")
    second = emacs.ask("Second?", "--choices", "a,b", "--agent", "two")
    emacs.keys("done", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", first).returncode == 0)
    # No key pressed since: the queued question must take the minibuffer by itself.
    emacs.wait_prompt(f"{tag('two')} Second? [a / b] (C-c")
    emacs.keys("b", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", second).returncode == 0)
    assert emacs.cli("poll", second).stdout.strip() == "b"


def test_a_refused_answer_is_asked_again_with_the_reason_in_the_prompt(
    emacs: EmacsSession,
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
            "when": {"type": "string", "format": "date"},
        },
        "required": ["replicas", "when"],
    }
    prompt_id = emacs.ask("Scale up?", "--schema", json.dumps(schema), "--agent", "ops")
    emacs.wait_prompt(f"{tag('ops')} Scale up? (replicas: integer, 1 to 9) (C-c")
    emacs.keys("0", "Enter")
    # Checked in Emacs: the same field again, the reason above it, the text kept.
    screen = emacs.wait_for(lambda s: "refused: 'replicas' must be at least 1" in s)
    assert (
        f"{tag('ops')} Scale up? (replicas: integer, 1 to 9) (C-c"
        in screen.rstrip().split("\n")[-1]
    )
    assert emacs.minibuffer().rstrip().endswith(": 0")
    emacs.keys("C-a", "C-k", "2", "Enter")
    emacs.wait_prompt(f"{tag('ops')} Scale up? (when: a date: YYYY-MM-DD) (C-c")
    emacs.keys("tomorrow", "Enter")
    # Refused by the hub: asked again with the hub's reason, the answers given kept.
    screen = emacs.wait_for(lambda s: "refused: 'when' must be a valid date" in s)
    assert emacs.cli("poll", prompt_id).returncode == 8
    emacs.wait_prompt(f"{tag('ops')} Scale up? (replicas: integer, 1 to 9) (C-c")
    assert emacs.minibuffer().rstrip().endswith(": 2")
    emacs.keys("Enter")
    emacs.wait_prompt("(when: a date: YYYY-MM-DD)")
    assert emacs.minibuffer().rstrip().endswith(": tomorrow")
    emacs.keys("C-a", "C-k", "2026-12-01", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.record(prompt_id)["answer"] == {"replicas": 2, "when": "2026-12-01"}


def test_history_is_per_question(emacs: EmacsSession) -> None:
    first = emacs.ask("Branch name?", "--agent", "a")
    emacs.wait_prompt(f"{tag('a')} Branch name? (C-c")
    emacs.keys("secret-branch", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", first).returncode == 0)
    second = emacs.ask("Commit message?", "--agent", "b")
    emacs.wait_prompt(f"{tag('b')} Commit message? (C-c")
    emacs.keys("M-p")
    emacs.wait_for(lambda _: "Beginning of history" in emacs.minibuffer())
    assert "secret-branch" not in emacs.screen()
    # Emacs drops the keys typed while it shows an error: type once it is gone.
    emacs.wait_for(lambda _: "Beginning of history" not in emacs.minibuffer())
    emacs.keys("fix typo", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", second).returncode == 0)
    assert emacs.cli("poll", second).stdout.strip() == "fix typo"


def test_one_c_g_leaves_the_whole_queue_and_keeps_the_draft(emacs: EmacsSession) -> None:
    ids = [emacs.ask(f"Question {n}?", "--agent", "q") for n in (1, 2, 3)]
    emacs.wait_prompt(f"{tag('q')} Question 1? (C-c")
    emacs.keys("half an ans")
    emacs.wait_for(lambda _: emacs.minibuffer().rstrip().endswith(": half an ans"))
    emacs.keys("C-g")
    emacs.wait_for(lambda _: "deferred; 3 questions are pending" in emacs.minibuffer())
    # None opens by itself: a question asked after them opens by itself, alone, and
    # once it is answered the deferred ones still wait.
    late = emacs.ask("Question 4?", "--agent", "late")
    emacs.wait_prompt(f"{tag('late')} Question 4? (C-c")
    emacs.keys("four", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", late).returncode == 0)
    emacs.wait_for(lambda screen: "hive:3" in screen and "Question 4" not in emacs.minibuffer())
    assert f"{tag('q')} Question" not in emacs.minibuffer()
    assert all(emacs.cli("poll", i).returncode == 8 for i in ids)
    emacs.keys("M-x", "hive-rpc-answer-next", "Enter")
    emacs.wait_prompt(f"{tag('q')} Question 1? (C-c")
    assert emacs.minibuffer().rstrip().endswith(": half an ans")  # the draft
    emacs.keys("wer", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", ids[0]).returncode == 0)
    assert emacs.cli("poll", ids[0]).stdout.strip() == "half an answer"
    emacs.wait_for(lambda _: "hive-rpc: sent half an answer to q" in emacs.minibuffer())
    assert "hive:2" in emacs.screen()
