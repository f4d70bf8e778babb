"""Emacs never takes the keyboard, and a question's minibuffer keeps Emacs's keys.

A real `emacs -nw -Q` under tmux, typed into at a person's pace (see emacs_session.py).
The first test uses the package's DEFAULT options: a person writing in a file buffer,
pausing between words as people do, while an agent's question arrives, must find every
key in the buffer and the question still pending until they open it (C-c h n).  The
next ones cover the opt-in `hive-rpc-auto-ask`: a question that opens by itself gives
its opening moment's keys back to the buffer, and RET then does nothing.  An answer is
only what the human typed knowing it answers a question.  test_emacs_attention.py has
the table of everyday sequences."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from emacs_session import FAST, EmacsSession, running, tag

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)


@pytest.fixture
def emacs_defaults(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp))


@pytest.fixture
def emacs_slow_opening(short_tmp: Path) -> Iterator[EmacsSession]:
    # A long opening moment, so the test's own reaction time does not matter.
    yield from running(EmacsSession(short_tmp, "(setq hive-rpc-auto-ask t hive-rpc-open-grace 60)"))


@pytest.fixture
def emacs_fast(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp, FAST))


def visit(emacs: EmacsSession, path: Path) -> None:
    emacs.keys("C-x", "C-f", str(path), "Enter")
    emacs.wait_for(lambda screen: path.name in screen)
    emacs.keys("M->")


def test_words_typed_with_pauses_stay_in_the_buffer(emacs_defaults: EmacsSession) -> None:
    emacs = emacs_defaults
    notes = emacs.root / "notes.txt"
    notes.write_text("Notes\n")
    visit(emacs, notes)
    emacs.type(" More")
    prompt_id = emacs.ask("Deploy to production?", "--choices", "yes,no", "--agent", "deployer")
    time.sleep(1.5)  # a person's pause between two words
    emacs.type(" text")
    emacs.keys("Enter")
    emacs.type("next line")
    time.sleep(1.5)
    emacs.type(" ends")
    emacs.save(notes)
    # Text mode indents the new line as the one above, and saving ends the file
    # with a newline: Emacs's own doing, nothing from the question.
    assert notes.read_text() == "Notes\n More text\n next line ends\n"
    assert emacs.cli("poll", prompt_id).returncode == 8  # still pending
    assert "hive:1" in emacs.screen()
    # It opens when the human asks for it.
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('deployer')} Deploy to production? [yes / no]")
    emacs.keys("yes", "Enter")
    emacs.wait_until(lambda: emacs.cli("poll", prompt_id).returncode == 0, "the answer")
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes"
    emacs.wait_for(lambda _: "hive-rpc: sent yes to deployer" in emacs.minibuffer())


def test_keys_typed_as_a_question_opens_go_back_to_the_buffer(
    emacs_slow_opening: EmacsSession,
) -> None:
    emacs = emacs_slow_opening
    if True:
        notes = emacs.root / "notes.txt"
        notes.write_text("Notes\n")
        visit(emacs, notes)
        prompt_id = emacs.ask("Rebase onto main?", "--agent", "rebaser")
        emacs.wait_for(
            lambda _: f"(opening) {tag('rebaser')} Rebase onto main?" in emacs.minibuffer()
        )
        emacs.type("abc")
        emacs.keys("Enter")
        emacs.type("def")
        emacs.wait_for(lambda _: "Rebase" not in emacs.minibuffer())
        emacs.save(notes)
        assert notes.read_text() == "Notes\nabc\ndef\n"
        assert emacs.cli("poll", prompt_id).returncode == 8
        assert emacs.record(prompt_id)["typing_at"] is None  # the agent's countdown runs on
        # The question waits for the next pause, and opens again.
        emacs.wait_for(
            lambda _: f"(opening) {tag('rebaser')} Rebase onto main?" in emacs.minibuffer()
        )


def test_ret_in_the_opening_moment_does_nothing(emacs_slow_opening: EmacsSession) -> None:
    """Opted in, a question opens by itself; a RET pressed as it opens neither answers it
    nor goes anywhere else (the buffer, a terminal)."""
    emacs = emacs_slow_opening
    notes = emacs.root / "notes.txt"
    notes.write_text("Notes\n")
    visit(emacs, notes)
    prompt_id = emacs.ask("Deploy?", "--choices", "yes,no", "--agent", "deployer")
    emacs.wait_for(lambda _: f"(opening) {tag('deployer')} Deploy?" in emacs.minibuffer())
    emacs.keys("Enter")
    emacs.wait_for(lambda screen: "RET answers in a moment" in screen)
    assert f"{tag('deployer')} Deploy?" in emacs.screen()  # still open
    emacs.keys("C-g")  # defer
    emacs.wait_for(lambda _: "hive-rpc: deferred" in emacs.minibuffer())
    emacs.keys("C-x", "C-s")
    emacs.wait_for(lambda _: "(No changes need to be saved)" in emacs.minibuffer())
    assert notes.read_text() == "Notes\n"
    assert emacs.record(prompt_id)["status"] == "pending"
    assert emacs.record(prompt_id)["answer"] is None


def test_standard_editing_keys_edit_the_answer(emacs_fast: EmacsSession) -> None:
    emacs = emacs_fast
    prompt_id = emacs.ask("Title of the PR?", "--agent", "writer")
    emacs.wait_prompt(f"{tag('writer')} Title of the PR?")
    assert "C-c C-k: decline" in emacs.minibuffer()

    def shows(text: str) -> None:
        emacs.wait_for(lambda _: emacs.minibuffer().rstrip().endswith((": " + text).rstrip()))

    emacs.type("Fix the old flaky test", pace=0)
    shows("Fix the old flaky test")
    emacs.keys("C-a", "M-f", "M-f", "M-d")  # kill-word
    shows("Fix the flaky test")
    assert emacs.cli("poll", prompt_id).returncode == 8
    emacs.keys("C-e", "M-BSpace")  # backward-kill-word
    shows("Fix the flaky")
    emacs.keys("C-y")  # yank
    shows("Fix the flaky test")
    emacs.keys("M-y")  # yank-pop: the older kill
    shows("Fix the flaky  old")
    emacs.keys("C-_")  # undo (C-/ in a terminal)
    shows("Fix the flaky test")
    emacs.keys("C-a", "M-f", "C-k")  # kill-line
    shows("Fix")
    emacs.keys("C-y", "M-b", "M-b")
    emacs.keys("C-Space", "C-e", "C-w")  # kill-region
    shows("Fix the ")
    emacs.keys("C-y", "C-a", "C-d", "F", "C-e", "!")
    shows("Fix the flaky test!")
    emacs.keys("Enter")
    emacs.wait_until(lambda: emacs.cli("poll", prompt_id).returncode == 0, "the answer")
    assert emacs.cli("poll", prompt_id).stdout.strip() == "Fix the flaky test!"


def test_choices_show_in_the_agents_order_and_complete(emacs_fast: EmacsSession) -> None:
    emacs = emacs_fast
    prompt_id = emacs.ask("Deploy?", "--choices", "yes,no,later", "--agent", "deployer")
    emacs.wait_prompt(f"{tag('deployer')} Deploy? [yes / no / later]")
    emacs.keys("Tab")
    screen = emacs.wait_for(lambda screen: "Possible completions are:" in screen)
    listed = screen.split("Possible completions are:")[1].split("\n")[1:4]
    assert [line.strip() for line in listed] == ["yes", "no", "later"]
    emacs.keys("n", "Tab")
    emacs.wait_for(lambda _: emacs.minibuffer().rstrip().endswith(": no"))
    emacs.keys("Enter")
    emacs.wait_until(lambda: emacs.cli("poll", prompt_id).returncode == 0, "the answer")
    assert emacs.cli("poll", prompt_id).stdout.strip() == "no"


def test_c_c_c_k_declines_and_c_c_c_d_shows_details(emacs_fast: EmacsSession) -> None:
    emacs = emacs_fast
    prompt_id = emacs.ask("Delete the cache?", "--agent", "cleaner", "--timeout", "600")
    emacs.wait_prompt(f"{tag('cleaner')} Delete the cache?")
    emacs.keys("C-c", "C-d")
    screen = emacs.wait_for(lambda screen: "*hive-rpc question*" in screen)
    assert prompt_id in screen
    assert "cleaner" in screen
    assert "C-c C-k declines" in screen
    assert f"{tag('cleaner')} Delete the cache?" in emacs.minibuffer()  # still asking
    emacs.keys("C-c", "C-k")
    emacs.wait_until(lambda: emacs.cli("poll", prompt_id).returncode == 7, "the decline")
    assert emacs.cli("poll", prompt_id).stdout.strip() == "declined by human"
    emacs.wait_for(lambda _: "declined" in emacs.minibuffer())
