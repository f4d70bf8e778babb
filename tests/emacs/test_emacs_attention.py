"""The human's attention (issue 27): no question ever takes a key it was not given, and
none expires unseen.

A real `emacs -nw -Q` under tmux with the package's DEFAULT options (emacs_session.py),
a real hub, questions asked with the real CLI while a person types at a person's pace:
text, pauses of 0.5 to 8 s, movement, saving, RET, C-g, M-x, typing into terminals
(term, comint, vterm when installed).  The table asserts that no key answered a question
(each is still pending, unanswered, never shown) and that every key landed in the
buffer it was typed in (the file saved, or what the terminal's program read).  The
tests after it cover what the human does on purpose: C-c h n, the chain of queued
questions and the keys typed ahead, "not now" for all, the announcements, the
countdown, what expired unseen, spawn --emacs, and a hub restart under an open
question."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from emacs_session import FAST, ORIGIN, EmacsSession, running, tag

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

VTERM_DIRS = sorted(glob.glob("/usr/share/emacs/site-lisp/elpa/vterm-*"))
"""Debian's elpa-vterm; the vterm rows run where it is installed (it is on the CI image)."""

# --- the table ------------------------------------------------------------------------


@dataclass(frozen=True)
class Type:
    text: str


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Keys:
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Ask:
    """An agent asks, in the background, in the middle of the sequence."""

    question: str


Step = Type | Pause | Keys | Ask


def keys(*names: str) -> Keys:
    return Keys(names)


RET = keys("Enter")
SAVE = keys("C-x", "C-s")


@dataclass(frozen=True)
class Sequence:
    name: str
    where: str  # "file", "term", "comint" or "vterm"
    steps: tuple[Step, ...]
    expected: str  # the file as saved, or what the terminal's program read


TERMINAL_STEPS = (
    Type("make test"),
    Ask("Run the migration now?"),
    Pause(2.5),
    RET,
    Pause(0.5),
    Type("echo done"),
    Pause(4.0),
    RET,
)

SEQUENCES = [
    Sequence(
        "a thinking pause, then RET",
        "file",
        (Type("Deploy plan"), Pause(3.5), RET, Ask("Which branch?"), Type("step one"), SAVE),
        "Deploy plan\nstep one\n",
    ),
    Sequence(
        "move, save, read, type (the issue's save-read-type)",
        "file",
        (
            Type("alpha"),
            RET,
            Type("beta"),
            keys("C-p"),
            keys("C-e"),
            SAVE,
            Pause(4.6),
            Ask("Commit message for the fix?"),
            Type(" hello"),
            RET,
            Type("gamma"),
            SAVE,
        ),
        "alpha hello\ngamma\nbeta\n",
    ),
    Sequence(
        "an 8 s pause mid-word",
        "file",
        (Type("x"), Pause(8.0), Ask("Tag the release?"), Type("y"), RET, SAVE),
        "xy\n",
    ),
    Sequence(
        "short pauses between words",
        "file",
        (Type("one"), Pause(0.5), Type(" two"), Ask("Rebase?"), Pause(1.5), Type(" three"), SAVE),
        "one two three\n",
    ),
    Sequence(
        "C-g, then M-x, then typing",
        "file",
        (
            Type("abc"),
            keys("C-g"),
            Pause(1.0),
            keys("M-x"),
            Type("what-line"),
            RET,
            Ask("Scale up?"),
            Pause(3.0),
            Type("def"),
            SAVE,
        ),
        "abcdef\n",
    ),
    Sequence("typing a command line in term", "term", TERMINAL_STEPS, "make test\necho done\n"),
    Sequence("typing into a comint buffer", "comint", TERMINAL_STEPS, "make test\necho done\n"),
    *(
        [Sequence("typing into vterm", "vterm", TERMINAL_STEPS, "make test\necho done\n")]
        if VTERM_DIRS
        else []
    ),
]


def open_recorder(emacs: EmacsSession, where: str, record: Path) -> str:
    """A terminal buffer of kind ``where`` running ``cat > record``, selected; its name."""
    command = f"cat > {record}"
    form = {
        "term": (
            f'(progn (set-buffer (make-term "rec" "sh" nil "-c" {json.dumps(command)}))'
            ' (term-mode) (term-char-mode) (switch-to-buffer "*rec*"))'
        ),
        "comint": f'(switch-to-buffer (make-comint "rec" "sh" nil "-c" {json.dumps(command)}))',
        "vterm": (
            "(progn (require 'vterm)"
            f' (let ((vterm-shell {json.dumps("sh -c " + json.dumps(command))})) (vterm "*rec*")))'
        ),
    }[where]
    emacs.eval(form)
    mode = {"term": "(Term: char run)", "comint": "(Comint:run", "vterm": "(VTerm"}[where]
    emacs.wait_for(lambda screen: mode in screen and "*rec*" in screen)
    return "*rec*"


def visit(emacs: EmacsSession, path: Path) -> None:
    emacs.keys("C-x", "C-f", str(path), "Enter")
    emacs.wait_for(lambda screen: path.name in screen)
    emacs.keys("M->")


def ask_in_background(emacs: EmacsSession, question: str, *extra: str) -> subprocess.Popen[str]:
    """``hive-rpc ask`` started, not waited for: the agent asks while the human types."""
    return subprocess.Popen(
        [
            sys.executable, "-m", "hive_rpc", "ask", question, "--agent", "agent",
            "--timeout", "600", *extra, "--socket", str(emacs.socket), "--no-start",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip


@pytest.fixture
def emacs_defaults(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp, load_path=VTERM_DIRS[-1:]))


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[s.name for s in SEQUENCES])
def test_no_key_answers_a_question_it_was_not_given(
    emacs_defaults: EmacsSession, sequence: Sequence
) -> None:
    emacs = emacs_defaults
    record = emacs.root / "terminal.record"
    notes = emacs.root / "notes.txt"
    if sequence.where == "file":
        notes.write_text("")
        visit(emacs, notes)
    else:
        open_recorder(emacs, sequence.where, record)
    asks = [ask_in_background(emacs, "Deploy to production?", "--choices", "yes,no")]
    for step in sequence.steps:
        match step:
            case Type(text):
                emacs.type(text)
            case Pause(seconds):
                time.sleep(seconds)  # the human's pause: the scenario, not a wait
            case Keys(names) if names == ("C-x", "C-s") and sequence.where == "file":
                emacs.save(notes)
            case Keys(names):
                emacs.keys(*names)
                if names == ("Enter",) and sequence.where == "file":
                    time.sleep(0.12)  # typing pace
            case Ask(question):
                asks.append(ask_in_background(emacs, question))
    ids = [proc.communicate(timeout=30)[0].strip() for proc in asks]
    assert all(ids), ids
    if sequence.where == "file":
        assert notes.read_text() == sequence.expected
    else:
        emacs.wait_until(
            lambda: record.exists() and record.read_text() == sequence.expected,
            f"the terminal's program to read {sequence.expected!r}",
        )
    emacs.wait_for(lambda screen: f"hive:{len(ids)}" in screen)
    for prompt_id in ids:
        got = emacs.record(prompt_id)
        assert (got["status"], got["answer"], got["shown_at"]) == ("pending", None, None), got
    assert "hive-rpc: sent" not in emacs.screen()


# --- what the human does on purpose ----------------------------------------------------


def buffer_text(emacs: EmacsSession, buffer: str) -> str:
    """BUFFER's text, its newlines as |, read from the echo area."""
    emacs.eval(
        '(message "TEXT<%s>" (replace-regexp-in-string "\\n" "|"'
        f" (with-current-buffer {json.dumps(buffer)}"
        " (buffer-substring-no-properties (point-min) (point-max)))))"
    )
    line = emacs.wait_for(lambda _: "TEXT<" in emacs.minibuffer()) and emacs.minibuffer()
    return line.split("TEXT<", 1)[1].rsplit(">", 1)[0]


def yes_then_no_in_a_hurry(emacs: EmacsSession) -> None:
    """`yes RET`, then `no RET` 0.15 s later: a human typing ahead of what Emacs
    shows, whose second keys the tests follow."""
    emacs.type("yes", pace=0.05)
    emacs.keys("Enter")
    time.sleep(0.15)
    emacs.type("no", pace=0.05)
    emacs.keys("Enter")


def test_yes_ret_no_ret_answers_the_first_and_types_into_the_second(
    emacs_defaults: EmacsSession,
) -> None:
    """The reported failure: `yes RET` then `no RET` 0.15 s later, the human in an agent's
    terminal buffer.  The second question opens at once in the chain the human started,
    `no` goes into it, and the RET of its opening moment does nothing: nothing reaches
    the terminal, and the second question waits for a RET given once it was read."""
    emacs = emacs_defaults
    record = emacs.root / "terminal.record"
    open_recorder(emacs, "comint", record)
    first = emacs.ask("Deploy?", "--choices", "yes,no", "--agent", "deployer")
    second = emacs.ask("Migrate?", "--choices", "yes,no", "--agent", "migrator")
    emacs.wait_for(lambda screen: "hive:2" in screen)
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('deployer')} Deploy? [yes / no]")
    yes_then_no_in_a_hurry(emacs)
    emacs.wait_until(lambda: emacs.record(first)["answer"] == "yes", "the first answer")
    emacs.wait_for(lambda _: emacs.minibuffer().rstrip().endswith("?: details): no"))
    assert f"{tag('migrator')} Migrate? [yes / no]" in emacs.minibuffer()
    assert emacs.record(second)["status"] == "pending"
    emacs.wait_for(lambda _: "(opening)" not in emacs.minibuffer())  # read it
    assert (emacs.record(second)["status"], emacs.record(second)["answer"]) == ("pending", None)
    emacs.keys("Enter")
    emacs.wait_until(lambda: emacs.record(second)["answer"] == "no", "the second answer")
    assert emacs.record(second)["shown_at"] is not None
    time.sleep(1.5)  # the human reads the echo; keys right after an answer are dropped
    assert buffer_text(emacs, "*rec*") == ""
    assert not record.exists() or record.read_text() == ""


@pytest.mark.parametrize("where", ["comint", "list"])
def test_keys_typed_after_the_last_answer_are_dropped(
    emacs_defaults: EmacsSession, where: str
) -> None:
    """One question; `yes RET`, then `no RET` 0.15 s later: no question is left for
    them, and they are dropped with a message, never typed into the terminal, and in
    the list buffer they run no command (`n` `o`, RET would open a question)."""
    emacs = emacs_defaults
    record = emacs.root / "terminal.record"
    prompt_id = emacs.ask("Deploy?", "--choices", "yes,no", "--agent", "deployer")
    if where == "comint":
        open_recorder(emacs, "comint", record)
        emacs.answer_next()
    else:
        emacs.keys("C-c", "h", "l")
        emacs.wait_for(lambda screen: "Deploy?  [yes / no]" in screen)
        emacs.eval('(pop-to-buffer "*hive-rpc*")')
        emacs.keys("M-<", "Enter")
    emacs.wait_prompt(f"{tag('deployer')} Deploy? [yes / no]")
    yes_then_no_in_a_hurry(emacs)
    emacs.wait_until(lambda: emacs.record(prompt_id)["answer"] == "yes", "the answer")
    emacs.wait_for(lambda _: "hive-rpc: dropped 3 keys typed after your answer" in emacs.screen())
    if where == "comint":
        time.sleep(1.5)  # the human reads the message
        assert buffer_text(emacs, "*rec*") == ""
        assert not record.exists() or record.read_text() == ""
    else:
        assert "Withdraw" not in emacs.screen()
        assert "Deploy?" not in emacs.minibuffer()


def test_the_keyboard_moves_only_on_c_c_h_n_and_the_question_is_shown(
    emacs_defaults: EmacsSession,
) -> None:
    emacs = emacs_defaults
    prompt_id = emacs.ask("Title of the PR?", "--agent", "writer")
    emacs.wait_for(
        lambda _: (
            f'hive-rpc: writer · {ORIGIN} asks "Title of the PR?" (C-c h n: answer)'
            in emacs.minibuffer()
        )
    )
    assert emacs.record(prompt_id)["shown_at"] is None  # announced is not shown
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('writer')} Title of the PR?")
    emacs.wait_until(lambda: emacs.record(prompt_id)["shown_at"] is not None, "hive/shown")
    emacs.type("Fix it", pace=0.05)
    emacs.keys("Enter")
    emacs.wait_for(lambda _: "hive-rpc: sent Fix it to writer" in emacs.minibuffer())


def test_a_schema_answer_is_echoed_in_words(emacs_defaults: EmacsSession) -> None:
    emacs = emacs_defaults
    schema = {
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["staging", "prod"]},
            "replicas": {"type": "integer"},
        },
        "required": ["env", "replicas"],
    }
    prompt_id = emacs.ask("Deploy where?", "--schema", json.dumps(schema), "--agent", "ops")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('ops')} Deploy where? (env)")
    emacs.type("prod", pace=0.05)
    emacs.keys("Enter")
    emacs.wait_prompt(f"{tag('ops')} Deploy where? (replicas: integer)")
    emacs.type("2", pace=0.05)
    emacs.keys("Enter")
    emacs.wait_until(lambda: emacs.record(prompt_id)["status"] == "responded", "the answer")
    emacs.wait_for(lambda _: "hive-rpc: sent env: prod; replicas: 2 to ops" in emacs.minibuffer())
    assert "{" not in emacs.minibuffer()


def test_twenty_arrivals_make_one_summary(emacs_defaults: EmacsSession) -> None:
    emacs = emacs_defaults
    asks = [ask_in_background(emacs, f"Question {n}?") for n in range(20)]
    for proc in asks:
        proc.communicate(timeout=60)
    emacs.wait_for(lambda screen: "hive:20" in screen, timeout=30)
    emacs.wait_for(
        lambda _: emacs.minibuffer().strip() == "hive-rpc: 20 new questions (C-c h n: answer)"
    )


def test_a_question_answered_elsewhere_takes_its_announcement(
    emacs_defaults: EmacsSession,
) -> None:
    emacs = emacs_defaults
    prompt_id = emacs.ask("Ship it?", "--agent", "shipper")
    emacs.wait_for(lambda _: 'asks "Ship it?"' in emacs.minibuffer())
    assert emacs.cli("answer", prompt_id, "yes", "--by", "alice").returncode == 0
    emacs.wait_for(lambda screen: 'asks "Ship it?"' not in screen and "hive:1" not in screen)


def test_not_now_for_all(emacs_defaults: EmacsSession) -> None:
    emacs = emacs_defaults
    ids = [emacs.ask(f"Question {n}?", "--agent", "many") for n in range(3)]
    emacs.wait_for(lambda screen: "hive:3" in screen)
    emacs.keys("C-c", "h", "z")
    emacs.wait_for(lambda _: "hive-rpc: deferred; 3 questions are pending" in emacs.minibuffer())
    assert all(emacs.record(i)["status"] == "pending" for i in ids)
    # C-g in a hive prompt defers every queued one too.
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('many')} Question 0?")
    emacs.keys("C-g")
    emacs.wait_for(lambda _: "hive-rpc: deferred; 3 questions are pending" in emacs.minibuffer())
    assert "Question" not in emacs.minibuffer()
    # Ready again: C-c h n takes them all up, one after the other.
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('many')} Question 0?")
    emacs.type("first", pace=0.05)
    emacs.keys("Enter")
    emacs.wait_prompt(f"{tag('many')} Question 1?")
    emacs.wait_until(lambda: emacs.record(ids[0])["answer"] == "first", "the first answer")


def test_the_mode_line_counts_down_the_most_urgent(emacs_defaults: EmacsSession) -> None:
    emacs = emacs_defaults
    emacs.ask("Later?", "--agent", "slow", "--timeout", "600")
    emacs.ask("Soon?", "--agent", "fast", "--timeout", "40")
    emacs.wait_for(lambda screen: "hive:2 0:3" in screen)
    emacs.wait_for(lambda screen: "hive:2 0:2" in screen, timeout=20)  # it ticks


def test_a_question_that_expires_unseen_says_so(emacs_defaults: EmacsSession) -> None:
    emacs = emacs_defaults
    notes = emacs.root / "notes.txt"
    notes.write_text("")
    visit(emacs, notes)
    prompt_id = emacs.ask("Quick one?", "--agent", "hasty", "--timeout", "3")
    emacs.type("typing on, never looking up")
    emacs.wait_for(lambda screen: "hive: 1 expired unseen" in screen)
    got = emacs.record(prompt_id)
    assert (got["status"], got["unseen"]) == ("expired", True), got
    assert "expired unseen" in emacs.cli("poll", prompt_id).stdout
    emacs.keys("C-c", "h", "l")
    emacs.wait_for(lambda screen: "expired unseen: Quick one?" in screen)
    emacs.eval('(pop-to-buffer "*hive-rpc*")')
    emacs.keys("M-<", "d")
    emacs.wait_for(lambda screen: "expired unseen" not in screen)
    emacs.wait_until(lambda: emacs.record(prompt_id)["cleared_at"] is not None, "the clear")
    assert emacs.record(prompt_id)["unseen"] is False


@pytest.fixture
def emacs_server(short_tmp: Path) -> Iterator[EmacsSession]:
    server = short_tmp / "server"
    settings = f'(setq server-socket-dir {json.dumps(str(server))} server-name "t") (server-start)'
    yield from running(EmacsSession(short_tmp, settings))


def test_spawn_emacs_never_takes_the_keyboard(emacs_server: EmacsSession) -> None:
    """`hive-rpc spawn kid --emacs -- cat` from a shell, as a parent agent runs it, while
    the human types: the ling's buffer is shown, and every key stays in the file."""
    emacs = emacs_server
    notes = emacs.root / "notes.txt"
    notes.write_text("")
    visit(emacs, notes)
    emacs.wait_until(lambda: (emacs.root / "server" / "t").exists(), "the Emacs server")
    emacs.type("Dear team")
    spawn = subprocess.Popen(
        [
            sys.executable, "-m", "hive_rpc", "spawn", "kid", "--emacs",
            "--socket", str(emacs.socket), "--no-start", "--", "cat",
        ],
        env={**os.environ, "EMACS_SOCKET_NAME": str(emacs.root / "server" / "t")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    emacs.type(", the build is green and the release is tagged.")
    _, err = spawn.communicate(timeout=60)
    assert spawn.returncode == 0, err
    emacs.wait_for(lambda screen: "*ling kid*" in screen)
    emacs.type(" Thanks")
    emacs.save(notes)
    assert notes.read_text() == (
        "Dear team, the build is green and the release is tagged. Thanks\n"
    )
    assert "Thanks" not in buffer_text(emacs, "*ling kid*")
    emacs.eval('(message "SEL<%s>" (buffer-name (window-buffer (selected-window))))')
    emacs.wait_for(lambda _: "SEL<notes.txt>" in emacs.minibuffer())


class SqliteSession(EmacsSession):
    """A hub on SQLite, whose questions outlive a restart."""

    def hub_command(self) -> list[str]:
        command = super().hub_command()
        command[command.index("memory")] = "sqlite"
        return command


@pytest.fixture
def emacs_sqlite(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(SqliteSession(short_tmp))


def test_an_open_question_counts_down_again_after_a_hub_restart(
    emacs_sqlite: EmacsSession,
) -> None:
    emacs = emacs_sqlite
    emacs.ask("Restart-proof?", "--agent", "steady", "--timeout", "900")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('steady')} Restart-proof?")
    assert emacs.hub is not None
    emacs.hub.terminate()
    emacs.hub.wait(timeout=10)
    emacs.wait_for(lambda _: emacs.minibuffer().startswith("(hub down) "))
    emacs.start_hub()
    # No key pressed: the countdown comes back and ticks.
    emacs.wait_for(lambda _: emacs.minibuffer().startswith("(14m"), timeout=30)
    first = emacs.minibuffer().split(")")[0]
    emacs.wait_for(lambda _: emacs.minibuffer().split(")")[0] != first)


@pytest.fixture
def emacs_queue_window(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp, "(setq hive-rpc-queue-window t)"))


def test_the_queue_window_is_shown_never_selected(emacs_queue_window: EmacsSession) -> None:
    """With `hive-rpc-queue-window`, the waiting questions show at the bottom of the
    frame; the keys go on into the file, and the window goes when none waits."""
    emacs = emacs_queue_window
    notes = emacs.root / "notes.txt"
    notes.write_text("")
    visit(emacs, notes)
    emacs.type("abc")
    prompt_id = emacs.ask("Merge PR 91?", "--agent", "merger")
    emacs.wait_for(lambda screen: "*hive-rpc*" in screen and "Merge PR 91?" in screen)
    emacs.type("def")
    emacs.save(notes)
    assert notes.read_text() == "abcdef\n"
    assert emacs.record(prompt_id)["shown_at"] is None  # displayed is not opened
    assert emacs.cli("answer", prompt_id, "yes").returncode == 0
    emacs.wait_for(lambda screen: "*hive-rpc*" not in screen)


@pytest.fixture
def emacs_auto(short_tmp: Path) -> Iterator[EmacsSession]:
    yield from running(EmacsSession(short_tmp, FAST))


def test_opted_in_no_question_opens_over_a_terminal(emacs_auto: EmacsSession) -> None:
    """`hive-rpc-auto-ask` on, questions opening after 0.2 s of idleness: none opens while
    the selected window shows an agent's terminal, and one opens once the human is in
    a file buffer."""
    emacs = emacs_auto
    record = emacs.root / "terminal.record"
    open_recorder(emacs, "comint", record)
    prompt_id = emacs.ask("Deploy?", "--choices", "yes,no", "--agent", "deployer")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    emacs.type("ls")
    time.sleep(1.5)  # a pause far past the idle delay
    emacs.keys("Enter")
    time.sleep(1.0)
    emacs.type("pwd")
    emacs.keys("Enter")
    emacs.wait_until(lambda: record.exists() and record.read_text() == "ls\npwd\n", "cat")
    got = emacs.record(prompt_id)
    assert (got["status"], got["shown_at"]) == ("pending", None), got
    emacs.keys("C-x", "b", "*scratch*", "Enter")
    emacs.wait_prompt(f"{tag('deployer')} Deploy? [yes / no]")
