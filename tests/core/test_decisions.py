"""A permission prompt says what each choice decides (``decisions``), and the audit
trail records that, not a guess from the choice's words (issue 29: an ACP agent's
choices are its own options' names, "Allow for this session", "Reject", and every
ACP decision was recorded as "answer")."""

from __future__ import annotations

from typing import Any

import pytest

from hive_rpc.acp.permission import AcpPermission, permission_ask
from hive_rpc.core.audit import human_decision
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.prompt import Action, Ask, Kind, Prompt, Status, evolve, new_prompt

CHOICES = ("Allow for this session", "Allow", "Reject")
DECISIONS = {"Allow for this session": "allow", "Allow": "allow", "Reject": "deny"}


def asked(**fields: Any) -> Prompt:
    ask = Ask(question="Gemini wants to run rm", choices=CHOICES, kind="permission", **fields)
    return new_prompt(ask, now=1000.0)


def answered(prompt: Prompt, answer: str) -> Prompt:
    return evolve(prompt, status=Status.RESPONDED, action=Action.ACCEPT, answer=answer)


@pytest.mark.parametrize(("answer", "decision"), [("Allow", "allow"), ("Reject", "deny")])
def test_the_audit_records_what_the_choice_decides(answer: str, decision: str) -> None:
    prompt = asked(decisions=DECISIONS)
    assert human_decision(answered(prompt, answer)) == decision
    # Without decisions, the agent's own words are no decision the audit knows.
    assert human_decision(answered(asked(), answer)) == "answer"


def test_decisions_are_kept_in_the_record() -> None:
    prompt = asked(decisions=DECISIONS)
    record = prompt.to_record()
    assert record["decisions"] == DECISIONS
    assert Prompt.from_record(record).decisions == DECISIONS
    assert asked().to_record()["decisions"] is None


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"decisions": {"Maybe": "allow"}}, "'Maybe', which is not one of the choices"),
        ({"decisions": {"Allow": "yes"}}, 'decisions[\'Allow\'] must be "allow" or "deny"'),
        ({"decisions": ["Allow"]}, "decisions must be an object"),
    ],
)
def test_bad_decisions_are_refused_by_name(fields: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidParams) as refused:
        asked(**fields)
    assert said in str(refused.value)
    assert refused.value.data.get("param") == "decisions"


def test_decisions_need_a_permission_prompt_with_choices() -> None:
    with pytest.raises(InvalidParams, match="for a permission prompt"):
        new_prompt(Ask(question="Which?", choices=("a",), decisions={"a": "allow"}), now=1.0)
    with pytest.raises(InvalidParams, match="needs choices"):
        new_prompt(
            Ask(question="Run?", kind=Kind.PERMISSION.value, decisions={"a": "allow"}), now=1.0
        )


def test_an_acp_question_says_what_each_option_decides() -> None:
    permission = AcpPermission.from_params(
        {
            "sessionId": "s1",
            "toolCall": {"toolCallId": "t1", "title": "rm -rf build"},
            "options": [
                {"optionId": "a", "name": "Allow for this session", "kind": "allow_always"},
                {"optionId": "b", "name": "Allow", "kind": "allow_once"},
                {"optionId": "c", "name": "Reject", "kind": "reject_once"},
            ],
        }
    )
    ask = permission_ask(permission, agent="gemini-x1", cwd=None, home=None, timeout_s=60)
    assert ask.decisions == DECISIONS
