"""The activity stream's methods (docs/activity.md): an agent loop reports its task's
outcome (``hive/reportResult``), and a client reads recent entries (``hive/activity``).
Each handler is attached to its row by name (``@handles``; the rows are data in
protocol/methods.py)."""

from __future__ import annotations

import json
from typing import Any

from hive_rpc.core.errors import InvalidParams
from hive_rpc.runtime.activity import TASK_DOC, result_blob
from hive_rpc.service.hub import HubService, acting_agent
from hive_rpc.service.table import handles
from hive_rpc.store.base import ResultObjects


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
    # A large result is kept apart first, where the report names it, so whoever
    # reads the report finds it; a shared store's reports stay small.
    store = hub.registry.store
    blob = None
    if isinstance(store, ResultObjects) and (blob := result_blob(data["result"])) is not None:
        await store.put_result(*blob)
    await store.put_document(TASK_DOC, data["task_id"], hub.activity.task_document(data, blob))
    return hub.activity.publish_task(data).record()


@handles("hive/activity")
async def activity(hub: HubService, p: dict[str, Any]) -> Any:
    if p.get("task_id") is not None:
        return await _task(hub, p["task_id"])
    if p.get("since") is not None:
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


async def _task(hub: HubService, task_id: str) -> list[dict[str, Any]]:
    """One task's entries, its newest report with its result in full: whoever asks
    for one task wants how it ended.  A report this hub's log does not hold (made
    before it started, or dropped) is read from the store, where it stays until
    ``--retain``.  A large result is a blob, this hub's, or on a shared store another
    hub's, read from the store now (``read_blob``); the older reports keep their
    reference, so the reply holds one result at most (4 MiB)."""
    records = [e.record() for e in hub.activity.task(task_id)]
    if not any(r["kind"] == "task" for r in records):
        body = await hub.registry.store.get_document(TASK_DOC, task_id)
        stored = hub.activity.stored_task(body) if body is not None else None
        if stored is not None:
            records.append(stored)
    report = next((r for r in reversed(records) if r["kind"] == "task"), None)
    ref = report.get("result_ref") if report is not None else None
    if report is not None and isinstance(ref, str) and report.get("result") is None:
        text = await hub.activity.read_blob(ref.rsplit("/", 1)[-1])
        if text is not None:
            report["result"] = json.loads(text)
    return records
