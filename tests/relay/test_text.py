"""What the relay may type, and the dialogs it must not type into."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.relay.text import (
    CLAUDE_CODE_STARTING,
    DIALOG_LINES,
    MAX_MESSAGE_BYTES,
    MessageTooLarge,
    dialog_in,
    draft_in,
    prepare,
    starting_in,
)

UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e"
    "\u2028\u2029\u2060-\u2064\u2066-\u2069\ufeff]"
)


@pytest.mark.parametrize(
    ("raw", "typed"),
    [
        ("hello", "hello"),
        ("title\x1b]0;pwned\x07!", "title!"),
        ("clear\x1b[2J\x1b[Hme", "clearme"),
        ("one\rtwo\r\nthree\nfour", "one\ntwo\nthree\nfour"),
        ("paste \x1b[201~ends here", "paste ends here"),
        ("paste [201~ends [200~here", "paste ends here"),
        ("nested [20[201~1~marker", "nested marker"),
        ("nul\x00bell\x07del\x7f", "nulbelldel"),
        ("abc\u202eevil\u202c", "abcevil"),
        ("tabs\tand\nnewlines kept", "tabs\tand\nnewlines kept"),
        ("trailing whitespace  \n\n\t ", "trailing whitespace"),
        ("Grüße, 日本, 🐝", "Grüße, 日本, 🐝"),
        # Invisible characters that make two strings look alike are dropped ...
        ("r\u200bm -rf\u200c\u200d x", "rm -rf x"),
        ("\ufeffbom\u2060joined\u2061\u2062\u2063\u2064", "bomjoined"),
        ("ltr\u200emark\u200f", "ltrmark"),
        # ... and line/paragraph separators are the newlines they stand for.
        ("one\u2028two\u2029three", "one\ntwo\nthree"),
    ],
)
def test_prepare_cleans(raw: str, typed: str) -> None:
    assert prepare(raw) == typed


@pytest.mark.parametrize("raw", ["", "   \n\t", "\x1b[2J\x07\x00", "[200~[201~"])
def test_prepare_refuses_nothing(raw: str) -> None:
    with pytest.raises(ValueError, match="nothing to deliver"):
        prepare(raw)


def test_prepare_refuses_a_megabyte_with_size_and_limit() -> None:
    with pytest.raises(MessageTooLarge) as caught:
        prepare("x" * 1_000_000)
    assert caught.value.size == 1_000_000
    assert caught.value.limit == MAX_MESSAGE_BYTES
    assert "1,000,000 bytes" in str(caught.value)
    assert "65,536 bytes" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_prepare_counts_utf8_bytes_not_characters() -> None:
    assert prepare("é" * 10, max_bytes=20) == "é" * 10
    with pytest.raises(MessageTooLarge, match="22 bytes"):
        prepare("é" * 11, max_bytes=20)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_prepared_text_is_inert(raw: str) -> None:
    try:
        typed = prepare(raw)
    except ValueError:
        return
    assert not UNSAFE.search(typed)
    assert "\x1b" not in typed
    assert "\r" not in typed
    assert "[200~" not in typed
    assert "[201~" not in typed
    assert typed == typed.rstrip()
    assert prepare(typed) == typed  # idempotent: preparing twice changes nothing


@pytest.mark.parametrize(
    ("screen", "kind"),
    [
        ("Overwrite config.toml? (y/n)", "yes/no"),
        ("Continue? [Y/n] ", "yes/no"),
        ("Delete everything? [y/N]", "yes/no"),
        ("Are you sure (yes/no)?", "yes/no"),
        ("Allow?", "Allow"),
        ("Allow this action? (y/n)", "yes/no"),
        ("│ Allow Bash(rm -rf build)?", "Allow"),
        ("Do you want to proceed?", "proceed"),
        ("Do you want to make this edit to hub.py?", "edit"),
        ("Do you want to create notes.md?", "creation"),
        (
            "Bash command\n  rm -rf build\nDo you want to proceed?\n"
            "\u276f 1. Yes\n  2. Yes, and don't ask again\n"
            "  3. No, and tell Claude what to do differently",
            "Claude Code",
        ),
        ("Press Enter to continue...", "Enter"),
        ("[sudo] password for ling: ", "password"),
        ("Password:", "password"),
        ("Enter passphrase for key '/home/ling/.ssh/id_ed25519': ", "passphrase"),
        ("\x1b[1mDo you want to proceed?\x1b[0m", "proceed"),
    ],
)
def test_dialog_in_sees_dialogs(screen: str, kind: str) -> None:
    found = dialog_in("some earlier output\n" + screen + "\n\n\n")
    assert found is not None
    assert kind.lower() in found.lower()


@pytest.mark.parametrize(
    "screen",
    [
        "",
        "ling> ",
        "All tests passed.\n> ",
        "I will allow the retry logic to handle this case.\n> ",
        "the password is stored in the keyring, not in config\n> ",
        "Thinking…",
    ],
)
def test_dialog_in_ignores_ordinary_screens(screen: str) -> None:
    assert dialog_in(screen) is None


def test_a_dialog_scrolled_up_no_longer_counts() -> None:
    above = "Allow this action? (y/n)\n"
    assert dialog_in(above + "answer: y\n" * (DIALOG_LINES - 1)) is not None
    assert dialog_in(above + "answer: y\n" * DIALOG_LINES) is None
    # blank lines between do not push it out of sight
    assert dialog_in(above + "\n\n\n\n\n\n\n\nok\n") is not None


# Every pattern needs one of e/E, y/Y, "?", ":" or Claude Code's menu cursor U+276F
# ("1. Yes" and "No, and tell Claude" need an e), so text without them can never hold
# the relay.
_PLAIN = st.characters(codec="utf-8", exclude_characters="eEyY?:\u276f")


@given(st.lists(st.text(alphabet=_PLAIN, max_size=80), max_size=30))
def test_text_without_dialog_patterns_is_no_dialog(lines: list[str]) -> None:
    assert dialog_in("\n".join(lines)) is None


@given(st.lists(st.text(alphabet=_PLAIN, max_size=80), max_size=30))
def test_a_dialog_on_the_last_line_is_always_seen(lines: list[str]) -> None:
    assert dialog_in("\n".join([*lines, "Allow this action? (y/n)"])) == "a yes/no question"


def test_an_unterminated_escape_string_does_not_hide_a_later_dialog() -> None:
    # \x98 (SOS) and ESC ] (OSC) run to their terminator; a hostile line leaving one
    # open must not swallow the dialog drawn below it.
    assert dialog_in("\x98junk\nAllow this action? (y/n)") == "a yes/no question"
    assert dialog_in("\x1b]0;title\nDo you want to proceed?") is not None


def test_where_the_cursor_is_known_an_answered_dialog_above_it_does_not_count() -> None:
    screen = "Allow this action? (y/n) y\nok, allowed\nling> \n\n\n"
    assert dialog_in(screen) == "a yes/no question"  # the old rule: held forever
    assert dialog_in(screen, cursor_line=2) is None


def test_a_dialog_on_the_cursors_line_counts() -> None:
    screen = "ling> did it\nok\nAllow this action? (y/n) \n\n"
    assert dialog_in(screen, cursor_line=2) == "a yes/no question"


def test_a_menu_above_an_empty_cursor_line_counts() -> None:
    # Claude Code draws its menu and leaves the cursor on the empty line below it.
    screen = (
        "Bash command\n  rm -rf build\nDo you want to proceed?\n"
        "\u276f 1. Yes\n  2. No, and tell Claude what to do differently (esc)\n\n\n"
    )
    assert dialog_in(screen, cursor_line=5) is not None


def test_a_menu_below_the_cursor_counts() -> None:
    screen = "? Which one\n\u276f 1. Yes\n  2. No\n"
    assert dialog_in(screen, cursor_line=0) == "Claude Code's permission menu"


def test_a_cursor_line_outside_the_tail_falls_back_to_the_last_lines() -> None:
    assert dialog_in("Continue? (y/n) ", cursor_line=7) == "a yes/no question"


# Claude Code 2.1.328's menu for the model's AskUserQuestion, as tmux captured it (the
# cursor, hidden, on the highlighted option's row).  Enter there answers the human's
# question with the highlighted option; typed text answers it with that text.
ASK_USER_QUESTION = (
    "\u276f ask me\n"
    + "\u2500" * 40
    + "\n \u2610 Database\n\nWhich database should the cache use?\n\n"
    "\u276f 1. SQLite\n     embedded\n  2. Postgres\n     a server\n"
    "  3. Type something.\n"
    + "\u2500"
    * 40
    + "\n  4. Chat about this\n\nEnter to select \u00b7 \u2191/\u2193 to navigate"
    " \u00b7 Esc to cancel\n\n\n"
)


def test_claude_codes_question_menu_is_a_dialog() -> None:
    cursor = ASK_USER_QUESTION.split("\n").index("\u276f 1. SQLite")
    assert dialog_in(ASK_USER_QUESTION, cursor_line=cursor) == "Claude Code's menu"
    # without the cursor (an Emacs buffer) the footer alone tells it
    assert dialog_in(ASK_USER_QUESTION) == "Claude Code's menu"


@pytest.mark.parametrize(
    "footer",
    ["Esc to cancel \u00b7 Tab to amend", "Enter to select \u00b7 \u2191/\u2193 to navigate"],
)
def test_claude_codes_dialog_footers_are_seen_alone(footer: str) -> None:
    # A narrow terminal wraps the options, so the menu's first rows may be out of sight.
    assert dialog_in("  4. No\n\n " + footer + "\n") is not None


@pytest.mark.parametrize(
    "screen",
    [
        # the idle TUI: its prompt, and the footer that is no dialog's
        "\u2500\u2500\u2500\n\u276f \n\u2500\u2500\u2500\n"
        "  \u23f8 manual mode on \u00b7 ? for shortcuts",
        # busy
        "\u273b Churning\u2026 (esc to interrupt)",
        # an agent's prose about the keys
        "You can press Esc to cancel it later.",
    ],
)
def test_claude_codes_ordinary_screens_are_no_dialog(screen: str) -> None:
    assert dialog_in(screen) is None


def test_claude_code_takes_input_once_its_prompt_shows() -> None:
    banner = " \u2590\u259b\u2588\u2588\u2588\u259c\u258c   Claude Code v2.1.328\n\n"
    prompt = "\u2500\u2500\u2500\n\u276f \n\u2500\u2500\u2500\n  ? for shortcuts"
    assert starting_in("claude", "") == CLAUDE_CODE_STARTING
    assert starting_in("claude", "\n  \n") == CLAUDE_CODE_STARTING
    assert starting_in("claude", banner) == CLAUDE_CODE_STARTING
    assert starting_in("claude", banner + prompt) is None
    assert starting_in("claude", ASK_USER_QUESTION) is None  # a menu: dialog_in's to hold
    assert starting_in("claude", "<frozen runpy>:128: RuntimeWarning: ...\n\n") == (
        CLAUDE_CODE_STARTING  # what hive-rpc spawn's pane showed before it
    )
    assert starting_in("python3", "") is None
    assert starting_in(None, "") is None


# --- the human's draft -----------------------------------------------------------------
# Claude Code's input box (2.1.328) as ``tmux capture-pane -p -e`` gave it, in a pane 160
# columns wide (rules cut short here): grey rules around a line starting with its
# prompt U+276F and a no-break space; its own cursor a reverse-video cell.
RULE = "\x1b[38;5;244m" + "\u2500" * 60
BOTTOM = "\x1b[0m\x1b[38;5;244m\x1b[49m" + "\u2500" * 60
FOOTER = "\x1b[39m  \x1b[38;5;246m\u23f8 manual mode on\x1b[39m"


def box(*lines: str) -> str:
    return "\n".join(["\x1b[39m  \x1b[38;5;246m\u25d0 medium \u00b7 /effort", RULE, *lines,
                      BOTTOM, FOOTER, ""])  # fmt: skip


@pytest.mark.parametrize(
    ("screen", "draft"),
    [
        # idle, empty
        (box("\x1b[39m\u276f\u00a0\x1b[7m"), ""),
        # the human typed half a prompt
        (box("\x1b[39m\u276f\u00a0HUMAN-DRAFT half typed\x1b[7m"), "HUMAN-DRAFT half typed"),
        # two lines (Alt-Enter), the cursor at the end of the second
        (
            box(
                "\x1b[39m\u276f\u00a0HUMAN-DRAFT half typed",
                "  second line\x1b[7m \x1b[0m\x1b[39m\x1b[49m",
            ),
            "HUMAN-DRAFT half typed\nsecond line",
        ),
        # the cursor moved back over the first letter
        (
            box("\x1b[39m\u276f\u00a0\x1b[7mH\x1b[0m\x1b[39m\x1b[49mUMAN-DRAFT half typed"),
            "HUMAN-DRAFT half typed",
        ),
        # working (grey prompt), empty
        (box("\x1b[38;5;246m\u276f\u00a0\x1b[7m\x1b[39m \x1b[0m\x1b[39m\x1b[49m"), ""),
        # working, the human typing meanwhile
        (box("\x1b[38;5;246m\u276f\u00a0\x1b[39mqueued words\x1b[7m"), "queued words"),
        # working, a message queued: its placeholder, dimmed, is no draft
        (
            box(
                "\x1b[38;5;246m\u276f\u00a0\x1b[7m\x1b[39mP\x1b[0;2m\x1b[39m\x1b[49m"
                "ress up to edit queued messages"
            ),
            "",
        ),
        # without attributes (an Emacs vterm buffer) its known words tell it
        (box("\u276f\u00a0Press up to edit queued messages"), ""),
        (box('\u276f\u00a0Try "how does <filepath> work?"'), ""),
        # a colour whose number is 2 is not dim
        (box("\x1b[39m\u276f\u00a0\x1b[38;5;2mgreen\x1b[39m words"), "green words"),
    ],
)
def test_draft_in_reads_claude_codes_input_box(screen: str, draft: str) -> None:
    assert draft_in(screen) == draft
    assert draft_in(strip_sgr(screen)) == strip_sgr(draft)


def strip_sgr(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_a_submitted_prompt_above_the_box_is_no_draft() -> None:
    history = "\x1b[48;5;237m\u276f \x1b[38;5;231mdo it\x1b[39m\n\n\u25cf Noted.\n"
    assert draft_in(history + box("\x1b[39m\u276f\u00a0\x1b[7m \x1b[0m")) == ""
    assert draft_in(history) is None  # no box, no cursor: cannot tell


@pytest.mark.parametrize(
    ("line", "draft"),
    [
        ("me@host:~/src$ echo half", "echo half"),
        ("(venv) me@host:~$ ", ""),
        (">>> print('a > b')", "print('a > b')"),
        ("ling> ", ""),
        ("Downloading: 50%", None),  # no prompt: cannot tell, so no hold
    ],
)
def test_draft_in_reads_a_shell_like_prompt_on_the_cursors_line(
    line: str, draft: str | None
) -> None:
    assert draft_in(f"earlier output\n{line}\n", cursor_line=1) == draft
    assert draft_in(f"earlier output\n{line}\n") is None  # no cursor: cannot tell
