"""``hive-rpc hook claude-code``: Claude Code's permission requests, answered by the
human from an editor.

Claude Code runs a hook command with one JSON object on stdin and reads its decision
from stdout (docs/claude-code.md cites the fields).  For ``PermissionRequest`` a
rule in the hub answers (``rule/check``), else this asks the hub an urgent question
from that Claude Code session and prints the human's allow or deny, saving a rule
when the human allows for the session or the project.  Claude Code's own questions
(``AskUserQuestion``) come as PermissionRequests too: each is asked with its
options as the choices, and the picks go back as the tool's answers.  A hook fails safe: when
there is no decision to give (hub down, no answer in time, a decline, input it
does not understand, any error) it prints nothing and exits 0, so Claude Code
shows its own dialog.  It never allows by default, and it starts no hub: a hub
started now has no editor to show the question.

Like the other client commands it imports the client and nothing of the hub, its
faces or the MCP SDK: Claude Code waits on this process for every permission.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from hive_rpc.cli.commands import HUB_TIMEOUT_S
from hive_rpc.cli.exits import EXIT_OK
from hive_rpc.cli.hook_events import other_event
from hive_rpc.client import HubClient, prove_approver
from hive_rpc.core.errors import HiveError
from hive_rpc.core.limits import MAX_QUESTION_CHARS
from hive_rpc.core.prompt import Ask, Kind
from hive_rpc.core.rules import main_argument, matches, parse_pattern
from hive_rpc.core.terminal_text import one_line, strip_controls

CLAUDE_CODE_HOOK_TIMEOUT_S = 600.0
"""Claude Code's default timeout for a command hook (its hooks reference; measured on
2.1.328: a PermissionRequest hook still running is killed after 600 s)."""
DEFAULT_TIMEOUT_S = 540.0
"""How long the hook waits for the human by default: below Claude Code's own limit,
so the hook withdraws its question and exits before it is killed."""
CLEANUP_S = 5.0
"""How long withdrawing an unanswered question may take once the wait is over."""

ALLOW = "allow"
ALLOW_SESSION = "allow for this session"
ALLOW_PROJECT = "always allow in this project"
DENY = "deny"
CHOICES = (ALLOW, ALLOW_SESSION, ALLOW_PROJECT, DENY)
"""What the human picks from.  The two lasting ones allow this request and save an
answer rule (``rule/add``) for this tool use in this session or this project."""
LASTING = {ALLOW_SESSION: "session", ALLOW_PROJECT: "project"}
"""The lasting answers and the scope of the rule each saves."""
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


class NotAHookEvent(ValueError):
    """stdin held no Claude Code hook event."""


def read_event(raw: bytes) -> dict[str, Any]:
    """The hook's JSON object, or NotAHookEvent saying why not."""
    try:
        event = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as e:
        raise NotAHookEvent(f"stdin is not JSON ({e})") from None
    if not isinstance(event, dict) or not isinstance(event.get("hook_event_name"), str):
        raise NotAHookEvent("stdin is not a Claude Code hook event (no hook_event_name)")
    return event


def _home_relative(cwd: str, home: str | None) -> str:
    """``/home/me/src/app`` as ``~/src/app``, as the human thinks of it."""
    if home and (cwd == home or cwd.startswith(home.rstrip("/") + "/")):
        return "~" + cwd[len(home.rstrip("/")) :]
    return cwd


def agent_id(event: Mapping[str, Any]) -> str:
    """The asking agent: one per Claude Code session, so sessions are told apart."""
    session = str(event.get("session_id") or "unknown")
    return f"claude-code-{session[:8]}"


def _summary(tool_input: object) -> str:
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


def permission_ask(event: Mapping[str, Any], *, timeout_s: float, home: str | None) -> Ask:
    """The question a PermissionRequest becomes: one head line saying which session
    wants what, and the tool input in full as the prompt's ``detail`` (the human
    approves what runs, not a summary: editors show the detail before an answer or
    one key away, and the head says "(see detail)" whenever it shows less)."""
    tool = one_line(str(event.get("tool_name") or "a tool"))
    tool_input = event.get("tool_input", {})
    where = one_line(_home_relative(str(event.get("cwd") or "?"), home))
    session = one_line(str(event.get("session_id") or "?")[:4])
    verb = "run" if tool == "Bash" else "use"
    head = f"Claude Code in {where} (session {session}) wants to {verb} {tool}: "
    head += _summary(tool_input)
    detail = json.dumps(tool_input, indent=2, ensure_ascii=False)
    if len(detail) > MAX_QUESTION_CHARS:
        detail = detail[: MAX_QUESTION_CHARS - len(DETAIL_CUT)] + DETAIL_CUT
    return Ask(
        question=head[:MAX_QUESTION_CHARS],
        choices=CHOICES,
        urgent=True,
        timeout_s=timeout_s,
        agent_id=agent_id(event),
        kind=Kind.PERMISSION,
        detail=detail,
    )


def decision_output(decision: dict[str, Any]) -> dict[str, Any]:
    """The PermissionRequest hook output carrying ``decision``."""
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def human_decision(record: Mapping[str, Any], tool: str) -> dict[str, Any] | None:
    """The decision of a closed prompt, or None (print nothing: Claude Code asks
    itself) unless the human answered allow or deny."""
    if record.get("status") != "responded" or record.get("action") != "accept":
        return None
    answer = record.get("answer")
    if answer in (ALLOW, *LASTING):
        return {"behavior": "allow"}
    if answer == DENY:
        by = str(record.get("by") or "human")
        return {"behavior": "deny", "message": DENY_MESSAGE.format(tool=tool, by=by)}
    return None


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


async def check_rules(client: HubClient, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The rule that answers this request (``rule/check``), or None: ask the human.
    A hub without rules (older than ``rule/check``) answers None."""
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    params = {"tool_name": str(event.get("tool_name")), "tool_input": tool_input}
    if isinstance(event.get("session_id"), str):
        params["session_id"] = event["session_id"]
    if isinstance(event.get("cwd"), str):
        params["project"] = event["cwd"]
    try:
        checked: dict[str, Any] | None = await client.call("rule/check", params)
    except HiveError as e:
        if e.kind == "method_not_found":
            return None
        raise
    return checked


async def remember(client: HubClient, event: Mapping[str, Any], record: Mapping[str, Any]) -> None:
    """Save the rule a lasting answer asks for.  The human's allow stands even when it
    cannot be saved (the rule limit, an input no rule can name): stderr says so."""
    scope = LASTING.get(str(record.get("answer")))
    tool_input = event.get("tool_input")
    if scope is None or not isinstance(tool_input, dict):
        return
    tool = str(event.get("tool_name"))
    pattern = rule_pattern(tool, tool_input)
    where = event.get("session_id") if scope == "session" else event.get("cwd")
    if pattern is None or not isinstance(where, str):
        _say(f"allowed once: no rule can name exactly this {tool} request")
        return
    params = {
        "pattern": pattern,
        "decision": "allow",
        "scope": scope,
        "where": where,
        "by": f"prompt {record['id']}",
        "from_prompt": record["id"],
    }
    # Only an approver adds rules; the hook runs outside the agent's sandbox, so it can
    # read the approver token (an agent's Bash running this hook cannot: security.md).
    why = await prove_approver(client.call)
    try:
        await client.call("rule/add", params)
    except HiveError as e:
        _say(f"allowed once: the rule {pattern} was not saved: {e}" + (f" ({why})" if why else ""))


async def ask_human(client: HubClient, ask: Ask, deadline: float) -> dict[str, Any]:
    """Ask the hub and wait until ``deadline`` (trio time) for the human; the prompt's
    record.  A question still pending then is withdrawn, so no editor keeps showing it."""
    record: dict[str, Any] = await client.call("hive/ask", ask.params())
    prompt_id = record["id"]
    try:
        with trio.move_on_at(deadline):
            left = max(0.0, deadline - trio.current_time())
            record = await client.call(
                "hive/await", {"id": prompt_id, "timeout_s": left, "agent_id": ask.agent_id}
            )
    finally:
        if record.get("status") == "pending":
            with trio.CancelScope(shield=True), trio.move_on_after(CLEANUP_S):
                await client.call("hive/cancel", {"id": prompt_id, "agent_id": ask.agent_id})
    return record


async def ask_permission(
    client: HubClient, event: Mapping[str, Any], timeout_s: float
) -> dict[str, Any]:
    """The permission question, asked and waited for up to ``timeout_s``."""
    ask = permission_ask(event, timeout_s=timeout_s, home=os.environ.get("HOME"))
    return await ask_human(client, ask, trio.current_time() + timeout_s)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def claude_questions(event: Mapping[str, Any], *, timeout_s: float) -> list[Ask] | None:
    """Claude Code's own questions (its ``AskUserQuestion`` tool, which reaches this
    hook as a PermissionRequest) as hub questions, one per question, its options as
    the choices; None when one cannot be asked that way (a multi-select)."""
    tool_input = event.get("tool_input")
    questions = tool_input.get("questions") if isinstance(tool_input, Mapping) else None
    if not isinstance(questions, list) or not questions:
        return None
    asks = []
    for q in questions:
        if (
            not isinstance(q, Mapping)
            or q.get("multiSelect")
            or not isinstance(q.get("question"), str)
        ):
            return None
        options = q.get("options")
        if not isinstance(options, list) or not options:
            return None
        labels = [
            o["label"] for o in options if isinstance(o, Mapping) and _is_text(o.get("label"))
        ]
        if len(labels) != len(options):
            return None
        described = [
            f"- {o['label']}: {o['description']}"
            for o in options
            if isinstance(o.get("description"), str) and o["description"]
        ]
        text = q["question"] + ("\n\n" + "\n".join(described) if described else "")
        asks.append(
            Ask(
                question=text,
                choices=labels,
                timeout_s=timeout_s,
                agent_id=agent_id(event),
                kind=Kind.PERMISSION,
            )
        )
    return asks


async def answer_questions(
    client: HubClient, event: Mapping[str, Any], timeout_s: float
) -> dict[str, Any] | None:
    """The human's answers to Claude Code's questions, one after the other within
    ``timeout_s`` in all, as the allow that carries them (``updatedInput.answers``,
    keyed by question text); None unless every question got one of its options."""
    asks = claude_questions(event, timeout_s=timeout_s)
    if asks is None:
        return None
    deadline = trio.current_time() + timeout_s
    tool_input = dict(event["tool_input"])
    answers: dict[str, str] = {}
    for ask, q in zip(asks, tool_input["questions"], strict=True):
        record = await ask_human(client, ask, deadline)
        if record.get("status") != "responded" or record.get("action") != "accept":
            return None
        if record.get("answer") not in (ask.choices or ()):
            return None
        answers[q["question"]] = str(record["answer"])
    return decision_output(
        {"behavior": "allow", "updatedInput": {**tool_input, "answers": answers}}
    )


async def decide_permission(
    client: HubClient, event: Mapping[str, Any], timeout_s: float
) -> dict[str, Any] | None:
    """A rule's decision, else the human's (saving a rule for a lasting answer); the
    hook's output, or None."""
    tool = str(event.get("tool_name") or "tool")
    checked = await check_rules(client, event)
    if checked is not None:
        return decision_output(rule_decision(checked, tool))
    record = await ask_permission(client, event, timeout_s)
    decision = human_decision(record, tool)
    if decision is None:
        return None
    await remember(client, event, record)
    return decision_output(decision)


def _say(why: str) -> None:
    print(f"hive-rpc hook: {strip_controls(why)}", file=sys.stderr)


async def cmd_hook(args: argparse.Namespace) -> int:
    """Always exit 0: Claude Code treats other codes as a hook failure, and the only
    safe outcome of a failure is its own dialog, which printing nothing gives."""
    raw = await trio.to_thread.run_sync(sys.stdin.buffer.read)
    try:
        event = read_event(raw)
    except NotAHookEvent as e:
        _say(f"{e}; printing no decision")
        return EXIT_OK
    if event["hook_event_name"] != "PermissionRequest":
        return await other_event(event, args)
    output = None
    try:
        client = await HubClient.connect(Path(args.socket))
        client.timeout_s = HUB_TIMEOUT_S
        async with client:
            if event.get("tool_name") == "AskUserQuestion":
                output = await answer_questions(client, event, args.timeout)
            else:
                output = await decide_permission(client, event, args.timeout)
    except Exception as e:  # fail safe: any error leaves the decision to Claude Code
        _say(f"{e}; printing no decision, so Claude Code asks itself")
        return EXIT_OK
    if output is None:
        _say(
            "no decision from the human (none in time, a decline, or not askable here); "
            "Claude Code asks itself"
        )
        return EXIT_OK
    print(json.dumps(output), flush=True)
    return EXIT_OK
