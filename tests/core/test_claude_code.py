"""core/claude_code.py: what the permission hook and the MCP tool approve share, pure."""

from __future__ import annotations

import json

import pytest

from hive_rpc.core.claude_code import (
    NoRule,
    PermissionRequest,
    approve_reply,
    lasting_rule,
    no_decision,
    permission_prompt_tool,
    rule_check_params,
    session_agent,
)

REQUEST = PermissionRequest(
    tool_name="Bash",
    tool_input={"command": "npm test"},
    session_id="3f2a9c1e-0b7d",
    cwd="/src/app",
)


def test_a_session_is_one_agent() -> None:
    assert session_agent("3f2a9c1e-0b7d") == "claude-code-3f2a9c1e"
    assert REQUEST.agent == "claude-code-3f2a9c1e"
    assert PermissionRequest("Bash", {}, None, None).agent == "claude-code-unknown"
    assert PermissionRequest("Bash", {}, "3f2a", None, agent_id="deployer").agent == "deployer"


@pytest.mark.parametrize(
    ("argv", "tool"),
    [
        (["claude", "-p", "go", "--permission-prompt-tool", "mcp__hive-rpc__approve"],
         "mcp__hive-rpc__approve"),
        (["claude", "--permission-prompt-tool=mcp__h__approve", "-p", "go"], "mcp__h__approve"),
        (["claude", "-p", "--permission-prompt-tool"], None),
        (["claude", "-p", "go"], None),
    ],
)  # fmt: skip
def test_the_prompt_tool_is_read_from_claudes_command_line(
    argv: list[str], tool: str | None
) -> None:
    assert permission_prompt_tool(argv) == tool


def test_rules_see_only_object_inputs() -> None:
    assert rule_check_params(REQUEST) == {
        "tool_name": "Bash",
        "tool_input": {"command": "npm test"},
        "session_id": "3f2a9c1e-0b7d",
        "project": "/src/app",
    }
    assert rule_check_params(PermissionRequest("Bash", "rm", None, None)) is None


def test_a_lasting_answer_names_exactly_this_use() -> None:
    record = {"id": "p1", "answer": "always allow in this project"}
    assert lasting_rule(REQUEST, record) == {
        "pattern": "Bash(npm test)",
        "decision": "allow",
        "scope": "project",
        "where": "/src/app",
        "by": "prompt p1",
        "from_prompt": "p1",
    }
    assert lasting_rule(REQUEST, {"id": "p1", "answer": "allow"}) is None
    prefix = PermissionRequest("Bash", {"command": "ls:*"}, "s", "/src/app")
    with pytest.raises(NoRule, match="no rule can name exactly this Bash request"):
        lasting_rule(prefix, {"id": "p1", "answer": "allow for this session"})


def test_approve_replies_in_claude_codes_words() -> None:
    allowed = json.loads(approve_reply({"behavior": "allow"}, {"command": "npm test"}))
    assert allowed == {"behavior": "allow", "updatedInput": {"command": "npm test"}}
    denied = json.loads(approve_reply({"behavior": "deny", "message": "no"}, {}))
    assert denied == {"behavior": "deny", "message": "no"}


@pytest.mark.parametrize(
    ("record", "why", "said"),
    [
        ({"status": "expired"}, None, "nobody answered in time"),
        ({"status": "pending"}, "nobody answered in time", "nobody answered in time"),
        ({"status": "responded", "action": "decline", "by": "emacs"}, None,
         "emacs dismissed the question"),
        ({"status": "cancelled", "by": "ada"}, None, "the question was withdrawn by ada"),
        (None, "the hub is down", "the hub is down"),
    ],
)  # fmt: skip
def test_no_decision_is_a_deny_that_says_why(
    record: dict[str, str] | None, why: str | None, said: str
) -> None:
    decision = no_decision(record, "Bash", why)
    assert decision["behavior"] == "deny"
    assert decision["message"].startswith(f"hive-rpc denied this Bash request: {said}.")
