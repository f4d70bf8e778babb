"""``hive-rpc hook claude-code``: Claude Code's permission requests, answered by the
human from an editor.

Claude Code runs a hook command with one JSON object on stdin and reads its decision
from stdout (docs/claude-code.md cites the fields).  For ``PermissionRequest`` this
asks the hub an urgent question from that Claude Code session and prints the human's
allow or deny.  A hook fails safe: when there is no decision to give (hub down, no
answer in time, a decline, input it does not understand, any error) it prints
nothing and exits 0, so Claude Code shows its own dialog.  It never allows by
default, and it starts no hub: a hub started now has no editor to show the question.

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
from hive_rpc.client import HubClient
from hive_rpc.core.limits import MAX_QUESTION_CHARS
from hive_rpc.core.prompt import Ask
from hive_rpc.core.terminal_text import one_line, strip_controls

CLAUDE_CODE_HOOK_TIMEOUT_S = 600.0
"""Claude Code's default timeout for a command hook (its hooks reference: "timeout":
600 for command hooks); past it Claude Code kills the hook."""
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
"""What the human picks from.  The two lasting ones are answered as ``allow`` for
this one request for now: no answer rule is stored yet (docs/claude-code.md)."""
DENY_MESSAGE = "The human denied this {tool} request from hive-rpc ({by})."
"""What the model reads as the tool's result on deny."""

SUMMARY_FIELDS = ("command", "file_path", "notebook_path", "url", "pattern", "path", "query")
"""The one tool_input field that says what a tool is about to do, first found wins
(Bash's command, Edit's or Write's file_path, WebFetch's url, Grep's pattern ...)."""
SUMMARY_CHARS = 200


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


def _summary(tool: str, tool_input: object) -> str:
    if isinstance(tool_input, Mapping):
        for field in SUMMARY_FIELDS:
            value = tool_input.get(field)
            if isinstance(value, str) and value.strip():
                return one_line(value)[:SUMMARY_CHARS]
    return one_line(json.dumps(tool_input, ensure_ascii=False))[:SUMMARY_CHARS]


def permission_ask(event: Mapping[str, Any], *, timeout_s: float, home: str | None) -> Ask:
    """The question a PermissionRequest becomes: one line saying which session wants
    what, then the tool input in full (the human approves what runs, not a summary).
    Editors show a prompt's question whole; the list's one-line view shows the first."""
    tool = str(event.get("tool_name") or "a tool")
    tool_input = event.get("tool_input", {})
    where = _home_relative(str(event.get("cwd") or "?"), home)
    session = str(event.get("session_id") or "?")[:4]
    verb = "run" if tool == "Bash" else "use"
    head = (
        f"Claude Code in {where} (session {session}) wants to {verb} {tool}: "
        f"{_summary(tool, tool_input)}"
    )
    details = json.dumps(tool_input, indent=2, ensure_ascii=False)
    question = f"{head}\n\n{tool} input:\n{details}"
    if len(question) > MAX_QUESTION_CHARS:
        cut = "\n[... cut: the input is longer than a question may be]"
        question = question[: MAX_QUESTION_CHARS - len(cut)] + cut
    return Ask(
        question=question,
        choices=CHOICES,
        urgent=True,
        timeout_s=timeout_s,
        agent_id=agent_id(event),
    )


def permission_output(record: Mapping[str, Any], tool: str) -> dict[str, Any] | None:
    """The PermissionRequest hook output for a closed prompt, or None (print nothing:
    Claude Code asks itself) unless the human answered allow or deny."""
    if record.get("status") != "responded" or record.get("action") != "accept":
        return None
    answer = record.get("answer")
    if answer in (ALLOW, ALLOW_SESSION, ALLOW_PROJECT):
        decision: dict[str, Any] = {"behavior": "allow"}
    elif answer == DENY:
        by = str(record.get("by") or "human")
        decision = {"behavior": "deny", "message": DENY_MESSAGE.format(tool=tool, by=by)}
    else:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


async def ask_permission(
    client: HubClient, event: Mapping[str, Any], timeout_s: float
) -> dict[str, Any] | None:
    """Ask the hub and wait up to ``timeout_s`` for the human; the hook's output or None.
    A question still pending then is withdrawn, so no editor keeps showing it."""
    deadline = trio.current_time() + timeout_s
    ask = permission_ask(event, timeout_s=timeout_s, home=os.environ.get("HOME"))
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
    return permission_output(record, str(event.get("tool_name") or "tool"))


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
        return EXIT_OK
    if event.get("tool_name") == "AskUserQuestion":
        return EXIT_OK  # Claude Code's own questions: not answered here yet
    output = None
    try:
        client = await HubClient.connect(Path(args.socket))
        client.timeout_s = HUB_TIMEOUT_S
        async with client:
            output = await ask_permission(client, event, args.timeout)
    except Exception as e:  # fail safe: any error leaves the decision to Claude Code
        _say(f"{e}; printing no decision, so Claude Code asks itself")
        return EXIT_OK
    if output is None:
        _say("no allow or deny from the human in time; Claude Code asks itself")
        return EXIT_OK
    print(json.dumps(output), flush=True)
    return EXIT_OK
