"""``hive-rpc setup gemini [--print] [--remove]``: register the hub with Gemini CLI in
``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini/settings.json`` when set, as
Gemini CLI 0.61.0 reads it), merged into the user's settings.

What it writes (measured with Gemini CLI 0.61.0, tests/agents/test_gemini_mcp.py; the
hooks' format read in its settings schema and hook registry):

- ``mcpServers."hive-rpc"``: the absolute ``hive-rpc mcp`` plus the hub options;
  ``"trust": true`` (headless, Gemini CLI offers the model none of an untrusted
  server's tools); ``timeout`` in ms (Gemini's limit on one call, 10 min by default,
  written out) and ``env.MCP_TOOL_TIMEOUT`` saying the same, so ``hive-rpc mcp``
  returns ``pending`` before the call is cut;
- ``hooks.BeforeTool``: a group matching the tools that run, write or fetch
  (HOOK_MATCHER) whose command hook (named ``hive-rpc``, timeout in ms) runs
  ``hive-rpc hook gemini``: Gemini CLI has no permission-request hook, and a
  BeforeTool hook may deny the call.  With ``--gate`` (for ``--approval-mode yolo``,
  where Gemini asks nobody) the group matches every tool but hive-rpc's own
  (GATE_MATCHER) and the hook is ``hook gemini --gate``, which denies what the
  human did not allow;
- ``hooks.SessionStart``, ``BeforeAgent``, ``AfterAgent``, ``SessionEnd``,
  ``Notification``: the same command (never with ``--gate``), which reports the
  agent's session to the hub (started, working on a prompt, waiting on the human in
  its terminal, its turn over, ended: cli/hook_events.py).

Gemini CLI also runs hooks and offers tools only in a folder the user trusted
(``trustedFolders.json``): that consent is the user's to give in Gemini CLI, so setup
leaves it alone and says so.  Gemini CLI reads settings with comments; setup refuses
such a file rather than drop them.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hive_rpc.cli.exits import EXIT_OK
from hive_rpc.cli.setup.files import (
    SERVER_NAME,
    Unmergeable,
    drop_hooks,
    hive_rpc_command,
    hub_options,
    json_text,
    place_hook,
    read_json_object,
    refused,
    report,
    runs_hook,
    write_text,
)

TOOL_TIMEOUT_MS = 600_000
"""``timeout`` of the server entry: Gemini CLI's default (10 min), written out so
``MCP_TOOL_TIMEOUT`` can say the same."""
HOOK_TIMEOUT_MS = 600_000
"""The BeforeTool hook's ``timeout`` (ms; Gemini's default is 60 s, short for a human)."""
HOOK_EVENT = "BeforeTool"
HOOK_MATCHER = r"^(run_shell_command|write_file|replace|web_fetch)$|^mcp_(?!hive-rpc_)"
"""The tools the hook asks about: a JavaScript regex Gemini CLI tests against the tool's
name (0.61.0's hook planner).  The built-in ones that run, write or fetch, and other
servers' MCP tools; not the read-only ones (a question per file read would drown the
human) nor hive-rpc's own tools (asking the human whether the agent may ask the
human).  A group of the user's with another matcher is left as it is."""
GATE_MATCHER = r"^(?!mcp_hive-rpc_)"
"""The gate's matcher: every tool but hive-rpc's own.  In yolo mode the hook is the
only one asked, so a list of names would let any tool it does not name run unasked
(a new or renamed built-in, ``read_file``): what is not matched is not gated."""
SETUP_MATCHERS = (HOOK_MATCHER, GATE_MATCHER)
"""The matchers setup writes: a group of ours under one of them follows ``--gate``;
a matcher of the user's own is theirs to keep."""
GATE_STEP = (
    "gate: every tool but hive-rpc's (read-only ones too) asks you first and is denied "
    "when the hub is down or nobody answers; it is for gemini --approval-mode yolo"
)
SESSION_EVENTS = ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd", "Notification")
"""The events that move the agent's session on the hub (measured on 0.61.0: the first
four fire in ``gemini -p`` too, each awaited before Gemini goes on; Notification
``ToolPermission`` as its own confirmation opens, in the interactive TUI only)."""
EVENT_TIMEOUT_MS = 10_000
"""Their hooks' ``timeout``: a report takes a second at most (hook_events.py bounds
itself at 5 s)."""
HOOK_NAME = "hive-rpc"
"""The hook's ``name``: how Gemini CLI's ``/hooks`` lists and disables it."""
TRUST_STEP = (
    "Gemini CLI runs hooks and offers MCP tools only in a folder you trust: answer its "
    "trust question when you start gemini in your project (or /permissions)"
)


def settings_path() -> Path:
    home = os.environ.get("GEMINI_CLI_HOME")
    return (Path(home) if home else Path.home()) / ".gemini" / "settings.json"


def _object(parent: dict[str, Any], key: str, what: str) -> dict[str, Any]:
    found = parent.get(key, {})
    if not isinstance(found, dict):
        raise Unmergeable(f'"{what}" is not an object')
    return found


def _timeout(entry: object, default: int) -> int:
    value = entry.get("timeout") if isinstance(entry, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return default


def merge_server(
    settings: dict[str, Any], command: Sequence[str], options: Sequence[str]
) -> dict[str, Any]:
    """``mcpServers."hive-rpc"`` set: an entry already there keeps its other keys, its
    ``env`` and its own ``timeout`` (``MCP_TOOL_TIMEOUT`` follows it)."""
    servers = _object(settings, "mcpServers", "mcpServers")
    old = servers.get(SERVER_NAME, {})
    if not isinstance(old, dict):
        raise Unmergeable(f'"mcpServers.{SERVER_NAME}" is not an object')
    env = _object(old, "env", f"mcpServers.{SERVER_NAME}.env")
    timeout = _timeout(old, TOOL_TIMEOUT_MS)
    entry = {
        **old,
        "command": command[0],
        "args": [*command[1:], "mcp", *options],
        "trust": True,
        "timeout": timeout,
        "env": {**env, "MCP_TOOL_TIMEOUT": str(timeout)},
    }
    return {**settings, "mcpServers": {**servers, SERVER_NAME: entry}}


def is_our_hook(hook: object) -> bool:
    return isinstance(hook, dict) and runs_hook(hook.get("command"), "gemini")


def merge_hook(
    settings: dict[str, Any], hook_command: str, matcher: str = HOOK_MATCHER
) -> dict[str, Any]:
    """One ``hive-rpc hook gemini`` BeforeTool hook: one already there is updated
    where it stands, duplicates dropped, its group's matcher set to ``matcher`` when
    setup wrote the one it has; else a group of its own under ``matcher``."""
    hooks = _object(settings, "hooks", "hooks")
    groups = hooks.get(HOOK_EVENT, [])
    if not isinstance(groups, list):
        raise Unmergeable(f'"hooks.{HOOK_EVENT}" is not a list')
    ours: dict[str, Any] = {
        "name": HOOK_NAME,
        "type": "command",
        "command": hook_command,
        "timeout": HOOK_TIMEOUT_MS,
    }
    merged = [
        {**group, "matcher": matcher}
        if isinstance(group, dict)
        and group.get("matcher") in SETUP_MATCHERS
        and any(is_our_hook(hook) for hook in group["hooks"])
        else group
        for group in place_hook(groups, ours, is_our_hook, matcher)
    ]
    return {**settings, "hooks": {**hooks, HOOK_EVENT: merged}}


def merge_session_hooks(settings: dict[str, Any], hook_command: str) -> dict[str, Any]:
    """One ``hive-rpc hook gemini`` hook per event of ``SESSION_EVENTS``, placed as
    ``merge_hook`` places the BeforeTool one, in a group with no matcher of its own
    (Gemini then runs it for every source and reason)."""
    hooks = _object(settings, "hooks", "hooks")
    merged = dict(hooks)
    ours: dict[str, Any] = {
        "name": HOOK_NAME,
        "type": "command",
        "command": hook_command,
        "timeout": EVENT_TIMEOUT_MS,
    }
    for event in SESSION_EVENTS:
        groups = merged.get(event, [])
        if not isinstance(groups, list):
            raise Unmergeable(f'"hooks.{event}" is not a list')
        merged[event] = place_hook(groups, ours, is_our_hook, None)
    return {**settings, "hooks": merged}


def gated(settings: dict[str, Any]) -> bool:
    """Whether a ``hook gemini`` hook already there runs with ``--gate``: setup run
    again keeps the gate, as dropping it would let a yolo Gemini run tools unasked
    (``--remove`` then setup again takes it off)."""
    hooks = settings.get("hooks")
    groups = hooks.get(HOOK_EVENT) if isinstance(hooks, dict) else None
    return isinstance(groups, list) and any(
        is_our_hook(hook) and "--gate" in shlex.split(hook["command"])
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
    )


def remove(settings: dict[str, Any]) -> dict[str, Any]:
    """Take out what ``merge_server`` and ``merge_hook`` put in (an emptied
    ``mcpServers``, group, event or ``hooks`` goes too)."""
    after = dict(settings)
    servers = _object(settings, "mcpServers", "mcpServers")
    if SERVER_NAME in servers:
        servers = {k: v for k, v in servers.items() if k != SERVER_NAME}
        if servers:
            after["mcpServers"] = servers
        else:
            del after["mcpServers"]
    hooks = _object(settings, "hooks", "hooks")
    for event in (HOOK_EVENT, *SESSION_EVENTS):
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept = drop_hooks(groups, is_our_hook)
        hooks = {**hooks, event: kept}
        if not kept:
            del hooks[event]
        if hooks:
            after["hooks"] = hooks
        else:
            del after["hooks"]
    return after


def plan(
    path: Path,
    *,
    command: Sequence[str],
    options: Sequence[str],
    removing: bool = False,
    gate: bool = False,
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """settings.json as it is and as setup would leave it, checked before anything
    is written."""
    before = read_json_object(path)
    try:
        if removing:
            after = remove(before or {})
        else:
            gate = gate or gated(before or {})
            hook = shlex.join([*command, "hook", "gemini", *options, *(["--gate"] * gate)])
            matcher = GATE_MATCHER if gate else HOOK_MATCHER
            after = merge_hook(merge_server(before or {}, command, options), hook, matcher)
            session_hook = shlex.join([*command, "hook", "gemini", *options])
            after = merge_session_hooks(after, session_hook)
    except Unmergeable as e:
        raise refused(path, f"cannot be merged: {e}") from None
    return before, after


def setup(args: argparse.Namespace) -> int:
    path = settings_path()
    before, after = plan(
        path,
        command=hive_rpc_command(),
        options=hub_options(args.hub_socket, args.hub_data_dir),
        removing=args.remove,
        gate=args.gate,
    )
    if args.print:
        print(json.dumps({str(path): after}, indent=2, ensure_ascii=False))
        return EXIT_OK
    changed = before != after and not (before is None and args.remove)
    backup = write_text(path, json_text(after)) if changed else None
    report(path, changed, backup, removing=args.remove)
    if not args.remove:
        print(f"{path}: {TRUST_STEP}")
        if gated(after):
            print(f"{path}: {GATE_STEP}")
    return EXIT_OK
