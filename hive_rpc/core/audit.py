"""The audit trail of permission decisions: who decided what an agent may do, how, and
how long the agent waited.

A human who lets agents run commands must be able to say afterwards who allowed
``rm -rf build`` and when.  So every permission decision is one entry, made by the hub
itself from what it saw (a permission prompt closing, a rule answering ``rule/check``),
never reported by the hook, which an agent could fake:

* a **human** decision: a prompt of kind ``permission`` closed (answered, declined,
  expired or withdrawn); its entry's id is the prompt's id, so two hubs sharing a store
  that both see the prompt close write the same entry;
* a **rule** decision: ``rule/check`` found the rule that answers a tool use.

Pure: entries are values built from a prompt or a rule, with the times given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from hive_rpc.core.claude_code import ALLOW, ALLOW_PROJECT, ALLOW_SESSION, DENY
from hive_rpc.core.claude_questions import is_questions_schema
from hive_rpc.core.prompt import Action, Kind, Prompt, Status
from hive_rpc.core.rules import Rule, main_argument
from hive_rpc.core.terminal_text import one_line

MAX_ENTRIES = 5000
"""Entries the store keeps: the newest; an older one is deleted as a new one comes."""
DEFAULT_LIMIT = 100
"""Entries ``audit/list`` returns when not told (the newest)."""
MAX_LIMIT = MAX_ENTRIES
SUMMARY_CHARS = 200

ALLOWING = (ALLOW, ALLOW_SESSION, ALLOW_PROJECT)
"""The answers of a permission prompt that allow (core/claude_code.py's choices)."""
DENYING = (DENY,)

Source = Literal["human", "rule"]
Decision = Literal["allow", "deny", "answer", "none"]
"""``allow`` / ``deny``; ``answer`` for another accepted answer (a pick in one of
Claude Code's own questions); ``none`` when nobody decided (declined, dismissed,
expired, withdrawn: Claude Code then asks in its own dialog)."""

_HEAD = re.compile(r" wants to (?:run|use) (?P<tool>[A-Za-z_][A-Za-z0-9_-]*): (?P<summary>.*)$")
"""The first line of a permission prompt's question: "Claude Code in ~/src/app (session
3f2a) wants to run Bash: npm test" (core/claude_code.py, for the hook and the MCP tool
approve alike)."""


class UnreadableEntry(ValueError):
    """A stored document that is no audit entry (written by hand, or by another version)."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One decision.  Field names are the wire names (docs/protocol.md, audit/list)."""

    id: str
    """The prompt's id for a human decision; ``rule-`` and 12 hex digits for a rule's."""
    at: float
    """When it was decided (float Unix seconds)."""
    source: Source
    decision: Decision
    by: str
    """Who decided: the answering client's ``by`` (``dashboard``, the name an editor
    gives, ``human`` by default), ``rule`` for a rule, the canceller for a withdrawn
    prompt, ``nobody`` for an expired one."""
    latency_s: float
    """How long the agent waited: the prompt's closing minus its asking; for a rule,
    the time ``rule/check`` took."""
    tool: str | None
    summary: str
    """What the tool was about to do, in one line (a Bash command, a path ...)."""
    prompt_id: str | None = None
    agent_id: str | None = None
    answer: Any = None
    """The human's answer as given (``allow for this session``), or None."""
    status: str | None = None
    """The prompt's final status (``responded``, ``expired``, ``cancelled``)."""
    action: str | None = None
    """The prompt's action (``accept``, ``decline``, ``cancel``) when responded."""
    rule_id: str | None = None
    rule_pattern: str | None = None
    rule_scope: str | None = None
    session_id: str | None = None
    project: str | None = None

    def record(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELD_NAMES}

    @classmethod
    def from_record(cls, body: object) -> AuditEntry:
        """The entry a store kept; UnreadableEntry when ``body`` is none (no string id, no
        numeric time, a field missing)."""
        if not isinstance(body, Mapping) or not isinstance(body.get("id"), str):
            raise UnreadableEntry("not an audit entry: no id")
        at = body.get("at")
        if isinstance(at, bool) or not isinstance(at, int | float):
            raise UnreadableEntry("not an audit entry: no time (at)")
        try:
            return cls(**{k: v for k, v in body.items() if k in _FIELD_NAMES})
        except TypeError as e:
            raise UnreadableEntry(f"not an audit entry: {e}") from None


_FIELD_NAMES = tuple(f.name for f in fields(AuditEntry))


QUESTIONS_TOOL = "AskUserQuestion"
"""The tool of an entry for Claude Code's own questions to the human (the hook asks
them as one schema prompt, core/claude_questions.py)."""


def _tool_and_summary(question: str) -> tuple[str | None, str]:
    head = question.split("\n", 1)[0]
    found = _HEAD.search(head)
    if found is None:
        return None, one_line(head)[:SUMMARY_CHARS]
    return found["tool"], one_line(found["summary"])[:SUMMARY_CHARS]


def human_decision(prompt: Prompt) -> Decision:
    """What a closed permission prompt decided: as its asker said each choice decides
    (``decisions``), else by hive-rpc's own words for Claude Code's choices (a
    record asked before ``decisions`` existed)."""
    if prompt.status is not Status.RESPONDED or prompt.action is not Action.ACCEPT:
        return "none"
    if prompt.decisions is not None and isinstance(prompt.answer, str):
        decided = prompt.decisions.get(prompt.answer)
        if decided == "allow":
            return "allow"
        if decided == "deny":
            return "deny"
    if prompt.answer in ALLOWING:
        return "allow"
    if prompt.answer in DENYING:
        return "deny"
    return "answer"


def from_prompt(prompt: Prompt) -> AuditEntry | None:
    """The entry of a closed permission prompt; None for a question, or a prompt still
    pending (not a decision yet)."""
    if prompt.kind is not Kind.PERMISSION or prompt.is_pending:
        return None
    closed_at = prompt.closed_at or prompt.created_at
    tool, summary = _tool_and_summary(prompt.question)
    if tool is None and is_questions_schema(prompt.schema):
        tool = QUESTIONS_TOOL
    by = prompt.by or ("nobody" if prompt.status is Status.EXPIRED else "unknown")
    return AuditEntry(
        id=prompt.id,
        at=closed_at,
        source="human",
        decision=human_decision(prompt),
        by=by,
        latency_s=max(0.0, closed_at - prompt.created_at),
        tool=tool,
        summary=summary,
        prompt_id=prompt.id,
        agent_id=prompt.agent_id,
        answer=prompt.answer,
        status=prompt.status.value,
        action=prompt.action.value if prompt.action is not None else None,
    )


def input_summary(tool_input: Mapping[str, Any]) -> str:
    """A tool use's main argument (a command, a path, a URL), else its input as JSON,
    in one line."""
    argument = main_argument(tool_input)
    if argument is None:
        argument = json.dumps(tool_input, ensure_ascii=False, default=str)
    return one_line(argument)[:SUMMARY_CHARS]


def from_rule(
    entry_id: str,
    rule: Rule,
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    session: str | None,
    project: str | None,
    at: float,
    latency_s: float,
) -> AuditEntry:
    """The entry of a rule that answered ``rule/check`` for this tool use."""
    return AuditEntry(
        id=entry_id,
        at=at,
        source="rule",
        decision=rule.decision,
        by="rule",
        latency_s=max(0.0, latency_s),
        tool=tool_name,
        summary=input_summary(tool_input),
        rule_id=rule.id,
        rule_pattern=rule.pattern,
        rule_scope=rule.scope,
        session_id=session,
        project=project,
    )


def select(entries: Iterable[AuditEntry], *, since: float | None, limit: int) -> list[AuditEntry]:
    """The newest ``limit`` entries decided at or after ``since``, oldest first."""
    chosen = sorted(
        (e for e in entries if since is None or e.at >= since), key=lambda e: (e.at, e.id)
    )
    return chosen[-limit:] if limit > 0 else []


def to_prune(ages: Mapping[str, float], keep: int = MAX_ENTRIES) -> list[str]:
    """The ids to delete so that only the newest ``keep`` remain (``ages``: id -> at)."""
    if len(ages) <= keep:
        return []
    oldest_first = sorted(ages, key=lambda k: (ages[k], k))
    return oldest_first[: len(ages) - keep]


__all__ = [
    "ALLOWING",
    "DEFAULT_LIMIT",
    "DENYING",
    "MAX_ENTRIES",
    "MAX_LIMIT",
    "AuditEntry",
    "UnreadableEntry",
    "from_prompt",
    "from_rule",
    "human_decision",
    "input_summary",
    "select",
    "to_prune",
]
