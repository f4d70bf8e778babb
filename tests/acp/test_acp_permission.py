"""hive_rpc/acp/permission.py: an ACP permission request as the hub question the human
reads (the tool call's content in full: Gemini sends no rawInput), and each answer as
the option it selects; no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from hive_rpc.acp.permission import (
    REMEMBERED,
    AcpPermission,
    NotAPermissionRequest,
    answer_option,
    deny_option,
    detail,
    permission_ask,
    rule_option,
    rule_params,
)

COMMAND = "rm -rf build && npm test"
OPTIONS = [
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "proceed_always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
]


def gemini_request(**tool_call: Any) -> dict[str, Any]:
    """A request shaped as Gemini CLI 0.61.0 sends it: title, kind, content; no rawInput."""
    call = {
        "toolCallId": "run_shell_command-1",
        "title": "Shell",
        "kind": "execute",
        "status": "pending",
        "content": [{"type": "content", "content": {"type": "text", "text": COMMAND}}],
        **tool_call,
    }
    return {"sessionId": "4f1c2a9e-77", "toolCall": call, "options": OPTIONS}


def test_the_question_shows_the_content_not_only_the_title() -> None:
    permission = AcpPermission.from_params(gemini_request())
    ask = permission_ask(
        permission, agent="gemini-ab12cd", cwd="/home/me/src/app", home="/home/me", timeout_s=60
    )
    assert ask.question == (
        "gemini-ab12cd in ~/src/app (session 4f1c2a9e) wants to use execute: Shell (see detail)"
    )
    assert ask.detail == f"title: Shell\n\nkind: execute\n\n{COMMAND}"
    assert ask.kind == "permission"
    assert ask.urgent is True
    assert ask.agent_id == "gemini-ab12cd"
    assert ask.choices == ("Allow", "Allow always", "Reject")
    assert ask.confirm == [{"choice": "Allow always", "text": REMEMBERED}]


def test_a_diff_is_shown_as_a_unified_diff_and_raw_input_and_places_too() -> None:
    edit = [{"type": "diff", "path": "/src/a.py", "oldText": "x = 1\n", "newText": "x = 2\n"}]
    permission = AcpPermission.from_params(
        gemini_request(
            kind="edit",
            title="Edit a.py",
            content=edit,
            locations=[{"path": "/src/a.py", "line": 1}],
            rawInput={"file_path": "/src/a.py"},
        )
    )
    text = detail(permission)
    assert "--- /src/a.py\n+++ /src/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2" in text
    assert "at /src/a.py:1" in text
    assert text.endswith('input: {\n  "file_path": "/src/a.py"\n}')


def test_a_new_file_diffs_from_dev_null() -> None:
    new = [{"type": "diff", "path": "/src/b.py", "newText": "y\n"}]
    text = detail(AcpPermission.from_params(gemini_request(content=new)))
    assert "--- /dev/null\n+++ /src/b.py" in text


@pytest.mark.parametrize(
    ("params", "why"),
    [
        ([], "params is not an object"),
        ({"toolCall": {}, "options": OPTIONS}, "no sessionId"),
        ({"sessionId": "s", "options": OPTIONS}, "no toolCall"),
        ({"sessionId": "s", "toolCall": {}, "options": []}, "no options"),
        ({"sessionId": "s", "toolCall": {}, "options": [{"optionId": "a"}]}, "option 0 lacks"),
    ],
)
def test_a_request_that_is_no_permission_request_says_what_it_lacks(
    params: object, why: str
) -> None:
    with pytest.raises(NotAPermissionRequest, match=why):
        AcpPermission.from_params(params)


def test_the_humans_choice_selects_its_option_and_nothing_else_selects_any() -> None:
    permission = AcpPermission.from_params(gemini_request())
    answer = {"status": "responded", "action": "accept"}
    assert answer_option(permission, {**answer, "answer": "Allow"}) == "proceed_once"
    assert answer_option(permission, {**answer, "answer": "Reject"}) == "cancel"
    assert answer_option(permission, {**answer, "answer": "something else"}) is None
    assert answer_option(permission, {"status": "responded", "action": "decline"}) is None
    assert answer_option(permission, {"status": "expired"}) is None


def test_two_options_of_one_name_stay_two_choices() -> None:
    twins = [
        {"optionId": "a", "name": "Allow", "kind": "allow_once"},
        {"optionId": "b", "name": "Allow", "kind": "allow_always"},
    ]
    permission = AcpPermission.from_params({**gemini_request(), "options": twins})
    ask = permission_ask(permission, agent="g", cwd=None, home=None, timeout_s=1)
    assert ask.choices == ("Allow", "Allow (b)")
    answer = {"status": "responded", "action": "accept", "answer": "Allow (b)"}
    assert answer_option(permission, answer) == "b"


def test_rules_name_the_tool_by_its_name_else_its_kind() -> None:
    permission = AcpPermission.from_params(gemini_request())
    assert rule_params(permission, agent="g", cwd="/src") == {
        "tool_name": "execute",
        "tool_input": {},
        "session_id": "4f1c2a9e-77",
        "project": "/src",
    }
    named = AcpPermission.from_params(
        gemini_request(name="run_shell_command", rawInput={"command": COMMAND})
    )
    params = rule_params(named, agent="g", cwd=None)
    assert params["tool_name"] == "run_shell_command"
    assert params["tool_input"] == {"command": COMMAND}


def test_a_rule_selects_a_once_option_and_a_deny_a_reject() -> None:
    permission = AcpPermission.from_params(gemini_request())
    assert rule_option(permission, {"decision": "allow"}) == "proceed_once"
    assert rule_option(permission, {"decision": "deny"}) == "cancel"
    assert rule_option(permission, None) is None
    only_always = [{"optionId": "ok", "name": "Yes, always", "kind": "allow_always"}]
    bare = AcpPermission.from_params({**gemini_request(), "options": only_always})
    assert rule_option(bare, {"decision": "allow"}) == "ok"
    assert rule_option(bare, {"decision": "deny"}) is None
    assert deny_option(permission) == "cancel"
    assert deny_option(bare) is None
