"""An agent's notice for the human (``agent/notify``): what an agent's own UI would
tell the human, such as Claude Code's Notification hook ("Claude needs your
permission to use Bash", "Claude is waiting for your input"), as an entry on the
activity stream, where the dashboard and any follower see it.

A notice is news, not a question: nothing waits for an answer, nothing is stored,
and it leaves with the stream's other entries (docs/activity.md)."""

from __future__ import annotations

from typing import Any

from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.limits import check_name
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.relay.consent import CALLER
from hive_rpc.service.hub import HubService, check_process_claim
from hive_rpc.service.table import handles

MAX_NOTICE_CHARS = 2000
"""A notice is a line or two; a longer one is refused, never cut."""


@handles("agent/notify")
async def agent_notify(hub: HubService, p: dict[str, Any]) -> Any:
    agent = check_name(p["agent_id"], "agent_id")
    check_process_claim(agent, CALLER.get())
    fields = {k: p[k] for k in ("message", "title", "type", "cwd") if p.get(k) is not None}
    for key, value in fields.items():
        if len(value) > MAX_NOTICE_CHARS:
            raise InvalidParams(
                f"{key} is {len(value)} characters; a notice's may be {MAX_NOTICE_CHARS}",
                param=key,
            )
    if not p["message"].strip():
        raise InvalidParams("message must not be empty", param="message")
    data = {
        "agent_id": agent,
        **{k: strip_controls(v) for k, v in fields.items()},
        "urgent": bool(p.get("urgent")),
    }
    entry = hub.activity.publish("notice", "agent/notify", agent, data)
    hub.sessions.report(agent, "notice", notice_type=p.get("type"), message=p["message"])
    return entry.record()
