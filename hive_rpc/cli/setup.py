"""``hive-rpc setup claude-code [--project [DIR] | --user] [--print]``: register the hub
with Claude Code, merged into the files Claude Code keeps (measured on 2.1.328 with
``claude mcp add`` in a scratch HOME and project, docs/claude-code.md):

- the MCP server ``hive-rpc`` (``hive-rpc mcp``): ``--project`` in the project's
  ``.mcp.json``, ``--user`` in ``~/.claude.json``'s top-level ``mcpServers``;
- the hooks (``hive-rpc hook claude-code`` for PermissionRequest, Notification, Stop,
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
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive_rpc.cli.exits import EXIT_OK, EXIT_REFUSED, CliError
from hive_rpc.host.paths import EPC_TOKEN_NAME, approver_token_file, default_data_dir

SERVER_NAME = "hive-rpc"
"""The MCP server's name, so its tools are ``mcp__hive-rpc__TOOL``."""

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
    "SubagentStop": (None, EVENT_TIMEOUT_S),
    "SessionEnd": (None, EVENT_TIMEOUT_S),
}
"""Each hook event: its matcher (None: the event takes none) and the hook's timeout."""


class Unmergeable(Exception):
    """A file whose hive-rpc part has a shape setup will not guess about."""


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


def hive_rpc_command() -> list[str]:
    """The installed ``hive-rpc``, absolute: the script beside this interpreter (a
    virtualenv's ``bin``), else the one on PATH, else ``python -m hive_rpc``."""
    beside = Path(sys.executable).parent / "hive-rpc"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("hive-rpc")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "hive_rpc"]


def hub_options(socket: Path | None, data_dir: Path | None) -> list[str]:
    """The hub options given to setup, passed on to every command it writes."""
    words = []
    if socket is not None:
        words += ["--socket", str(socket.absolute())]
    if data_dir is not None:
        words += ["--data-dir", str(data_dir.absolute())]
    return words


def mcp_entry(command: Sequence[str], options: Sequence[str]) -> dict[str, Any]:
    """The server entry as ``claude mcp add hive-rpc -- COMMAND mcp`` writes it."""
    return {
        "type": "stdio",
        "command": command[0],
        "args": [*command[1:], "mcp", *options],
        "env": {},
    }


def is_our_hook(hook: object) -> bool:
    """A hook entry that runs ``hive-rpc hook claude-code`` (any path, any options)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    runs_us = any(w.endswith("hive-rpc") or w == "hive_rpc" for w in words[:3])
    return runs_us and any(
        w == "hook" and words[i + 1 : i + 2] == ["claude-code"] for i, w in enumerate(words)
    )


def merge_hooks(hooks: dict[str, Any], command: str) -> dict[str, Any]:
    """``hooks`` with one hive-rpc hook per event of HOOK_EVENTS: an existing one is
    updated where it stands (in the user's matcher group), duplicates dropped, a
    missing one added as a group of its own.  Other hooks are left as they are."""
    merged = dict(hooks)
    for event, (matcher, timeout) in HOOK_EVENTS.items():
        ours = {"type": "command", "command": command, "timeout": timeout}
        groups = merged.get(event, [])
        if not isinstance(groups, list):
            raise Unmergeable(f'"hooks.{event}" is not a list')
        placed = False
        kept = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept.append(group)
                continue
            entries = []
            for hook in group["hooks"]:
                if not is_our_hook(hook):
                    entries.append(hook)
                elif not placed:
                    entries.append({**hook, **ours})
                    placed = True
            if entries:
                kept.append({**group, "hooks": entries})
        if not placed:
            kept.append({**({"matcher": matcher} if matcher else {}), "hooks": [ours]})
        merged[event] = kept
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
) -> dict[str, Any]:
    """``settings`` with the hooks, the allow rule for the hub's tools, the deny rules,
    (``project``) the approval of the project's ``.mcp.json`` server, and
    (``sandbox``) Claude Code's sandbox on unless the settings already say."""
    merged = dict(settings)
    hooks = merged.get("hooks", {})
    if not isinstance(hooks, dict):
        raise Unmergeable('"hooks" is not an object')
    merged["hooks"] = merge_hooks(hooks, command)
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


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, None when there is no such file; a CliError naming
    the file when it is anything else, so nothing gets written over it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"cannot read {path}: {e}; nothing was changed", EXIT_REFUSED) from None
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        raise CliError(
            f"{path} is not valid JSON ({e}); fix it or move it away and run this again "
            "(nothing was changed)",
            EXIT_REFUSED,
        ) from None
    if not isinstance(value, dict):
        raise CliError(
            f"{path} holds JSON that is not an object; nothing was changed", EXIT_REFUSED
        )
    return value


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
) -> list[Change]:
    """Every file setup would write, merged, checked before any is written."""
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
                    s, command=hook, deny=deny, project=project is not None, sandbox=sandbox
                ),
            ),
        ),
    ]


def backup_path(path: Path, content: bytes) -> Path:
    """Where the content a file held before setup is kept: named by its hash, so the
    same content is backed up once however often setup runs."""
    digest = hashlib.sha256(content).hexdigest()[:12]
    return path.with_name(f"{path.name}.hive-rpc-{digest}.bak")


def write(change: Change) -> Path | None:
    """Write one changed file (a backup of the old one first, then an atomic
    replace keeping its mode); the backup's path, or None for a new file."""
    path = change.path
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    mode = 0o600 if change.private else 0o644
    if path.exists():
        old = path.read_bytes()
        mode = path.stat().st_mode & 0o777
        backup = backup_path(path, old)
        if not backup.exists():
            fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(old)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(change.after, indent=2, ensure_ascii=False) + "\n")
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


async def cmd_setup(args: argparse.Namespace) -> int:
    """Files only, no hub: nothing here waits, so it runs as plain code."""
    return setup(args)


def setup(args: argparse.Namespace) -> int:
    if args.agent != "claude-code":  # argparse's choices keep this from happening
        raise CliError(f"no setup for {args.agent}", EXIT_REFUSED)
    project = Path(args.project).absolute() if args.project is not None else None
    data_dir = args.hub_data_dir or default_data_dir()
    missing = None if args.no_sandbox else sandbox_missing()
    changes = plan(
        project=project,
        home=Path.home(),
        command=hive_rpc_command(),
        options=hub_options(args.hub_socket, args.hub_data_dir),
        secret_files=approver_files(data_dir.absolute()),
        sandbox=not args.no_sandbox and missing is None,
    )
    if args.print:
        print(json.dumps({str(c.path): c.after for c in changes}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for change in changes:
        if not change.changed:
            print(f"{change.path}: already set up")
            continue
        backup = write(change)
        print(f"{change.path}: written" + (f" (the old one is in {backup})" if backup else ""))
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
