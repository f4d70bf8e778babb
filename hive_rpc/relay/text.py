"""What may be typed into an agent's terminal, and when typing would answer a dialog.

Pure functions, no I/O.  ``prepare`` is the one gate every message passes before a
relay types it: the text comes from other agents and the network, and a terminal
treats some bytes as commands.  An escape sequence could retitle the window or clear
the screen; a carriage return submits half a message; a bracketed-paste end marker
(``ESC [ 201 ~``) inside a paste would end the paste early, so everything after it
would arrive as keystrokes, where a newline is Enter.  ``prepare`` removes all of
these and refuses a message too large to type instead of cutting it silently.

``dialog_in`` looks at the last lines a terminal shows.  When they show a question
that typed text would answer (a permission prompt, ``(y/n)``, a password prompt), the
relay must not type: the message would become the answer.  A dialog that was answered
often stays on screen (``Allow? (y/n) y``, then the program's output and its prompt),
so where the terminal says where its cursor is, only the lines where input would go
count: the cursor's line when it shows something (a line-based program waits for its
answer on that very line), else the last lines above it (a TUI such as Claude Code
draws its menu and leaves the cursor on the empty line below), and any lines below
the cursor (a menu drawn under a question).
"""

from __future__ import annotations

import re

from hive_rpc.core.terminal_text import strip_controls

MAX_MESSAGE_BYTES = 64 * 1024
"""The most UTF-8 bytes one message may type.  An agent reads a message as one
prompt; anything bigger belongs in a file whose path the message names."""

DIALOG_LINES = 6
"""How many of the last non-empty lines ``dialog_in`` reads: a dialog is drawn at
the bottom of the screen, and one scrolled further up has been answered."""

_NEWLINES = re.compile(r"\r\n?")
# What is left of a bracketed-paste marker once its ESC is gone.  Removed so that no
# later step (a terminal, a relay that re-adds an ESC) can turn it back into one.
_PASTE_MARKERS = re.compile(r"\[20[01]~")


class MessageTooLarge(ValueError):
    """The message is bigger than a relay will type."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"the message is {size:,} bytes (UTF-8) after cleaning; the limit is "
            f"{limit:,} bytes: shorten it, or write it to a file and send the path"
        )
        self.size = size
        self.limit = limit


def prepare(text: str, *, max_bytes: int = MAX_MESSAGE_BYTES) -> str:
    """``text`` as it may be typed: escape sequences and control characters removed
    (tabs and newlines kept, ``\\r`` and ``\\r\\n`` become ``\\n``), paste markers
    removed, trailing whitespace trimmed.

    Raises ``MessageTooLarge`` when the result is over ``max_bytes`` in UTF-8, and
    ``ValueError`` when nothing printable is left.
    """
    cleaned = strip_controls(_NEWLINES.sub("\n", text))
    while True:  # "[20[201~1~" leaves a marker behind after one pass
        unmarked = _PASTE_MARKERS.sub("", cleaned)
        if unmarked == cleaned:
            break
        cleaned = unmarked
    cleaned = cleaned.rstrip()
    if not cleaned:
        raise ValueError(
            "nothing to deliver: the message is empty once control characters, escape "
            "sequences and trailing whitespace are removed"
        )
    size = len(cleaned.encode("utf-8"))
    if size > max_bytes:
        raise MessageTooLarge(size, max_bytes)
    return cleaned


_I = re.IGNORECASE
# (pattern, description).  Each pattern is matched against one line at a time, so
# ``^`` and ``$`` are the ends of that line.  Where a word could as well appear in an
# agent's prose ("allow", "password"), the pattern asks for it where a prompt puts it:
# at the start of the line, or with the line ending in ``?`` or ``:``.
DIALOG_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\((?:y/n|yes/no)\)", _I), "a yes/no question"),
    (re.compile(r"\[y/n\]", _I), "a yes/no question"),
    (re.compile(r"^[\W_]*allow\b[^?]{0,80}\?", _I), "an 'Allow?' permission prompt"),
    (re.compile(r"do you want to proceed\s*\?", _I), "a 'Do you want to proceed?' prompt"),
    (re.compile(r"do you want to make this edit", _I), "an edit permission prompt"),
    (re.compile(r"^[\W_]*do you want to create\b", _I), "a file creation permission prompt"),
    (re.compile(r"\u276f\s*1\.\s*yes\b", _I), "Claude Code's permission menu"),  # U+276F: cursor
    (re.compile(r"\bno,\s*and tell claude\b", _I), "Claude Code's permission menu"),
    # Any of Claude Code's menus (AskUserQuestion's options, plan approval ...): its
    # cursor on a numbered choice, or the footer.  Enter picks the highlighted choice,
    # so a relay's text plus Enter would answer the human's question (2.1.328).
    (re.compile(r"\u276f\s*\d+\.\s"), "Claude Code's menu"),
    (re.compile(r"(?:^|\u00b7)\s*enter to select\b", _I), "Claude Code's menu"),
    (re.compile(r"(?:^|\u00b7)\s*esc to cancel\b", _I), "Claude Code's dialog"),
    (re.compile(r"press enter to continue", _I), "a 'Press Enter to continue' prompt"),
    (re.compile(r"\bpassword(?: for [^:]*)?:\s*$", _I), "a password prompt"),
    (re.compile(r"\bpassphrase\b[^:]*:\s*$", _I), "a passphrase prompt"),
]


CLAUDE_CODE_STARTING = "Claude Code shows no input box yet (starting)"
_CLAUDE_CODE_PROMPT = re.compile(r"^\s*\u276f", re.MULTILINE)  # its prompt, or a menu


def starting_in(command: str | None, tail: str) -> str | None:
    """Why the program ``command`` cannot take a message yet, going by its last lines
    ``tail``, or None when it can (or is no program known to need the wait).

    Claude Code (2.1.328) reads its terminal before its input box is up, takes a
    paste arriving then as keystrokes (its bracketed paste is not on yet) and the
    Enter after it as part of that paste: the message sits unsent in its input while
    the sender was told it was delivered.  Its screen always has its prompt, or a
    menu's cursor, at the start of a line (U+276F) once it takes input; until then
    ``claude`` is starting."""
    if command != "claude" or _CLAUDE_CODE_PROMPT.search(strip_controls(tail)):
        return None
    return CLAUDE_CODE_STARTING


def dialog_in(tail: str, *, cursor_line: int | None = None) -> str | None:
    """A short description of the dialog the last lines of ``tail`` show, or None.

    ``cursor_line``: the index, among ``tail``'s lines (split at ``\n``), of the line
    the terminal's cursor is on, where the terminal tells it.  Then only the cursor's
    line counts when it is not blank (so an answered dialog above a prompt does not
    hold the relay), else the last ``DIALOG_LINES`` non-empty lines above it; lines
    below the cursor always count.  Without it, the last ``DIALOG_LINES`` non-empty
    lines count, so a dialog that has scrolled further up does not hold the relay
    forever.
    """
    # Line by line: an unterminated escape string (OSC, or 8-bit SOS) on one line
    # must not swallow the lines after it, the dialog among them.
    lines = [strip_controls(line).rstrip() for line in _NEWLINES.sub("\n", tail).split("\n")]
    if cursor_line is None or not 0 <= cursor_line < len(lines):
        recent = [line for line in lines if line.strip()][-DIALOG_LINES:]
    else:
        below = [line for line in lines[cursor_line + 1 :] if line.strip()][:DIALOG_LINES]
        if lines[cursor_line].strip():
            recent = [lines[cursor_line], *below]
        else:
            above = [line for line in lines[:cursor_line] if line.strip()][-DIALOG_LINES:]
            recent = [*above, *below]
    for line in reversed(recent):
        for pattern, description in DIALOG_PATTERNS:
            if pattern.search(line):
                return description
    return None


__all__ = [
    "CLAUDE_CODE_STARTING",
    "DIALOG_LINES",
    "DIALOG_PATTERNS",
    "MAX_MESSAGE_BYTES",
    "MessageTooLarge",
    "dialog_in",
    "prepare",
    "starting_in",
]
