"""A question's ``confirm``: the answers every face asks the human to confirm, with
the words saying what each will do.  Claude Code's permission questions name, for
each lasting answer, the rule the hook saves after it, so the rule is read before it
is saved; the hub checks the field like any other (bounded, linear, precise errors)."""

from __future__ import annotations

from typing import Any

import pytest

from hive_rpc.core.claude_code import (
    ALLOW_PROJECT,
    ALLOW_SESSION,
    PermissionRequest,
    lasting_rule,
    permission_ask,
)
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.limits import MAX_QUESTION_CHARS, LimitError
from hive_rpc.core.prompt import Ask, Prompt, new_prompt
from hive_rpc.store.records import decode_prompt, encode_prompt

CHOICES = ["allow", "always allow", "deny"]
HOME = "/home/me"


def ask(confirm: Any, choices: list[str] | None = CHOICES) -> Prompt:
    return new_prompt(Ask(question="Run it?", choices=choices, confirm=confirm), now=1.0)


def test_a_confirm_names_choices_and_round_trips_through_the_record() -> None:
    prompt = ask([{"choice": "always allow", "text": "This saves a rule."}])
    assert prompt.to_record()["confirm"] == [
        {"choice": "always allow", "text": "This saves a rule."}
    ]
    assert decode_prompt(prompt.id, encode_prompt(prompt)) == prompt
    assert ask(None).to_record()["confirm"] is None


@pytest.mark.parametrize(
    ("confirm", "choices", "says"),
    [
        ([{"choice": "allow", "text": "t"}], None, "confirm needs choices"),
        ({"choice": "allow", "text": "t"}, CHOICES, "confirm must be a list"),
        ("allow", CHOICES, "confirm must be a list"),
        ([{"choice": "allow"}], CHOICES, 'confirm[0] must be an object with exactly "choice"'),
        ([{"choice": "allow", "text": "t", "x": 1}], CHOICES, "confirm[0] must be an object"),
        (["allow"], CHOICES, "confirm[0] must be an object"),
        ([{"choice": "maybe", "text": "t"}], CHOICES, "confirm[0].choice is not one of"),
        ([{"choice": ["allow"], "text": "t"}], CHOICES, "confirm[0].choice is not one of"),
        (
            [{"choice": "deny", "text": "t"}, {"choice": "deny", "text": "u"}],
            CHOICES,
            "confirm[1].choice is named twice",
        ),
        ([{"choice": "deny", "text": "  "}], CHOICES, "confirm[0].text must be a non-empty"),
        ([{"choice": "deny", "text": 3}], CHOICES, "confirm[0].text must be a non-empty"),
    ],
)
def test_a_bad_confirm_is_refused_saying_what_is_wrong(
    confirm: Any, choices: list[str] | None, says: str
) -> None:
    with pytest.raises(InvalidParams, match=says.replace("[", r"\[").replace("(", r"\(")) as e:
        ask(confirm, choices)
    assert e.value.data["param"] == "confirm"


def test_the_texts_together_are_bounded_like_a_question() -> None:
    half = "x" * (MAX_QUESTION_CHARS // 2 + 1)
    entries = [{"choice": "allow", "text": half}, {"choice": "deny", "text": half}]
    with pytest.raises(LimitError, match="limit question_chars"):
        ask(entries)
    assert ask(entries[:1]).confirm is not None


def request(tool_input: object, tool: str = "Bash") -> PermissionRequest:
    return PermissionRequest(tool, tool_input, "3f2a9c1e-0b7d", f"{HOME}/src/app")


def confirms(req: PermissionRequest) -> dict[str, str]:
    made = permission_ask(req, timeout_s=60, home=HOME)
    prompt = new_prompt(made, now=1.0)  # the hub accepts what the hook sends
    assert prompt.confirm is not None
    return {c["choice"]: c["text"] for c in prompt.confirm}


def test_each_lasting_answer_of_a_permission_names_the_rule_it_saves() -> None:
    texts = confirms(request({"command": "npm test"}))
    assert texts == {
        ALLOW_SESSION: "This answer saves a rule: allow Bash(npm test), for every later "
        "request in this Claude Code session (3f2a9c1e\u2026). Matching requests then run "
        "without asking you.",
        ALLOW_PROJECT: "This answer saves a rule: allow Bash(npm test), for every later "
        "request in this project (~/src/app). Matching requests then run without asking you.",
    }


@pytest.mark.parametrize(
    "tool_input",
    [
        {"command": "npm test"},
        {"file_path": "/home/me/src/app/a.py", "old_string": "a", "new_string": "b"},
        {"command": "make\nrm -rf build"},
        {"server": "x"},
    ],
)
def test_the_rule_shown_is_the_rule_the_hook_saves(tool_input: dict[str, Any]) -> None:
    tool = (
        "Edit"
        if "file_path" in tool_input
        else "mcp__db__query"
        if "server" in tool_input
        else "Bash"
    )
    req = request(tool_input, tool)
    texts = confirms(req)
    for choice in (ALLOW_SESSION, ALLOW_PROJECT):
        saved = lasting_rule(req, {"id": "p1", "answer": choice})
        assert saved is not None
        shown = texts[choice]
        if "\n" in saved["pattern"]:
            # Shown on one line, and the human is sent to the detail for the rest.
            assert f"allow {' '.join(saved['pattern'].split())} (see detail), for" in shown
        else:
            assert f"allow {saved['pattern']}, for" in shown


def test_a_request_no_rule_can_name_says_it_is_allowed_once() -> None:
    texts = confirms(request({"command": "ls:*"}))
    assert set(texts.values()) == {
        "No rule can name exactly this Bash request: this answer allows it once and saves nothing."
    }
