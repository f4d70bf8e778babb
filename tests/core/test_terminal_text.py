"""Hostile strings bound for a terminal lose every escape and control character."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.core.terminal_text import one_line, strip_controls

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        ("ok\x1b[2J\x1b[Hgone?", "okgone?"),  # clear screen, cursor home
        ("title\x1b]0;pwned\x07!", "title!"),  # OSC window title (BEL)
        ("title\x1b]0;pwned\x1b\\!", "title!"),  # OSC with ST
        ("x\x1b]52;c;ZWNobyBoaQ==\x07y", "xy"),  # OSC 52 clipboard write
        ("a\x1bP+q544e\x1b\\b", "ab"),  # DCS request (answer-back)
        ("a\x9b31mred", "ared"),  # 8-bit CSI
        ("a\x9d0;t\x9cb", "ab"),  # 8-bit OSC
        ("rm -rf /\r\x1b[Kls", "rm -rf /ls"),  # carriage return overwrite
        ("bell\x07\x00nul\x7f", "bellnul"),
        ("abc\u202eevil\u202c", "abcevil"),  # bidi override (Trojan Source)
        ("line1\nline2\ttab", "line1\nline2\ttab"),
        ("dangling\x1b", "dangling"),
        ("Grüße, 日本, emoji 🐝", "Grüße, 日本, emoji 🐝"),
    ],
)
def test_strip_controls(hostile: str, shown: str) -> None:
    assert strip_controls(hostile) == shown


def test_one_line_folds_newlines() -> None:
    assert one_line("a\n\nb\tc \u2028 d") == "a b c d"
    assert strip_controls("a\nb", keep_newlines=False) == "ab"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_nothing_unsafe_survives(text: str) -> None:
    out = strip_controls(text)
    assert not UNSAFE.search(out)
    assert "\x1b" not in out
    assert "\n" not in one_line(text)


@given(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cf")), max_size=200)
)
def test_plain_text_is_untouched(text: str) -> None:
    assert strip_controls(text) == text
