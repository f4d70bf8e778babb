"""``hive-rpc hook claude-code`` for Claude Code's events other than a permission
request: each moves the state of the agent's session on the hub (``agent/session``:
started, the human sent a prompt, its turn ended, it ended), a ling's finished turn or
session becomes a ``child-complete`` event in its parent's terminal, and a
Notification an entry on the hub's activity stream.  ``hook codex`` and ``hook
gemini`` report their agents' session events the same way (``AGENT_SESSION_EVENTS``).

Notification: what Claude Code would tell the human ("Claude needs your permission
to use Bash", "Claude is waiting for your input") becomes ``agent/notify`` from the
session's agent (``claude-code-`` plus the session id's first 8 characters, as its
permission prompts), urgent when Claude Code waits on the human in its terminal
(``notification_type`` ``permission_prompt`` or ``elicitation_dialog``).

Which ling: Claude Code runs its hooks with its own environment, which is the
terminal's.  A ``hive-rpc spawn``ed pane (or one registered by hand with ``hive-rpc
ling register NAME --tmux``) has ``$TMUX_PANE`` and ``$TMUX``, the very values its
registration was made from, so the ling is the registered tmux ling with this pane's
address; a Zellij pane's ``$ZELLIJ_SESSION_NAME:$ZELLIJ_PANE_ID`` likewise; and
``$HIVE_RPC_LING=NAME`` names it outright (an Emacs buffer, whose environment says
nothing about the buffer: ``hive-rpc-spawn-ling`` sets it).  A session that is no
registered ling, or one without a registered parent, posts nothing.

When: ``Stop`` (the main agent finished a turn and waits) and ``SessionEnd``.  One
turn is reported once: a ``Stop`` by its ``prompt_id``, a ``SessionEnd`` by the last
turn its transcript shows answered, so the Stop and the SessionEnd of one finished
turn (``/exit`` after it) make one event; a ``Stop`` Claude Code reports with
``stop_hook_active`` (it goes on working because a Stop hook told it to) makes none;
and a session reports at most one completion per ``MIN_INTERVAL_S``.  What is reported
is kept per session in ``DATA_DIR/claude-code-turns/SESSION.json``, deleted at
``SessionEnd`` or after ``STALE_S`` without news.  The typing itself is
paced by the relay (one message at a time per terminal, in order).  ``SubagentStop``
is a subagent's end, not the ling's: nothing is posted.

Fail safe and fast, as every hook: nothing is printed (Claude Code reads no decision
from these events), the exit code is 0 whatever happens, one stderr line says what
went wrong, and the whole thing gives up after ``BUDGET_S``; a message already handed
to the hub is still typed (the relay owns it, not this process).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hive_rpc.cli.exits import EXIT_OK
from hive_rpc.client.sync_client import SyncHubClient
from hive_rpc.core.agents import CLAUDE_CODE, CODEX, GEMINI, GEMINI_EVENTS, Agent
from hive_rpc.core.errors import HubTimeout, HubUnreachable
from hive_rpc.core.ling import parent_of
from hive_rpc.core.terminal_text import one_line, strip_controls
from hive_rpc.host.paths import private_dir

BUDGET_S = 5.0
"""How long an event may take in all: below the ``"timeout": 10`` setup writes."""
MIN_INTERVAL_S = 5.0
"""A session's completions are at least this far apart: a turn finished sooner after
the last one reported is not news for the parent (and two agents answering each
other's completions cannot flood each other's terminals)."""
LAST_WORDS_CHARS = 300
"""How much of the child's last message the parent reads with its completion."""
STALE_S = 7 * 24 * 3600.0
"""A session whose turns file was not written for this long is over: a session that
ended without a ``SessionEnd`` (killed, crashed) leaves its file, and the next
report of any session deletes it."""
TRANSCRIPT_TAIL = 1 << 20
"""How much of the transcript's end is read to find the last answered turn."""

COMPLETING = ("Stop", "SessionEnd")
"""The events that report a ling's completion."""
SESSION_EVENTS = {
    "SessionStart": "start",
    "UserPromptSubmit": "prompt",
    "Stop": "stop",
    "StopFailure": "failure",
    "SessionEnd": "end",
}
"""Claude Code's events that move its session's state (core/sessions.py), as the
hub names them (``agent/session``)."""
CODEX_SESSION_EVENTS = {
    "SessionStart": "start",
    "UserPromptSubmit": "prompt",
    "Stop": "stop",
    "Interrupt": "stop",
    "SessionEnd": "end",
}
"""Codex's (0.171.0, the same fields as Claude Code's: its hooks' input schemas, and
tests/agents/test_codex_tui.py): ``Interrupt`` is the human's Esc, which ends the
turn as ``Stop`` does; ``SessionEnd``'s reason is always ``other``."""
GEMINI_SESSION_EVENTS = {
    "SessionStart": "start",
    "BeforeAgent": "prompt",
    "AfterAgent": "stop",
    "SessionEnd": "end",
}
"""Gemini CLI's (0.61.0): ``BeforeAgent`` runs once the human's prompt is in, before
the first model call; ``AfterAgent`` once the turn's answer is whole (with
``stop_hook_active``, as Claude Code's Stop); SessionEnd's reason ``clear`` is its
``/clear``, which keeps the process (tests/agents/test_gemini_hook.py)."""
AGENT_SESSION_EVENTS: dict[str, dict[str, str]] = {
    CLAUDE_CODE.name: SESSION_EVENTS,
    CODEX.name: CODEX_SESSION_EVENTS,
    GEMINI.name: GEMINI_SESSION_EVENTS,
}
"""Each agent's events that move its session, by ``hive-rpc hook AGENT``."""
GEMINI_NO_OUTPUT = "{}"
"""What ``hook gemini`` prints for a session event: Gemini CLI parses stdout, or
stderr when stdout is empty, and shows text that is not JSON to the human as "Hook
system message: ..." (measured on 0.61.0); an empty object decides nothing."""
URGENT_NOTICES = ("permission_prompt", "elicitation_dialog")
"""Notification types where Claude Code waits for the human in its own terminal."""
NOTICE_TYPES: dict[str, dict[str, str]] = {GEMINI.name: {"ToolPermission": "permission_prompt"}}
"""Other agents' notification types in Claude Code's words, which the hub reads
(core/sessions.py ``TERMINAL_WAITS``): Gemini CLI's ``ToolPermission`` is its own
confirmation of a tool call in its terminal (0.61.0 sends it as the dialog opens,
"Tool Confirm Shell Command requires execution")."""
NOTIFYING = (CLAUDE_CODE.name, GEMINI.name)
"""The agents whose Notification hook ``hook AGENT`` reports (Codex has none)."""


def address_of_this_terminal(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(kind, address) of the terminal this process runs in, as its registration
    names it (``hive-rpc ling register --tmux`` / ``--zellij``), or None."""
    pane = env.get("TMUX_PANE")
    if pane:
        server = env.get("TMUX", "").split(",")[0]
        return "tmux", f"{pane}@{server}" if server else pane
    if env.get("ZELLIJ_PANE_ID") and env.get("ZELLIJ_SESSION_NAME"):
        return "zellij", f"{env['ZELLIJ_SESSION_NAME']}:{env['ZELLIJ_PANE_ID']}"
    return None


def find_ling(lings: list[dict[str, Any]], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The registered ling this session runs in: ``$HIVE_RPC_LING`` by name, else the
    one registered with this terminal's address; None when there is none."""
    registered = [r for r in lings if r.get("state") == "registered"]
    named = env.get("HIVE_RPC_LING")
    if named:
        return next((r for r in registered if r.get("name") == named), None)
    here = address_of_this_terminal(env)
    if here is None:
        return None
    kind, address = here
    return next(
        (r for r in registered if r.get("kind") == kind and r.get("address") == address), None
    )


def last_answered_turn(transcript: Path) -> str | None:
    """The ``promptId`` of the last user turn the transcript shows an assistant reply
    to (Claude Code's JSONL transcript: ``user`` entries carry ``promptId``), or None."""
    try:
        with transcript.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TRANSCRIPT_TAIL))
            lines = f.read().splitlines()
    except OSError:
        return None
    turn = answered = None
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the first line of a tail may be cut
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "user" and isinstance(entry.get("promptId"), str):
            turn = entry["promptId"]
        elif entry.get("type") == "assistant" and turn is not None:
            answered = turn
    return answered


def turn_of(event: Mapping[str, Any]) -> str:
    """Which turn's completion this event reports."""
    if event.get("hook_event_name") == "SessionEnd":
        path = event.get("transcript_path")
        found = last_answered_turn(Path(path)) if isinstance(path, str) else None
        if found is not None:
            return found
        return "session-end"
    return str(event.get("prompt_id") or "unknown")


def completion_message(event: Mapping[str, Any]) -> str:
    """What the parent reads under ``[CHILD COMPLETE] ...``: the child's last words
    (a Stop carries them), or how its session ended."""
    if event.get("hook_event_name") == "SessionEnd":
        reason = one_line(str(event.get("reason") or "other"))[:80]
        return f"Its Claude Code session ended ({reason})."
    words = one_line(str(event.get("last_assistant_message") or "")).strip()
    if len(words) > LAST_WORDS_CHARS:
        words = words[: LAST_WORDS_CHARS - 3] + "..."
    return f"Its last words: {words}" if words else ""


class Turns:
    """What one session has reported: the turns, and when it last did.  A plain
    file, since each hook is a process of its own."""

    def __init__(self, data_dir: Path, session: str) -> None:
        safe = "".join(c for c in session if c.isalnum() or c in "-_")[:80] or "unknown"
        self.path = data_dir / "claude-code-turns" / f"{safe}.json"

    def load(self) -> dict[str, Any]:
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"turns": [], "at": 0.0}
        return state if isinstance(state, dict) else {"turns": [], "at": 0.0}

    def why_not(self, turn: str, now: float) -> str | None:
        """Why this turn is not reported (already was, or too soon), or None."""
        state = self.load()
        if turn in state.get("turns", []):
            return f"turn {turn} was reported already"
        if now - float(state.get("at", 0.0)) < MIN_INTERVAL_S:
            return f"the last completion was reported less than {MIN_INTERVAL_S:g} s ago"
        return None

    def reported(self, turn: str, now: float) -> None:
        state = self.load()
        turns = [*state.get("turns", [])[-20:], turn]
        private_dir(self.path.parent)
        temp = self.path.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps({"turns": turns, "at": now}))
        os.replace(temp, self.path)
        self.prune(now)

    def prune(self, now: float) -> None:
        """Delete the files of sessions quiet for ``STALE_S``."""
        with os.scandir(self.path.parent) as entries:
            for entry in entries:
                try:
                    if now - entry.stat().st_mtime > STALE_S:
                        os.unlink(entry.path)
                except OSError:  # gone meanwhile: another hook pruned it
                    continue

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)


def report_completion(
    client: SyncHubClient, event: Mapping[str, Any], env: Mapping[str, str], data_dir: Path
) -> str | None:
    """Post ``child-complete`` for this session's ling when it is one and the turn is
    news; what happened, in words, or None for a session that is no ling (the
    common case, so nothing to say)."""
    name = str(event.get("hook_event_name"))
    if name == "Stop" and event.get("stop_hook_active"):
        return "Claude Code goes on (stop_hook_active): not a completion"
    lings = client.call("ling/list", {})
    ling = find_ling(lings, env)
    if ling is None:
        return None
    parent = parent_of(str(ling["name"]))
    registered = {r["name"] for r in lings if r.get("state") == "registered"}
    if parent is None or parent not in registered:
        return f"{ling['name']} has no registered parent"
    turns = Turns(data_dir, str(event.get("session_id") or "unknown"))
    turn, now = turn_of(event), time.time()
    why_not = turns.why_not(turn, now)
    if why_not is None:
        params = {"kind": "child-complete", "from": ling["name"]}
        message = completion_message(event)
        if message:
            params["message"] = message
        turns.reported(turn, now)  # before the call: the budget may end the wait for it
        result = client.call("event/post", params)
        said = f"child-complete to {result['to']}: {result['delivery']['state']}"
    else:
        said = f"no child-complete: {why_not}"
    if name == "SessionEnd":
        turns.forget()
    return said


def notify(client: SyncHubClient, event: Mapping[str, Any], agent: Agent = CLAUDE_CODE) -> str:
    """The agent's Notification as the session's notice on the activity stream, its
    type in Claude Code's words (``NOTICE_TYPES``)."""
    from hive_rpc.cli.hook import agent_id

    kind = event.get("notification_type")
    kind = NOTICE_TYPES.get(agent.name, {}).get(str(kind), kind)
    params: dict[str, Any] = {
        "agent_id": agent_id(event, agent),
        "message": str(event.get("message") or f"{agent.display} has something to say"),
        "urgent": kind in URGENT_NOTICES,
    }
    if isinstance(kind, str):
        params["type"] = kind
    for key, field in (("title", "title"), ("cwd", "cwd")):
        if isinstance(event.get(field), str):
            params[key] = event[field]
    client.call("agent/notify", params)
    return f"notice from {params['agent_id']}"


def session_params(
    event: Mapping[str, Any],
    env: Mapping[str, str],
    session_event: str,
    agent: Agent = CLAUDE_CODE,
) -> dict[str, Any]:
    """``agent/session``'s params for this event: the agent (the hook's own process,
    ``codex-PID``, as its permission requests and its MCP server name it), what
    happened, and where the agent says it runs (its terminal, its ling, its cwd)."""
    from hive_rpc.cli.hook import agent_id

    params: dict[str, Any] = {"agent_id": agent_id(event, agent), "event": session_event}
    reason = event.get("source") if session_event == "start" else event.get("reason")
    if isinstance(reason, str):
        params["reason"] = reason[:200]
    if session_event == "failure":
        error = event.get("error") or event.get("message") or event.get("error_details")
        params["message"] = one_line(str(error or "the turn ended with an error"))[:300]
    if isinstance(event.get("cwd"), str):
        params["project_dir"] = event["cwd"]
    here = address_of_this_terminal(env)
    if here is not None:
        params["terminal"] = f"{here[0]}:{here[1]}"
    if env.get("HIVE_RPC_LING"):
        params["ling"] = env["HIVE_RPC_LING"]
    return params


def report_session(
    client: SyncHubClient,
    event: Mapping[str, Any],
    env: Mapping[str, str],
    session_event: str,
    agent: Agent = CLAUDE_CODE,
) -> str | None:
    """Tell the hub this session's event (its state: service/sessions.py)."""
    if session_event == "stop" and event.get("stop_hook_active"):
        return None  # it goes on working: a Stop hook told it to
    record = client.call("agent/session", session_params(event, env, session_event, agent))
    if record is None:
        return "the hub keeps no more sessions"
    return None


def handle_event(
    event: Mapping[str, Any],
    socket: Path,
    data_dir: Path,
    env: Mapping[str, str],
    agent: Agent = CLAUDE_CODE,
) -> str | None:
    """Act on one non-permission event of ``agent``'s within ``BUDGET_S``; what
    happened, in words, or None when there is nothing to say.  Starts no hub: with
    none running there is no one to tell.  Lings' completions are Claude Code's only
    (they read its transcript)."""
    name = event.get("hook_event_name")
    session_event = AGENT_SESSION_EVENTS[agent.name].get(str(name))
    claude_code = agent is CLAUDE_CODE
    notice = name == "Notification" and agent.name in NOTIFYING
    if not notice and session_event is None:
        return None
    in_a_ling = claude_code and bool(env.get("HIVE_RPC_LING") or address_of_this_terminal(env))
    give_up_at = time.monotonic() + BUDGET_S
    said: list[str] = []
    try:
        with SyncHubClient.connect(socket, timeout_s=BUDGET_S) as client:
            client.timeout_s, client.give_up_at = BUDGET_S, give_up_at  # the whole budget
            if notice:
                return notify(client, event, agent)
            assert session_event is not None
            news = report_session(client, event, env, session_event, agent)
            if news is not None:
                said.append(news)
            if name in COMPLETING and in_a_ling:  # else no terminal a ling can be in
                news = report_completion(client, event, env, data_dir)
                if news is not None:
                    said.append(news)
    except HubTimeout:
        said.append(f"gave up after {BUDGET_S:g} s")
    except HubUnreachable:
        if notice or (name in COMPLETING and in_a_ling):
            raise  # news for someone: say it was lost
        return None  # a session's state, and no hub to keep it: nothing lost
    return "; ".join(said) or None


def other_event(
    event: Mapping[str, Any], args: argparse.Namespace, agent: Agent = CLAUDE_CODE
) -> int:
    """``hook AGENT`` for any event but its permission one: never a decision on
    stdout (Gemini CLI's empty object, ``GEMINI_NO_OUTPUT``), always exit 0, one
    stderr line saying what happened, if anything did."""
    try:
        said = handle_event(event, Path(args.socket), Path(args.data_dir), os.environ, agent)
    except Exception as e:  # fail safe: the event is only news
        said = f"{event.get('hook_event_name')}: {e}"
    if agent.events == GEMINI_EVENTS:
        print(GEMINI_NO_OUTPUT, flush=True)
    if said is not None:
        print(f"hive-rpc hook: {strip_controls(said, keep_newlines=False)}", file=sys.stderr)
    return EXIT_OK
