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

LINE_INPUT_BYTES = 4095
"""The most a terminal in canonical mode holds of input its program has not read:
Linux's line discipline keeps 4,096 bytes and one for the newline, and drops the
rest of a longer line as it arrives (relay/line_discipline.py)."""

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


def fits_terminal(text: str, *, reads_lines: bool | None) -> str | None:
    """Why ``text`` (prepared) cannot be typed whole into a terminal whose program
    reads whole lines (``reads_lines``: True; None when the terminal cannot tell,
    which is held to the same bound), or None when it can.  A program that reads
    bytes as they come takes up to ``MAX_MESSAGE_BYTES`` (``prepare``'s limit).

    The bound is on the whole message, not per line: lines the program has not yet
    read stay in the same 4,095 bytes."""
    size = len(text.encode("utf-8"))
    if reads_lines is False or size <= LINE_INPUT_BYTES:
        return None
    why = (
        "the program in the terminal reads whole lines (the terminal is in canonical "
        "mode), and such a terminal holds at most"
        if reads_lines
        else "the terminal cannot tell whether its program reads whole lines, and if "
        "it does, the terminal holds at most"
    )
    return (
        f"{why} {LINE_INPUT_BYTES:,} bytes of input, dropping the rest; the message is "
        f"{size:,} bytes (UTF-8): shorten it, or write it to a file and send the path"
    )


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


# --- the human's draft ---------------------------------------------------------------

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_RULE = re.compile(r"^\s*\u2500{2,}")  # Claude Code's horizontal rule (U+2500)
_BOX_PROMPT = re.compile(r"^\s*\u276f[\s\u00a0]?")  # its input box's first line
_BOX_LINES = 40
"""The most lines an input box may span before the reading gives up."""
CLAUDE_CODE_PLACEHOLDERS = re.compile(
    r'Try ".*"|Press up to (?:edit|select) .*queued message.*', re.DOTALL
)
"""What Claude Code (2.1.328) shows, dimmed, in an empty input box: an example
prompt, or how to edit the messages queued while it works.  Where the screen keeps
no attributes (an Emacs vterm buffer) these words are how a placeholder is told
from a draft."""
SHELL_PROMPT = re.compile(r"^.*?[>$#%\u276f\u00bb][ \u00a0]")
"""A shell-like prompt at the start of the cursor's line: up to the first ``> ``,
``$ ``, ``# ``, ``% ``, U+276F or ``» `` (``user@host:~$ ``, ``>>> ``, ``ling> ``)."""


def _typed(line: str) -> str:
    """``line`` (with its SGR escapes, as ``tmux capture-pane -e`` gives it) without
    what a program dims: a placeholder.  The cell drawn in reverse video just before
    dimmed text is the program's cursor over the placeholder's first letter, so it goes
    too.  Other escapes and controls are removed."""
    cells: list[tuple[str, bool, bool]] = []  # (character, dim, reverse)
    dim = reverse = False
    position = 0
    for match in [*_SGR.finditer(line), None]:
        end = match.start() if match is not None else len(line)
        cells += [(char, dim, reverse) for char in strip_controls(line[position:end])]
        if match is None:
            break
        position = match.end()
        params = re.split("[;:]", match.group(1))
        i = 0
        while i < len(params):
            code = params[i]
            if code in ("", "0"):
                dim = reverse = False
            elif code in ("2", "22"):
                dim = code == "2"
            elif code in ("7", "27"):
                reverse = code == "7"
            elif code in ("38", "48", "58") and i + 1 < len(params):  # skip a colour's
                i += {"5": 2, "2": 4}.get(params[i + 1], 0)  # own parameters
            i += 1
    return "".join(
        char
        for i, (char, is_dim, is_reverse) in enumerate(cells)
        if not is_dim and not (is_reverse and i + 1 < len(cells) and cells[i + 1][1])
    )


def draft_in(tail: str, *, cursor_line: int | None = None) -> str | None:
    """What the human has typed, and not sent, into the program's input line in
    ``tail`` (the terminal's last lines, with SGR escapes where the terminal gives
    them): ``""`` when the line is empty, None when no input line can be read.

    Claude Code's input box comes first: the line starting with its prompt (U+276F)
    just below one of its rules (a line of U+2500) and the lines after it up to the
    next rule; its continuation lines are indented two spaces.  Dimmed text there is a
    placeholder, not the human's (``Press up to edit queued messages``), and so are
    its known placeholders' words where attributes are lost.  Otherwise, where the
    terminal says which line the cursor is on, a shell-like prompt there
    (``SHELL_PROMPT``) is followed by the draft.  Nothing else is read: a screen that
    shows neither says nothing of a draft, and holds nothing."""
    lines = _NEWLINES.sub("\n", tail).split("\n")
    plain = [strip_controls(line) for line in lines]
    for start in range(len(lines) - 1, 0, -1):
        if not (_BOX_PROMPT.match(plain[start]) and _RULE.match(plain[start - 1])):
            continue
        end = next((j for j in range(start + 1, len(lines)) if _RULE.match(plain[j])), None)
        if end is None or end - start > _BOX_LINES:
            continue
        typed = [_typed(line) for line in lines[start:end]]
        typed[0] = _BOX_PROMPT.sub("", typed[0], count=1)
        text = "\n".join(t.removeprefix("  ").rstrip() for t in typed).strip(" \n\u00a0")
        return "" if CLAUDE_CODE_PLACEHOLDERS.fullmatch(text) else text
    if cursor_line is None or not 0 <= cursor_line < len(lines):
        return None
    line = _typed(lines[cursor_line])
    prompt = SHELL_PROMPT.match(line)
    if prompt is None:
        return None
    return line[prompt.end() :].strip(" \u00a0")


__all__ = [
    "CLAUDE_CODE_PLACEHOLDERS",
    "CLAUDE_CODE_STARTING",
    "DIALOG_LINES",
    "DIALOG_PATTERNS",
    "LINE_INPUT_BYTES",
    "MAX_MESSAGE_BYTES",
    "SHELL_PROMPT",
    "MessageTooLarge",
    "dialog_in",
    "draft_in",
    "fits_terminal",
    "prepare",
    "starting_in",
]
