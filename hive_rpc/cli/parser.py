"""The ``hive-rpc`` command line: its argparse parser and the argument types.

The option defaults come from the modules that own them (the hub's retention, the MCP
tool groups), imported only when the parser is built for ``serve`` or ``mcp`` (or for
every command: ``--help``, the docs test): ``hive-rpc list`` parses its own options
without loading the hub or a face.  Each command's ``func`` is a ``"module:function"``
string the dispatcher (cli/__init__.py) imports only once it runs that command, so
``status`` loads cli/oneshot.py and not the trio commands beside it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, cast

from hive_rpc import __version__
from hive_rpc.core.errors import InvalidParams
from hive_rpc.host.paths import NotLoopback, parse_bind

HUB_TIMEOUT_S = 30.0
"""How long a command waits for the hub's answer to one call (``--hub-timeout``)."""
STOP_TIMEOUT_S = 30.0
"""How long ``stop`` and ``restart`` wait for the hub to be gone (``--timeout``): above
the hub's own budget for closing its store and its listener (hub.CLOSE_TIMEOUT_S, 10 s
each)."""
HOOK_TIMEOUT_S = 540.0
"""How long the hook waits for the human by default: below Claude Code's own limit
(hook.py CLAUDE_CODE_HOOK_TIMEOUT_S), so the hook withdraws its question and exits
before it is killed."""
ACP_TIMEOUT_S = 120.0
"""How long ``hive-rpc acp`` waits for an editor's answer to a permission request by
default; then ``--unanswered`` decides (an ACP client sets no limit of its own)."""

COMMANDS = (
    *("serve", "stop", "restart", "ask", "poll", "answer", "list", "sessions", "cancel", "mcp"),
    "epc",
    *("lsp", "ling"),
    *("event", "spawn", "hook", "acp", "setup", "rules", "audit", "status", "methods"),
    "doctor",
)
"""Every command's name: the parser builds only the one that runs (tests/cli/test_cli_docs.py
checks this list against the whole parser)."""

HEAVY_OPTIONS = ("serve", "mcp", "event")
"""Commands whose options' defaults or choices live in modules a one-shot command
need not load (the hub, the faces; the event kinds of core/messages.py, 17 ms)."""


def _setup_remove(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--remove",
        action="store_true",
        help="take hive-rpc's entries out of the files instead (a backup first)",
    )


def _setup_hub_options(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--socket",
        dest="hub_socket",
        type=Path,
        help="a hub socket to write into the commands (default: none, each finds the default)",
    )
    q.add_argument(
        "--data-dir",
        dest="hub_data_dir",
        type=Path,
        help="a hub data dir to write into the commands (also where the approver token is)",
    )


def _store(text: str) -> str:
    """argparse type: ``sqlite``, ``memory`` or a NATS URL."""
    if text in ("sqlite", "memory") or text.startswith(("nats://", "tls://")):
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a store: choose sqlite, memory or nats://[USER:PASS@]HOST:PORT"
    )


def _store_file(text: str) -> Path:
    """argparse type: a file of ours, mode 0600, holding a NATS URL (``--store-file``).

    A password other local users can read (a file, or ``ps`` showing a command line)
    is no secret, so the file is refused otherwise, as ssh refuses a private key; its
    contents are never shown."""
    path = Path(text).expanduser().absolute()
    try:
        st = path.stat()
        url = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {e}") from None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise argparse.ArgumentTypeError(
            f"{path} can be read by others (mode {st.st_mode & 0o777:o}, uid {st.st_uid}): "
            f"keep it yours alone (chmod 600 {path})"
        )
    if not url.startswith(("nats://", "tls://")):
        raise argparse.ArgumentTypeError(f"{path} holds no nats://... or tls://... URL")
    return path


def _replicas(text: str) -> int:
    """argparse type: JetStream keeps 1 to 5 copies of a stream."""
    if text.isdigit() and 1 <= int(text) <= 5:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of replicas from 1 to 5")


def _ping_misses(text: str) -> int:
    """argparse type: unanswered pings before a NATS server is deemed gone."""
    if text.isdigit() and 1 <= int(text) <= 10:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of pings from 1 to 10")


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(text: str) -> float:
    """argparse type: a positive duration, in seconds or with a unit (``30d``, ``12h``)."""
    unit = _UNITS.get(text[-1:].lower())
    return _seconds(text[:-1] if unit else text) * (unit or 1)


def _seconds(text: str) -> float:
    """argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return value


def _tool_groups(text: str) -> frozenset[str]:
    """argparse type: ``hive-rpc mcp --tools ask,agora``."""
    from hive_rpc.core.tool_groups import parse_groups

    try:
        return parse_groups(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _agent_name(text: str) -> str:
    """argparse type: a usable agent id."""
    from hive_rpc.core.limits import check_name  # not core/prompt.py: its dataclasses

    try:
        return check_name(text, "--agent")
    except InvalidParams as e:
        raise argparse.ArgumentTypeError(e.message) from None


def _port(text: str) -> int:
    """argparse type: a TCP port number, 0 for any free one."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")
    return value


def _loopback(text: str) -> str:
    """argparse type: HOST:PORT on a loopback address."""
    try:
        parse_bind(text)
    except NotLoopback as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the ``command`` about to run, the options of the other
    ``HEAVY_OPTIONS`` commands are left out (their defaults would import the hub)."""
    wants = {name: command is None or command == name for name in HEAVY_OPTIONS}
    common = _Parser(add_help=False)
    common.add_argument(
        "--socket",
        type=Path,
        default=None,
        help="the hub's socket (env HIVE_RPC_SOCKET; default $XDG_RUNTIME_DIR/hive-rpc/hub.sock, "
        "without the variable /run/user/UID/hive-rpc/hub.sock if private, else in the temp dir)",
    )
    common.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the hub keeps prompts (env HIVE_RPC_DATA_DIR; default $XDG_DATA_HOME/hive-rpc)",
    )
    # Every command that talks to a hub may start one, unless told not to.
    starter = _Parser(add_help=False, parents=[common])
    starter.add_argument(
        "--no-start", action="store_true", help="fail instead of starting a hub when none answers"
    )
    client = _Parser(add_help=False, parents=[starter])
    client.add_argument("--json", action="store_true", help="print JSON records")
    client.add_argument(
        "--hub-timeout",
        type=_seconds,
        default=HUB_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up when the hub does not answer a call in this long (default "
        f"{HUB_TIMEOUT_S:g}; added to a long poll's own wait)",
    )

    parser = _Parser(  # its subparsers are _Parsers too (add_subparsers)
        prog="hive-rpc",
        description="Agents ask, humans answer, nothing blocks.  See docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"hive-rpc {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub = _Commands(commands, command)

    p = sub.add_parser(
        "serve",
        parents=[common],
        help="run the hub (in the foreground; --detach: in the background)",
    )
    if wants["serve"]:
        _serve_options(p)
    p.set_defaults(func="hive_rpc.cli.serving:cmd_serve")

    stopping = _Parser(add_help=False, parents=[common])
    stopping.add_argument(
        "--timeout",
        type=_seconds,
        default=STOP_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the hub to be gone (default {STOP_TIMEOUT_S:g})",
    )
    p = sub.add_parser(
        "stop",
        parents=[stopping],
        help="stop the hub and wait until it is gone; no autostart starts it again",
    )
    p.set_defaults(func="hive_rpc.cli.serving:cmd_stop")
    p = sub.add_parser(
        "restart",
        parents=[stopping],
        help="stop the hub if it runs, and start it again with the options it last ran with",
    )
    p.set_defaults(func="hive_rpc.cli.serving:cmd_restart")

    p = sub.add_parser("ask", parents=[client], help="ask a question; prints its id")
    p.add_argument("question")
    p.add_argument("--choices", help="comma-separated answers to pick from")
    p.add_argument("--schema", help="a flat elicitation schema (JSON) for a structured answer")
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="countdown; stops when the human starts typing",
    )
    p.add_argument("--urgent", action="store_true")
    p.add_argument("--agent", default="cli", help="agent id to ask as (default: cli)")
    p.add_argument("--task-id", help="correlation id carried with the prompt")
    p.add_argument("--key", help="idempotency key: asked again with it, the same prompt comes back")
    p.add_argument("--wait", action="store_true", help="block until answered; print the answer")
    p.set_defaults(func="hive_rpc.cli.commands:cmd_ask")

    p = sub.add_parser("poll", parents=[client], help="show a prompt's status or answer")
    p.add_argument("id")
    p.add_argument("--agent", help="poll as this agent (sees only its own prompts)")
    p.add_argument("--wait", action="store_true", help="block until it is closed")
    p.set_defaults(func="hive_rpc.cli.commands:cmd_poll")

    p = sub.add_parser("answer", parents=[client], help="answer a pending prompt")
    p.add_argument("id")
    p.add_argument("value", nargs="?", help="the answer (JSON for schema prompts)")
    p.add_argument("--by", help="who answers (default: human)")
    p.add_argument("--decline", action="store_true", help="decline instead of answering")
    p.set_defaults(func="hive_rpc.cli.commands:cmd_answer")

    p = sub.add_parser("list", parents=[client], help="list pending prompts")
    p.add_argument("--agent", help="only this agent's prompts")
    p.add_argument(
        "--expired-unseen",
        action="store_true",
        help="instead, the questions that expired before any editor showed them",
    )
    p.set_defaults(func="hive_rpc.cli.commands:cmd_list")

    p = sub.add_parser(
        "sessions", parents=[client], help="which agent sessions wait on you, work, or are idle"
    )
    p.add_argument(
        "--watch", action="store_true", help="then print each change as it happens (Ctrl-C ends)"
    )
    p.set_defaults(func="hive_rpc.cli.commands:cmd_sessions")

    p = sub.add_parser("cancel", parents=[client], help="withdraw a pending prompt")
    p.add_argument("id")
    p.add_argument("--agent", help="cancel as this agent (only its own prompts)")
    p.set_defaults(func="hive_rpc.cli.commands:cmd_cancel")

    p = sub.add_parser(
        "mcp",
        parents=[starter],
        help="serve MCP over stdio for one agent session (register this with your agent)",
    )
    if wants["mcp"]:
        _mcp_options(p)
    p.set_defaults(func="hive_rpc.cli.mcp_relay:cmd_mcp")

    p = sub.add_parser(
        "epc",
        parents=[starter],
        help="serve EPC on 127.0.0.1 for epc.el (prints the port; token in DATA_DIR/epc-token)",
    )
    p.add_argument(
        "--port", type=_port, default=0, help="TCP port on 127.0.0.1 (default 0: pick a free one)"
    )
    p.set_defaults(func="hive_rpc.cli.serving:cmd_epc")

    p = sub.add_parser(
        "lsp",
        parents=[starter],
        help="serve the hub's methods as a stdio language server (VS Code, any LSP editor)",
    )
    # What LSP clients add on their own (vscode-languageclient: --stdio with
    # TransportKind.stdio, --clientProcessId=N for Node modules). Accepted so that
    # such a client starts the server; stdio is the only transport, and the client's
    # process id is not watched (the server exits when its input closes).
    p.add_argument(
        "--stdio", action="store_true", help="accepted and ignored: stdio is the only transport"
    )
    p.add_argument(
        "--clientProcessId",
        type=int,
        metavar="PID",
        help="accepted and ignored: the server exits when its input closes",
    )
    p.set_defaults(func="hive_rpc.cli.serving:cmd_lsp")

    p = sub.add_parser("ling", help="register the terminals agents run in (for Agora relays)")
    lings = p.add_subparsers(dest="ling_command", required=True, metavar="COMMAND")
    q = lings.add_parser("register", parents=[client], help="register (or move) a ling")
    q.add_argument("name", help="branch-like name: main.feature.auth reports to main.feature")
    where = q.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--tmux", nargs="?", const="", metavar="PANE", help="a tmux pane (default: this one)"
    )
    where.add_argument("--zellij", metavar="SESSION:PANE", help="a Zellij pane")
    where.add_argument("--emacs-buffer", metavar="BUFFER", help="a buffer in the connected Emacs")
    q.add_argument("--label", help="what events call it (default: the name's last part)")
    q.add_argument(
        "--allow-shell",
        action="store_true",
        help="approve the terminal's own shell as what is typed into (at its prompt only)",
    )
    q.add_argument(
        "program",
        nargs="*",
        metavar="COMMAND",
        help="after --, with --tmux in the pane: register it, then run COMMAND in this "
        "process's place as the approved agent",
    )
    q.set_defaults(func="hive_rpc.cli.commands:cmd_ling")
    q = lings.add_parser("list", parents=[client], help="list lings")
    q.add_argument("--check", action="store_true", help="also check that each terminal is alive")
    q.set_defaults(func="hive_rpc.cli.commands:cmd_ling")
    q = lings.add_parser("remove", parents=[client], help="forget a ling")
    q.add_argument("name")
    q.set_defaults(func="hive_rpc.cli.commands:cmd_ling")

    p = sub.add_parser(
        "event",
        parents=[client],
        help="a child's event for its parent's terminal (session-end hooks, CI scripts)",
    )
    p.add_argument("kind", choices=_event_kinds() if wants["event"] else None)
    p.add_argument("--from", dest="sender", required=True, metavar="LING", help="the child's name")
    p.add_argument("--message", "-m", help="the text (required for child-question)")
    p.add_argument("--pr", type=int, help="pull request number")
    p.add_argument("--ci", help="CI status, e.g. passing")
    p.add_argument(
        "--review",
        help="review status, e.g. changes_requested (pr-status with it: a [COPILOT REVIEW])",
    )
    p.add_argument("--comments", type=int, metavar="N", help="how many review comments")
    p.add_argument("--url", help="a link for the parent")
    p.set_defaults(func="hive_rpc.cli.commands:cmd_event")

    p = sub.add_parser(
        "spawn",
        parents=[client],
        help="start a child agent in a new tmux pane (or Emacs buffer) and register it as a ling",
    )
    p.add_argument("name", help="the child's ling name: main.feature.auth reports to main.feature")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--tmux", action="store_true", help="in a new tmux window (the default)")
    where.add_argument(
        "--emacs",
        action="store_true",
        help="in a terminal buffer of your running Emacs (through emacsclient: its server)",
    )
    p.add_argument(
        "--worktree",
        metavar="BRANCH",
        help="start it in a new git worktree of this repository, on BRANCH",
    )
    p.add_argument("--label", help="what events call it (default: the name's last part)")
    p.add_argument("program", nargs="*", metavar="COMMAND", help="what to run there, after --")
    p.set_defaults(func="hive_rpc.cli.spawn:cmd_spawn")

    p = sub.add_parser("hook", help="an agent's hook command: its permission requests")
    hooks = p.add_subparsers(dest="hook_command", required=True, metavar="AGENT")
    for agent, helps in (
        ("claude-code", "read a Claude Code hook's JSON on stdin; ask the human for a PermissionRequest"),  # noqa: E501
        ("codex", "read a Codex hook's JSON on stdin; ask the human for a PermissionRequest"),
        ("gemini", "read a Gemini CLI BeforeTool hook's JSON on stdin; ask the human"),
    ):  # fmt: skip
        q = hooks.add_parser(agent, parents=[common], help=helps)
        q.add_argument(
            "--timeout",
            type=_seconds,
            default=HOOK_TIMEOUT_S,
            metavar="SECONDS",
            help=f"how long to wait for the human (default {HOOK_TIMEOUT_S:g}: below Claude "
            "Code's 600 s hook timeout); then print nothing, so the agent asks itself",
        )
        if agent == "gemini":
            q.add_argument(
                "--gate",
                action="store_true",
                help="fail closed, for --approval-mode yolo: deny when the hub is down or "
                "nobody answers (default: print nothing, so Gemini CLI confirms itself)",
            )
        q.set_defaults(func="hive_rpc.cli.hook:cmd_hook")

    p = sub.add_parser(
        "acp",
        parents=[common],
        help="run an ACP agent (Gemini CLI's --acp ...) for an ACP client, its permission "
        "requests asked in the editors (docs/acp.md)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=ACP_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long an editor has to answer a permission request (default {ACP_TIMEOUT_S:g})",
    )
    p.add_argument(
        "--unanswered",
        choices=("client", "deny"),
        default="client",
        help="a request no editor answered (no hub, none in time, a decline): the ACP "
        "client's own dialog asks (client, the default) or the agent is refused (deny)",
    )
    p.add_argument(
        "--agent",
        dest="agent_id",
        type=_agent_name,
        help="the agent id its prompts and its MCP server use (default: the agent "
        "program's name plus a random suffix)",
    )
    p.add_argument(
        "--no-mcp", action="store_true", help="add no hive-rpc MCP server to the agent's sessions"
    )
    p.add_argument(
        "agent", nargs=argparse.REMAINDER, metavar="-- AGENT [ARGS]", help="the agent's command"
    )
    p.set_defaults(func="hive_rpc.cli.acp:cmd_acp")

    p = sub.add_parser(
        "setup",
        help="register the hub with an agent (Claude Code, Codex, Gemini CLI): MCP server, hooks",
    )
    agents = p.add_subparsers(dest="agent", required=True, metavar="AGENT")
    q = agents.add_parser(
        "claude-code",
        help="merge the MCP server, the hooks and the deny rules into Claude Code's files",
    )
    scope = q.add_mutually_exclusive_group()
    scope.add_argument(
        "--project",
        nargs="?",
        const=".",
        metavar="DIR",
        help="for one project: DIR/.mcp.json and DIR/.claude/settings.json (DIR: default .)",
    )
    scope.add_argument(
        "--user",
        action="store_true",
        help="for every project (the default): ~/.claude.json and ~/.claude/settings.json",
    )
    q.add_argument(
        "--print", action="store_true", help="print the JSON it would write; write nothing"
    )
    _setup_remove(q)
    q.add_argument(
        "--no-sandbox",
        action="store_true",
        help="leave Claude Code's sandbox as it is (default: turn it on where it works here)",
    )
    q.add_argument(
        "--http-hook",
        action="store_true",
        help="answer PermissionRequest at the running hub's HTTP endpoint (hive-rpc serve "
        "--http HOST:PORT, a fixed port), no process per request; the other hooks stay commands",
    )
    _setup_hub_options(q)
    q.set_defaults(func="hive_rpc.cli.setup:cmd_setup")
    for agent, config, syntax in (
        ("codex", "$CODEX_HOME/config.toml (default ~/.codex)", "TOML"),
        ("gemini", "~/.gemini/settings.json", "JSON"),
    ):
        q = agents.add_parser(
            agent, help=f"merge the MCP server and the permission hook into {config}"
        )
        q.add_argument(
            "--print", action="store_true", help=f"print the {syntax} it would write; write nothing"
        )
        _setup_remove(q)
        _setup_hub_options(q)
        if agent == "gemini":
            q.add_argument(
                "--gate",
                action="store_true",
                help="for --approval-mode yolo: ask about every tool but hive-rpc's and "
                "deny what the human did not allow (hook gemini --gate)",
            )
        q.set_defaults(func="hive_rpc.cli.setup:cmd_setup")

    p = sub.add_parser(
        "rules", help="answer rules: permission requests a rule allows or denies for you"
    )
    rules = p.add_subparsers(dest="rules_command", required=True, metavar="COMMAND")
    q = rules.add_parser(
        "add", parents=[client], help="add a rule, in Claude Code's syntax: 'Bash(npm test:*)'"
    )
    q.add_argument("pattern", help="Tool, Tool(exact argument), Tool(prefix:*) or mcp__server")
    decision = q.add_mutually_exclusive_group(required=True)
    decision.add_argument("--allow", action="store_true", help="allow what it matches")
    decision.add_argument("--deny", action="store_true", help="deny it (deny wins over allow)")
    scope = q.add_mutually_exclusive_group()
    scope.add_argument("--session", metavar="ID", help="only in this Claude Code session")
    scope.add_argument(
        "--project",
        metavar="DIR",
        help="in this directory and below (the default, with the current directory)",
    )
    scope.add_argument("--global", dest="glob", action="store_true", help="everywhere")
    q.set_defaults(func="hive_rpc.cli.decisions:cmd_rules")
    q = rules.add_parser("list", parents=[client], help="list the rules, oldest first")
    q.set_defaults(func="hive_rpc.cli.decisions:cmd_rules")
    q = rules.add_parser("remove", parents=[client], help="remove a rule")
    q.add_argument("id")
    q.set_defaults(func="hive_rpc.cli.decisions:cmd_rules")

    p = sub.add_parser(
        "audit",
        parents=[client],
        help="every permission decision, by a human or a rule: who, what, how long it waited",
    )
    p.add_argument(
        "--since",
        metavar="DURATION|TIME",
        help="only decisions since then: 30m, 2h, 7d, or 2026-11-24, 2026-11-24T10:00, 10:00",
    )
    p.add_argument("--limit", type=int, default=100, metavar="N", help="the newest N (default 100)")
    p.set_defaults(func="hive_rpc.cli.decisions:cmd_audit")

    p = sub.add_parser("status", parents=[client], help="show the hub's paths and counts")
    p.set_defaults(func="hive_rpc.cli.oneshot:cmd_status")

    p = sub.add_parser(
        "methods", help="the hub's method table: names, params, docs (no hub needed)"
    )
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.set_defaults(func="hive_rpc.cli.commands:cmd_methods")

    p = sub.add_parser(
        "doctor",
        parents=[common],
        help="check the data dir and its store (modes, locks, integrity, rows set aside)",
    )
    p.add_argument(
        "--recover",
        action="store_true",
        help="copy every readable row of a damaged store into a new file (hub stopped; "
        "the old file is kept)",
    )
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func="hive_rpc.cli.serving:cmd_doctor")
    return parser


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: $COLUMNS, else the width of the
    terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return (os.get_terminal_size(stdout.fileno()).columns if stdout else 0) or 80
    except (AttributeError, ValueError, OSError):  # not a terminal, or closed
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, the terminal's width read without ``shutil``:
    argparse builds one for every ``add_argument`` (to check the option's help) and
    imported ``shutil``, with the compressors it loads, for the width (2 ms of each
    one-shot command)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = terminal_columns() - 2 if width is None else width  # as argparse does
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help is formatted by ``_Formatter``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)


class _Unbuilt:
    """A command's parser while another command runs: whatever is called on it does
    nothing and answers itself, so its options cost nothing to leave out."""

    def __getattr__(self, name: str) -> Any:
        return self._nothing

    def _nothing(self, *args: Any, **kwargs: Any) -> Any:
        return self


class _Commands:
    """The subparsers, building only the parser of the ``command`` about to run (19
    parsers and their gettext lookups are 8 ms of a one-shot command's start); every
    one for ``--help``, no command or a name that is none (its error lists them)."""

    def __init__(self, sub: Any, command: str | None) -> None:
        self._sub = sub
        self._only = command if command in COMMANDS else None

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if self._only is not None and name != self._only:
            return cast(argparse.ArgumentParser, _Unbuilt())
        parser: argparse.ArgumentParser = self._sub.add_parser(name, **kwargs)
        return parser


def _event_kinds() -> tuple[str, ...]:
    from hive_rpc.core.messages import EVENT_KINDS

    return tuple(EVENT_KINDS)


def _serve_options(p: argparse.ArgumentParser) -> None:
    from hive_rpc.core.prompt import DEFAULT_MAX_LIFETIME_S
    from hive_rpc.hub import DEFAULT_RETAIN_S

    p.add_argument(
        "--detach",
        action="store_true",
        help="start the hub in the background, in its own session, and return once it "
        "listens (or at once if a hub already answers on the socket)",
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--autostart",
        action="store_true",
        help="with --detach: start as clients do when none answers: not a hub stopped on "
        "purpose (exit 4), and, given no other option, with the options it last ran with",
    )
    how.add_argument(
        "--as-before",
        action="store_true",
        help="with --detach: given no other option, start the hub with the options it last "
        "ran with, even one stopped on purpose",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--store",
        type=_store,
        default="sqlite",
        metavar="STORE",
        help="where prompts live: sqlite (default, in the data dir), memory, or "
        "nats://[USER:PASS@]HOST:PORT shared by several hubs (docs/multi-machine.md); "
        "several NATS servers comma-separated",
    )
    where.add_argument(
        "--store-file",
        type=_store_file,
        metavar="FILE",
        help="read a NATS STORE from FILE (yours, mode 0600): keeps its password off "
        "the command line",
    )
    p.add_argument(
        "--replicas",
        type=_replicas,
        default=None,
        metavar="N",
        help="with a NATS store: copies of each bucket, 1-5 (default 3 on a cluster of 3 "
        "or more servers, else 1); a bucket with fewer is raised to N",
    )
    p.add_argument(
        "--nats-ping",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="with a NATS store: ping the server every SECONDS (default 2); a server "
        "that leaves --nats-ping-misses pings unanswered is left for another",
    )
    p.add_argument(
        "--nats-ping-misses",
        type=_ping_misses,
        default=None,
        metavar="N",
        help="with a NATS store: unanswered pings before the server is deemed gone, "
        "1-10 (default 2)",
    )
    p.add_argument(
        "--max-lifetime",
        type=_seconds,
        default=DEFAULT_MAX_LIFETIME_S,
        metavar="SECONDS",
        help="hard maximum lifetime of a prompt (default 24 h)",
    )
    p.add_argument(
        "--activity-ttl",
        type=_seconds,
        default=3600.0,
        metavar="SECONDS",
        help="how long finished entries stay in the activity stream (default 1 h)",
    )
    p.add_argument(
        "--http",
        type=_loopback,
        metavar="HOST:PORT",
        help="also serve MCP over Streamable HTTP on this loopback address "
        "(e.g. 127.0.0.1:8765; port 0 picks one)",
    )
    p.add_argument(
        "--no-notify",
        action="store_true",
        help="no desktop notifications for urgent prompts (docs/notifications.md)",
    )
    p.add_argument(
        "--retain",
        type=_duration,
        default=DEFAULT_RETAIN_S,
        metavar="DURATION",
        help="delete closed prompts older than this (seconds, or with a unit: 30d, 12h; "
        "default 30d)",
    )
    p.add_argument(
        "--watch-prs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="watch the pull requests of lings' branches with gh and type their PR, "
        "review and CI events to the parent (default: on when gh is on PATH)",
    )
    p.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING ...")


def _mcp_options(p: argparse.ArgumentParser) -> None:
    from hive_rpc.core.tool_groups import DEFAULT_GROUPS
    from hive_rpc.core.tool_groups import valid_names as valid_groups

    p.add_argument(
        "--agent",
        type=_agent_name,
        help="this session's agent id (default: the client's name plus a random suffix)",
    )
    p.add_argument(
        "--human-timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="request_human_input's countdown (default 60)",
    )
    p.add_argument(
        "--progress-every",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="progress notification interval while a tool waits (default 10)",
    )
    p.add_argument(
        "--tools",
        type=_tool_groups,
        default=DEFAULT_GROUPS,
        metavar="GROUPS",
        help=f"comma-separated tool groups to offer: {valid_groups()} (default: ask; "
        "docs/mcp.md#tool-groups)",
    )
