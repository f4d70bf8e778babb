"""``hive-rpc rules`` and ``hive-rpc audit``: the answer rules that decide agents'
permission requests for the human, and the trail of every decision made (by a human
or a rule), over the hub's ``rule/*`` and ``audit/list`` methods.

Client commands like the others: on the blocking client, no trio, nothing of the hub.
Everything the hub or an agent wrote (patterns, commands, names) passes through
``one_line`` before it reaches the terminal.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Sequence
from typing import Any

from hive_rpc.cli.exits import EXIT_NOT_FOUND, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CliError
from hive_rpc.cli.oneshot import client_for
from hive_rpc.cli.render import print_json
from hive_rpc.client.sync_client import SyncHubClient, prove_approver
from hive_rpc.core.errors import NotAnApprover
from hive_rpc.core.terminal_text import one_line

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")
_CLOCK = re.compile(r"\d{1,2}:\d{2}(:\d{2})?")


def since_time(text: str, now: float) -> float:
    """``--since``: a duration back from ``now`` (``90s``, ``30m``, ``2h``, ``7d``, a
    bare number of seconds) or a time (``2026-11-24``, ``2026-11-24T10:00``, ``10:00``
    today; local time unless it names its zone), as Unix seconds."""
    text = text.strip()
    duration = _DURATION.fullmatch(text)
    if duration:
        return now - float(duration[1]) * _UNITS[duration[2] or "s"]
    if _CLOCK.fullmatch(text):
        text = time.strftime("%Y-%m-%d", time.localtime(now)) + "T" + text
    from datetime import datetime  # only for a time: 1.3 ms of every rules and audit command

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise CliError(
            f"--since {text!r} is neither a duration (90s, 30m, 2h, 7d) nor a time "
            "(2026-11-24, 2026-11-24T10:00, 10:00)",
            EXIT_USAGE,
        ) from None


def _scope(args: argparse.Namespace) -> tuple[str, str | None]:
    """The scope and its ``where``: a session, a project (this directory unless
    named) or global.  With none given, this directory's project: a rule reaches no
    further than the human asked."""
    if args.glob:
        return "global", None
    if args.session is not None:
        return "session", args.session
    return "project", os.path.abspath(args.project or os.getcwd())


def rules_table(rules: list[dict[str, Any]]) -> str:
    """``hive-rpc rules list``: one rule a line, oldest first."""
    if not rules:
        return "no rules"
    rows = [("ID", "DECISION", "SCOPE", "WHERE", "PATTERN", "MADE BY")]
    for r in rules:
        made = f"from prompt {r['from_prompt']}" if r.get("from_prompt") else r["made_by"]
        rows.append(
            (
                one_line(str(r["id"])),
                one_line(str(r["decision"])),
                one_line(str(r["scope"])),
                one_line(str(r["where"] or "-")),
                one_line(str(r["pattern"])),
                one_line(str(made)),
            )
        )
    return _columns(rows)


def _columns(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
        for row in rows
    )


def _how(entry: dict[str, Any]) -> str:
    """Which rule decided, or which prompt and what the human answered."""
    if entry["source"] == "rule":
        return f"rule {entry['rule_id']} {entry['rule_pattern']} ({entry['rule_scope']})"
    said = entry.get("answer")
    if entry.get("status") == "expired":
        said = "expired"
    elif entry.get("status") == "cancelled":
        said = "withdrawn"
    elif entry.get("action") not in (None, "accept"):
        said = {"decline": "declined", "cancel": "dismissed"}.get(entry["action"], entry["action"])
    return f"prompt {entry['prompt_id']} ({said})"


def audit_table(entries: list[dict[str, Any]]) -> str:
    """``hive-rpc audit``: one decision a line, oldest first, in local time."""
    if not entries:
        return "no decisions"
    rows = [("TIME", "DECISION", "BY", "WAITED", "TOOL", "WHAT", "HOW")]
    for e in entries:
        what = one_line(str(e["summary"]))
        if len(what) > 50:
            what = what[:49] + "…"
        rows.append(
            (
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e["at"])),
                one_line(str(e["decision"])),
                one_line(str(e["by"]))[:16],
                f"{e['latency_s']:.1f}s",
                one_line(str(e["tool"] or "-")),
                what,
                one_line(_how(e)),
            )
        )
    return _columns(rows)


def _as_approver(client: SyncHubClient, method: str, params: dict[str, Any]) -> Any:
    """Call a method only an approver may (``rule/add``, ``rule/remove``), proving it
    first with the approver token, as ``hive-rpc answer`` does; refused (exit 1) with
    the reason the token could not be read."""
    why = prove_approver(client.call)
    try:
        return client.call(method, params)
    except NotAnApprover as e:
        raise CliError(f"{e.message} ({why})" if why else e.message, EXIT_REFUSED) from None


def cmd_rules(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        if args.rules_command == "add":
            scope, where = _scope(args)
            params: dict[str, Any] = {
                "pattern": args.pattern,
                "decision": "allow" if args.allow else "deny",
                "scope": scope,
            }
            if where is not None:
                params["where"] = where
            result = _as_approver(client, "rule/add", params)
            text = f"{result['id']}: {result['decision']} {one_line(result['pattern'])} ({scope}"
            print_text = text + (f" {one_line(where)})" if where else ")")
        elif args.rules_command == "remove":
            result = _as_approver(client, "rule/remove", {"id": args.id})
            if not result["removed"]:
                if args.json:
                    print_json(result)
                    return EXIT_NOT_FOUND
                raise CliError(
                    f"no rule {args.id!r}; `hive-rpc rules list` shows their ids", EXIT_NOT_FOUND
                )
            print_text = f"{one_line(args.id)}: removed"
        else:
            result = client.call("rule/list", {})
            print_text = rules_table(result)
    if args.json:
        print_json(result)
    else:
        print(print_text)
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"limit": args.limit}
    if args.since is not None:
        params["since"] = since_time(args.since, time.time())
    with client_for(args) as client:
        entries = client.call("audit/list", params)
    if args.json:
        print_json(entries)
    else:
        print(audit_table(entries))
    return EXIT_OK
