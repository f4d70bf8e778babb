"""The activity stream's methods (docs/activity.md): an agent loop reports its task's
outcome (``hive/reportResult``), and a client reads recent entries (``hive/activity``).
Each handler is attached to its row by name (``@handles``; the rows are data in
protocol/methods.py)."""

from __future__ import annotations

from typing import Any

from hive_rpc.core.errors import InvalidParams
from hive_rpc.runtime.activity import TASK_DOC
from hive_rpc.service.hub import HubService, acting_agent
from hive_rpc.service.table import handles


@handles("hive/reportResult")
async def report_result(hub: HubService, p: dict[str, Any]) -> Any:
    data = hub.activity.task_data(
        task_id=p["task_id"],
        outcome=p["outcome"],
        result=p.get("result"),
        error=p.get("error"),
        agent_id=acting_agent(p),
        in_reply_to=p.get("in_reply_to"),
    )
    # Saved before it is logged, as a prompt's change is: the report is a document of
    # the store, which other hubs sharing it, and any service watching
    # it, read; a store that cannot save refuses the report (store_unavailable).
    await hub.registry.store.put_document(
        TASK_DOC, data["task_id"], hub.activity.task_document(data)
    )
    return hub.activity.publish_task(data).record()


@handles("hive/activity")
async def activity(hub: HubService, p: dict[str, Any]) -> Any:
    if p.get("task_id") is not None:
        entries = hub.activity.task(p["task_id"])
    elif p.get("since") is not None:
        found = hub.activity.since(int(p["since"]))
        if found is None:
            raise InvalidParams(
                f"entries after {p['since']} are gone; start again without since",
                param="since",
            )
        entries = found
    else:
        entries = hub.activity.recent(int(p.get("limit") or 100))
    return [e.record() for e in entries]
