"""The audit trail names Claude Code's own questions: a closed prompt whose schema
has ``questions_schema``'s shape is an entry for the tool ``AskUserQuestion``; any
other schema, or none, names no tool unless the question's head does."""

from __future__ import annotations

from typing import Any

from ask_user_question import DATABASE, FEATURES

from hive_rpc.core import audit, lifecycle
from hive_rpc.core.claude_questions import (
    is_questions_schema,
    parse_questions,
    questions_ask,
    questions_schema,
)
from hive_rpc.core.prompt import Action, Ask, Kind, new_prompt


def _schema(*questions: dict[str, Any]) -> dict[str, Any]:
    parsed = parse_questions({"questions": list(questions)})
    assert parsed is not None
    return questions_schema(parsed)


def test_the_shape_questions_schema_makes_is_recognised() -> None:
    assert is_questions_schema(_schema(DATABASE))
    assert is_questions_schema(_schema(FEATURES, DATABASE))  # a multi-select among them


def test_other_schemas_are_not() -> None:
    plain = {"type": "object", "properties": {"env": {"type": "string", "enum": ["a"]}}}
    assert not is_questions_schema(plain)
    assert not is_questions_schema(None)
    assert not is_questions_schema({"type": "object", "properties": {}})
    renamed = _schema(DATABASE)
    renamed["properties"] = {"x1": renamed["properties"]["q1"]}
    assert not is_questions_schema(renamed)
    no_own_answer = _schema(DATABASE)
    no_own_answer["properties"]["q1"]["anyOf"].pop()
    assert not is_questions_schema(no_own_answer)


def test_a_questions_entry_names_its_tool() -> None:
    parsed = parse_questions({"questions": [DATABASE]})
    assert parsed is not None
    ask = questions_ask(parsed, agent_id="claude-code-3f2a9c1d", timeout_s=60)
    prompt = new_prompt(ask, now=1000.0)
    answered = lifecycle.respond(
        prompt, answer={"q1": "Postgres"}, by="emacs", action=Action.ACCEPT, now=1001.0
    )
    entry = audit.from_prompt(answered)
    assert entry is not None
    assert (entry.tool, entry.decision, entry.by) == ("AskUserQuestion", "answer", "emacs")


def test_a_schema_permission_prompt_of_another_shape_names_none() -> None:
    ask = Ask(
        question="Pick an environment",
        schema={"type": "object", "properties": {"env": {"type": "string"}}},
        kind=Kind.PERMISSION,
        agent_id="agent",
    )
    answered = lifecycle.respond(
        new_prompt(ask, now=1000.0), answer={"env": "x"}, by="emacs", action=Action.ACCEPT,
        now=1001.0,
    )  # fmt: skip
    entry = audit.from_prompt(answered)
    assert entry is not None
    assert entry.tool is None
