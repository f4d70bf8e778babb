"""The client commands: ask, answer and inspect prompts, lings and events over the
hub's socket, and ``methods``, which needs no hub at all.

They run on the blocking client (sync_client.py) and import no trio, nothing of the
hub, its faces or the MCP SDK (tests/cli/test_cli_imports.py): a shell script calling
``hive-rpc list`` in a loop pays for a socket round trip, not for an event loop or a
server.  The service's constants are imported where used, for the same reason.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from hive_rpc.cli.exits import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    CliError,
    outcome_code,
)
from hive_rpc.cli.oneshot import client_for
from hive_rpc.cli.render import describe, methods_text, print_json, table
from hive_rpc.client.sync_client import SyncHubClient, prove_approver
from hive_rpc.core.conventions import DEFAULT_AGENT, HUMAN, MIN_ID_PREFIX, human_only
from hive_rpc.core.errors import HiveError, HubUnreachable, InvalidParams, NotAnApprover
from hive_rpc.core.terminal_text import one_line, strip_controls

WAIT_CHUNK_S = 600.0
"""``--wait`` long-polls in chunks of this many seconds."""
WAIT_RECONNECTS = 3
"""Consecutive lost connections ``--wait`` survives before giving up (exit 4)."""
LIST_PAGE = 1000
"""Records ``list`` asks for per call (the hub's ``list_page`` limit)."""


def _as_agent(agent: str | None, **params: Any) -> dict[str, Any]:
    """Request params, scoped to ``agent`` when one is named (else coordinator)."""
    return {**params, "agent_id": agent} if agent else params


def _resolve(client: SyncHubClient, given: str, agent: str | None) -> str:
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
        matches = client.call("hive/lookup", _as_agent(agent, prefix=given))
    except HiveError as e:
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


def _wait(args: argparse.Namespace, prompt_id: str) -> dict[str, Any]:
    """Long-poll until the prompt is closed.  Prompts are durable, so when the hub goes
    away mid-wait we reconnect (starting a hub unless --no-start) and wait on."""
    params = _as_agent(args.agent, id=prompt_id, timeout_s=WAIT_CHUNK_S)
    failures = 0
    while True:
        try:
            with client_for(args) as client:
                while True:
                    record: dict[str, Any] = client.call("hive/await", params)
                    if record["status"] != "pending":
                        return record
                    failures = 0
        except HubUnreachable as e:
            failures += 1
            if failures > WAIT_RECONNECTS:
                raise HubUnreachable(f"lost the hub {failures} times while waiting: {e}") from None


def cmd_ask(args: argparse.Namespace) -> int:
    from hive_rpc.core.prompt import Ask  # its checks; the other commands need no prompt.py

    schema = None
    if args.schema:
        try:
            schema = json.loads(args.schema)
        except json.JSONDecodeError as e:
            raise CliError(f"--schema is not valid JSON: {e}", EXIT_USAGE) from None
    ask = Ask(
        question=args.question,
        choices=[c.strip() for c in args.choices.split(",") if c.strip()] if args.choices else None,
        schema=schema,
        urgent=bool(args.urgent),
        timeout_s=args.timeout,
        agent_id=DEFAULT_AGENT if args.agent is None else args.agent,
        task_id=args.task_id or None,
    )
    keyed = {"idempotency_key": args.key} if args.key is not None else {}
    with client_for(args) as client:
        record = client.call("hive/ask", {**ask.params(), **keyed})
    if args.wait:
        if not args.json:
            print(record["id"], file=sys.stderr, flush=True)
        record = _wait(args, record["id"])
    if args.json:
        print_json(record if args.wait else {"id": record["id"], "status": record["status"]})
    else:
        print(describe(record) if args.wait else record["id"])
    return outcome_code(record) if args.wait else EXIT_OK


def cmd_poll(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        prompt_id = _resolve(client, args.id, args.agent)
        record = client.call("hive/poll", _as_agent(args.agent, id=prompt_id))
    if args.wait and record["status"] == "pending":
        record = _wait(args, prompt_id)
    if args.json:
        print_json(record)
    else:
        print(describe(record))
    return outcome_code(record)


def cmd_answer(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        answer: Any = args.value
        action = "accept"
        if args.decline:
            answer, action = None, "decline"
        elif args.value is None:
            raise CliError("give an answer VALUE, or --decline", EXIT_USAGE)
        prompt_id = _resolve(client, args.id, None)
        current = client.call("hive/poll", {"id": prompt_id})
        if action == "accept" and current.get("schema") is not None:
            try:
                answer = json.loads(args.value)
            except json.JSONDecodeError as e:
                raise CliError(
                    f"this prompt wants a JSON object matching its schema: {e}", EXIT_USAGE
                ) from None
        # Only an approver answers what only the human decides (a permission request,
        # the hub's own consent question): one who can read the token.
        human = human_only(current.get("kind"), current.get("agent_id"))
        why = prove_approver(client.call) if human else None
        by = HUMAN if args.by is None else args.by
        try:
            record = client.call(
                "hive/respond", {"id": prompt_id, "answer": answer, "by": by, "action": action}
            )
        except NotAnApprover as e:
            raise CliError(f"{e.message} ({why})" if why else e.message, EXIT_REFUSED) from None
    if args.json:
        print_json(record)
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        if args.expired_unseen:
            records = client.call("hive/list", _as_agent(args.agent, expired_unseen=True))
        else:
            records = _list_all(client, args.agent)
    if args.json:
        print_json(records)
    elif args.expired_unseen:
        print(table(records, expired=True))
    else:
        print(table(records))
    return EXIT_OK


def _list_all(client: SyncHubClient, agent: str | None) -> list[dict[str, Any]]:
    """Every pending record, page by page (the hub refuses one reply of them all
    when they are many)."""
    records: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = _as_agent(agent, limit=LIST_PAGE)
        if cursor is not None:
            params["cursor"] = cursor
        try:
            page = client.call("hive/list", params)
        except HiveError as e:
            if e.code == InvalidParams.code and "unknown parameter" in e.message:
                # A hub older than paging: it answers the whole list.
                whole: list[dict[str, Any]] = client.call("hive/list", _as_agent(agent))
                return whole
            raise
        records.extend(page["prompts"])
        cursor = page["next_cursor"]
        if cursor is None:
            return records


def cmd_sessions(args: argparse.Namespace) -> int:
    """``hive-rpc sessions``: the agent sessions and their state; ``--watch``: then each
    change as it happens (one line, or with ``--json`` one record a line), until
    interrupted or the hub goes."""
    from hive_rpc.cli.render import session_line, sessions_table

    with client_for(args) as client:
        if not args.watch:
            records = client.call("hive/sessions", {})
            if args.json:
                print_json(records)
            else:
                print(sessions_table(records))
            return EXIT_OK
        client.timeout_s = None  # a watch waits as long as nothing changes
        client.call("hive/subscribe", {"sessions": True, "prompts": False})
        try:
            while True:
                note = client.next_notification()
                removed = note.method == "hive/sessionRemoved"
                if note.method != "hive/session" and not removed:
                    continue
                if args.json:
                    print(json.dumps({"removed": True, **note.params} if removed else note.params))
                else:
                    print(session_line(note.params, removed=removed))
                sys.stdout.flush()
        except KeyboardInterrupt:
            return EXIT_OK


def cmd_cancel(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        prompt_id = _resolve(client, args.id, args.agent)
        record = client.call("hive/cancel", _as_agent(args.agent, id=prompt_id))
    if args.json:
        print_json(record)
    return EXIT_OK


def _tmux_address(pane: str | None) -> str:
    """``--tmux``: the pane (default: this one, ``$TMUX_PANE``), plus the tmux server's
    socket from ``$TMUX`` after an ``@``, so a hub started outside tmux finds it."""
    pane = pane or os.environ.get("TMUX_PANE")
    if not pane:
        raise CliError("--tmux needs a pane (like %3) when not run inside tmux", EXIT_USAGE)
    server = os.environ.get("TMUX", "").split(",")[0]
    return f"{pane}@{server}" if server and "@" not in pane else pane


def _exec_agent(program: list[str]) -> None:
    """Become ``program``: the process the hub just recorded as the ling's agent
    (same pid, same start time; its executable is taken at the first delivery)."""
    try:
        os.execvp(program[0], program)
    except OSError as e:
        raise CliError(f"cannot run {program[0]}: {e.strerror or e}", EXIT_REFUSED) from None


def cmd_ling(args: argparse.Namespace) -> int:
    with client_for(args) as client:
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
            program = list(getattr(args, "program", None) or [])
            if program:
                if kind != "tmux":
                    raise CliError("-- COMMAND goes with --tmux (run in the pane)", EXIT_USAGE)
                params["then_exec"] = True  # this process becomes the agent: below
            result = client.call("ling/register", params)
            if not args.json:
                where = f"{result['kind']} {strip_controls(result['address'])}"
                if result.get("state") == "pending":
                    print(
                        f"{result['name']}: {where} is pending: not run inside that terminal, "
                        f"so the human must approve it (prompt {result['prompt_id']})"
                    )
                else:
                    print(f"{result['name']}: {where}")
            if program:
                if result.get("state") != "registered":
                    raise CliError(
                        f"not starting {program[0]}: the pane was not registered from "
                        "inside it (is this the pane's foreground?)",
                        EXIT_REFUSED,
                    )
                sys.stdout.flush()
                _exec_agent(program)
        elif args.ling_command == "remove":
            result = client.call("ling/remove", {"name": args.name})
            if not args.json:
                print(f"{args.name}: {'removed' if result['removed'] else 'was not registered'}")
                if not result["removed"]:
                    return EXIT_NOT_FOUND
        else:
            result = client.call("ling/list", {"check": args.check})
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
        print_json(result)
    return EXIT_OK


def cmd_event(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"kind": args.kind, "from": args.sender}
    for key in ("message", "pr", "ci", "review", "url", "comments"):
        if getattr(args, key) is not None:
            params[key] = getattr(args, key)
    with client_for(args) as client:
        result = client.call("event/post", params)
    if args.json:
        print_json(result)
    else:
        d = result["delivery"]
        reason = f" ({one_line(d['reason'])})" if d.get("reason") else ""
        print(f"{args.kind} to {result['to']}: {d['state']}{reason}")
    return EXIT_OK if result["delivery"]["state"] in ("delivered", "queued") else EXIT_REFUSED


def method_table() -> dict[str, Any]:
    """The hub's method table (protocol/methods.py, plain data) as JSON: what ``hive-rpc methods
    --json`` prints, so a client (the VS Code extension's tests) checks its protocol
    constants against the hub's own table, without a hub running."""
    from hive_rpc import __version__
    from hive_rpc.protocol.methods import METHODS

    return {
        "version": __version__,
        "methods": [
            {
                "name": name,
                "params": {
                    p: {"type": spec.type, "required": spec.required}
                    for p, spec in method.params.items()
                },
                "doc": method.doc,
                "notification_ok": method.notification_ok,
                "retryable": method.retryable,
                "long_poll": method.long_poll,
                "epc": method.epc,
                "scope": method.scope,
                "faces": list(method.faces),
                "mcp": list(method.mcp),
            }
            for name, method in METHODS.items()
        ],
    }


def cmd_methods(args: argparse.Namespace) -> int:
    result = method_table()
    if args.json:
        print_json(result)
    else:
        print(methods_text(result))
    return EXIT_OK
