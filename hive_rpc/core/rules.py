"""Answer rules for agents' permission requests, in Claude Code's own rule syntax.

A human who runs many agents answers the same permission again and again ("may it
run ``npm test``?").  A rule answers it for them: ``Bash(npm test:*)`` allow, in
this project.  The syntax is Claude Code's (its settings' ``permissions.allow`` /
``deny`` entries), so nobody learns a second one:

* ``Tool``: every use of the tool (``Bash``, ``WebFetch``, ``mcp__github__create_pr``);
* ``Tool(text)``: the use whose main argument is exactly ``text`` (for ``Bash`` the
  command; for file tools the path; for ``WebFetch`` the URL);
* ``Tool(prefix:*)``: the main argument starts with ``prefix`` (``Bash(npm run test:*)``);
* ``mcp__server``: every tool of that MCP server.

A rule holds for one scope: a ``session`` (one Claude Code session id), a
``project`` (a directory and everything under it) or ``global``.  Deny wins over
allow, whatever the scope.  Rules are answers to permissions only: never to a
question an agent asks the human.  Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hive_rpc.core.errors import InvalidParams

Decision = Literal["allow", "deny"]
Scope = Literal["session", "project", "global"]
DECISIONS: tuple[Decision, ...] = ("allow", "deny")
SCOPES: tuple[Scope, ...] = ("session", "project", "global")
MAX_PATTERN_CHARS = 1000
"""A rule is a human's line, not a document: longer is a mistake (or an attack)."""
MAX_RULES = 1000
"""Rules the hub keeps in all (``rule/add`` beyond: LimitReached ``rules``)."""

_TOOL = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MAIN_ARGUMENT = ("command", "file_path", "path", "notebook_path", "url", "pattern", "query")
"""The tool input's field a rule's ``(text)`` is about, first found wins: Bash's
command, the file tools' path, WebFetch's url, Grep/Glob's pattern, WebSearch's query."""


@dataclass(frozen=True, slots=True)
class Pattern:
    tool: str
    argument: str | None = None
    prefix: bool = False

    @property
    def server_wide(self) -> bool:
        """``mcp__server``: every tool of that MCP server."""
        return self.tool.startswith("mcp__") and self.tool.count("__") == 1


@functools.lru_cache(maxsize=1024)
def parse_pattern(text: str) -> Pattern:
    """``text`` read as a Claude Code permission rule, or InvalidParams saying why.

    Cached: ``decide`` reads every stored rule's pattern on each permission request,
    and a refused pattern raises again (exceptions are not cached)."""
    if not text or len(text) > MAX_PATTERN_CHARS:
        raise InvalidParams(
            f"a rule is 1 to {MAX_PATTERN_CHARS} characters, got {len(text)}", param="pattern"
        )
    tool, paren, rest = text.partition("(")
    if not _TOOL.fullmatch(tool):
        raise InvalidParams(
            f"rule {text[:80]!r}: {tool[:80]!r} is not a tool name (Bash, Read, "
            "mcp__server__tool ...)",
            param="pattern",
        )
    if not paren:
        return Pattern(tool)
    if not rest.endswith(")") or not rest[:-1]:
        raise InvalidParams(
            f"rule {text[:80]!r}: write Tool(argument) or Tool(prefix:*), with a closing ')'",
            param="pattern",
        )
    argument = rest[:-1]
    if argument.endswith(":*"):
        return Pattern(tool, argument[:-2], prefix=True)
    return Pattern(tool, argument)


def main_argument(tool_input: Mapping[str, Any]) -> str | None:
    for field in _MAIN_ARGUMENT:
        value = tool_input.get(field)
        if isinstance(value, str):
            return value
    return None


def matches(pattern: Pattern, tool_name: str, tool_input: Mapping[str, Any]) -> bool:
    """Whether ``pattern`` covers this use of ``tool_name`` (linear in the input)."""
    if pattern.server_wide:
        return tool_name.startswith(pattern.tool + "__")
    if tool_name != pattern.tool:
        return False
    if pattern.argument is None:
        return True
    argument = main_argument(tool_input)
    if argument is None:
        return False
    if pattern.prefix:
        return argument.startswith(pattern.argument)
    return argument == pattern.argument


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    pattern: str
    decision: Decision
    scope: Scope
    where: str | None
    """The session id or the project directory; None for ``global``."""
    made_by: str
    """Who made it: ``human`` at the CLI, or ``prompt ID`` for an "allow for this
    session/project" answer."""
    created_at: float
    from_prompt: str | None = None
    """The permission prompt whose lasting answer ("allow for this session", "always
    allow in this project") made this rule; None for a rule added by hand."""

    def applies(self, session: str | None, project: str | None) -> bool:
        if self.scope == "global":
            return True
        if self.scope == "session":
            return session is not None and session == self.where
        return project is not None and self.where is not None and _within(project, self.where)

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pattern": self.pattern,
            "decision": self.decision,
            "scope": self.scope,
            "where": self.where,
            "made_by": self.made_by,
            "created_at": self.created_at,
            "from_prompt": self.from_prompt,
        }

    @classmethod
    def from_record(cls, body: Mapping[str, Any]) -> Rule:
        return cls(
            id=str(body["id"]),
            pattern=str(body["pattern"]),
            decision=body["decision"],
            scope=body["scope"],
            where=body.get("where"),
            made_by=str(body.get("made_by") or "human"),
            created_at=float(body.get("created_at") or 0.0),
            from_prompt=body.get("from_prompt"),
        )


def _within(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") or "/"
    return path == directory or path.startswith(directory if directory == "/" else directory + "/")


def new_rule(
    rule_id: str,
    pattern: str,
    decision: str,
    scope: str,
    where: str | None,
    *,
    made_by: str,
    now: float,
    from_prompt: str | None = None,
) -> Rule:
    """A rule from a request's words, checked: the pattern parses, the decision and
    scope are known, and ``where`` is given exactly when the scope needs one."""
    parse_pattern(pattern)
    if decision not in DECISIONS:
        raise InvalidParams(
            f"decision must be {' or '.join(DECISIONS)}, got {decision!r}", param="decision"
        )
    if scope not in SCOPES:
        raise InvalidParams(
            f"scope must be one of {', '.join(SCOPES)}, got {scope!r}", param="scope"
        )
    if scope == "global" and where is not None:
        raise InvalidParams("a global rule has no where", param="where")
    if scope != "global" and not where:
        what = "the session id" if scope == "session" else "the project directory"
        raise InvalidParams(f"a {scope} rule needs where: {what}", param="where")
    if scope == "project" and where is not None and not where.startswith("/"):
        raise InvalidParams(f"a project is an absolute directory, got {where!r}", param="where")
    return Rule(rule_id, pattern, decision, scope, where, made_by, now, from_prompt)


def decide(
    rules: Iterable[Rule],
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    session: str | None,
    project: str | None,
) -> Rule | None:
    """The rule that answers this use, or None (ask the human).  Deny wins over allow;
    among rules of the same decision, the oldest."""
    found: Rule | None = None
    for rule in sorted(rules, key=lambda r: r.created_at):
        if not rule.applies(session, project):
            continue
        if not matches(parse_pattern(rule.pattern), tool_name, tool_input):
            continue
        if rule.decision == "deny":
            return rule
        found = found or rule
    return found


__all__ = [
    "DECISIONS",
    "MAX_PATTERN_CHARS",
    "MAX_RULES",
    "SCOPES",
    "Pattern",
    "Rule",
    "decide",
    "main_argument",
    "matches",
    "new_rule",
    "parse_pattern",
]
