"""Agent sessions' methods (core/sessions.py, runtime/sessions.py): an agent's hook
reports its session's events (``agent/session``), and anyone lists the sessions with
their state (``hive/sessions``): which agent waits on the human, which works, which
finished its turn.

The agent id is checked as every agent's is (service/hub.py ``acting_agent``): an id
naming an agent's process is taken only from that process and what it runs.  The
other fields are the agent's own word (where it says it runs), bounded and stripped
of control characters; the state itself comes from what the hub sees."""

from __future__ import annotations

from typing import Any

from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.sessions import MAX_TEXT, REPORTED_EVENTS, check_text
from hive_rpc.service.hub import HubService, acting_agent
from hive_rpc.service.table import handles


@handles("agent/session")
async def agent_session(hub: HubService, p: dict[str, Any]) -> Any:
    agent = acting_agent(p)
    assert agent is not None  # a required param
    event = p["event"]
    if event not in REPORTED_EVENTS:
        raise InvalidParams(
            f"event must be one of {', '.join(REPORTED_EVENTS)}; got {event[:40]!r}",
            param="event",
        )
    session = hub.sessions.report(
        agent,
        event,
        reason=check_text(p.get("reason"), "reason", MAX_TEXT),
        message=check_text(p.get("message"), "message", 2000),
        project_dir=check_text(p.get("project_dir"), "project_dir"),
        terminal=check_text(p.get("terminal"), "terminal"),
        ling=check_text(p.get("ling"), "ling", MAX_TEXT),
    )
    return None if session is None else session.record()


@handles("hive/sessions")
async def sessions(hub: HubService, p: dict[str, Any]) -> Any:
    agent = acting_agent(p)  # an agent sees its own session; a coordinator, any
    if agent is not None:
        found = hub.sessions.get(agent)
        return None if found is None else found.record()
    return [s.record() for s in hub.sessions.list()]
