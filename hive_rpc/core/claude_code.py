"""What hive_rpc knows of Claude Code, pure: which agent a Claude Code session is, and
how one of its permission requests becomes a hub question and a decision.

Claude Code (measured on 2.1.328) gives its session id to everything it starts for
that session: a hook reads it as the event's ``session_id``, and an MCP server
process inherits it as the environment variable ``CLAUDE_CODE_SESSION_ID`` (with
``clientInfo.name`` ``claude-code`` in its initialize).  Both name the agent from it
the same way here, so a session's MCP asks and its permission requests are one agent,
and two sessions stay two.

A permission request reaches hive_rpc two ways, and both ask the same question and
decide alike from here: the ``PermissionRequest`` hook (``hive-rpc hook
claude-code``, cli/hook.py) and the MCP tool ``approve`` that ``claude -p
--permission-prompt-tool`` calls (faces/mcp/approve_tool.py).  Only what they print
differs: the hook's output format, or the tool's JSON text (``approve_reply``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hive_rpc.core.errors import HiveError
from hive_rpc.core.limits import MAX_QUESTION_CHARS
from hive_rpc.core.prompt import Ask, Kind
from hive_rpc.core.rules import main_argument, matches, parse_pattern
from hive_rpc.core.terminal_text import one_line

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
"""The environment variable Claude Code sets for its MCP servers and hooks."""
PROJECT_ENV = "CLAUDE_PROJECT_DIR"
"""The session's project directory, set for its MCP servers and hooks alike."""
CLIENT_NAME = "claude-code"
"""Claude Code's ``clientInfo.name`` in the MCP initialize."""

ALLOW = "allow"
ALLOW_SESSION = "allow for this session"
ALLOW_PROJECT = "always allow in this project"
DENY = "deny"
CHOICES = (ALLOW, ALLOW_SESSION, ALLOW_PROJECT, DENY)
"""What the human picks from.  The two lasting ones allow this request and save an
answer rule (``rule/add``) for this tool use in this session or this project."""
LASTING = {ALLOW_SESSION: "session", ALLOW_PROJECT: "project"}
"""The lasting answers and the scope of the rule each saves."""
DECISIONS = {ALLOW: "allow", ALLOW_SESSION: "allow", ALLOW_PROJECT: "allow", DENY: "deny"}
"""What each choice decides, sent with the question (its ``decisions``): the audit
trail's word for the answer."""
DENY_MESSAGE = "The human denied this {tool} request from hive-rpc ({by})."
"""What the model reads as the tool's result on deny."""
RULE_DENY_MESSAGE = "A hive-rpc rule denies this {tool} request: {pattern} ({scope}, rule {id})."
"""What it reads when a deny rule answered, so the human can find the rule."""

SUMMARY_FIELDS = ("command", "file_path", "notebook_path", "url", "pattern", "path", "query")
"""The one tool_input field that says what a tool is about to do, first found wins
(Bash's command, Edit's or Write's file_path, WebFetch's url, Grep's pattern ...)."""
SUMMARY_CHARS = 200
SEE_DETAIL = " (see detail)"
"""Ends a head whose summary is not the field exactly as it runs (cut, or several
lines made one): the human must know there is more before answering."""
DETAIL_CUT = "\n[... cut: the input is longer than a detail may be]"


PROMPT_TOOL_FLAG = "--permission-prompt-tool"
"""Claude Code's flag naming the MCP tool that decides its permission requests."""


def permission_prompt_tool(argv: list[str]) -> str | None:
    """The tool Claude Code's command line ``argv`` names with
    ``--permission-prompt-tool``, or None.  Claude Code asks that tool and its
    PermissionRequest hooks at once and takes the first answer (measured on
    2.1.328), so a hook asking too would put every request to the human twice."""
    for i, arg in enumerate(argv):
        if arg == PROMPT_TOOL_FLAG:
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith(PROMPT_TOOL_FLAG + "="):
            return arg.partition("=")[2]
    return None


def session_agent(session_id: str | None) -> str:
    """The agent id of the Claude Code session ``session_id``: ``claude-code-`` and
    its first 8 characters (a UUID's first group)."""
    return f"{CLIENT_NAME}-{(session_id or 'unknown')[:8]}"


@dataclass(frozen=True)
class PermissionRequest:
    """Claude Code asking to use a tool, however it reached hive_rpc."""

    tool_name: str
    tool_input: object
    """The tool's input as Claude Code sent it (a JSON object, unless it is broken)."""
    session_id: str | None
    cwd: str | None
    """Claude Code's working directory: the project a ``project`` rule covers."""
    agent_id: str | None = None
    """The asking agent, when known otherwise than by the session (an MCP client
    named by ``--agent``, a Codex or Gemini process: core/agents.py); else the
    session's."""
    display: str = "Claude Code"
    """The agent as the question names it (core/agents.py's ``Agent.display``)."""

    @classmethod
    def from_hook_event(
        cls,
        event: Mapping[str, Any],
        *,
        agent_id: str | None = None,
        display: str = "Claude Code",
    ) -> PermissionRequest:
        """A ``PermissionRequest`` hook event (``tool_name``, ``tool_input``,
        ``session_id``, ``cwd``; Codex's is the same, Gemini's ``BeforeTool`` too),
        from the agent ``display`` names, acting as ``agent_id`` when given."""
        session, cwd = event.get("session_id"), event.get("cwd")
        return cls(
            tool_name=str(event.get("tool_name") or ""),
            tool_input=event.get("tool_input", {}),
            session_id=session if isinstance(session, str) else None,
            cwd=cwd if isinstance(cwd, str) else None,
            agent_id=agent_id,
            display=display,
        )

    @property
    def agent(self) -> str:
        return self.agent_id or session_agent(self.session_id)


def home_relative(cwd: str, home: str | None) -> str:
    """``/home/me/src/app`` as ``~/src/app``, as the human thinks of it."""
    if home and (cwd == home or cwd.startswith(home.rstrip("/") + "/")):
        return "~" + cwd[len(home.rstrip("/")) :]
    return cwd


def summary(tool_input: object) -> str:
    """The head's one-line account of the input: the main field as it runs, or, when
    that would hide something (cut, several lines, no main field), a shortened form
    that says so."""
    whole = json.dumps(tool_input, ensure_ascii=False)
    if isinstance(tool_input, Mapping):
        found = (tool_input.get(f) for f in SUMMARY_FIELDS)
        whole = next((v for v in found if isinstance(v, str) and v.strip()), whole)
    shown = one_line(whole)
    if len(shown) > SUMMARY_CHARS:
        return shown[: SUMMARY_CHARS - 1] + "\u2026" + SEE_DETAIL
    return shown if shown == whole else shown + SEE_DETAIL


def permission_ask(request: PermissionRequest, *, timeout_s: float, home: str | None) -> Ask:
    """The question a permission request becomes: one head line saying which session
    wants what, and the tool input in full as the prompt's ``detail`` (the human
    approves what runs, not a summary: editors show the detail before an answer or
    one key away, and the head says "(see detail)" whenever it shows less).  Its
    ``confirm`` says which rule each lasting answer saves, read before it is sent."""
    tool = one_line(request.tool_name or "a tool")
    where = one_line(home_relative(request.cwd or "?", home))
    session = one_line((request.session_id or "?")[:4])
    verb = "run" if tool == "Bash" else "use"
    head = f"{one_line(request.display)} in {where} (session {session}) wants to {verb} {tool}: "
    head += summary(request.tool_input)
    detail = json.dumps(request.tool_input, indent=2, ensure_ascii=False)
    if len(detail) > MAX_QUESTION_CHARS:
        detail = detail[: MAX_QUESTION_CHARS - len(DETAIL_CUT)] + DETAIL_CUT
    return Ask(
        question=head[:MAX_QUESTION_CHARS],
        choices=CHOICES,
        urgent=True,
        timeout_s=timeout_s,
        agent_id=request.agent,
        kind=Kind.PERMISSION,
        detail=detail,
        confirm=confirm_texts(request, home),
        decisions=DECISIONS,
    )


def answered(record: Mapping[str, Any]) -> bool:
    """Whether the human answered the prompt (rather than declining, dismissing it,
    or nobody answering)."""
    return record.get("status") == "responded" and record.get("action") == "accept"


def human_decision(record: Mapping[str, Any], tool: str) -> dict[str, Any] | None:
    """The decision of a closed prompt (Claude Code's ``behavior`` allow, or deny with
    the message the model reads), or None unless the human answered allow or deny."""
    if not answered(record):
        return None
    answer = record.get("answer")
    if answer in (ALLOW, *LASTING):
        return {"behavior": "allow"}
    if answer == DENY:
        by = str(record.get("by") or "human")
        return {"behavior": "deny", "message": DENY_MESSAGE.format(tool=tool, by=by)}
    return None


def rule_check_params(request: PermissionRequest) -> dict[str, Any] | None:
    """``rule/check``'s parameters for the request, or None when no rule can answer
    it (an input that is not an object): ask the human."""
    if not isinstance(request.tool_input, dict):
        return None
    params: dict[str, Any] = {"tool_name": request.tool_name, "tool_input": request.tool_input}
    if request.session_id is not None:
        params["session_id"] = request.session_id
    if request.cwd is not None:
        params["project"] = request.cwd
    return params


def rule_decision(checked: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """The decision ``rule/check`` found: the rule answers, the human is not asked."""
    if checked["decision"] == "allow":
        return {"behavior": "allow"}
    rule = checked["rule"]
    message = RULE_DENY_MESSAGE.format(
        tool=tool, pattern=rule["pattern"], scope=rule["scope"], id=rule["id"]
    )
    return {"behavior": "deny", "message": message}


def rule_pattern(tool: str, tool_input: Mapping[str, Any]) -> str | None:
    """The Claude Code rule that covers exactly this use: ``Bash(npm test)``, or the
    whole tool when its input has no main argument (an MCP tool's).  None when no
    rule can say exactly this (an argument that would read as a prefix)."""
    argument = main_argument(tool_input)
    pattern = tool if argument is None else f"{tool}({argument})"
    try:
        parsed = parse_pattern(pattern)
    except HiveError:
        return None
    if parsed.prefix or not matches(parsed, tool, tool_input):
        return None
    return pattern


class NoRule(ValueError):
    """A lasting answer whose rule cannot be saved; the message says why.  The
    human's allow stands: the request is allowed once."""


def _rule_to_save(request: PermissionRequest, scope: str) -> dict[str, Any]:
    """The rule (``pattern``, ``scope``, ``where``) a lasting answer of ``scope``
    saves for this request; NoRule when no rule can name exactly this use."""
    pattern = (
        rule_pattern(request.tool_name, request.tool_input)
        if isinstance(request.tool_input, dict)
        else None
    )
    where = request.session_id if scope == "session" else request.cwd
    if pattern is None or where is None:
        raise NoRule(f"no rule can name exactly this {request.tool_name} request")
    return {"pattern": pattern, "decision": "allow", "scope": scope, "where": where}


def lasting_rule(request: PermissionRequest, record: Mapping[str, Any]) -> dict[str, Any] | None:
    """``rule/add``'s parameters for the rule a lasting answer asks for ("allow for
    this session", "always allow in this project"), or None for any other answer;
    NoRule when the answer is lasting but no rule can name exactly this use.  The
    same rule ``confirm_texts`` showed the human before the answer."""
    scope = LASTING.get(str(record.get("answer")))
    if scope is None or not isinstance(request.tool_input, dict):
        return None
    rule = _rule_to_save(request, scope)
    return {**rule, "by": f"prompt {record['id']}", "from_prompt": record["id"]}


def rule_text(request: PermissionRequest, scope: str, home: str | None) -> str:
    """What a lasting answer does, in words the human reads before it is sent: the
    rule it saves, where it applies, and that matching requests then run unasked; or
    that no rule can name this request, so it is allowed once."""
    try:
        rule = _rule_to_save(request, scope)
    except NoRule:
        return (
            f"No rule can name exactly this {one_line(request.tool_name or 'tool')} request: "
            "this answer allows it once and saves nothing."
        )
    # At most MAX_PATTERN_CHARS (rules.parse_pattern); several lines are shown as one,
    # and then the detail has it as it is saved.
    pattern = one_line(rule["pattern"])
    pattern += SEE_DETAIL if pattern != rule["pattern"] else ""
    if scope == "project":
        project = one_line(home_relative(rule["where"], home))
        where = f"every later request in this project ({project})"
    else:
        session = one_line(rule["where"][:8])
        where = f"every later request in this {request.display} session ({session}\u2026)"
    return (
        f"This answer saves a rule: allow {pattern}, for {where}. "
        "Matching requests then run without asking you."
    )


def confirm_texts(request: PermissionRequest, home: str | None) -> list[dict[str, str]]:
    """The question's ``confirm``: each lasting choice with the rule it will save, so
    every face shows that rule and asks again before the answer is sent."""
    return [
        {"choice": choice, "text": rule_text(request, scope, home)}
        for choice, scope in LASTING.items()
    ]


def approve_reply(decision: Mapping[str, Any], tool_input: object) -> str:
    """What the MCP tool ``approve`` returns for a decision, as the one text block
    Claude Code's ``--permission-prompt-tool`` reads (measured on 2.1.328):
    ``{"behavior": "allow", "updatedInput": <the input, unchanged>}`` or
    ``{"behavior": "deny", "message": ...}``."""
    if decision.get("behavior") == "allow":
        return json.dumps({"behavior": "allow", "updatedInput": tool_input}, ensure_ascii=False)
    reply = {"behavior": "deny", "message": str(decision.get("message") or "denied")}
    return json.dumps(reply, ensure_ascii=False)


NO_DECISION_MESSAGE = (
    "hive-rpc denied this {tool} request: {why}. Nothing was allowed by default; ask "
    "again once the human is there."
)
"""The deny ``approve`` gives when the human gave no decision: a ``claude -p`` run has
no dialog of its own to fall back on, and only a deny never runs anything unasked."""


def no_decision(
    record: Mapping[str, Any] | None, tool: str, why: str | None = None
) -> dict[str, Any]:
    """The deny for a request nobody decided: ``record`` the prompt as it closed
    (expired, declined, withdrawn) or as it was when the wait ran out (pending,
    ``why`` then says so), or None with ``why`` (no hub, an error)."""
    if record is None:
        reason = why or "the human could not be asked"
    elif record.get("status") == "expired":
        reason = "nobody answered in time"
    elif record.get("status") == "responded":
        reason = f"{record.get('by') or 'the human'} dismissed the question"
    elif record.get("status") == "cancelled":
        reason = f"the question was withdrawn by {record.get('by') or 'someone'}"
    else:
        reason = why or "no answer came"
    return {"behavior": "deny", "message": NO_DECISION_MESSAGE.format(tool=tool, why=reason)}
