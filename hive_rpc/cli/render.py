"""How the ``hive-rpc`` command prints records, tables and the hub's status.

Everything a hub or an agent wrote passes through ``one_line`` or ``strip_controls``
before it reaches the terminal (an agent's question must not move the cursor or
retitle the window); JSON goes out with the controls JSON leaves raw escaped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from typing import Any

from hive_rpc.core.terminal_text import one_line, strip_controls


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]")


def print_json(value: Any) -> None:
    """JSON for people and jq alike: readable non-ASCII, but C1 controls and bidi
    overrides (which JSON leaves raw) escaped, so they never reach the terminal."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    print(_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


def describe(record: dict[str, Any]) -> str:
    """A prompt's outcome in a line: the answer, or what closed it."""
    status = record["status"]
    if status == "responded":
        if record["action"] != "accept":
            done = {"decline": "declined", "cancel": "cancelled"}[record["action"]]
            return f"{done} by {one_line(record['by'])}"
        answer = record["answer"]
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return strip_controls(text)
    if status == "expired":
        if record.get("shown_at") is None:
            return f"expired unseen ({record['expiry_reason']}): no editor showed it to the human"
        return f"expired ({record['expiry_reason']})"
    if status == "cancelled":
        return f"cancelled by {one_line(record['by'])}"
    return "pending"


def table(records: list[dict[str, Any]], *, expired: bool = False) -> str:
    """``hive-rpc list``: the pending prompts, one a line; with ``expired``, those that
    expired unseen (``--expired-unseen``), with when they expired."""
    if not records:
        return "no question expired unseen" if expired else "no pending prompts"
    now = time.time()
    rows = [("ID", "AGENT", "AGE", "EXPIRED" if expired else "EXPIRES", "QUESTION")]
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
                # Whole: agents differ at the end (claude-code-3278e209, -3f2a9c1d).
                one_line(r["agent_id"]),
                _age(now - r["created_at"]),
                _age(now - (r["expired_at"] or now)) + " ago"
                if expired
                else "in " + _age(r["deadline_at"] - now),
                flag + question,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    )


def waits_on(record: dict[str, Any]) -> str:
    """What a session waits on, in words: ``2 permissions, 1 question``, ``its own
    dialog``; or what it does (``working``, ``idle``, ``gone``)."""
    parts = []
    for key, one in (("permissions", "permission"), ("questions", "question")):
        n = int(record.get(key) or 0)
        if n:
            parts.append(f"{n} {one}" + ("s" if n > 1 else ""))
    if record.get("in_terminal"):
        parts.append("its own dialog")
    return ", ".join(parts) if parts else str(record.get("state"))


def _home(path: str | None) -> str:
    if not path:
        return "-"
    home = os.path.expanduser("~")
    shown = "~" + path[len(home) :] if path == home or path.startswith(home + "/") else path
    return one_line(shown)


def sessions_table(records: list[dict[str, Any]]) -> str:
    """``hive-rpc sessions``: each agent session, one a line, those waiting on the
    human first (the hub's order)."""
    if not records:
        return "no agent sessions"
    now = time.time()
    rows = [("STATE", "AGENT", "FOR", "PROJECT", "WAITS ON / MESSAGE")]
    for r in records:
        what = waits_on(r) if r["state"] == "waiting" else one_line(r.get("message") or "")
        rows.append(
            (
                one_line(r["state"]),
                one_line(r["agent_id"]),
                _age(now - r["changed_at"]),
                _home(r.get("project_dir")),
                what[:60],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        for row in rows
    ).rstrip()


def session_line(record: dict[str, Any], *, removed: bool = False) -> str:
    """One change of ``hive-rpc sessions --watch``: when, which session, its state."""
    at = time.strftime("%H:%M:%S")
    agent = one_line(record["agent_id"])
    if removed:
        return f"{at}  {agent}  left the list"
    state = waits_on(record) if record["state"] == "waiting" else record["state"]
    state = f"waiting on {state}" if record["state"] == "waiting" else one_line(state)
    return f"{at}  {agent}  {state}  {_home(record.get('project_dir'))}"


def status_text(status: dict[str, Any]) -> str:
    """``hive-rpc status``: the hub's ``hive/status`` for a person."""
    counts = ", ".join(f"{n} {s}" for s, n in status["counts"].items())
    lines = [
        f"hive-rpc {status['version']} pid {status['pid']}",
        f"socket   {status['socket']}",
        f"data dir {status['data_dir']} ({status['store']} store)",
        f"prompts  {counts}",
    ]
    if status.get("expired_unseen"):
        lines.append(
            f"unseen   {status['expired_unseen']} expired before an editor showed them "
            "(hive-rpc list --expired-unseen)"
        )
    sessions = status.get("sessions") or {}
    if any(sessions.values()):
        said = ", ".join(f"{n} {state}" for state, n in sessions.items() if n)
        lines.append(f"sessions {said} (hive-rpc sessions)")
    if status.get("degraded"):
        lines.append(f"degraded {status['degraded']} (`hive-rpc doctor` checks the store)")
    prs = status.get("pull_requests")
    if prs is not None:
        said = f"{prs['watching']} branch{'es' if prs['watching'] != 1 else ''} watched"
        said += f", {prs['open']} open PR{'s' if prs['open'] != 1 else ''}"
        if prs["skipped"]:
            said += f"; skipped: {', '.join(f'{n} ({why})' for n, why in prs['skipped'].items())}"
        if prs["trouble"]:
            said += f"; trouble: {prs['trouble']}"
        lines.append(f"prs      {said}")
    if status["http_url"]:
        lines.append(f"mcp url  {status['http_url']} (token in {status['token_file']})")
        base = status["http_url"].removesuffix("/mcp")
        # The dashboard decides for the human: it signs in with the human's token, never
        # with the MCP token the agents hold (docs/security.md).
        human_file = shlex.quote(status["approver_token_file"])
        lines.append(f"dashboard {base}/dashboard")
        lines.append(f'         open with: xdg-open "{base}/dashboard?token=$(cat {human_file})"')
    return "\n".join(lines)


def methods_text(table_json: dict[str, Any]) -> str:
    """``hive-rpc methods``: one method a paragraph, its params (``?`` when optional)."""
    blocks = []
    for m in table_json["methods"]:
        params = ", ".join(
            f"{name}{'' if p['required'] else '?'}: {p['type']}" for name, p in m["params"].items()
        )
        flags = [f for f in ("notification_ok", "retryable") if m[f]]
        if m.get("long_poll"):
            flags.append(f"long_poll: {m['long_poll']}")
        if m.get("scope") == "connection":
            flags.append(f"connection: {', '.join(m['faces'])}")
        if m["epc"]:
            flags.append(f"epc: {m['epc']}")
        extra = f"  [{', '.join(flags)}]" if flags else ""
        blocks.append(f"{m['name']}({params}){extra}\n    {m['doc']}")
    return "\n".join(blocks)
