"""core/limits.py: the JSON walk is iterative and names the limit; the linear format
checks accept exactly what the old patterns accepted; the limits table in
docs/security.md is the one in the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.core import limits
from hive_rpc.core.errors import InvalidAnswer
from hive_rpc.core.schema import is_email, is_uri, validate_against

SECURITY = Path(__file__).parents[2] / "docs" / "security.md"


def nest(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"k": [value]} if depth % 2 else [value]
    return value


def test_a_value_far_deeper_than_the_stack_is_refused_not_a_recursion_error() -> None:
    found = limits.problem(nest(200_000), "schema")
    assert found is not None
    assert found.startswith("schema: nested deeper than 32 levels (limit json_depth")


def test_the_deepest_value_allowed_passes() -> None:
    limits.check_value([[[0]]], "v", max_depth=3)
    with pytest.raises(limits.LimitError) as err:
        limits.check_value([[[[0]]]], "v", max_depth=3)
    assert err.value.data == {"kind": "invalid_params", "limit": "json_depth", "max": 32}


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        (2**1023, "int_bits"),
        (-(2**1023), "int_bits"),
        ("x" * (limits.MAX_STRING_CHARS + 1), "string_chars"),
        ([0] * (limits.MAX_NODES + 1), "json_nodes"),
        ({"k" * limits.MAX_STRING_CHARS: "v" * limits.MAX_STRING_CHARS}, None),
    ],
)
def test_each_limit_is_named(value: Any, limit: str | None) -> None:
    found = limits.problem(value)
    if limit is None:
        assert found is None
    else:
        assert found is not None
        assert f"(limit {limit}:" in found


def test_record_problem_for_stores() -> None:
    assert limits.record_problem({"id": "a", "question": "q", "schema": None}) is None
    assert "question_chars" in (limits.record_problem({"question": "x" * 70_000}) or "")
    assert "json_depth" in (limits.record_problem({"schema": {"title": nest(40)}}) or "")
    assert limits.record_problem([1]) == "record is a list, not an object"


OLD_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
OLD_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
"""The backtracking patterns the linear checks replace (with fullmatch: the old
``$`` also let a trailing newline through, which was a bug)."""
near_email = st.text(alphabet="ab.@ \t:/-+\n\u00a0", max_size=14)


@given(near_email)
def test_email_check_accepts_what_the_old_pattern_did(value: str) -> None:
    assert is_email(value) == bool(OLD_EMAIL.fullmatch(value))


@given(near_email)
def test_uri_check_accepts_what_the_old_pattern_did(value: str) -> None:
    assert is_uri(value) == bool(OLD_URI.fullmatch(value))


SCHEMA = {
    "type": "object",
    "properties": {
        f: {"type": "string", "format": f} for f in ("email", "uri", "date", "date-time")
    },
}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("email", "a@" + "." * 100_000 + "@"),
        ("email", "a@b." + "c" * 100_000),
        ("uri", "a" * 100_000),
        ("uri", "https://" + "x" * 100_000),
        ("date", "2024-01-01" + "0" * 100_000),
        ("date-time", "2024-01-01T" + "1" * 100_000),
    ],
)
def test_a_100kb_answer_is_refused_before_any_pattern_runs(field: str, value: str) -> None:
    with pytest.raises(InvalidAnswer, match=f"at most .* characters, got {len(value):,}"):
        validate_against(SCHEMA, {field: value})


def test_security_md_lists_every_limit_with_its_value() -> None:
    text = SECURITY.read_text()
    section = text.split("## Limits on what a client sends", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) (\w+) \|", section, re.M)
    table = {name: (int(value.replace(",", "")), unit) for name, value, unit in rows}
    expected = {n: (e.value, e.unit) for n, e in limits.LIMITS.items()}
    assert table == expected
