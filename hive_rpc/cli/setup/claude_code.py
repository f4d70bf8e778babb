"""``hive-rpc setup claude-code [--project [DIR] | --user] [--print]``: register the hub
with Claude Code, merged into the files Claude Code keeps (measured on 2.1.328 with
``claude mcp add`` in a scratch HOME and project, docs/claude-code.md):

- the MCP server ``hive-rpc`` (``hive-rpc mcp``): ``--project`` in the project's
  ``.mcp.json``, ``--user`` in ``~/.claude.json``'s top-level ``mcpServers``;
- the hooks (``hive-rpc hook claude-code`` for PermissionRequest, Notification, Stop,
  StopFailure, SessionStart, UserPromptSubmit (these two in the background),
  SubagentStop and SessionEnd), ``permissions.allow`` for the hub's own tools and
  ``permissions.deny`` rules keeping Claude Code's file tools away from the approver
  token, in ``DIR/.claude/settings.json`` or ``~/.claude/settings.json``; a project's
  settings also approve its ``.mcp.json`` server (``enabledMcpjsonServers``);
- Claude Code's sandbox turned on (``sandbox.enabled``) where it works here (Linux
  with ``bwrap`` and ``socat``, or macOS) unless ``--no-sandbox`` or the user already
  chose: its seccomp filter keeps the agent's Bash from the hub's socket, and the
  Read deny rule above hides the token from that Bash too (docs/security.md).  Without
  it the deny rules bind only Claude Code's own file tools.

Why merge rather than write: these files are the user's (other servers, hooks,
permissions) and, for ``~/.claude.json``, Claude Code's own state.  So every file is
read and checked before any is written (one that is not a JSON object is refused and
nothing is changed), only hive-rpc's entries are replaced, a file whose content would
not change is not touched, and a changed file is first copied to a backup named by
its content's hash (so running the command twice writes no second backup).

The commands written are absolute: Claude Code runs hooks and MCP servers with its
own environment, whose ``PATH`` may lack ``hive-rpc``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hive_rpc.cli.exits import EXIT_OK, EXIT_REFUSED, CliError
from hive_rpc.cli.setup.files import (
    SERVER_NAME,
    Unmergeable,
    drop_hooks,
    hive_rpc_command,
    hub_options,
    json_text,
    place_hook,
    read_json_object,
    report,
    runs_hook,
    write_text,
)
from hive_rpc.core.permission_hook import EVENT as PERMISSION
from hive_rpc.core.permission_hook import HOOK_PATH
from hive_rpc.host.paths import (
    EPC_TOKEN_NAME,
    HOOK_TOKEN_NAME,
    approver_token_file,
    default_data_dir,
    default_socket,
    read_token,
)

PERMISSION_TIMEOUT_S = 600
"""The PermissionRequest hook's ``timeout``: Claude Code's own default for a command
hook, written out; the hook's ``--timeout`` (540 s) stays below it."""
EVENT_TIMEOUT_S = 10
"""The other hooks' ``timeout``: they take a second at most (hook_events.py bounds
itself), but Claude Code cancels a SessionEnd hook after about a second unless its
hook asks for longer (measured on 2.1.328: a 4 s SessionEnd hook was "Hook
cancelled" without a timeout, ran to its end with ``"timeout": 10``)."""

HOOK_EVENTS: dict[str, tuple[str | None, int]] = {
    "PermissionRequest": ("*", PERMISSION_TIMEOUT_S),
    "Notification": ("*", EVENT_TIMEOUT_S),
    "Stop": (None, EVENT_TIMEOUT_S),
    "StopFailure": (None, EVENT_TIMEOUT_S),
    "SubagentStop": (None, EVENT_TIMEOUT_S),
    "SessionStart": ("*", EVENT_TIMEOUT_S),
    "UserPromptSubmit": (None, EVENT_TIMEOUT_S),
    "SessionEnd": (None, EVENT_TIMEOUT_S),
}
"""Each hook event: its matcher (None: the event takes none) and the hook's timeout."""
IN_BACKGROUND = ("SessionStart", "UserPromptSubmit")
"""Events whose hook runs with ``"async": true``: Claude Code does not wait for it
(2.1.328's hook schema: "runs in background without blocking"), so telling the hub a
session started, or that the human sent a prompt (the session's state, service/
sessions.py), never delays the human's prompt."""


@dataclass(frozen=True)
class Change:
    """One file as setup would leave it."""

    path: Path
    before: dict[str, Any] | None
    """What it holds now (None: no such file)."""
    after: dict[str, Any]
    private: bool = False
    """Created with mode 0600 (``~/.claude.json`` holds Claude Code's state)."""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def turns_sandbox_on(self) -> bool:
        def enabled(settings: dict[str, Any] | None) -> object:
            box = (settings or {}).get("sandbox")
            return box.get("enabled") if isinstance(box, dict) else None

        return enabled(self.after) is True and enabled(self.before) is not True


def mcp_entry(command: Sequence[str], options: Sequence[str]) -> dict[str, Any]:
    """The server entry as ``claude mcp add hive-rpc -- COMMAND mcp`` writes it."""
    return {
        "type": "stdio",
        "command": command[0],
        "args": [*command[1:], "mcp", *options],
        "env": {},
    }


def is_our_hook(hook: object) -> bool:
    """A hook entry that runs ``hive-rpc hook claude-code`` (any path, any options), or
    the hub's http hook (any URL whose path is ``/hook/claude-code``)."""
    if isinstance(hook, dict) and hook.get("type") == "http":
        url = hook.get("url")
        return isinstance(url, str) and urlsplit(url).path == HOOK_PATH
    return isinstance(hook, dict) and runs_hook(hook.get("command"), "claude-code")


def http_hook(base_url: str, token: str) -> dict[str, Any]:
    """The PermissionRequest hook answered by the hub itself (faces/hook_http.py):
    POSTed the event with the hook token, no process per request.  The token is in
    the header itself: ``$VAR`` with ``allowedEnvVars`` would need the variable in
    Claude Code's environment, which no one command can set; the hook token only
    asks, never answers (docs/security.md)."""
    return {
        "type": "http",
        "url": base_url.rstrip("/") + HOOK_PATH,
        "headers": {"Authorization": f"Bearer {token}"},
        "timeout": PERMISSION_TIMEOUT_S,
    }


def hub_http_hook(socket: Path | None) -> dict[str, Any]:
    """``http_hook`` for the running hub: its HTTP URL and data dir from
    ``hive/status``, its hook token from that data dir.  Refused (CliError) when no
    hub answers or it serves no HTTP: the URL must be one that stays."""
    from hive_rpc.client.sync_client import SyncHubClient
    from hive_rpc.core.errors import HiveError, HubUnreachable

    where = socket or default_socket()
    try:
        with SyncHubClient.connect(where) as client:
            status = client.call("hive/status")
    except (HubUnreachable, HiveError, OSError) as e:
        raise CliError(
            f"--http-hook reads the URL from the running hub, and none answers on {where} "
            f"({e}); start it with `hive-rpc serve --http 127.0.0.1:PORT`",
            EXIT_REFUSED,
        ) from None
    url, data_dir = status.get("http_url"), status.get("data_dir")
    if not isinstance(url, str) or not isinstance(data_dir, str):
        raise CliError(
            f"the hub on {where} serves no HTTP, so --http-hook has no URL to write: restart "
            "it with `hive-rpc serve --http 127.0.0.1:PORT` (a fixed PORT: the URL is written "
            "into Claude Code's settings)",
            EXIT_REFUSED,
        )
    token = read_token(Path(data_dir) / HOOK_TOKEN_NAME)
    return http_hook(url.removesuffix("/mcp"), token)


def merge_hooks(
    hooks: dict[str, Any], command: str, http: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``hooks`` with one hive-rpc hook per event of HOOK_EVENTS: an existing one is
    updated where it stands (in the user's matcher group), duplicates dropped, a
    missing one added as a group of its own.  Other hooks are left as they are.
    ``http``, if given, is PermissionRequest's hook instead of the command."""
    merged = dict(hooks)
    for event, (matcher, timeout) in HOOK_EVENTS.items():
        ours: dict[str, Any] = {"type": "command", "command": command, "timeout": timeout}
        if event == PERMISSION and http is not None:
            ours = dict(http)
        if event in IN_BACKGROUND:
            ours["async"] = True
        groups = merged.get(event, [])
        if not isinstance(groups, list):
            raise Unmergeable(f'"hooks.{event}" is not a list')
        merged[event] = place_hook(groups, ours, is_our_hook, matcher)
    return merged


def _union(existing: object, add: Sequence[str], what: str) -> list[Any]:
    if existing is None:
        existing = []
    if not isinstance(existing, list):
        raise Unmergeable(f'"{what}" is not a list')
    return [*existing, *(x for x in add if x not in existing)]


def approver_files(data_dir: Path) -> list[Path]:
    """The files whose contents make a client an approver: the approver token, and
    the EPC token (``hive-rpc epc`` proves itself for every client that passed its
    ``auth``, docs/security.md)."""
    return [approver_token_file(data_dir), data_dir / EPC_TOKEN_NAME]


def deny_rules(secret_files: Sequence[Path]) -> list[str]:
    """Claude Code rules denying its file tools the files that make an approver (Edit
    covers every tool that writes files; ``//`` starts an absolute path in its rule
    syntax, a single ``/`` is relative to the settings file).  With Claude Code's
    sandbox on, its Read denials bind the sandboxed Bash too."""
    rules = []
    for secret in secret_files:
        path = "/" + str(secret.absolute())
        rules += [f"Read({path})", f"Edit({path})"]
    return rules


def sandbox_missing() -> str | None:
    """Why Claude Code's sandbox cannot run here, or None when it can (its Linux
    sandbox is bubblewrap plus socat; macOS has sandbox-exec built in)."""
    if sys.platform == "darwin":
        return None
    if not sys.platform.startswith("linux"):
        return f"Claude Code has no sandbox on {sys.platform}"
    missing = [tool for tool in ("bwrap", "socat") if shutil.which(tool) is None]
    if missing:
        return f"Claude Code's sandbox needs {' and '.join(missing)} on Linux"
    return None


def merge_settings(
    settings: dict[str, Any],
    *,
    command: str,
    deny: Sequence[str],
    project: bool,
    sandbox: bool = False,
    http: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``settings`` with the hooks (``http``: PermissionRequest's http hook), the allow
    rule for the hub's tools, the deny rules, (``project``) the approval of the
    project's ``.mcp.json`` server, and (``sandbox``) Claude Code's sandbox on unless
    the settings already say."""
    merged = dict(settings)
    hooks = merged.get("hooks", {})
    if not isinstance(hooks, dict):
        raise Unmergeable('"hooks" is not an object')
    merged["hooks"] = merge_hooks(hooks, command, http)
    permissions = merged.get("permissions", {})
    if not isinstance(permissions, dict):
        raise Unmergeable('"permissions" is not an object')
    permissions = dict(permissions)
    permissions["allow"] = _union(
        permissions.get("allow"), [f"mcp__{SERVER_NAME}"], "permissions.allow"
    )
    permissions["deny"] = _union(permissions.get("deny"), deny, "permissions.deny")
    merged["permissions"] = permissions
    if sandbox:
        box = merged.get("sandbox", {})
        if not isinstance(box, dict):
            raise Unmergeable('"sandbox" is not an object')
        if "enabled" not in box:
            merged["sandbox"] = {**box, "enabled": True}
    if project:
        merged["enabledMcpjsonServers"] = _union(
            merged.get("enabledMcpjsonServers"), [SERVER_NAME], "enabledMcpjsonServers"
        )
    return merged


def merge_servers(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """``config`` with ``mcpServers.hive-rpc`` set to ``entry`` (an ``env`` already
    there is kept: the user's own variables for the server)."""
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise Unmergeable('"mcpServers" is not an object')
    old = servers.get(SERVER_NAME)
    if isinstance(old, dict) and isinstance(old.get("env"), dict):
        entry = {**entry, "env": old["env"]}
    return {**config, "mcpServers": {**servers, SERVER_NAME: entry}}


def _without(holder: dict[str, Any], key: str, drop: Sequence[object], what: str) -> dict[str, Any]:
    """``holder`` with the items of ``drop`` taken out of its list ``key`` (the key
    too when that empties the list)."""
    items = holder.get(key)
    if items is None:
        return holder
    if not isinstance(items, list):
        raise Unmergeable(f'"{what}" is not a list')
    kept = [x for x in items if x not in drop]
    if kept == items:
        return holder
    rest = {k: v for k, v in holder.items() if k != key}
    return {**rest, key: kept} if kept else rest


def remove_servers(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without ``mcpServers.hive-rpc`` (nor an ``mcpServers`` it emptied)."""
    servers = config.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return config
    rest = {k: v for k, v in config.items() if k != "mcpServers"}
    kept = {k: v for k, v in servers.items() if k != SERVER_NAME}
    return {**rest, "mcpServers": kept} if kept else rest


def remove_settings(settings: dict[str, Any], deny: Sequence[str]) -> dict[str, Any]:
    """``settings`` without what ``merge_settings`` added: hive-rpc's hooks (groups,
    events and ``hooks`` they emptied too), its allow and deny rules, its
    ``enabledMcpjsonServers`` entry.  The sandbox setting stays: setup cannot tell
    whether the user wants it."""
    after = dict(settings)
    hooks = settings.get("hooks")
    if isinstance(hooks, dict):
        kept_hooks: dict[str, Any] = {}
        for event, groups in hooks.items():
            if event not in HOOK_EVENTS or not isinstance(groups, list):
                kept_hooks[event] = groups
                continue
            kept = drop_hooks(groups, is_our_hook)
            if kept or not groups:
                kept_hooks[event] = kept
        if kept_hooks != hooks:
            after = {k: v for k, v in after.items() if k != "hooks"}
            if kept_hooks:
                after["hooks"] = kept_hooks
    permissions = settings.get("permissions")
    if isinstance(permissions, dict):
        kept_permissions = _without(
            permissions, "allow", [f"mcp__{SERVER_NAME}"], "permissions.allow"
        )
        kept_permissions = _without(kept_permissions, "deny", deny, "permissions.deny")
        if kept_permissions != permissions:
            after = {k: v for k, v in after.items() if k != "permissions"}
            if kept_permissions:
                after["permissions"] = kept_permissions
    return _without(after, "enabledMcpjsonServers", [SERVER_NAME], "enabledMcpjsonServers")


def _merged(path: Path, before: dict[str, Any] | None, merge: Any) -> dict[str, Any]:
    try:
        after: dict[str, Any] = merge(dict(before or {}))
    except Unmergeable as e:
        raise CliError(f"{path}: {e}; fix it by hand (nothing was changed)", EXIT_REFUSED) from None
    return after


def plan(
    *,
    project: Path | None,
    home: Path,
    command: Sequence[str],
    options: Sequence[str],
    secret_files: Sequence[Path],
    sandbox: bool = False,
    removing: bool = False,
    http: dict[str, Any] | None = None,
) -> list[Change]:
    """Every file setup would write, merged (or, ``removing``, with hive-rpc's entries
    taken out), checked before any is written."""
    hook = shlex.join([*command, "hook", "claude-code", *options])
    deny = deny_rules(secret_files)
    entry = mcp_entry(command, options)
    if project is not None:
        servers_path, settings_path, private = project / ".mcp.json", project / ".claude", False
    else:
        servers_path, settings_path, private = home / ".claude.json", home / ".claude", True
    settings_path = settings_path / "settings.json"
    servers_before = read_json_object(servers_path)
    settings_before = read_json_object(settings_path)
    if removing:
        return [
            Change(
                servers_path,
                servers_before,
                _merged(servers_path, servers_before, remove_servers),
                private=private,
            ),
            Change(
                settings_path,
                settings_before,
                _merged(settings_path, settings_before, lambda s: remove_settings(s, deny)),
            ),
        ]
    return [
        Change(
            servers_path,
            servers_before,
            _merged(servers_path, servers_before, lambda c: merge_servers(c, entry)),
            private=private,
        ),
        Change(
            settings_path,
            settings_before,
            _merged(
                settings_path,
                settings_before,
                lambda s: merge_settings(
                    s,
                    command=hook,
                    deny=deny,
                    project=project is not None,
                    sandbox=sandbox,
                    http=http,
                ),
            ),
        ),
    ]


def write(change: Change) -> Path | None:
    """Write one changed file; the backup's path, or None for a new file."""
    return write_text(change.path, json_text(change.after), private=change.private)


def setup(args: argparse.Namespace) -> int:
    if args.agent != "claude-code":  # argparse's choices keep this from happening
        raise CliError(f"no setup for {args.agent}", EXIT_REFUSED)
    project = Path(args.project).absolute() if args.project is not None else None
    data_dir = args.hub_data_dir or default_data_dir()
    missing = None if args.no_sandbox or args.remove else sandbox_missing()
    http_wanted = bool(getattr(args, "http_hook", False)) and not args.remove
    changes = plan(
        project=project,
        home=Path.home(),
        command=hive_rpc_command(),
        options=hub_options(args.hub_socket, args.hub_data_dir),
        secret_files=approver_files(data_dir.absolute()),
        sandbox=not args.no_sandbox and missing is None,
        removing=args.remove,
        http=hub_http_hook(args.hub_socket) if http_wanted else None,
    )
    if args.print:
        print(json.dumps({str(c.path): c.after for c in changes}, indent=2, ensure_ascii=False))
        return EXIT_OK
    if args.remove:
        for change in changes:
            changed = change.changed and change.before is not None
            report(change.path, changed, write(change) if changed else None, removing=True)
        return EXIT_OK
    for change in changes:
        if not change.changed:
            print(f"{change.path}: already set up")
            continue
        backup = write(change)
        print(f"{change.path}: written" + (f" (the old one is in {backup})" if backup else ""))
    if http_wanted and project is not None:
        print(
            f"{changes[1].path}: holds the hook token now (it asks the human, never answers: "
            "docs/security.md); keep the file out of version control, or set up --user"
        )
    sandboxed = [c for c in changes if c.turns_sandbox_on]
    if sandboxed:
        print(
            f"{sandboxed[0].path}: Claude Code's sandbox turned on (its Bash can then reach "
            "neither the hub's socket nor the approver token); --no-sandbox leaves it off"
        )
    if missing is not None:
        print(
            f"hive-rpc: note: {missing}, so setup left it off: the deny rules keep only "
            "Claude Code's file tools from the approver token, not its Bash "
            "(docs/claude-code.md)",
            file=sys.stderr,
        )
    return EXIT_OK
