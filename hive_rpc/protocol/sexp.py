"""A reader and printer for the s-expressions EPC carries, as JSON-ish Python values.

Why our own and not ``sexpdata``: the reader is the cost of every EPC call, and a
single compiled token pattern driven by one loop reads a typical call several times
faster than sexpdata's character-by-character parser (bench/epc_calls.py measures the
whole face).  It also reads only data: there is no evaluation, no interning, no
reader macro, so nothing received can run (``#'f`` and ``?a`` come back as names).

Lisp to Python (``read``):

* integers and floats as they are (``1.`` is the integer 1, as in Emacs); an infinite
  or NaN float (``1.0e+INF``) is refused;
* strings with Emacs's escapes undone (``\\n \\t \\" \\\\ \\xHH \\uXXXX`` ...);
  ``t`` is True; ``nil``, ``()`` and ``[]`` are None;
* a list whose even positions are all keywords (``(:id "x" :n 1)``) is a dict, keys
  without the colon; any other list, or a vector ``[...]``, is a list;
* any other symbol is its name as a string (``'yes`` -> ``"yes"``); a quoted form
  (``'(1 2)``) is what it quotes.

The outermost list keeps its symbols as :class:`Symbol` (a ``str`` subclass), so a
caller can tell ``(call ...)`` from ``("call" ...)``; everything inside is plain.

Python to Lisp (``dumps``):

* None and False are both ``nil`` (Lisp has one false value); True is ``t``;
* a dict is a plist with keyword keys (``{"id": "x"}`` -> ``(:id "x")``);
* lists and tuples are lists (an empty one is ``nil``), strings are strings with
  ``"`` and ``\\`` escaped; floats must be finite.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 200
"""Deepest nesting read or printed; deeper input is refused rather than recursed."""


class Symbol(str):
    """A symbol's name, at the outermost level of what ``read`` returns."""

    __slots__ = ()


class _Keyword(str):
    """A ``:name`` symbol while its list is being read (becomes a dict key)."""

    __slots__ = ()


class ReadError(ValueError):
    """Text that is not exactly one well-formed s-expression."""


class PrintError(ValueError):
    """A Python value with no s-expression form (a NaN, an object, a bad dict key)."""


_TOKEN = re.compile(
    r"""
      (?P<space>(?:\s+|;[^\n]*)+)
    | (?P<open>[(\[])
    | (?P<close>[)\]])
    | "(?P<string>[^"\\]*(?:\\.[^"\\]*)*)"
    | (?P<quote>')
    | (?P<atom>(?:[^\s()\[\]";\\]|\\.)+)
    | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL | re.ASCII,
)
_INT = re.compile(r"[-+]?[0-9]+\.?\Z")
_FLOAT = re.compile(r"[-+]?(?:[0-9]*\.[0-9]+(?:e[-+]?[0-9]+)?|[0-9]+(?:\.[0-9]*)?e[-+]?[0-9]+)\Z")
_NON_FINITE = re.compile(r"[-+]?[0-9.]+e\+(?:INF|NaN)\Z")
_STRING_ESCAPE = re.compile(
    r"\\(?:x([0-9a-fA-F]+);?|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-7]{1,3})|(.))", re.DOTALL
)
_SYMBOL_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_CHAR_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "f": "\f",
    "b": "\b",
    "a": "\a",
    "v": "\v",
    "e": "\x1b",
    "s": " ",
    "d": "\x7f",
    "\n": "",  # a backslash-newline continues the string
    " ": "",  # Emacs drops "\ " inside strings
}


def _codepoint(digits: str, base: int) -> str:
    code = int(digits[:8], base)
    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        raise ReadError(f"string escape {digits!r} is not a Unicode character")
    return chr(code)


def _unescape_match(m: re.Match[str]) -> str:
    hexa, u4, u8, octal, char = m.groups()
    if char is not None:
        return _CHAR_ESCAPES.get(char, char)
    if octal is not None:
        return _codepoint(octal, 8)
    return _codepoint(hexa or u4 or u8, 16)


def _string(body: str) -> str:
    return _STRING_ESCAPE.sub(_unescape_match, body) if "\\" in body else body


def _atom(text: str) -> Any:
    """A number, ``t``/``nil``, a keyword, or a symbol's name."""
    first = text[0]
    if first.isdigit() or first in "-+.":
        if _INT.match(text):
            try:
                return int(text.rstrip("."))
            except ValueError:  # over Python's digit limit for int()
                raise ReadError(f"integer of {len(text)} digits is too long") from None
        if _FLOAT.match(text):
            value = float(text)
            if math.isinf(value):
                raise ReadError(f"{text[:40]} is not a finite number")
            return value
        if _NON_FINITE.match(text):
            raise ReadError(f"{text} is not a finite number")
    if "\\" in text:
        text = _SYMBOL_ESCAPE.sub(r"\1", text)
    if text == "nil":
        return None
    if text == "t":
        return True
    if first == ":" and len(text) > 1:
        return _Keyword(text)
    return Symbol(text)


def _close(items: list[Any], top: bool) -> Any:
    """A finished list's value: None, a dict (plist) or a list of plain values."""
    if not items:
        return None
    n = len(items)
    if n % 2 == 0 and all(type(k) is _Keyword for k in items[::2]):
        return {items[i][1:]: plain(items[i + 1]) for i in range(0, n, 2)}
    if top:
        return items
    return [plain(x) for x in items]


def plain(value: Any) -> Any:
    """A symbol or keyword from the outermost list as a plain ``str``; else as is."""
    t = type(value)
    if t is Symbol or t is _Keyword:
        return str.__str__(value)
    return value


def read(text: str) -> Any:
    """The one s-expression in ``text`` (see the module's table), or ReadError."""
    stack: list[list[Any]] = []
    quoted = False  # a ' waits for the value it quotes
    result: Any = None
    done = False
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "space":
            continue
        if done:
            raise ReadError("the payload must be exactly one s-expression; more follows it")
        if kind == "open":
            if len(stack) >= MAX_DEPTH:
                raise ReadError(f"s-expression nested deeper than {MAX_DEPTH}")
            stack.append([])
            quoted = False
            continue
        if kind == "close":
            if quoted:
                raise ReadError("a quote (') with nothing after it")
            if not stack:
                raise ReadError("unbalanced closing parenthesis")
            items = stack.pop()
            value = _close(items, top=not stack)
        elif kind == "string":
            value = _string(m.group("string"))
            quoted = False
        elif kind == "atom":
            value = _atom(m.group("atom"))
            quoted = False
        elif kind == "quote":
            quoted = True
            continue
        else:
            bad = m.group()
            what = "an unterminated string" if bad == '"' else f"unexpected {bad!r}"
            raise ReadError(f"{what} at character {m.start()}")
        if stack:
            stack[-1].append(value)
        else:
            result, done = value, True
    if stack:
        raise ReadError(f"{len(stack)} unclosed parenthesis(es); the s-expression is cut short")
    if quoted:
        raise ReadError("a quote (') with nothing after it")
    if not done:
        raise ReadError("empty payload: want one s-expression")
    return plain(result) if not isinstance(result, list) else result


# --- printing -------------------------------------------------------------------------

_SYMBOL_SPECIAL = re.compile(r"""[ ()\[\]";'`,#?\\]""")
"""What a symbol escapes with a backslash: what Emacs (and this reader) read back."""
_SYMBOL_UNSAFE = re.compile(r"[\t\n\r\f\v]")


def dumps_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dumps_symbol(name: str) -> str:
    """A symbol's printed name, special characters escaped with a backslash."""
    if not name or name == "." or _SYMBOL_UNSAFE.search(name):
        raise PrintError(f"{name!r} has no symbol form (empty, '.', or a control character)")
    return _SYMBOL_SPECIAL.sub(lambda m: "\\" + m.group(), name)


def dumps(value: Any, _depth: int = 0) -> str:
    """The Lisp text of a JSON-ish Python value (see the module's table)."""
    if _depth > MAX_DEPTH:
        raise PrintError(f"value nested deeper than {MAX_DEPTH}")
    if value is None or value is False:
        return "nil"
    if value is True:
        return "t"
    if isinstance(value, str):
        return dumps_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PrintError(f"{value} has no EPC form")
        return repr(value)
    if isinstance(value, dict):
        if not value:
            return "nil"
        parts = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise PrintError(f"dict key {k!r} is not a string")
            parts.append(":" + dumps_symbol(k))
            parts.append(dumps(v, _depth + 1))
        return "(" + " ".join(parts) + ")"
    if isinstance(value, list | tuple):
        if not value:
            return "nil"
        return "(" + " ".join(dumps(x, _depth + 1) for x in value) + ")"
    raise PrintError(f"{type(value).__name__} has no EPC form")


__all__ = [
    "MAX_DEPTH",
    "PrintError",
    "ReadError",
    "Symbol",
    "dumps",
    "dumps_string",
    "dumps_symbol",
    "plain",
    "read",
]
