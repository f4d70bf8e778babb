"""Make text from the network safe to show on, or type into, a terminal.

Questions and answers come from agents and the network.  Printed raw, an escape
sequence in them could retitle the window, rewrite the screen, or (on some
terminals) answer back with input of its own; a bidi override could make the text
read differently from what it is.  Everything shown by the CLI goes through
``strip_controls``; the terminal relays reuse it.

Invisible characters go too, by Unicode category and property, not by a list: every
format character (general category Cf: the soft hyphen, zero-width spaces and
joiners, the byte-order mark, bidi controls, interlinear annotations, tag
characters), every lone surrogate (Cs), and the rest of Unicode's
Default_Ignorable_Code_Point (what its PropList.txt calls
Other_Default_Ignorable_Code_Point and Variation_Selector: the combining grapheme
joiner U+034F, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, variation
selectors, and the ranges Unicode reserves for more of them; Python's unicodedata
gives categories, not this property, so ``_DEFAULT_IGNORABLE`` spells out those two
lists as Unicode defines them).  They make two strings that look the same differ
(``rm`` and ``r\u00adm``), and tag characters and variation selectors carry text a
model reads and a person does not see, so a human approving what they read would
approve something else.  The cost, chosen: the zero-width joiner U+200D is a format
character like the others, so an emoji sequence joined by it shows as its parts,
and a variation selector's choice of emoji or text style is lost.  The line and
paragraph separators U+2028 and U+2029 are line breaks in some programs and not in
others; they become ``\n`` where newlines are kept, so what is shown and what a
program reads break at the same place, and are removed with the newlines otherwise.
"""

from __future__ import annotations

import re
import unicodedata

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
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_AND_NEWLINES = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
_DEFAULT_IGNORABLE = (
    # Other_Default_Ignorable_Code_Point (PropList.txt)
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x2065, 0x2065),
    (0x3164, 0x3164), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000),
    (0xE0002, 0xE001F), (0xE0080, 0xE00FF), (0xE01F0, 0xE0FFF),
    # Variation_Selector (PropList.txt)
    (0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF),
)  # fmt: skip
"""The code points of Default_Ignorable_Code_Point that are not of category Cf
(DerivedCoreProperties.txt derives the property from these two and Cf)."""
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cs"})
_CACHE_LIMIT = 1 << 16


def hidden(char: str) -> bool:
    """Whether ``char`` is invisible: a format character (Cf), a lone surrogate (Cs)
    or otherwise default-ignorable.  Control characters (Cc) are not counted here:
    ``strip_controls`` decides which of them stay (tabs, newlines)."""
    if unicodedata.category(char) in _HIDDEN_CATEGORIES:
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in _DEFAULT_IGNORABLE)


class _Visible(dict[int, int | None]):
    """``str.translate``'s table: each non-ASCII code point to itself, or to None
    when ``hidden``; filled as characters are met, up to ``_CACHE_LIMIT`` of them."""

    def __missing__(self, point: int) -> int | None:
        kept = None if hidden(chr(point)) else point
        if len(self) < _CACHE_LIMIT:
            self[point] = kept
        return kept


_VISIBLE = _Visible()


def _without_hidden(text: str) -> str:
    return text if text.isascii() else text.translate(_VISIBLE)


def strip_controls(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without escape sequences, control characters, bidi overrides or
    invisible characters (``hidden``).

    Tabs and newlines are kept when ``keep_newlines`` (the default), with U+2028 and
    U+2029 turned into newlines; otherwise all of them are removed too, for text that
    must stay on one line.
    """
    text = _without_hidden(_ESCAPES.sub("", text))
    if keep_newlines:
        return _CONTROLS.sub("", _LINE_SEPARATORS.sub("\n", text))
    return _CONTROLS_AND_NEWLINES.sub("", text)


def one_line(text: str) -> str:
    """Printable text on one line: whitespace runs, newlines included, become one space."""
    return " ".join(strip_controls(text).split())
