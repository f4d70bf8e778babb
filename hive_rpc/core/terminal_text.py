"""Make text from the network safe to show on, or type into, a terminal.

Questions and answers come from agents and the network.  Printed raw, an escape
sequence in them could retitle the window, rewrite the screen, or (on some
terminals) answer back with input of its own; a bidi override could make the text
read differently from what it is.  Everything shown by the CLI goes through
``strip_controls``; the terminal relays of a later issue reuse it.
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
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROLS_AND_NEWLINES = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]"
)


def strip_controls(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without escape sequences, control characters or bidi overrides.

    Tabs and newlines are kept when ``keep_newlines`` (the default); otherwise they
    are removed too, for text that must stay on one line.
    """
    text = _ESCAPES.sub("", text)
    return (_CONTROLS if keep_newlines else _CONTROLS_AND_NEWLINES).sub("", text)


def one_line(text: str) -> str:
    """Printable text on one line: whitespace runs, newlines included, become one space."""
    return " ".join(strip_controls(text).split())
