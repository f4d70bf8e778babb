"""``hive-rpc setup codex [--print] [--remove]``: register the hub with the Codex CLI in
``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``), merged into what the
user has with tomlkit, so their comments, order and other tables stay as they were.

What it writes, each line measured with Codex 0.171.0 (tests/agents/test_codex_mcp.py):

- ``[mcp_servers."hive-rpc"]``: the absolute ``hive-rpc mcp`` plus the hub options,
  since Codex starts its servers with a stripped environment (no HIVE_RPC_SOCKET, no
  XDG_RUNTIME_DIR); ``default_tools_approval_mode = "approve"`` (``codex exec`` runs
  with approval "never", which fails every call that needs approval);
  ``required = true`` (else Codex sends its first model request before a server
  slower than about a second to start is up, and the model sees no hive-rpc tools);
  ``startup_timeout_sec``; ``tool_timeout_sec`` with ``env.MCP_TOOL_TIMEOUT`` (ms)
  saying the same, because progress does not extend Codex's limit and ``hive-rpc
  mcp`` reads that variable to return ``pending`` before the call is cut;
- ``[[hooks.PermissionRequest]]`` matching every tool, whose command hook runs
  ``hive-rpc hook codex`` with a timeout long enough for a human;
- the same hook for the events that move the agent's session on the hub (working,
  idle, gone: cli/hook_events.py): ``SessionStart``, ``UserPromptSubmit``, ``Stop``,
  ``Interrupt`` and ``SessionEnd`` (``HOOK_EVENTS``).

Codex runs a hook only once the user has trusted it in its TUI (``/hooks``); a
headless ``codex exec`` skips an untrusted one without a word.  Setup cannot trust
it for them (the trust is Codex's record of the user's consent), so it says so.
Codex records that trust in this same file, keyed by the hook's position
(``[hooks.state."<this file>:permission_request:GROUP:HOOK"] trusted_hash``, the event
in snake_case, the hash of the hook; tests/agents/test_codex_tui.py).  So when setup
takes a hook out (its own with ``--remove``, a duplicate of its own) the trust of
every hook after it under the same event moves with it, else Codex would show the
user's hooks "modified" and skip them; and the trust of a hook it takes out goes
with it, else a later setup's identical hook would run with no consent asked.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.toml_document import TOMLDocument

from hive_rpc.cli.exits import EXIT_OK
from hive_rpc.cli.setup.files import (
    SERVER_NAME,
    Unmergeable,
    hive_rpc_command,
    hub_options,
    read_text,
    refused,
    report,
    runs_hook,
    write_text,
)

TOOL_TIMEOUT_S = 600
"""``tool_timeout_sec``: Codex's limit on one MCP call (its default, 60 s, is short
for a human); ``MCP_TOOL_TIMEOUT`` says the same in ms to ``hive-rpc mcp``."""
STARTUP_TIMEOUT_S = 60
"""``startup_timeout_sec``: ``hive-rpc mcp`` may start the hub first."""
HOOK_TIMEOUT_S = 600
"""The PermissionRequest hook's ``timeout``: time for a human; the hook's own
budget stays below it."""
EVENT_TIMEOUT_S = 10
"""A session event's hook's ``timeout``: it takes a second at most (hook_events.py
bounds itself at 5 s)."""
SHORT_TIMEOUT_S = 3
"""``SessionEnd`` and ``Interrupt``'s: Codex 0.171.0 clamps theirs to 3 s, and says so
("warning: clamping SessionEnd hook timeout to 3s") on every run when it is longer."""


@dataclass(frozen=True)
class HookEvent:
    """One Codex hook event setup registers ``hive-rpc hook codex`` for."""

    trust: str
    """The event as Codex spells it in the keys of its trust records."""
    matcher: str | None
    """The matcher of setup's own group (None: none; Codex then runs it always)."""
    timeout: int


HOOK_EVENTS: dict[str, HookEvent] = {
    "PermissionRequest": HookEvent("permission_request", "*", HOOK_TIMEOUT_S),
    "SessionStart": HookEvent("session_start", None, EVENT_TIMEOUT_S),
    "UserPromptSubmit": HookEvent("user_prompt_submit", None, EVENT_TIMEOUT_S),
    "Stop": HookEvent("stop", None, EVENT_TIMEOUT_S),
    "Interrupt": HookEvent("interrupt", None, SHORT_TIMEOUT_S),
    "SessionEnd": HookEvent("session_end", None, SHORT_TIMEOUT_S),
}
"""Every event setup hooks.  The session's run synchronously: Codex 0.171.0 takes
``async = true`` (and runs a SessionEnd one synchronously anyway), but a prompt
reported in the background may reach the hub after a quick turn's Stop, leaving an
idle session shown working."""
TRUST_STEP = (
    "one step is yours: start codex and trust hive-rpc's hooks ('Trust all and continue' "
    "on its first screen, or /hooks): PermissionRequest and the session's SessionStart, "
    "UserPromptSubmit, Stop, Interrupt, SessionEnd (Codex skips a hook never trusted "
    "without a word: until then it asks itself, and the hub sees no session state)"
)


def config_path() -> Path:
    """Codex's config: ``$CODEX_HOME`` moves it (and all of Codex's state)."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home) if home else Path.home() / ".codex") / "config.toml"


@dataclass(frozen=True)
class Change:
    """config.toml as setup would leave it."""

    path: Path
    before: str | None
    after: str
    changed: bool


def parse(path: Path, text: str | None) -> TOMLDocument:
    """The file as a tomlkit document; refused (nothing written) when not TOML."""
    try:
        return tomlkit.parse(text or "")
    except TOMLKitError as e:
        raise refused(path, f"is not valid TOML ({e})") from None


def _table(parent: Any, key: str, what: str, *, create: bool) -> Any:
    """``parent[key]``, a table (made as a super-table when missing and ``create``)."""
    if key not in parent:
        if not create:
            return None
        parent[key] = tomlkit.table(is_super_table=True)
    found = parent[key]
    if not isinstance(found, dict):
        raise Unmergeable(f"{what} is not a table")
    return found


def _timeout(entry: Any, key: str, default: int) -> int:
    """The user's own value of ``key`` in the entry when it is a positive number."""
    value = entry.get(key) if entry is not None else None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return default


def merge_server(doc: TOMLDocument, command: Sequence[str], options: Sequence[str]) -> None:
    """Set ``mcp_servers."hive-rpc"`` in place: an entry already there keeps its other
    keys, its comments and its own timeouts (the env variable follows the timeout)."""
    servers = _table(doc, "mcp_servers", '"mcp_servers"', create=True)
    entry = servers.get(SERVER_NAME)
    if entry is not None and not isinstance(entry, dict):
        raise Unmergeable(f'"mcp_servers.{SERVER_NAME}" is not a table')
    if entry is None:
        entry = tomlkit.table()
        servers[SERVER_NAME] = entry
        entry = servers[SERVER_NAME]
    tool_timeout = _timeout(entry, "tool_timeout_sec", TOOL_TIMEOUT_S)
    wanted: dict[str, Any] = {
        "command": command[0],
        "args": [*command[1:], "mcp", *options],
        # codex exec's approval is "never": a call needing approval fails.
        "default_tools_approval_mode": "approve",
        # Wait for the server before the first model request.
        "required": True,
        "startup_timeout_sec": _timeout(entry, "startup_timeout_sec", STARTUP_TIMEOUT_S),
        "tool_timeout_sec": tool_timeout,
    }
    for key, value in wanted.items():
        if entry.get(key) != value:
            entry[key] = value
    env = _table(entry, "env", f'"mcp_servers.{SERVER_NAME}.env"', create=False)
    created = env is None
    if env is None:
        entry["env"] = tomlkit.table()
        env = entry["env"]
    if env.get("MCP_TOOL_TIMEOUT") != str(tool_timeout * 1000):
        env["MCP_TOOL_TIMEOUT"] = str(tool_timeout * 1000)
    if created:
        env.add(tomlkit.nl())  # a blank line before whatever table follows


def _groups(doc: TOMLDocument, event: str, *, create: bool) -> Any:
    """The array of ``event``'s hook groups (made when missing and ``create``)."""
    hooks = _table(doc, "hooks", '"hooks"', create=create)
    if hooks is None:
        return None
    if event not in hooks:
        if not create:
            return None
        hooks[event] = tomlkit.aot()
    groups = hooks[event]
    if not isinstance(groups, list):
        raise Unmergeable(f'"hooks.{event}" is not an array of tables')
    return groups


def _our_hooks(group: Any) -> list[int]:
    """Where in ``group``'s hooks ``hive-rpc hook codex`` stands."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return []
    return [
        i
        for i, hook in enumerate(group["hooks"])
        if isinstance(hook, dict) and runs_hook(hook.get("command"), "codex")
    ]


def merge_hook(doc: TOMLDocument, hook_command: str) -> None:
    """One ``hive-rpc hook codex`` hook per event of ``HOOK_EVENTS``: one already there
    is updated where it stands (in the user's matcher group), duplicates dropped;
    else a group of its own (matching every tool for PermissionRequest).  Other hooks
    stay as they are."""
    for event, spec in HOOK_EVENTS.items():
        _merge_event_hook(_groups(doc, event, create=True), hook_command, spec)


def _merge_event_hook(groups: Any, hook_command: str, spec: HookEvent) -> None:
    wanted = {"type": "command", "command": hook_command, "timeout": spec.timeout}
    placed = False
    for group in list(groups):
        ours = _our_hooks(group)
        for i in reversed(ours):
            if placed or i != ours[0]:
                del group["hooks"][i]
        if ours and not placed:
            hook = group["hooks"][ours[0]]
            for key, value in wanted.items():
                if hook.get(key) != value:
                    hook[key] = value
            placed = True
        if isinstance(group, dict) and group.get("hooks") == []:
            groups.remove(group)
    if not placed:
        group = tomlkit.table()
        if spec.matcher is not None:
            group["matcher"] = spec.matcher
        inner = tomlkit.aot()
        hook = tomlkit.table()
        hook.update(wanted)
        hook.add(tomlkit.nl())
        inner.append(hook)
        group["hooks"] = inner
        groups.append(group)


def remove(doc: TOMLDocument) -> None:
    """Take out what ``merge_server`` and ``merge_hook`` put in (an emptied
    ``mcp_servers``, hook group, event or ``hooks`` table goes too)."""
    servers = _table(doc, "mcp_servers", '"mcp_servers"', create=False)
    if servers is not None and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcp_servers"]
    for event in HOOK_EVENTS:
        groups = _groups(doc, event, create=False)
        if groups is None:
            continue
        for group in list(groups):
            for i in reversed(_our_hooks(group)):
                del group["hooks"][i]
            if isinstance(group, dict) and group.get("hooks") == []:
                groups.remove(group)
        if not groups:
            del doc["hooks"][event]
            if not doc["hooks"]:
                del doc["hooks"]


Position = tuple[int, int]
"""A hook's place under its event: its group's index, its own index in the group."""
Layout = dict[str, list[tuple[Position, bool]]]
"""Every hook of each of ``HOOK_EVENTS`` in order, with whether it runs ``hook codex``."""


def _positions(groups: Any) -> list[tuple[Position, bool]]:
    """Every hook of one event in order, with whether it runs ``hook codex``."""
    found = []
    for g, group in enumerate(groups or []):
        hooks = group.get("hooks") if isinstance(group, dict) else None
        for h, hook in enumerate(hooks if isinstance(hooks, list) else []):
            ours = isinstance(hook, dict) and runs_hook(hook.get("command"), "codex")
            found.append(((g, h), ours))
    return found


def _layout(doc: TOMLDocument) -> Layout:
    return {event: _positions(_groups(doc, event, create=False)) for event in HOOK_EVENTS}


def _moves(
    before: list[tuple[Position, bool]], after: list[tuple[Position, bool]]
) -> dict[Position, Position | None]:
    """Where each hook went: the user's keep their order (setup drops none of them);
    the first of ours is the one ``merge_hook`` keeps, any other is gone (None)."""
    theirs = [p for p, ours in before if not ours]
    moves: dict[Position, Position | None] = dict(
        zip(theirs, [p for p, ours in after if not ours], strict=True)
    )
    kept = [p for p, ours in after if ours]
    for i, position in enumerate(p for p, ours in before if ours):
        moves[position] = kept[0] if i == 0 and kept else None
    return moves


def _trusted_at(key: str, path: Path, trust_event: str) -> tuple[str, Position] | None:
    """``key`` of ``[hooks.state]`` split, when it is a ``trust_event`` hook's of this
    file: the file as Codex spelt it, and the hook's position."""
    parts = key.rsplit(":", 3)
    if len(parts) != 4 or parts[1] != trust_event:
        return None
    source, _, group, hook = parts
    if not (group.isdigit() and hook.isdigit()):
        return None
    if source != str(path) and os.path.realpath(source) != os.path.realpath(path):
        return None
    return source, (int(group), int(hook))


def move_trust(
    doc: TOMLDocument,
    path: Path,
    moves: dict[Position, Position | None],
    trust_event: str,
) -> None:
    """Codex's trust records of ``trust_event``'s hooks follow ``moves``: one whose hook
    moved is re-keyed to its new place, one whose hook is gone is dropped (an emptied
    ``[hooks.state]``, then ``[hooks]``, too)."""
    hooks: Any = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    if not isinstance(state, dict):
        return
    moving: list[tuple[str, Position | None, Any]] = []
    for key in list(state):
        found = _trusted_at(key, path, trust_event)
        if found is None or found[1] not in moves or moves[found[1]] == found[1]:
            continue
        moving.append((found[0], moves[found[1]], state[key]))
        del state[key]
    for source, to, record in moving:
        if to is not None:
            state[f"{source}:{trust_event}:{to[0]}:{to[1]}"] = record
    if not state:
        del hooks["state"]
    if not hooks:
        del doc["hooks"]


def plan(
    path: Path, *, command: Sequence[str], options: Sequence[str], removing: bool = False
) -> Change:
    """config.toml merged (or with hive-rpc's entries removed), checked before
    anything is written."""
    before = read_text(path)
    doc = parse(path, before)
    old = doc.unwrap()
    try:
        layout = _layout(doc)
        if removing:
            remove(doc)
        else:
            merge_server(doc, command, options)
            merge_hook(doc, shlex.join([*command, "hook", "codex", *options]))
        after_layout = _layout(doc)
        for event, spec in HOOK_EVENTS.items():
            moves = _moves(layout[event], after_layout[event])
            move_trust(doc, path, moves, spec.trust)
    except Unmergeable as e:
        raise refused(path, f"cannot be merged: {e}") from None
    after = doc.as_string()
    if removing:
        after = after.rstrip("\n") + "\n" if after.strip() else ""
    changed = doc.unwrap() != old or (before is None and not removing)
    return Change(path, before, after, changed)


def setup(args: argparse.Namespace) -> int:
    change = plan(
        config_path(),
        command=hive_rpc_command(),
        options=hub_options(args.hub_socket, args.hub_data_dir),
        removing=args.remove,
    )
    if args.print:
        print(f"# {change.path}")
        print(change.after, end="")
        return EXIT_OK
    backup = write_text(change.path, change.after) if change.changed else None
    report(change.path, change.changed, backup, removing=args.remove)
    if not args.remove:
        print(f"{change.path}: {TRUST_STEP}")
    return EXIT_OK
