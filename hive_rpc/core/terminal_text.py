"""Make text from the network safe to show on, or type into, a terminal.

Questions and answers come from agents and the network.  Printed raw, an escape
sequence in them could retitle the window, rewrite the screen, or (on some
terminals) answer back with input of its own; a bidi override could make the text
read differently from what it is.  Everything shown by the CLI goes through
``strip_controls``; the terminal relays reuse it.

Invisible characters go too: zero-width spaces and joiners (U+200B-U+200D), the
word joiner and invisible operators (U+2060-U+2064) and the byte-order mark
(U+FEFF) make two strings that look the same differ (``rm`` and ``r\u200bm``), so
a human approving what they read would approve something else.  Dropping them costs
only the joining of some emoji sequences, shown as their parts.  The line and
paragraph separators U+2028 and U+2029 are line breaks in some programs and not in
others; they become ``\n`` where newlines are kept, so what is shown and what a
program reads break at the same place, and are removed with the newlines otherwise.
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"""
      \x1b\[[0-?]*[ -/]*[@-~]?                    # CSI ... final byte
    | \x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?   # OSC, DCS, SOS, PM, APC strings
    | \x1b[ -/]*[0-~]?                            # other ESC sequences (nF, Fp, Fe, Fs)
    | \x9b[0-?]*[ -/]*[@-~]?                      # 8-bit CSI
    | [\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?  # 8-bit strings
    """,
    re.VERBOSE,
)
_INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_CONTROLS_AND_NEWLINES = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_INVISIBLE}]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")


def strip_controls(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without escape sequences, control characters, bidi overrides or
    invisible characters.

    Tabs and newlines are kept when ``keep_newlines`` (the default), with U+2028 and
    U+2029 turned into newlines; otherwise all of them are removed too, for text that
    must stay on one line.
    """
    text = _ESCAPES.sub("", text)
    if keep_newlines:
        return _CONTROLS.sub("", _LINE_SEPARATORS.sub("\n", text))
    return _CONTROLS_AND_NEWLINES.sub("", text)


def one_line(text: str) -> str:
    """Printable text on one line: whitespace runs, newlines included, become one space."""
    return " ".join(strip_controls(text).split())
