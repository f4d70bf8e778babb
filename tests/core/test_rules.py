"""Answer rules in Claude Code's syntax (core/rules.py): what each form covers, the
scopes, deny winning over allow, and the refusals a person can act on."""

from __future__ import annotations

import pytest

from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.rules import (
    MAX_PATTERN_CHARS,
    Pattern,
    Rule,
    decide,
    matches,
    new_rule,
    parse_pattern,
)

BASH = "Bash"


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("Bash", Pattern("Bash")),
        ("Bash(npm test)", Pattern("Bash", "npm test")),
        ("Bash(npm run test:*)", Pattern("Bash", "npm run test", prefix=True)),
        ("mcp__github__create_pr", Pattern("mcp__github__create_pr")),
        ("Read(/src/app/README.md)", Pattern("Read", "/src/app/README.md")),
    ],
)
def test_claude_codes_forms_parse(text: str, pattern: Pattern) -> None:
    assert parse_pattern(text) == pattern


@pytest.mark.parametrize(
    "text", ["", "Bash(", "Bash()", "Ba sh", "(npm)", "Bash(npm", "x" * (MAX_PATTERN_CHARS + 1)]
)
def test_what_is_not_a_rule_is_refused_naming_the_pattern(text: str) -> None:
    with pytest.raises(InvalidParams) as refused:
        parse_pattern(text)
    assert refused.value.data["param"] == "pattern"


def test_what_each_form_covers() -> None:
    npm_test = {"command": "npm test"}
    assert matches(parse_pattern("Bash"), BASH, {"command": "rm -rf /"})
    assert matches(parse_pattern("Bash(npm test)"), BASH, npm_test)
    assert not matches(parse_pattern("Bash(npm test)"), BASH, {"command": "npm test --all"})
    assert matches(parse_pattern("Bash(npm test:*)"), BASH, {"command": "npm test --all"})
    assert not matches(parse_pattern("Bash(npm test:*)"), BASH, {"command": "npx test"})
    assert not matches(parse_pattern("Bash(npm test)"), "Read", npm_test)  # another tool
    assert not matches(parse_pattern("Bash(npm test)"), BASH, {})  # no command at all
    assert matches(parse_pattern("Read(/a:*)"), "Read", {"file_path": "/a/b.txt"})
    assert matches(parse_pattern("mcp__github"), "mcp__github__create_pr", {})
    assert not matches(parse_pattern("mcp__github"), "mcp__githubx__create_pr", {})
    assert not matches(parse_pattern("mcp__github__create_pr"), "mcp__github__merge", {})


def rule(n: int, pattern: str, decision: str, scope: str, where: str | None = None) -> Rule:
    return new_rule(f"r{n}", pattern, decision, scope, where, made_by="human", now=float(n))


def test_deny_wins_and_scopes_hold() -> None:
    rules = [
        rule(1, "Bash(npm:*)", "allow", "global"),
        rule(2, "Bash(npm publish:*)", "deny", "project", "/src/app"),
        rule(3, "Bash(make:*)", "allow", "session", "s-1"),
    ]
    publish = {"command": "npm publish --tag next"}
    here = {"session": "s-1", "project": "/src/app/web"}
    elsewhere = {"session": "s-2", "project": "/src/other"}
    assert decide(rules, BASH, publish, **here) == rules[1]  # deny wins, in the project
    assert decide(rules, BASH, publish, **elsewhere) == rules[0]  # outside it: allowed
    assert decide(rules, BASH, {"command": "make all"}, **here) == rules[2]
    assert decide(rules, BASH, {"command": "make all"}, **elsewhere) is None  # ask the human
    assert decide(rules, BASH, {"command": "npm ci"}, session=None, project="/src/appx") == rules[0]
    assert decide(rules, BASH, publish, session=None, project="/src/appx") == rules[0]


@pytest.mark.parametrize(
    ("decision", "scope", "where", "param"),
    [
        ("maybe", "global", None, "decision"),
        ("allow", "forever", None, "scope"),
        ("allow", "global", "/src", "where"),
        ("allow", "session", None, "where"),
        ("allow", "project", "src/app", "where"),
    ],
)
def test_a_rule_is_checked_whole(decision: str, scope: str, where: str | None, param: str) -> None:
    with pytest.raises(InvalidParams) as refused:
        new_rule("r", "Bash", decision, scope, where, made_by="human", now=0.0)
    assert refused.value.data["param"] == param
