"""Checks made when a question is asked: each bad field gets a precise error."""

from __future__ import annotations

import math
from typing import Any

import pytest

from hive_rpc.core.conventions import DEFAULT_AGENT
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.prompt import (
    DEFAULT_MAX_LIFETIME_S,
    MAX_CHOICES,
    MAX_QUESTION_CHARS,
    Ask,
    new_prompt,
)

NOW = 1_800_000_000.0


def ask(*, max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S, **kw: Any) -> Any:
    fields: dict[str, Any] = {"agent_id": "a1", "question": "Ship it?"}
    fields.update(kw)
    return new_prompt(Ask(**fields), now=NOW, max_lifetime_s=max_lifetime_s)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"question": ""}, "question must be a non-empty string"),
        ({"question": "   "}, "question must be a non-empty string"),
        ({"question": 7}, "question must be a non-empty string"),
        ({"question": "x" * (MAX_QUESTION_CHARS + 1)}, "longer than"),
        ({"agent_id": ""}, "agent_id must be a non-empty string"),
        ({"agent_id": "a" * 201}, "agent_id is longer than 200"),
        ({"choices": []}, "choices must not be empty"),
        ({"choices": "yes,no"}, "choices must be a list of strings"),
        ({"choices": ["yes", "yes"]}, "choices must be distinct"),
        ({"choices": ["yes", ""]}, "every choice must be a non-empty string"),
        ({"choices": [str(i) for i in range(MAX_CHOICES + 1)]}, "at most 100 choices"),
        ({"choices": ["a"], "schema": {}}, "either choices or schema"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
        ({"timeout_s": -1}, "timeout_s must be a positive number"),
        ({"timeout_s": math.nan}, "timeout_s must be a positive number"),
        ({"timeout_s": math.inf}, "timeout_s must be a positive number"),
        ({"timeout_s": True}, "timeout_s must be a positive number"),
        ({"urgent": "yes"}, "urgent must be true or false"),
        ({"task_id": ""}, "task_id must be a non-empty string"),
    ],
)
def test_bad_question_fields_are_refused(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidParams, match=match) as err:
        ask(**kw)
    assert err.value.code == -32602


def test_timeout_beyond_max_lifetime_is_clamped() -> None:
    p = ask(timeout_s=10_000, max_lifetime_s=100)
    assert p.timeout_s == 100
    assert p.deadline_at == p.max_deadline_at == NOW + 100


def test_no_timeout_means_only_the_hard_maximum() -> None:
    p = ask(max_lifetime_s=500)
    assert p.timeout_s is None
    assert p.deadline_at == NOW + 500


def test_ids_are_unique_hex() -> None:
    ids = {ask().id for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 16 and int(i, 16) >= 0 for i in ids)


def test_an_ask_is_its_params_and_back() -> None:
    asked = Ask(question="Ship it?", choices=["yes", "no"], timeout_s=30.0, agent_id="a1")
    assert asked.params() == {
        "question": "Ship it?",
        "choices": ["yes", "no"],
        "timeout_s": 30.0,
        "agent_id": "a1",
    }
    assert Ask.from_params(asked.params()) == asked
    # a null is an absent parameter; an agent that names none is DEFAULT_AGENT
    assert Ask.from_params({"question": "q", "agent_id": None, "urgent": None}) == Ask(
        question="q", agent_id=DEFAULT_AGENT
    )
    # from_params checks nothing: a blank name reaches new_prompt, which refuses it once
    with pytest.raises(InvalidParams, match="agent_id must be a non-empty string"):
        new_prompt(Ask.from_params({"question": "q", "agent_id": " "}), now=NOW)


def test_kind_and_detail_are_checked_and_kept() -> None:
    """A permission prompt keeps its kind and its long detail through a store's
    record; an unknown kind or a detail that is no string is refused by name."""
    from hive_rpc.core.prompt import Ask, Kind, Prompt, new_prompt

    prompt = new_prompt(
        Ask(question="run Bash: ls", kind="permission", detail='{"command": "ls"}'), now=1.0
    )
    assert prompt.kind is Kind.PERMISSION
    again = Prompt.from_record(prompt.to_record())
    assert again == prompt
    assert again.detail == '{"command": "ls"}'
    assert new_prompt(Ask(question="q"), now=1.0).to_record()["kind"] == "question"
    with pytest.raises(InvalidParams, match="kind must be one of question, permission"):
        new_prompt(Ask(question="q", kind="admin"), now=1.0)
    with pytest.raises(InvalidParams, match="detail must be a string"):
        new_prompt(Ask(question="q", detail=3), now=1.0)  # type: ignore[arg-type]
