"""The s-expression reader/printer under EPC: against Emacs's own printer, sexpdata as an
independent reader, and hostile input."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from typing import Any

import pytest
import sexpdata
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.protocol import sexp


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("1.", 1),  # Emacs reads "1." as an integer
        ("1.5", 1.5),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("-2.5e-3", -0.0025),
        ("nil", None),
        ("t", True),
        ("()", None),
        ("[]", None),
        ("foo", "foo"),
        ("'foo", "foo"),
        ("'(1 2)", [1, 2]),
        ("[1 (2 3)]", [1, [2, 3]]),
        ('"a\\"b\\\\c"', 'a"b\\c'),
        ('"line\\nnext\\ttab"', "line\nnext\ttab"),
        ('"real\nnewline"', "real\nnewline"),
        ('"\\x41\\u00e9\\U0001F600\\101"', "A\u00e9\U0001f600A"),
        ('"cont\\\ninued"', "continued"),
        ('"\\e[31m"', "\x1b[31m"),
        ('(:id "x" :n 1)', {"id": "x", "n": 1}),
        ("(:a\\ b 1)", {"a b": 1}),
        ('((:id "x") (:id "y"))', [{"id": "x"}, {"id": "y"}]),
        ("(a . b)", ["a", ".", "b"]),
        ("(1 ; a comment\n 2)", [1, 2]),
        ("  (x)  ", ["x"]),
        ("#'ignore", "#'ignore"),
        ("?a", "?a"),
        ("caf\u00e9\u00a0x", "caf\u00e9\u00a0x"),  # non-ASCII is a symbol constituent
    ],
)
def test_reads_what_emacs_means(text: str, value: Any) -> None:
    assert sexp.read(text) == value


def test_only_the_outermost_list_keeps_symbols() -> None:
    form = sexp.read('(call 1 ask (x "x"))')
    assert [type(x) for x in form] == [sexp.Symbol, int, sexp.Symbol, list]
    assert [type(x) for x in form[3]] == [str, str]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty payload"),
        ("   ; only a comment", "empty payload"),
        ("(1 2", "unclosed"),
        ("(1 2))", "more follows"),
        (")", "unbalanced"),
        ("(1) (2)", "more follows"),
        ('"open', "unterminated string"),
        ("'", "quote"),
        ("(1 ')", "quote"),
        ("1.0e+INF", "not a finite number"),
        ("-0.0e+NaN", "not a finite number"),
        ("1e400", "not a finite number"),
        ("1" * 5000, "too long"),
        ("(" * 300 + ")" * 300, "nested deeper"),
        ('"\\x110000"', "not a Unicode character"),
        ('"\\ud800"', "not a Unicode character"),
    ],
)
def test_bad_text_is_a_read_error_that_says_why(text: str, why: str) -> None:
    with pytest.raises(sexp.ReadError, match=why):
        sexp.read(text)


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), object(), {1: 2}, {"": 1}, {".": 1}, {"a\nb": 1}]
)
def test_values_with_no_form_are_refused(value: Any) -> None:
    with pytest.raises(sexp.PrintError):
        sexp.dumps(value)


def test_printing_deep_values_is_refused_not_recursed() -> None:
    value: Any = 1
    for _ in range(300):
        value = [value]
    with pytest.raises(sexp.PrintError, match="nested deeper"):
        sexp.dumps(value)


# Strings that stress a reader: every ASCII control, quotes, backslashes, non-BMP.
NASTY = [
    "".join(chr(c) for c in range(32)) + "\x7f",
    'say "hi" \\ back\\slash',
    "é中\U0001f600\u202e",
    "(not a list) ; not a comment",
    "\\x41 is not an escape here",
]


@pytest.mark.skipif(shutil.which("emacs") is None, reason="needs emacs (emacs-nox)")
@pytest.mark.parametrize(
    "settings",
    [
        "",
        "(setq print-escape-newlines t)",
        "(setq print-escape-control-characters t print-escape-nonascii t)",
        "(setq print-escape-multibyte t)",
    ],
    ids=["default", "escape-newlines", "escape-controls", "escape-multibyte"],
)
def test_reads_what_a_real_emacs_prints(settings: str) -> None:
    """Emacs's prin1, under the print settings a user might have, read back exactly."""
    program = f"""
(progn
  {settings}
  (let ((coding-system-for-write 'utf-8))
    (dolist (s (append (json-read-from-string (getenv "NASTY")) nil))
      (princ (prin1-to-string s))
      (princ "\\n=====SEP=====\\n")
      (princ (prin1-to-string (list :key s :n 1.5 :flag t :none nil :v (vector 1 s))))
      (princ "\\n=====SEP=====\\n"))))"""
    out = subprocess.run(
        ["emacs", "--batch", "-Q", "--eval", "(require 'json)", "--eval", program],
        env={
            "NASTY": json.dumps(NASTY),
            "PATH": "/usr/bin:/bin",
            "HOME": "/nonexistent",
            "LANG": "C.UTF-8",
        },
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    lines = out.split("\n=====SEP=====\n")[:-1]
    assert len(lines) == 2 * len(NASTY), out
    for i, s in enumerate(NASTY):
        assert sexp.read(lines[2 * i]) == s
        assert sexp.read(lines[2 * i + 1]) == {
            "key": s,
            "n": 1.5,
            "flag": True,
            "none": None,
            "v": [1, s],
        }


# --- an independent reader as oracle ------------------------------------------------

safe_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)
symbols = (
    st.from_regex(r"\A[a-z][a-z0-9-]{0,8}\Z")
    .filter(lambda s: s not in ("nil", "t"))
    .map(sexpdata.Symbol)
)
forms = st.recursive(
    st.integers(-(2**40), 2**40) | safe_text | symbols,
    lambda inner: st.lists(inner, min_size=1, max_size=4),
    max_leaves=10,
)


def plain(form: Any) -> Any:
    if isinstance(form, list):
        return [plain(x) for x in form]
    return str(form) if isinstance(form, sexpdata.Symbol) else form


@given(forms)
def test_reads_what_sexpdata_prints(form: Any) -> None:
    """sexpdata (python-epc's printer) writes strings with its own escapes (\\n, \\t,
    \\r, \\b, \\f) and symbols bare; we read back the same value."""
    assert sexp.read(sexpdata.dumps(form)) == plain(form)


@given(st.text(max_size=200))
def test_arbitrary_text_reads_or_fails_cleanly(text: str) -> None:
    """Any text is a value or a ReadError: never an IndexError, RecursionError ..."""
    with contextlib.suppress(sexp.ReadError):
        sexp.read(text)
