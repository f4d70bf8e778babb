"""Flat elicitation schemas: the schema is checked at ask time, answers at respond time."""

from __future__ import annotations

from typing import Any

import pytest

from hive_rpc.core.errors import InvalidAnswer, InvalidParams
from hive_rpc.core.schema import check_schema, validate_against

FULL = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "ok": {"type": "boolean"},
        "env": {"type": "string", "enum": ["dev", "prod"]},
        "tier": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b", "c"]},
            "maxItems": 2,
        },
    },
    "required": ["name"],
}


def test_full_schema_is_accepted_and_a_full_answer_validates() -> None:
    schema = check_schema(FULL)
    answer = {
        "name": "ada",
        "email": "ada@example.org",
        "site": "https://x.org/a",
        "day": "2026-11-22",
        "at": "2026-11-22T10:00:00+00:00",
        "age": 36,
        "ratio": 0.5,
        "ok": True,
        "env": "prod",
        "tier": "l",
        "tags": ["a", "c"],
    }
    assert validate_against(schema, answer) == answer


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        ([], "must be a JSON object"),
        ({"type": "array"}, 'schema.type must be "object"'),
        ({"type": "object"}, "non-empty object of fields"),
        ({"type": "object", "properties": {"x": {"type": "object"}}}, "nested objects"),
        (
            {"type": "object", "properties": {"x": {"type": "string", "pattern": "a"}}},
            "unsupported keys pattern",
        ),
        ({"type": "object", "properties": {"x": {"type": "string", "enum": []}}}, "non-empty list"),
        (
            {"type": "object", "properties": {"x": {"type": "array", "items": {"type": "string"}}}},
            "multi-select",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "integer", "format": "email"}}},
            "format must be one of",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]},
            "unknown properties: y",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "string", "oneOf": [{"title": "t"}]}}},
            "const",
        ),
    ],
)
def test_bad_schemas_are_refused_with_the_reason(schema: Any, match: str) -> None:
    with pytest.raises(InvalidParams, match=match):
        check_schema(schema)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ("ada", "object answer"),
        ({}, "missing required fields: name"),
        ({"name": "ada", "zzz": 1}, "fields the schema lacks: zzz"),
        ({"name": "a"}, "at least 2 chars"),
        ({"name": "adalovelace"}, "at most 5 chars"),
        ({"name": 5}, "'name' must be a string"),
        ({"name": "ada", "email": "not-an-email"}, "valid email"),
        ({"name": "ada", "site": "no scheme"}, "valid uri"),
        ({"name": "ada", "day": "22/11/2026"}, "valid date"),
        ({"name": "ada", "at": "noon"}, "valid date-time"),
        ({"name": "ada", "age": 1.5}, "'age' must be a integer"),
        ({"name": "ada", "age": True}, "'age' must be a integer"),
        ({"name": "ada", "age": 200}, "at most 150"),
        ({"name": "ada", "ratio": -0.1}, "at least 0"),
        ({"name": "ada", "ok": "yes"}, "'ok' must be a boolean"),
        ({"name": "ada", "env": "staging"}, "not one of"),
        ({"name": "ada", "tier": "m"}, "not one of"),
        ({"name": "ada", "tags": "a"}, "list of choices"),
        ({"name": "ada", "tags": ["z"]}, "not among"),
        ({"name": "ada", "tags": ["a", "a"]}, "picked once"),
        ({"name": "ada", "tags": ["a", "b", "c"]}, "at most 2 items"),
    ],
)
def test_bad_answers_name_the_field(answer: Any, match: str) -> None:
    with pytest.raises(InvalidAnswer, match=match):
        validate_against(check_schema(FULL), answer)


OWN = {"type": "string", "title": "Other: type your own answer"}
"""The free-text entry of an ``anyOf``: the value may also be text of the human's own
(Claude Code's questions offer one, its "Type something")."""
WITH_OWN = {
    "type": "object",
    "properties": {
        "db": {
            "type": "string",
            "title": "Database",
            "anyOf": [
                {"const": "SQLite", "title": "SQLite", "description": "embedded"},
                {"const": "Postgres", "title": "Postgres", "description": "a server"},
                OWN,
            ],
        },
        "features": {
            "type": "array",
            "items": {"anyOf": [{"const": "Alpha"}, {"const": "Beta"}, OWN]},
            "minItems": 1,
        },
    },
    "required": ["db", "features"],
}


def test_an_anyof_may_end_with_a_free_text_entry_and_options_carry_descriptions() -> None:
    schema = check_schema(WITH_OWN)
    for answer in (
        {"db": "Postgres", "features": ["Alpha", "Beta"]},
        {"db": "MariaDB, on the old box", "features": ["Beta", "my own feature"]},
    ):
        assert validate_against(schema, answer) == answer


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ({"db": "", "features": ["Alpha"]}, "not one of"),
        ({"db": "   ", "features": ["Alpha"]}, "not one of"),
        ({"db": 3, "features": ["Alpha"]}, "must be a string"),
        ({"db": "SQLite", "features": []}, "at least 1 items"),
        ({"db": "SQLite", "features": ["", "Alpha"]}, "not among"),
        ({"db": "SQLite", "features": ["x", "x"]}, "picked once"),
    ],
)
def test_own_text_must_be_text(answer: Any, match: str) -> None:
    with pytest.raises(InvalidAnswer, match=match):
        validate_against(check_schema(WITH_OWN), answer)


@pytest.mark.parametrize(
    "options",
    [
        [{"const": "a"}, OWN, OWN],  # one free entry at most
        [{"const": "a"}, {"type": "integer"}],  # text only
        [{"const": "a"}, {"type": "string", "enum": ["b"]}],  # nothing but a title
    ],
)
def test_a_free_entry_is_one_titled_string(options: list[Any]) -> None:
    prop = {"type": "string", "anyOf": options}
    with pytest.raises(InvalidParams, match="anyOf"):
        check_schema({"type": "object", "properties": {"x": prop}})


def test_oneof_has_no_free_entry() -> None:
    """oneOf means exactly one branch: a label would match its const and the free
    entry both, so the free entry is anyOf's alone."""
    prop = {"type": "string", "oneOf": [{"const": "a"}, OWN]}
    with pytest.raises(InvalidParams, match="oneOf"):
        check_schema({"type": "object", "properties": {"x": prop}})


@pytest.mark.parametrize(
    "bad",
    [
        "http://" + "[" * 8000,  # accepted before (issue 26)
        "http://[",
        "http://]",
        "http://[::1",
        "http://[not-ipv6]/",
        "http://host:port/",
        "http://a[b]c/",
        "https://exa mple.org/",
        "http://ho<st>/",
    ],
)
def test_a_uri_whose_host_does_not_parse_is_refused(bad: str) -> None:
    schema = check_schema(
        {"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}}
    )
    with pytest.raises(InvalidAnswer, match="valid uri"):
        validate_against(schema, {"u": bad})


@pytest.mark.parametrize(
    "good",
    [
        "https://x.org/a",
        "http://[::1]:8080/x?y=[1]#z",
        "http://user:pw@host.example:443/p",
        "file:///etc/hosts",
        "mailto:ada@example.org",
        "urn:isbn:0451450523",
        "https://b\u00fccher.example/",
        "http://127.0.0.1/",
    ],
)
def test_ordinary_uris_still_pass(good: str) -> None:
    schema = check_schema(
        {"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}}
    )
    validate_against(schema, {"u": good})


async def test_the_hub_refuses_the_bracket_uri_as_an_answer(client: Any) -> None:
    """Through the real socket face: the answer is refused, the prompt stays pending."""
    schema = {"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}}
    record = await client.call(
        "hive/ask", {"agent_id": "a", "question": "where?", "schema": schema}
    )
    with pytest.raises(InvalidAnswer, match="valid uri"):
        await client.call(
            "hive/respond", {"id": record["id"], "answer": {"u": "http://" + "[" * 8000}}
        )
    assert (await client.call("hive/poll", {"id": record["id"]}))["status"] == "pending"
