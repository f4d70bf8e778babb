"""A ``PermissionRequest`` hook's event and output, the same for both ways Claude Code
reaches the hub: the command hook (``hive-rpc hook claude-code``, a process per
request, cli/hook.py) and the HTTP hook (``POST /hook/claude-code``, served by the hub
itself, faces/hook_http.py).  Claude Code POSTs the http hook the JSON the command
hook reads on stdin and reads the reply's JSON body as it reads the command hook's
stdout (measured on 2.1.328, docs/research.md), so what is read and what is answered
is one piece of code for both; only the waiting differs (a blocking client there,
trio here).

Pure: no I/O, nothing of the hub.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hive_rpc.core.agents import CLAUDE_CODE, Agent, process_agent
from hive_rpc.core.claude_code import (
    NoRule,
    PermissionRequest,
    human_decision,
    lasting_rule,
    session_agent,
)
from hive_rpc.core.claude_questions import Question, answered_input, claude_answers

EVENT = "PermissionRequest"
"""The one event whose output is a decision."""
SETTLED_BY = "the terminal"
"""The ``by`` of a question withdrawn because the human answered in Claude Code's own
dialog (its transcript says so; cli/hook_transcript.py's WITHDRAWN_BY is this)."""
HOOK_PATH = "/hook/claude-code"
"""Where the hub serves the http hook (faces/hook_http.py), which setup writes into
Claude Code's settings (cli/setup/claude_code.py)."""


class NotAHookEvent(ValueError):
    """The input held no Claude Code hook event, or not one of the shape asked for."""


def read_event(raw: bytes, where: str = "stdin") -> dict[str, Any]:
    """The hook's JSON object, or NotAHookEvent saying why not (``where`` names what
    held it: stdin, or the request's body)."""
    try:
        event = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as e:
        raise NotAHookEvent(f"{where} is not JSON ({e})") from None
    except RecursionError:  # the decoder recurses: 100,000 nested arrays end it
        raise NotAHookEvent(f"{where} is not JSON (nested too deeply)") from None
    if not isinstance(event, dict) or not isinstance(event.get("hook_event_name"), str):
        raise NotAHookEvent(f"{where} is not a Claude Code hook event (no hook_event_name)")
    return event


def check_permission_event(event: Mapping[str, Any]) -> None:
    """Refuse (NotAHookEvent, naming the field) a PermissionRequest whose fields have
    the wrong types: the http hook answers a precise 400 instead of asking the human
    a question made of a broken event.  ``tool_input`` may be any object (its content
    is the tool's), ``session_id`` and ``cwd`` strings when present."""
    if event.get("hook_event_name") != EVENT:
        name = str(event.get("hook_event_name"))[:60]
        raise NotAHookEvent(f"hook_event_name is {name!r}; this hook answers only {EVENT}")
    if not isinstance(event.get("tool_name"), str) or not event["tool_name"]:
        raise NotAHookEvent("tool_name must be a non-empty string")
    if not isinstance(event.get("tool_input"), dict):
        raise NotAHookEvent("tool_input must be a JSON object")
    for name in ("session_id", "cwd", "transcript_path"):
        if event.get(name) is not None and not isinstance(event[name], str):
            raise NotAHookEvent(f"{name} must be a string")


def agent_of(agent: Agent, pid: int | None, session: object) -> str:
    """The asking agent: its process (``claude-code-4242``, the id its MCP server
    gets, core/agents.py) when the caller found it, else Claude Code's session
    (``claude-code-`` and its first 8 characters), else ``AGENT-`` and the session's."""
    if pid is not None:
        return process_agent(agent, pid)
    text = session if isinstance(session, str) else None
    if agent is CLAUDE_CODE:
        return session_agent(text)
    return f"{agent.name}-{(text or 'unknown')[:8]}"


def decision_output(decision: dict[str, Any]) -> dict[str, Any]:
    """The PermissionRequest hook output carrying ``decision``."""
    return {"hookSpecificOutput": {"hookEventName": EVENT, "decision": decision}}


@dataclass(frozen=True)
class Settled:
    """What the human's answer to a permission question comes to."""

    decision: dict[str, Any] | None
    """Claude Code's ``decision`` (``behavior``, ``message``), or None: none to give
    (nobody answered in time, a decline), so Claude Code asks itself."""
    rule: dict[str, Any] | None = None
    """The ``rule/add`` params a lasting answer asks to save, if any."""
    unsaved: str | None = None
    """Why a lasting answer saves no rule (an input no rule can name): allowed once."""


def settle(request: PermissionRequest, record: Mapping[str, Any]) -> Settled:
    """The prompt's ``record`` as the hook's outcome: the decision, and the rule a
    lasting answer saves (core/claude_code.py ``human_decision``, ``lasting_rule``).
    One place for both hooks (cli/hook.py, faces/hook_http.py)."""
    decision = human_decision(record, request.tool_name or "tool")
    if decision is None:
        return Settled(None)
    try:
        return Settled(decision, lasting_rule(request, record))
    except NoRule as e:
        return Settled(decision, unsaved=str(e))


def questions_output(
    event: Mapping[str, Any], questions: list[Question], answer: object
) -> dict[str, Any] | None:
    """The allow that answers Claude Code's ``AskUserQuestion`` with the human's
    ``answer`` (the prompt's), its answers in ``updatedInput.answers``; None unless
    every question got one (Claude Code's own menu then asks)."""
    answers = claude_answers(questions, answer)
    if answers is None:
        return None
    updated = answered_input(event["tool_input"], answers)
    return decision_output({"behavior": "allow", "updatedInput": updated})
