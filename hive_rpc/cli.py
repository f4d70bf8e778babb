"""The ``hive-rpc`` command: run the hub, and ask, answer and inspect prompts from a shell.

Client commands start the hub in the background when none answers (``--no-start``
refuses), as emacsclient and gpg-agent do.  Exit codes are part of the interface, so
shell scripts can branch on an outcome without parsing text (see docs/cli.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import trio

from hive_rpc import __version__, start_record
from hive_rpc.client import (
    HubClient,
    HubUnreachable,
    RemoteError,
    connect_or_start,
    start_and_connect,
)
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.prompt import DEFAULT_MAX_LIFETIME_S, check_name
from hive_rpc.core.terminal_text import one_line, strip_controls
from hive_rpc.faces.editor_socket import SocketInUse
from hive_rpc.faces.mcp_groups import DEFAULT_GROUPS, parse_groups
from hive_rpc.faces.mcp_groups import valid_names as valid_groups
from hive_rpc.hub import (
    DEFAULT_RETAIN_S,
    HubAlreadyRunning,
    HubConfig,
    freeze_startup_objects,
    run_hub,
)
from hive_rpc.paths import (
    InsecurePath,
    NotLoopback,
    default_data_dir,
    default_socket,
    parse_bind,
)
from hive_rpc.service import HUMAN, MIN_ID_PREFIX
from hive_rpc.store.base import StoreCorrupt

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNREACHABLE = 4
EXIT_EXPIRED = 5
EXIT_CANCELLED = 6
EXIT_DECLINED = 7
EXIT_PENDING = 8
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""stdout was closed early (``hive-rpc list --json | head``): what a shell reports for
a command killed by SIGPIPE, as Python ignores that signal and raises instead."""

WAIT_CHUNK_S = 600.0
"""``--wait`` long-polls in chunks of this many seconds."""
WAIT_RECONNECTS = 3
HUB_TIMEOUT_S = 30.0
"""How long a command waits for the hub's answer to one call (``--hub-timeout``)."""
LIST_PAGE = 1000
"""Records ``list`` asks for per call (the hub's ``list_page`` limit)."""
"""Consecutive lost connections ``--wait`` survives before giving up (exit 4)."""


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def outcome_code(record: dict[str, Any]) -> int:
    """The exit code a prompt's state maps to."""
    status = record["status"]
    if status == "responded":
        return EXIT_OK if record.get("action") == "accept" else EXIT_DECLINED
    return {"expired": EXIT_EXPIRED, "cancelled": EXIT_CANCELLED}.get(status, EXIT_PENDING)


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")


def _print_json(value: Any) -> None:
    """JSON for people and jq alike: readable non-ASCII, but C1 controls and bidi
    overrides (which JSON leaves raw) escaped, so they never reach the terminal."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    print(_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


def _describe(record: dict[str, Any]) -> str:
    status = record["status"]
    if status == "responded":
        if record["action"] != "accept":
            done = {"decline": "declined", "cancel": "cancelled"}[record["action"]]
            return f"{done} by {one_line(record['by'])}"
        answer = record["answer"]
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return strip_controls(text)
    if status == "expired":
        return f"expired ({record['expiry_reason']})"
    if status == "cancelled":
        return f"cancelled by {one_line(record['by'])}"
    return "pending"


def _table(records: list[dict[str, Any]]) -> str:
    if not records:
        return "no pending prompts"
    now = time.time()
    rows = [("ID", "AGENT", "AGE", "EXPIRES", "QUESTION")]
    for r in records:
        question = one_line(r["question"])
        if r.get("choices"):
            question += f"  [{' / '.join(map(one_line, r['choices']))}]"
        if len(question) > 60:
            question = question[:59] + "…"
        flag = "!" if r.get("urgent") else ""
        rows.append(
            (
                one_line(r["id"]),
                one_line(r["agent_id"])[:16],
                _age(now - r["created_at"]),
                "in " + _age(r["deadline_at"] - now),
                flag + question,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    )


async def _client(args: argparse.Namespace) -> HubClient:
    return await connect_or_start(
        args.socket, args.data_dir, start=not args.no_start, timeout_s=_hub_timeout(args)
    )


def _hub_timeout(args: argparse.Namespace) -> float:
    seconds: float = getattr(args, "hub_timeout", HUB_TIMEOUT_S)
    return seconds


def _as_agent(agent: str | None, **params: Any) -> dict[str, Any]:
    """Request params, scoped to ``agent`` when one is named (else coordinator)."""
    return {**params, "agent_id": agent} if agent else params


async def _resolve(client: HubClient, given: str, agent: str | None) -> str:
    """The full prompt id that ``given`` means: the one prompt whose id starts with it
    (at least MIN_ID_PREFIX characters), as git takes a commit id in part.  The hub's
    methods stay exact; only the command line takes prefixes."""
    whose = f" asked by agent {agent!r}" if agent else ""
    if len(given) < MIN_ID_PREFIX:
        raise CliError(
            f"no prompt {given!r}{whose}: give at least {MIN_ID_PREFIX} characters of its id "
            "(`hive-rpc list` shows the pending ones)",
            EXIT_NOT_FOUND,
        )
    try:
        matches = await client.call("hive/lookup", _as_agent(agent, prefix=given))
    except RemoteError as e:
        if e.kind == "method_not_found":  # a hub older than this command: exact ids only
            return given
        raise
    ids = [m["id"] for m in matches]
    if given in ids or len(ids) == 1:
        return given if given in ids else str(ids[0])
    if not ids:
        raise CliError(
            f"no prompt {given!r}{whose}; `hive-rpc list` shows the pending prompts' ids",
            EXIT_NOT_FOUND,
        )
    rows = "".join(
        f"\n  {one_line(m['id'])}  {m['status']:<9}  {one_line(m['question'])[:60]}"
        for m in matches
    )
    raise CliError(
        f"the id prefix {given!r} matches {len(ids)} prompts; give more of the id:{rows}",
        EXIT_USAGE,
    )


async def _wait(args: argparse.Namespace, prompt_id: str) -> dict[str, Any]:
    """Long-poll until the prompt is closed.  Prompts are durable, so when the hub goes
    away mid-wait we reconnect (starting a hub unless --no-start) and wait on."""
    params = _as_agent(args.agent, id=prompt_id, timeout_s=WAIT_CHUNK_S)
    failures = 0
    while True:
        try:
            async with await _client(args) as client:
                while True:
                    record: dict[str, Any] = await client.call("hive/await", params)
                    if record["status"] != "pending":
                        return record
                    failures = 0
        except (HubUnreachable, trio.BrokenResourceError) as e:
            failures += 1
            if failures > WAIT_RECONNECTS:
                raise HubUnreachable(f"lost the hub {failures} times while waiting: {e}") from None


async def cmd_ask(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"question": args.question, "agent_id": args.agent}
    if args.choices:
        params["choices"] = [c.strip() for c in args.choices.split(",") if c.strip()]
    if args.schema:
        try:
            params["schema"] = json.loads(args.schema)
        except json.JSONDecodeError as e:
            raise CliError(f"--schema is not valid JSON: {e}", EXIT_USAGE) from None
    if args.timeout is not None:
        params["timeout_s"] = args.timeout
    if args.urgent:
        params["urgent"] = True
    if args.task_id:
        params["task_id"] = args.task_id
    async with await _client(args) as client:
        record = await client.call("hive/ask", params)
    if args.wait:
        if not args.json:
            print(record["id"], file=sys.stderr, flush=True)
        record = await _wait(args, record["id"])
    if args.json:
        _print_json(record if args.wait else {"id": record["id"], "status": record["status"]})
    else:
        print(_describe(record) if args.wait else record["id"])
    return outcome_code(record) if args.wait else EXIT_OK


async def cmd_poll(args: argparse.Namespace) -> int:
    async with await _client(args) as client:
        prompt_id = await _resolve(client, args.id, args.agent)
        record = await client.call("hive/poll", _as_agent(args.agent, id=prompt_id))
    if args.wait and record["status"] == "pending":
        record = await _wait(args, prompt_id)
    if args.json:
        _print_json(record)
    else:
        print(_describe(record))
    return outcome_code(record)


async def cmd_answer(args: argparse.Namespace) -> int:
    async with await _client(args) as client:
        answer: Any = args.value
        action = "accept"
        if args.decline:
            answer, action = None, "decline"
        elif args.value is None:
            raise CliError("give an answer VALUE, or --decline", EXIT_USAGE)
        prompt_id = await _resolve(client, args.id, None)
        if action == "accept":
            current = await client.call("hive/poll", {"id": prompt_id})
            if current.get("schema") is not None:
                try:
                    answer = json.loads(args.value)
                except json.JSONDecodeError as e:
                    raise CliError(
                        f"this prompt wants a JSON object matching its schema: {e}", EXIT_USAGE
                    ) from None
        record = await client.call(
            "hive/respond", {"id": prompt_id, "answer": answer, "by": args.by, "action": action}
        )
    if args.json:
        _print_json(record)
    return EXIT_OK


async def cmd_list(args: argparse.Namespace) -> int:
    async with await _client(args) as client:
        records = await _list_all(client, args.agent)
    if args.json:
        _print_json(records)
    else:
        print(_table(records))
    return EXIT_OK


async def _list_all(client: HubClient, agent: str | None) -> list[dict[str, Any]]:
    """Every pending record, page by page (the hub refuses one reply of them all
    when they are many)."""
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = _as_agent(agent, limit=LIST_PAGE)
        if cursor is not None:
            params["cursor"] = cursor
        try:
            page = await client.call("hive/list", params)
        except RemoteError as e:
            if e.code == InvalidParams.code and "unknown parameter" in e.message:
                # A hub older than paging: it answers the whole list.
                whole: list[dict[str, Any]] = await client.call("hive/list", _as_agent(agent))
                return whole
            raise
        records.extend(page["prompts"])
        cursor = page["next_cursor"]
        if cursor is None:
            return records


async def cmd_cancel(args: argparse.Namespace) -> int:
    async with await _client(args) as client:
        prompt_id = await _resolve(client, args.id, args.agent)
        record = await client.call("hive/cancel", _as_agent(args.agent, id=prompt_id))
    if args.json:
        _print_json(record)
    return EXIT_OK


def _store(text: str) -> str:
    """argparse type: ``sqlite``, ``memory`` or a NATS URL."""
    if text in ("sqlite", "memory") or text.startswith(("nats://", "tls://")):
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a store: choose sqlite, memory or nats://[USER:PASS@]HOST:PORT"
    )


def _tmux_address(pane: str | None) -> str:
    """``--tmux``: the pane (default: this one, ``$TMUX_PANE``), plus the tmux server's
    socket from ``$TMUX`` after an ``@``, so a hub started outside tmux finds it."""
    pane = pane or os.environ.get("TMUX_PANE")
    if not pane:
        raise CliError("--tmux needs a pane (like %3) when not run inside tmux", EXIT_USAGE)
    server = os.environ.get("TMUX", "").split(",")[0]
    return f"{pane}@{server}" if server and "@" not in pane else pane


async def cmd_ling(args: argparse.Namespace) -> int:
    async with await _client(args) as client:
        if args.ling_command == "register":
            if args.tmux is not None:
                kind, address = "tmux", _tmux_address(args.tmux or None)
            elif args.zellij is not None:
                kind, address = "zellij", args.zellij
            else:
                kind, address = "emacs-buffer", args.emacs_buffer
            params: dict[str, Any] = {"name": args.name, "kind": kind, "address": address}
            if args.label:
                params["label"] = args.label
            if args.allow_shell:
                params["allow_shell"] = True
            result = await client.call("ling/register", params)
            if not args.json:
                where = f"{result['kind']} {strip_controls(result['address'])}"
                if result.get("state") == "pending":
                    print(
                        f"{result['name']}: {where} is pending: not run inside that terminal, "
                        f"so the human must approve it (prompt {result['prompt_id']})"
                    )
                else:
                    print(f"{result['name']}: {where}")
        elif args.ling_command == "remove":
            result = await client.call("ling/remove", {"name": args.name})
            if not args.json:
                print(f"{args.name}: {'removed' if result['removed'] else 'was not registered'}")
                if not result["removed"]:
                    return EXIT_NOT_FOUND
        else:
            result = await client.call("ling/list", {"check": args.check})
            if not args.json:
                for ling in result:
                    alive = ""
                    if "alive" in ling:
                        alive = (
                            "  alive" if ling["alive"] else f"  DOWN: {one_line(ling['reason'])}"
                        )
                    pending = "  pending" if ling.get("state") == "pending" else ""
                    where = f"{ling['kind']}  {one_line(ling['address'])}"
                    print(f"{ling['name']}  {where}{pending}{alive}")
    if args.json:
        _print_json(result)
    return EXIT_OK


async def cmd_event(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"kind": args.kind, "from": args.sender}
    for key in ("message", "pr", "ci", "review", "url"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    async with await _client(args) as client:
        result = await client.call("event/post", params)
    if args.json:
        _print_json(result)
    else:
        d = result["delivery"]
        reason = f" ({one_line(d['reason'])})" if d.get("reason") else ""
        print(f"{args.kind} to {result['to']}: {d['state']}{reason}")
    return EXIT_OK if result["delivery"]["state"] in ("delivered", "queued") else EXIT_REFUSED


async def cmd_status(args: argparse.Namespace) -> int:
    try:
        hub, started = await HubClient.connect(args.socket), False
        hub.timeout_s = _hub_timeout(args)
    except HubUnreachable:  # start one (or say why not): but say so, one asked for a status
        hub, started = await _client(args), True
    async with hub as client:
        status = await client.call("hive/status")
    if started:
        print(
            f"hive-rpc: no hub was running; started one (stop it with `kill {status['pid']}`; "
            "`hive-rpc status --no-start` checks without starting one)",
            file=sys.stderr,
        )
    if args.json:
        _print_json(status)
    else:
        counts = ", ".join(f"{n} {s}" for s, n in status["counts"].items())
        print(
            f"hive-rpc {status['version']} pid {status['pid']}\n"
            f"socket   {status['socket']}\n"
            f"data dir {status['data_dir']} ({status['store']} store)\n"
            f"prompts  {counts}"
        )
        if status.get("degraded"):
            print(f"degraded {status['degraded']} (`hive-rpc doctor` checks the store)")
        if status["http_url"]:
            print(f"mcp url  {status['http_url']} (token in {status['token_file']})")
            base = status["http_url"].removesuffix("/mcp")
            token_file = shlex.quote(status["token_file"])
            print(f"dashboard {base}/dashboard")
            print(f'         open with: xdg-open "{base}/dashboard?token=$(cat {token_file})"')
    return EXIT_OK


async def cmd_mcp(args: argparse.Namespace) -> int:
    # Imported here: the MCP SDK is heavy and only this command needs it.
    from hive_rpc.faces.mcp_stdio import run_mcp_stdio

    await run_mcp_stdio(
        args.socket,
        args.data_dir,
        start=not args.no_start,
        agent=args.agent,
        groups=args.tools,
        human_input_timeout_s=args.human_timeout,
        progress_every_s=args.progress_every,
    )
    return EXIT_OK


async def cmd_epc(args: argparse.Namespace) -> int:
    from hive_rpc.faces.epc_server import run_epc

    await run_epc(args.socket, args.data_dir, start=not args.no_start, port=args.port)
    return EXIT_OK


async def cmd_lsp(args: argparse.Namespace) -> int:
    # Imported here: pygls is only needed by this command.
    from hive_rpc.faces.lsp_server import run_lsp

    return await run_lsp(args.socket, args.data_dir, start=not args.no_start)


def _serve_args(args: argparse.Namespace) -> list[str]:
    """The ``serve`` options to pass on to a detached hub (socket and data dir aside)."""
    extra = [
        *("--store", args.store),
        *("--max-lifetime", repr(args.max_lifetime)),
        *("--activity-ttl", repr(args.activity_ttl)),
        *("--retain", repr(args.retain)),
        *("--log-level", args.log_level),
    ]
    if args.http is not None:
        extra += ["--http", args.http]
    if args.no_notify:
        extra.append("--no-notify")
    return extra


async def _serve_detached(args: argparse.Namespace) -> int:
    """``serve --detach``: a hub in its own session that outlives us (and our terminal,
    Emacs, or whatever ran us), as ``emacs --daemon`` does; we return once it listens."""
    try:
        async with await HubClient.connect(args.socket) as client:
            running = await client.call("hive/status")
    except HubUnreachable:
        pass
    else:
        print(f"hive-rpc: listening on {args.socket} (already running)")
        kept = running["data_dir"]
        if Path(kept) != args.data_dir:  # as given: it may be the same dir, said otherwise
            print(
                f"hive-rpc: note: it keeps its data dir {kept}, not {args.data_dir}",
                file=sys.stderr,
            )
        return EXIT_OK
    async with await start_and_connect(args.socket, args.data_dir, _serve_args(args)) as client:
        status = await client.call("hive/status")
    print(f"hive-rpc: listening on {args.socket} (pid {status['pid']})")
    return EXIT_OK


async def cmd_serve(args: argparse.Namespace) -> int:
    if args.detach:
        return await _serve_detached(args)
    if args.ready_fd is not None:
        # Started in the background (spawn_hub): like any daemon, keep no directory
        # busy (an unmount, a deleted checkout); spawn_hub passed absolute paths.
        args.socket, args.data_dir = args.socket.absolute(), args.data_dir.absolute()
        os.chdir("/")
    config = HubConfig(
        socket=args.socket,
        data_dir=args.data_dir,
        store=args.store,
        max_lifetime_s=args.max_lifetime,
        activity_ttl_s=args.activity_ttl,
        retain_s=args.retain,
        http=args.http,
        notify=not args.no_notify,
    )
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(run_hub, config)
            freeze_startup_objects()
            start_record.write(
                config.socket,
                start_record.StartRecord(config.data_dir.absolute(), _serve_args(args)),
            )
            if args.ready_fd is not None:
                os.write(args.ready_fd, b"ready\n")
                os.close(args.ready_fd)
            print(f"hive-rpc hub listening on {config.socket}", file=sys.stderr, flush=True)
            async for signum in signals:
                logging.getLogger(__name__).info("signal %d: shutting down", signum)
                nursery.cancel_scope.cancel()
                break
    return EXIT_OK


async def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the data dir and its store without a hub; ``--recover`` rebuilds a
    damaged store from what can still be read (docs/cli.md)."""
    # Imported here: only this command needs it.
    from hive_rpc.store import doctor

    if args.recover:
        try:
            done = doctor.recover(args.data_dir)
        except doctor.RecoverRefused as e:
            raise CliError(str(e), EXIT_REFUSED) from None
        copied = ", ".join(f"{n} {table}" for table, n in done.copied.items())
        print(f"hive-rpc: recovered {done.new}: copied {copied}")
        if any(done.lost.values()):
            print("hive-rpc: some rows were on damaged pages and could not be read")
        print(f"hive-rpc: the damaged file is kept as {done.kept}")
        return EXIT_OK
    report = doctor.check(args.data_dir, args.socket)
    if args.json:
        _print_json(report.to_json())
        return EXIT_OK if report.ok else EXIT_REFUSED
    for finding in report.findings:
        print(f"{finding.level:<4} {strip_controls(finding.text)}")
    for row in report.unreadable:
        print(f"     unreadable prompt {row['id']}: {strip_controls(row['reason'])}")
    for aside in report.quarantined:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(aside["quarantined_at"]))
        print(
            f"     quarantined {aside['source']} {strip_controls(aside['id'])} ({when}): "
            f"{strip_controls(aside['reason'])}"
        )
    return EXIT_OK if report.ok else EXIT_REFUSED


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
    try:
        return parse_groups(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _agent_name(text: str) -> str:
    """argparse type: a usable agent id."""
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


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--socket",
        type=Path,
        default=None,
        help="the hub's socket (env HIVE_RPC_SOCKET; default $XDG_RUNTIME_DIR/hive-rpc/hub.sock)",
    )
    common.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the hub keeps prompts (env HIVE_RPC_DATA_DIR; default $XDG_DATA_HOME/hive-rpc)",
    )
    # Every command that talks to a hub may start one, unless told not to.
    starter = argparse.ArgumentParser(add_help=False, parents=[common])
    starter.add_argument(
        "--no-start", action="store_true", help="fail instead of starting a hub when none answers"
    )
    client = argparse.ArgumentParser(add_help=False, parents=[starter])
    client.add_argument("--json", action="store_true", help="print JSON records")
    client.add_argument(
        "--hub-timeout",
        type=_seconds,
        default=HUB_TIMEOUT_S,
        metavar="SECONDS",
        help=f"give up when the hub does not answer a call in this long (default "
        f"{HUB_TIMEOUT_S:g}; added to a long poll's own wait)",
    )

    parser = argparse.ArgumentParser(
        prog="hive-rpc",
        description="Agents ask, humans answer, nothing blocks.  See docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"hive-rpc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "serve",
        parents=[common],
        help="run the hub (in the foreground; --detach: in the background)",
    )
    p.add_argument(
        "--detach",
        action="store_true",
        help="start the hub in the background, in its own session, and return once it "
        "listens (or at once if a hub already answers on the socket)",
    )
    p.add_argument(
        "--store",
        type=_store,
        default="sqlite",
        metavar="STORE",
        help="where prompts live: sqlite (default, in the data dir), memory, or "
        "nats://[USER:PASS@]HOST:PORT shared by several hubs (docs/multi-machine.md)",
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
    p.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING ...")
    p.set_defaults(func=cmd_serve)

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
    p.add_argument("--wait", action="store_true", help="block until answered; print the answer")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("poll", parents=[client], help="show a prompt's status or answer")
    p.add_argument("id")
    p.add_argument("--agent", help="poll as this agent (sees only its own prompts)")
    p.add_argument("--wait", action="store_true", help="block until it is closed")
    p.set_defaults(func=cmd_poll)

    p = sub.add_parser("answer", parents=[client], help="answer a pending prompt")
    p.add_argument("id")
    p.add_argument("value", nargs="?", help="the answer (JSON for schema prompts)")
    p.add_argument("--by", default=HUMAN, help=f"who answers (default: {HUMAN})")
    p.add_argument("--decline", action="store_true", help="decline instead of answering")
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser("list", parents=[client], help="list pending prompts")
    p.add_argument("--agent", help="only this agent's prompts")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("cancel", parents=[client], help="withdraw a pending prompt")
    p.add_argument("id")
    p.add_argument("--agent", help="cancel as this agent (only its own prompts)")
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser(
        "mcp",
        parents=[starter],
        help="serve MCP over stdio for one agent session (register this with your agent)",
    )
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
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser(
        "epc",
        parents=[starter],
        help="serve EPC on 127.0.0.1 for epc.el (prints the port; token in DATA_DIR/epc-token)",
    )
    p.add_argument(
        "--port", type=_port, default=0, help="TCP port on 127.0.0.1 (default 0: pick a free one)"
    )
    p.set_defaults(func=cmd_epc)

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
    p.set_defaults(func=cmd_lsp)

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
        help="type into it even while a shell (not an agent) runs there",
    )
    q.set_defaults(func=cmd_ling)
    q = lings.add_parser("list", parents=[client], help="list lings")
    q.add_argument("--check", action="store_true", help="also check that each terminal is alive")
    q.set_defaults(func=cmd_ling)
    q = lings.add_parser("remove", parents=[client], help="forget a ling")
    q.add_argument("name")
    q.set_defaults(func=cmd_ling)

    p = sub.add_parser(
        "event",
        parents=[client],
        help="a child's event for its parent's terminal (session-end hooks, CI scripts)",
    )
    p.add_argument(
        "kind", choices=["child-complete", "child-question", "child-note", "pr-status", "ci-status"]
    )
    p.add_argument("--from", dest="sender", required=True, metavar="LING", help="the child's name")
    p.add_argument("--message", "-m", help="the text (required for child-question)")
    p.add_argument("--pr", type=int, help="pull request number")
    p.add_argument("--ci", help="CI status, e.g. passing")
    p.add_argument("--review", help="review status, e.g. approved")
    p.add_argument("--url", help="a link for the parent")
    p.set_defaults(func=cmd_event)

    p = sub.add_parser("status", parents=[client], help="show the hub's paths and counts")
    p.set_defaults(func=cmd_status)

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
    p.set_defaults(func=cmd_doctor)
    return parser


def _error_code(e: RemoteError) -> int:
    if e.kind == "store_unavailable":
        return EXIT_UNREACHABLE
    return EXIT_NOT_FOUND if e.kind == "not_found" else EXIT_REFUSED


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.socket = args.socket or default_socket()
        args.data_dir = args.data_dir or default_data_dir()
    except InsecurePath as e:
        print(f"hive-rpc: {e}", file=sys.stderr)
        return EXIT_REFUSED
    logging.basicConfig(
        level=getattr(args, "log_level", "WARNING").upper(),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    func: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = args.func
    try:
        return trio.run(func, args)
    except BaseException as raised:
        error = _sole_leaf(raised)
        if isinstance(error, KeyboardInterrupt):
            return 130
        if isinstance(error, BrokenPipeError):
            # The reader went away: no traceback, and nothing more to flush at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return EXIT_BROKEN_PIPE
        if isinstance(error, CliError):
            code = error.code
        elif isinstance(error, RemoteError):
            code = _error_code(error)
        elif (
            isinstance(error, HubUnreachable) or getattr(error, "kind", None) == "store_unavailable"
        ):
            code = EXIT_UNREACHABLE
        elif isinstance(
            error, HubAlreadyRunning | SocketInUse | InsecurePath | PermissionError | StoreCorrupt
        ):
            code = EXIT_REFUSED
        else:
            raise
        print(f"hive-rpc: {strip_controls(str(error))}", file=sys.stderr)
        return code


def _sole_leaf(error: BaseException) -> BaseException:
    """The one real error inside nested exception groups (trio nurseries wrap them)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
