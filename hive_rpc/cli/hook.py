"""``hive-rpc hook AGENT``: an agent's permission requests, answered by the human from
an editor.  AGENT is ``claude-code``, ``codex`` or ``gemini`` (core/agents.py, a table:
what the question calls the agent, which event and decision format, how it fails).
Codex's ``PermissionRequest`` is Claude Code's, so both take the path described
below; Gemini CLI's ``BeforeTool`` takes ``gemini_hook``.

Claude Code runs a hook command with one JSON object on stdin and reads its decision
from stdout (docs/claude-code.md cites the fields).  For ``PermissionRequest`` a
rule in the hub answers (``rule/check``), else this asks the hub an urgent question
from that Claude Code session and prints the human's allow or deny, saving a rule
when the human allows for the session or the project.  Claude Code's own questions
(``AskUserQuestion``) come as PermissionRequests too: the call is asked as one
prompt with a field per question, and the answers go back in the tool's input.  A
hook fails safe: when there is no decision to give (hub down, no answer in time, a
decline, input it does not understand, any error) it prints nothing and exits 0, so
Claude Code shows its own dialog.  It never allows by default, and it starts no hub: a hub
started now has no editor to show the question.

It runs on the blocking client (sync_client.py) and imports no trio, nothing of
the hub, its faces or the MCP SDK (tests/cli/test_cli_imports.py): Claude Code waits on
this process for every permission, so its start is most of what the human waits.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from hive_rpc.cli.exits import EXIT_OK
from hive_rpc.cli.parser import HOOK_TIMEOUT_S, HUB_TIMEOUT_S
from hive_rpc.client.sync_client import SyncHubClient, prove_approver
from hive_rpc.core import claude_code
from hive_rpc.core.agents import AGENTS, CLAUDE_CODE, GEMINI_EVENTS, Agent
from hive_rpc.core.claude_code import (
    SESSION_ENV,
    PermissionRequest,
    answered,
    permission_prompt_tool,
    rule_check_params,
    rule_decision,
)
from hive_rpc.core.claude_questions import TOOL_NAME, parse_questions, questions_ask
from hive_rpc.core.claude_transcript import SettledWatch
from hive_rpc.core.errors import HiveError, HubTimeout
from hive_rpc.core.permission_hook import (
    NotAHookEvent,
    Settled,
    agent_of,
    decision_output,
    questions_output,
    read_event,
    settle,
)
from hive_rpc.core.prompt import Ask
from hive_rpc.core.terminal_text import strip_controls

CLAUDE_CODE_HOOK_TIMEOUT_S = 600.0
"""Claude Code's default timeout for a command hook (its hooks reference; measured on
2.1.328: a PermissionRequest hook still running is killed after 600 s)."""
DEFAULT_TIMEOUT_S = HOOK_TIMEOUT_S
"""How long the hook waits for the human by default (defined with the parser's options)."""
CLEANUP_S = 5.0
"""How long withdrawing an unanswered question may take once the wait is over."""
SUMMARY_CHARS = claude_code.SUMMARY_CHARS
"""How much of the input the question's head line shows (core/claude_code.py)."""


def agent_id(event: Mapping[str, Any], agent: Agent = CLAUDE_CODE) -> str:
    """The asking agent, the same one its MCP server names: the agent's process, the
    nearest ancestor of this hook with the agent's name, which is the hub's choice
    for its MCP sessions too (faces/mcp/identity.py, core/agents.py).  Without /proc,
    or run by no such process: Claude Code's session (core/claude_code.py), or the
    session's first 8 characters."""
    from hive_rpc.host.agent_process import agent_ancestor

    pid = agent_ancestor(os.getpid(), agent.process_names)
    return agent_of(agent, pid, event.get("session_id"))


def request_of(event: Mapping[str, Any], agent: Agent = CLAUDE_CODE) -> PermissionRequest:
    """The permission request of ``agent``'s hook event."""
    return PermissionRequest.from_hook_event(
        event, agent_id=agent_id(event, agent), display=agent.display
    )


def permission_ask(
    event: Mapping[str, Any],
    *,
    timeout_s: float,
    home: str | None,
    agent: Agent = CLAUDE_CODE,
) -> Ask:
    """The question a PermissionRequest event becomes (core/claude_code.py says how;
    the MCP tool ``approve`` asks the same)."""
    request = request_of(event, agent)
    return claude_code.permission_ask(request, timeout_s=timeout_s, home=home)


def prompt_tool_of_this_run(event: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The ``--permission-prompt-tool`` of the Claude Code that runs this hook, read
    from its command line (``CLAUDE_PID`` names it; ``/proc``, so Linux only), or
    None when it names none or cannot be read.  Only a ``CLAUDE_PID`` set for this
    very session counts (its ``CLAUDE_CODE_SESSION_ID`` is the event's), not one
    inherited from a Claude Code further out."""
    pid = environ.get("CLAUDE_PID", "")
    if not pid.isdigit() or environ.get(SESSION_ENV) != event.get("session_id"):
        return None
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return permission_prompt_tool(raw.decode("utf-8", "replace").split("\0"))


def check_rules(client: SyncHubClient, request: PermissionRequest) -> dict[str, Any] | None:
    """The rule that answers this request (``rule/check``), or None: ask the human.
    A hub without rules (older than ``rule/check``) answers None."""
    params = rule_check_params(request)
    if params is None:
        return None
    try:
        checked: dict[str, Any] | None = client.call("rule/check", params)
    except HiveError as e:
        if e.kind == "method_not_found":
            return None
        raise
    return checked


def remember(client: SyncHubClient, settled: Settled) -> None:
    """Save the rule a lasting answer asks for.  The human's allow stands even when it
    cannot be saved (the rule limit, an input no rule can name): stderr says so."""
    if settled.unsaved is not None:
        _say(f"allowed once: {settled.unsaved}")
        return
    params = settled.rule
    if params is None:
        return
    # Only an approver adds rules; the hook runs outside the agent's sandbox, so it can
    # read the approver token (an agent's Bash running this hook cannot: security.md).
    # Its own few seconds: the human's allow came in time, saving it must not need
    # what is left of the hook's budget.
    why: str | None = None
    try:
        with client.giving_up_at(time.monotonic() + CLEANUP_S):
            why = prove_approver(client.call)
            client.call("rule/add", params)
    except (HiveError, HubTimeout) as e:
        pattern = params["pattern"]
        _say(f"allowed once: the rule {pattern} was not saved: {e}" + (f" ({why})" if why else ""))


Watching = Callable[[str], contextlib.AbstractContextManager[None]]
"""The transcript's watch for one prompt (``ask_human``'s ``watching``)."""


def ask_human(
    client: SyncHubClient,
    ask: Ask,
    deadline: float,
    watching: Watching | None = None,
) -> dict[str, Any]:
    """Ask the hub and wait until ``deadline`` (``time.monotonic()``) for the human;
    the prompt's record.  A question still pending then is withdrawn, so no editor
    keeps showing it.  ``watching(prompt_id)``, if given, is entered for the wait
    (the transcript's watch, which may withdraw the prompt meanwhile)."""
    # The hook is the human's tool, run outside the agent's sandbox, so it can read
    # the approver token: proved, its question finds the room the hub keeps for the
    # human's tools while agents flood it (agent_share, security.md); not, asked anyway.
    with client.giving_up_at(deadline):
        prove_approver(client.call)
    # waits: only this process can take the answer; the hub withdraws the question
    # if it ends (killed, or gone when the hub died: service/askers.py).
    record: dict[str, Any] = client.call("hive/ask", {**ask.params(), "waits": True})
    prompt_id = record["id"]
    watch = watching(prompt_id) if watching is not None else contextlib.nullcontext()
    try:
        # Past the deadline the wait is over, the question still pending.
        with watch, contextlib.suppress(HubTimeout), client.giving_up_at(deadline):
            left = max(0.0, deadline - time.monotonic())
            record = client.call(
                "hive/await", {"id": prompt_id, "timeout_s": left, "agent_id": ask.agent_id}
            )
    finally:
        if record.get("status") == "pending":
            cleanup = time.monotonic() + CLEANUP_S
            with contextlib.suppress(HubTimeout), client.giving_up_at(cleanup):
                client.call("hive/cancel", {"id": prompt_id, "agent_id": ask.agent_id})
    return record


def transcript_watch(event: Mapping[str, Any], socket: Path, agent: str) -> Watching | None:
    """While the hook waits, Claude Code shows its own menu or dialog too and takes the
    first answer (measured on 2.1.328); answered there, the call's result in the
    session's transcript withdraws the hub prompt (hook_transcript.py), so no editor
    goes on asking.  None without a transcript to read."""
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return None
    from hive_rpc.cli.hook_transcript import withdrawn_once_settled

    started = time.time()

    def watching(prompt_id: str) -> contextlib.AbstractContextManager[None]:
        watch = SettledWatch(str(event.get("tool_name")), event.get("tool_input"), started)
        return withdrawn_once_settled(
            Path(transcript), watch, socket=socket, prompt_id=prompt_id,
            agent_id=agent, timeout_s=HUB_TIMEOUT_S,
        )  # fmt: skip

    return watching


def ask_permission(
    client: SyncHubClient,
    event: Mapping[str, Any],
    request: PermissionRequest,
    timeout_s: float,
    socket: Path,
    agent: Agent = CLAUDE_CODE,
) -> dict[str, Any]:
    """The permission question of ``request`` (``event``'s, ``request_of``), asked and
    waited for up to ``timeout_s`` (or until answered in Claude Code's own dialog:
    ``transcript_watch``; Claude Code's transcript format only)."""
    home = os.environ.get("HOME")
    ask = claude_code.permission_ask(request, timeout_s=timeout_s, home=home)
    watching = transcript_watch(event, socket, ask.agent_id) if agent is CLAUDE_CODE else None
    return ask_human(client, ask, time.monotonic() + timeout_s, watching)


def answer_questions(
    client: SyncHubClient, event: Mapping[str, Any], timeout_s: float, socket: Path
) -> dict[str, Any] | None:
    """Claude Code's own questions (its ``AskUserQuestion`` call, which reaches this
    hook as a PermissionRequest) asked as ONE prompt with a field per question
    (core/claude_questions.py), waited for up to ``timeout_s``; the allow carrying the
    human's answers as ``updatedInput.answers``.  None, so Claude Code's own menu
    shows, unless every question got an answer.  No rule is checked: rules decide
    permissions, never what the human would answer.  Answered in Claude Code's own
    menu meanwhile, the prompt is withdrawn (``transcript_watch``)."""
    questions = parse_questions(event.get("tool_input"))
    if questions is None:
        return None
    agent = agent_id(event)
    ask = questions_ask(questions, agent_id=agent, timeout_s=timeout_s)
    watching = transcript_watch(event, socket, agent)
    record = ask_human(client, ask, time.monotonic() + timeout_s, watching)
    return questions_output(event, questions, record.get("answer")) if answered(record) else None


def decide(
    client: SyncHubClient,
    event: Mapping[str, Any],
    timeout_s: float,
    socket: Path,
    agent: Agent = CLAUDE_CODE,
) -> dict[str, Any] | None:
    """A rule's decision, else the human's (saving a rule for a lasting answer), as
    Claude Code's ``decision`` (``behavior``, ``message``), or None."""
    request = request_of(event, agent)
    tool = request.tool_name or "tool"
    checked = check_rules(client, request)
    if checked is not None:
        return rule_decision(checked, tool)
    record = ask_permission(client, event, request, timeout_s, socket, agent)
    settled = settle(request, record)
    if settled.decision is not None:
        remember(client, settled)
    return settled.decision


def decide_permission(
    client: SyncHubClient,
    event: Mapping[str, Any],
    timeout_s: float,
    socket: Path,
    agent: Agent = CLAUDE_CODE,
) -> dict[str, Any] | None:
    """``decide``'s decision as the PermissionRequest hook's output, or None."""
    decision = decide(client, event, timeout_s, socket, agent)
    return None if decision is None else decision_output(decision)


GEMINI_EVENT = "BeforeTool"
"""The one Gemini CLI event ``hive-rpc hook gemini`` answers."""
GATE_MESSAGE = (
    "hive-rpc (hook gemini --gate) denied this {tool} request: {why}. Nothing runs "
    "unasked in gate mode; ask again once the human is there."
)
"""The reason Gemini's model reads when the gate had no decision from the human."""


def gemini_output(decision: Mapping[str, Any]) -> dict[str, Any]:
    """A decision (``behavior``, ``message``) as Gemini CLI's BeforeTool output: a deny
    is ``{"decision": "deny", "reason": ...}`` and the model reads "Tool execution
    blocked: REASON" (read in Gemini CLI 0.61.0's evaluateBeforeToolHook); an allow
    lets the call go on to Gemini's own policy check, which still asks the human in
    its terminal unless the tool is allowed there (yolo mode, a trusted server)."""
    if decision.get("behavior") == "allow":
        return {"decision": "allow"}
    return {"decision": "deny", "reason": str(decision.get("message") or "denied")}


def gemini_hook(event: Mapping[str, Any] | None, args: argparse.Namespace, agent: Agent) -> int:
    """Gemini CLI's ``BeforeTool``: the human decides as for any permission request.
    Without a decision (hub down, nobody answered, a decline, any error) it prints
    ``{}``, no decision, so Gemini goes on to its own confirmation, unless ``--gate``:
    then it denies (yolo mode has no confirmation to fall back on; core/agents.py)."""
    gate = bool(getattr(args, "gate", False)) or agent.fails_closed
    tool = str((event or {}).get("tool_name") or "tool")
    why = "the event could not be read"
    decision = None
    if event is not None and event.get("hook_event_name") != GEMINI_EVENT:
        from hive_rpc.cli.hook_events import other_event  # not loaded for a permission

        return other_event(event, args, agent)  # its session's events
    if event is not None:
        try:
            with hub_within(args) as client:
                decision = decide(client, event, args.timeout, Path(args.socket), agent)
            why = "no decision from the human (none in time, a decline)"
        except Exception as e:
            why = f"the hub could not be asked ({strip_controls(str(e))})"
    if decision is None and gate:
        decision = {"behavior": "deny", "message": GATE_MESSAGE.format(tool=tool, why=why)}
    if decision is None:
        _say(f"{why}; printing no decision, so Gemini CLI goes on to its own confirmation")
        # {}: no decision, and no word for the human either (with nothing on stdout,
        # Gemini CLI 0.61.0 shows the stderr line as a "Hook system message").
        print("{}", flush=True)
        return EXIT_OK
    print(json.dumps(gemini_output(decision)), flush=True)
    return EXIT_OK


@contextlib.contextmanager
def hub_within(args: argparse.Namespace) -> Iterator[SyncHubClient]:
    """The hub, for one hook's calls, ``--timeout`` being their whole budget, a hub
    that accepts and never answers included (each call's HUB_TIMEOUT_S alone held the
    hook 30 s whatever ``--timeout`` said)."""
    deadline = time.monotonic() + args.timeout
    connect_s = max(0.1, min(HUB_TIMEOUT_S, args.timeout))
    with (
        SyncHubClient.connect(Path(args.socket), timeout_s=connect_s) as client,
        client.giving_up_at(deadline),
    ):
        client.timeout_s = HUB_TIMEOUT_S
        yield client


def _say(why: str) -> None:
    print(f"hive-rpc hook: {strip_controls(why)}", file=sys.stderr)


def cmd_hook(args: argparse.Namespace) -> int:
    """Always exit 0: Claude Code treats other codes as a hook failure, and the only
    safe outcome of a failure is its own dialog, which printing nothing gives."""
    agent = AGENTS[getattr(args, "hook_command", None) or CLAUDE_CODE.name]
    raw = sys.stdin.buffer.read()
    try:
        event = read_event(raw)
    except NotAHookEvent as e:
        if agent.events == GEMINI_EVENTS:
            _say(str(e))
            return gemini_hook(None, args, agent)
        _say(f"{e}; printing no decision")
        return EXIT_OK
    if agent.events == GEMINI_EVENTS:
        return gemini_hook(event, args, agent)
    if event["hook_event_name"] != "PermissionRequest":
        from hive_rpc.cli.hook_events import other_event  # not loaded for a permission

        return other_event(event, args, agent)  # a session's events, Notification ...
    prompt_tool = prompt_tool_of_this_run(event, os.environ)
    if prompt_tool is not None:
        _say(f"this run's --permission-prompt-tool {prompt_tool} decides; printing no decision")
        return EXIT_OK
    output = None
    try:
        with hub_within(args) as client:
            if event.get("tool_name") == TOOL_NAME and agent is CLAUDE_CODE:
                output = answer_questions(client, event, args.timeout, Path(args.socket))
            else:
                output = decide_permission(client, event, args.timeout, Path(args.socket), agent)
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
