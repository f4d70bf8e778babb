"""An ACP agent's ``session/request_permission``, pure: the hub question it becomes,
and the outcome each kind of answer sends back.

The request (ACP v1 schema, ``RequestPermissionRequest``) carries ``sessionId``, the
``toolCall`` (title, kind, ``content``, ``locations``, maybe ``rawInput``) and the
``options`` the agent offers (``optionId``, ``name``, ``kind``: ``allow_once``,
``allow_always``, ``reject_once``, ``reject_always``).  The answer is
``{"outcome": {"outcome": "selected", "optionId": ...}}`` or ``{"outcome":
{"outcome": "cancelled"}}`` (for a cancelled turn only).

The human picks one of the agent's own options, by its name, so nothing is lost in
translation: an ``allow_always`` is the agent's to remember (hive-rpc saves no rule
for it; its ``confirm`` says so).  What the tool will do is shown in full as the
question's detail: Gemini CLI (0.61.0, measured) sends no ``rawInput``; a shell
command is its title, but a file write's new text and an MCP tool's arguments are
only in the tool call's ``content``, so the title alone would hide them.  The hub's
answer rules (core/rules.py) are checked first, naming the tool
by the tool call's ``name``, else its ``kind``, with ``rawInput`` as its input.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from hive_rpc.core.claude_code import (
    DETAIL_CUT,
    SEE_DETAIL,
    PermissionRequest,
    answered,
    home_relative,
    rule_check_params,
)
from hive_rpc.core.limits import MAX_CHOICES, MAX_QUESTION_CHARS
from hive_rpc.core.prompt import Ask, Kind
from hive_rpc.core.terminal_text import one_line

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")
TITLE_CHARS = 200
"""How much of the title the head line shows (the detail has it whole)."""
CHOICE_CHARS = 80
"""How much of an option's name a choice shows."""
REMEMBERED = (
    "The agent remembers this answer: it may then do the same again without asking "
    "anyone (ACP's allow_always; hive-rpc saves no rule for it)."
)
"""The ``confirm`` of an ``allow_always`` choice, read before it is sent."""

Unanswered = Literal["client", "deny"]
UNANSWERED: tuple[Unanswered, ...] = ("client", "deny")
"""What becomes of a request nobody answered from an editor: the ACP client's own
dialog asks (the request passed on as it came), or the agent is told no."""


class NotAPermissionRequest(ValueError):
    """Params that are no ``session/request_permission``; the message says what is
    missing.  The proxy leaves such a request to the client, which answers it."""


@dataclass(frozen=True)
class Option:
    option_id: str
    name: str
    kind: str


@dataclass(frozen=True)
class AcpPermission:
    """One ``session/request_permission``, its params checked."""

    session_id: str
    tool_call: Mapping[str, Any]
    options: tuple[Option, ...]

    @classmethod
    def from_params(cls, params: object) -> AcpPermission:
        if not isinstance(params, Mapping):
            raise NotAPermissionRequest("params is not an object")
        session, tool_call, options = (
            params.get("sessionId"),
            params.get("toolCall"),
            params.get("options"),
        )
        if not isinstance(session, str):
            raise NotAPermissionRequest("no sessionId string")
        if not isinstance(tool_call, Mapping):
            raise NotAPermissionRequest("no toolCall object")
        if not isinstance(options, list) or not options:
            raise NotAPermissionRequest("no options to choose from")
        if len(options) > MAX_CHOICES:
            raise NotAPermissionRequest(f"{len(options)} options, more than {MAX_CHOICES}")
        parsed = []
        for i, option in enumerate(options):
            if not isinstance(option, Mapping) or not all(
                isinstance(option.get(k), str) for k in ("optionId", "name", "kind")
            ):
                raise NotAPermissionRequest(f"option {i} lacks an optionId, name or kind string")
            parsed.append(Option(option["optionId"], option["name"], option["kind"]))
        return cls(session, tool_call, tuple(parsed))

    def text(self, name: str) -> str | None:
        """The tool call's field ``name`` if it is a string."""
        value = self.tool_call.get(name)
        return value if isinstance(value, str) else None


def choices(permission: AcpPermission) -> dict[str, str]:
    """What the human picks from -> the option it selects: the agent's own option
    names, on one line, made distinct by their optionId when two read the same."""
    out: dict[str, str] = {}
    for option in permission.options:
        name = one_line(option.name)[:CHOICE_CHARS] or one_line(option.option_id)[:CHOICE_CHARS]
        if name in out:
            name = f"{name} ({one_line(option.option_id)[:CHOICE_CHARS]})"
        out[name] = option.option_id
    return out


def _block_text(block: object) -> str:
    """One ``ContentBlock`` as text: a text as is, a resource by its uri (and its
    text), an image or audio by its type."""
    if not isinstance(block, Mapping):
        return json.dumps(block, ensure_ascii=False)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    if kind == "resource_link":
        return f"[resource {block.get('uri')}]"
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        resource = block["resource"]
        text = resource.get("text")
        return f"[resource {resource.get('uri')}]" + (f"\n{text}" if isinstance(text, str) else "")
    if kind in ("image", "audio"):
        return f"[{kind} {block.get('mimeType')}]"
    return json.dumps(block, ensure_ascii=False)


def _content_text(item: object) -> str:
    """One ``ToolCallContent`` as text: content blocks as ``_block_text``, a diff as a
    unified diff of the file, a terminal by its id."""
    if not isinstance(item, Mapping):
        return json.dumps(item, ensure_ascii=False)
    kind = item.get("type")
    if kind == "content":
        return _block_text(item.get("content"))
    if kind == "diff" and isinstance(item.get("newText"), str):
        path = str(item.get("path"))
        old = item.get("oldText")
        old_lines = old.splitlines(keepends=True) if isinstance(old, str) else []
        new_lines = str(item["newText"]).splitlines(keepends=True)
        before = path if isinstance(old, str) else "/dev/null"
        diff = difflib.unified_diff(old_lines, new_lines, before, path)
        return "".join(line if line.endswith("\n") else line + "\n" for line in diff).rstrip("\n")
    if kind == "terminal":
        return f"[terminal {item.get('terminalId')}]"
    return json.dumps(item, ensure_ascii=False)


def detail(permission: AcpPermission) -> str:
    """The tool call in full, as the human reads it before answering: its title and
    kind, each content item (the arguments, for Gemini), the places it touches, and
    ``rawInput`` when the agent sends one.  Cut, saying so, past what a detail may be."""
    call = permission.tool_call
    parts = [f"{k}: {call[k]}" for k in ("title", "kind") if isinstance(call.get(k), str)]
    content = call.get("content")
    for item in content if isinstance(content, list) else []:
        parts.append(_content_text(item))
    locations = call.get("locations")
    for where in locations if isinstance(locations, list) else []:
        if isinstance(where, Mapping):
            line = where.get("line")
            parts.append(f"at {where.get('path')}" + (f":{line}" if line is not None else ""))
    if call.get("rawInput") is not None:
        parts.append("input: " + json.dumps(call["rawInput"], indent=2, ensure_ascii=False))
    text = "\n\n".join(parts)
    if len(text) > MAX_QUESTION_CHARS:
        text = text[: MAX_QUESTION_CHARS - len(DETAIL_CUT)] + DETAIL_CUT
    return text


def question(permission: AcpPermission, *, agent: str, cwd: str | None, home: str | None) -> str:
    """The head line: which agent, where, which session, wants to use which tool (as
    rules name it, and as the hub's audit trail reads it from this line:
    core/audit.py), and the tool call's title."""
    where = one_line(home_relative(cwd, home)) if cwd else "?"
    session = one_line(permission.session_id[:8])
    title = one_line(permission.text("title") or "")
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1] + "\u2026"
    tool = one_line(tool_name(permission))[:CHOICE_CHARS]
    head = f"{one_line(agent)} in {where} (session {session}) wants to use {tool}: "
    return head + (title or "(no title)") + SEE_DETAIL


OPTION_DECISIONS = {
    "allow_once": "allow",
    "allow_always": "allow",
    "reject_once": "deny",
    "reject_always": "deny",
}
"""What an option of each ACP ``kind`` decides, for the audit trail (the question's
``decisions``): the agent names its options as it likes, their kind says what they do."""


def permission_ask(
    permission: AcpPermission,
    *,
    agent: str,
    cwd: str | None,
    home: str | None,
    timeout_s: float,
) -> Ask:
    """The urgent permission question the request becomes, asked as ``agent``."""
    picks = choices(permission)
    kinds = {o.option_id: o.kind for o in permission.options}
    confirm = [
        {"choice": name, "text": REMEMBERED}
        for name, option_id in picks.items()
        if kinds[option_id] == "allow_always"
    ]
    decisions = {
        name: OPTION_DECISIONS[kinds[option_id]]
        for name, option_id in picks.items()
        if kinds[option_id] in OPTION_DECISIONS
    }
    return Ask(
        question=question(permission, agent=agent, cwd=cwd, home=home)[:MAX_QUESTION_CHARS],
        choices=tuple(picks),
        urgent=True,
        timeout_s=timeout_s,
        agent_id=agent,
        kind=Kind.PERMISSION,
        detail=detail(permission),
        confirm=confirm or None,
        decisions=decisions or None,
    )


def answer_option(permission: AcpPermission, record: Mapping[str, Any]) -> str | None:
    """The optionId the human's answer selects, or None: not answered (declined,
    dismissed, withdrawn, expired) or not one of the choices."""
    if not answered(record):
        return None
    return choices(permission).get(str(record.get("answer")))


def _first_of(permission: AcpPermission, kinds: Sequence[str]) -> str | None:
    """The first option of the first of ``kinds`` the agent offers."""
    for kind in kinds:
        for option in permission.options:
            if option.kind == kind:
                return option.option_id
    return None


def tool_name(permission: AcpPermission) -> str:
    """The tool as rules and the question name it: the tool call's ``name``, else its
    ACP ``kind`` (``execute``, ``edit`` ...), else ``other``."""
    return permission.text("name") or permission.text("kind") or "other"


def rule_request(permission: AcpPermission, *, agent: str, cwd: str | None) -> PermissionRequest:
    """The request as the hub's rules see it: the tool is ``tool_name``; its input is
    ``rawInput`` (none from Gemini: then only a rule for the whole tool can match);
    the ACP session and its cwd scope the rules."""
    raw = permission.tool_call.get("rawInput")
    return PermissionRequest(
        tool_name=tool_name(permission),
        tool_input=raw if isinstance(raw, dict) else {},
        session_id=permission.session_id,
        cwd=cwd,
        agent_id=agent,
    )


def rule_params(permission: AcpPermission, *, agent: str, cwd: str | None) -> dict[str, Any]:
    """``rule/check``'s params for the request."""
    params = rule_check_params(rule_request(permission, agent=agent, cwd=cwd))
    assert params is not None  # the input is always an object here
    return params


def rule_option(permission: AcpPermission, checked: Mapping[str, Any] | None) -> str | None:
    """The option a rule's decision selects: a once-option over an always-one (the
    rule stays the hub's to apply), or None: no rule, or no option of that kind."""
    if checked is None:
        return None
    allow = checked.get("decision") == "allow"
    return _first_of(permission, ("allow_once", "allow_always") if allow else REJECT_KINDS)


def deny_option(permission: AcpPermission) -> str | None:
    """The option ``--unanswered deny`` selects, or None when the agent offers no
    reject (then the request is answered ``cancelled``, the only other outcome)."""
    return _first_of(permission, REJECT_KINDS)
