"""Hostile strings bound for a terminal lose every escape and control character."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.core.terminal_text import hidden, one_line, strip_controls

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
    assert strip_controls(text) == "".join(c for c in text if not hidden(c))


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_nothing_hidden_survives(text: str) -> None:
    assert not any(hidden(c) for c in strip_controls(text))


INVISIBLE = (
    "\u00ad",  # soft hyphen (Cf)
    "\u034f",  # combining grapheme joiner (Mn, Default_Ignorable_Code_Point)
    "\u061c",  # Arabic letter mark (Cf)
    "\u115f\u1160\u3164\uffa0",  # Hangul fillers (Lo, Default_Ignorable_Code_Point)
    "\u17b4\u17b5",  # Khmer inherent vowels (Mn, Default_Ignorable_Code_Point)
    "\u180b\u180e\u180f",  # Mongolian variation selectors, vowel separator
    "\u200b\u200c\u200d",  # zero-width space, non-joiner, joiner (Cf)
    "\u2065\u206a\u206f",  # unassigned and deprecated format characters
    "\ufe00\ufe0f",  # variation selectors (data can hide in them)
    "\ufeff",  # byte-order mark (Cf)
    "\ufff0\ufff9\ufffa\ufffb",  # interlinear annotation (Cf)
    "\U0001bca0\U0001d173",  # shorthand format controls, musical symbols (Cf)
    "\U000e0001\U000e0020\U000e0041\U000e007f",  # tag characters: a model reads them
    "\U000e0100\U000e01ef\U000e0fff",  # variation selectors supplement, reserved
)


@pytest.mark.parametrize("chars", INVISIBLE)
def test_invisible_characters_go_by_category_and_property(chars: str) -> None:
    """They reached terminals and editors (issue 26): a person sees nothing, a model
    (tag characters) or a program (a soft hyphen in a command) reads them."""
    assert strip_controls(f"r{chars}m -rf{chars}") == "rm -rf"
    assert one_line(f"a{chars}b") == "ab"
    assert all(hidden(c) for c in chars)


@pytest.mark.parametrize(
    "kept",
    [
        "Grüße, 日本, emoji 🐝, café, ﷺ, ✓",
        "\u0915\u094d\u0937",  # a Devanagari conjunct (Mn virama)
        "\u00e9\u0301",  # a combining accent
        "\ue000\U000f0000",  # private use: visible in some fonts (Nerd Font icons)
        "a\u00a0b\u3000c",  # spaces a person sees as spaces
    ],
)
def test_what_a_person_sees_is_kept(kept: str) -> None:
    assert strip_controls(kept) == kept


def test_emoji_sequences_lose_their_joiners() -> None:
    """The one cost of the rule, chosen: U+200D is a format character like the
    others, so a joined emoji shows as its parts, and U+FE0F (a variation selector)
    goes too, so a heart may show in text style."""
    assert (
        strip_controls("\U0001f469\u200d\U0001f4bb \u2764\ufe0f") == "\U0001f469\U0001f4bb \u2764"
    )
