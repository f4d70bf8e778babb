"""The audit trail (core/audit.py): every permission decision, kept in the hub's store
as documents of kind ``audit`` (the newest ``MAX_ENTRIES``), logged on the activity
stream (kind ``audit``), and listed by ``audit/list``.

The hub records them itself: ``record_decisions`` follows the registry and records
each permission prompt that closes, and ``rule/check`` records the rule it found
(service/rules.py), so what an agent's hook says plays no part.  Each handler is
attached to its row by name (``@handles``; the rows are data in protocol/methods.py)."""

from __future__ import annotations

import collections
import logging
import secrets
from typing import Any

from hive_rpc.core.audit import (
    DEFAULT_LIMIT,
    MAX_ENTRIES,
    MAX_LIMIT,
    AuditEntry,
    UnreadableEntry,
    from_prompt,
    select,
    to_prune,
)
from hive_rpc.core.errors import InvalidParams
from hive_rpc.runtime.activity import ActivityLog
from hive_rpc.runtime.registry import WATCH_BUFFER
from hive_rpc.service.hub import HubService
from hive_rpc.service.table import handles
from hive_rpc.store.base import PromptStore

log = logging.getLogger(__name__)

AUDIT_DOC = "audit"
"""The store's document kind for audit entries."""


class AuditTrail:
    """The audit documents of one hub's store.  It knows the ids and times of the
    entries it has seen (read once from the store, then kept), so keeping only the
    newest ``MAX_ENTRIES`` costs no read of the store per decision."""

    def __init__(self, store: PromptStore, activity: ActivityLog) -> None:
        self._store = store
        self._activity = activity
        self._ages: dict[str, float] | None = None
        """Entry id -> when decided; None until read from the store."""
        self.keep = MAX_ENTRIES
        """How many entries the store keeps (the newest)."""
        self._logged: collections.OrderedDict[str, None] = collections.OrderedDict()
        """Ids this hub put on its activity stream (the newest ``keep``), so an entry
        that both records and ingests (two hubs seeing one prompt close) is logged
        once."""

    async def _read(self) -> list[AuditEntry]:
        """Every entry in the store; a document that is no entry (written by hand, or
        by a future hive-rpc) is skipped and logged, never a failure of the trail."""
        entries = []
        for body in await self._store.documents(AUDIT_DOC):
            try:
                entries.append(AuditEntry.from_record(body))
            except UnreadableEntry as e:
                log.warning("audit: skipping an unreadable entry %.80r: %s", body, e)
        return entries

    async def _known(self) -> dict[str, float]:
        if self._ages is None:
            ages = {e.id: e.at for e in await self._read()}
            if self._ages is None:  # another record() read them meanwhile: keep its
                self._ages = ages
        return self._ages

    async def record(self, entry: AuditEntry) -> None:
        """Save the entry (store first, as every change), log it, and delete the
        oldest past the bound.  A store that cannot save raises: the caller decides."""
        ages = await self._known()
        body = entry.record()
        await self._store.put_document(AUDIT_DOC, entry.id, body)
        ages[entry.id] = entry.at
        self._log(body)
        for old in to_prune(ages, self.keep):
            await self._store.delete_document(AUDIT_DOC, old)
            ages.pop(old, None)

    def _log(self, body: dict[str, Any]) -> None:
        key = str(body["id"])
        if key in self._logged:
            return
        self._logged[key] = None
        while len(self._logged) > self.keep:
            self._logged.popitem(last=False)
        self._activity.publish("audit", f"audit/{body['source']}", key, body)

    def ingest(self, body: dict[str, Any] | None) -> None:
        """An audit document seen in a shared store (another hub's decision, or this
        hub's own echo): logged on this hub's activity stream once, so a dashboard
        on any hub shows every decision live.  A deletion (pruning) is no news."""
        if not isinstance(body, dict) or body.get("source") not in ("human", "rule"):
            return
        if not isinstance(body.get("id"), str):
            return
        if self._ages is not None:
            self._ages.setdefault(body["id"], float(body.get("at") or 0.0))
        self._log(body)

    async def entries(self, *, since: float | None, limit: int) -> list[AuditEntry]:
        """The newest ``limit`` entries at or after ``since``, oldest first, as the
        store has them (a shared store: every hub's)."""
        return select(await self._read(), since=since, limit=limit)


def trail(hub: HubService) -> AuditTrail:
    """The hub's audit trail, made on first use."""
    if hub.audit is None:
        hub.audit = AuditTrail(hub.registry.store, hub.activity)
    return hub.audit


def new_rule_entry_id() -> str:
    return f"rule-{secrets.token_hex(6)}"


async def record_decisions(hub: HubService, *, task_status: Any = None) -> None:
    """Record every permission prompt that closes, on this hub or (a shared store) on
    another, until cancelled.  A store that refuses the write is store trouble like
    any other the hub meets on its own (``hive/status`` shows it), and the entry is
    kept and tried again with the next prompt change of any kind (the newest
    ``MAX_ENTRIES`` at most; a hub stopped before then loses them)."""
    unsaved: collections.OrderedDict[str, AuditEntry] = collections.OrderedDict()
    started = False
    while True:
        with hub.registry.watch(buffer=WATCH_BUFFER) as watch:
            if not started and task_status is not None:
                task_status.started()
            started = True
            async for change in watch:
                entry = from_prompt(change.prompt)
                if entry is not None:
                    unsaved[entry.id] = entry
                    while len(unsaved) > MAX_ENTRIES:
                        unsaved.popitem(last=False)
                if unsaved:
                    await _save(hub, unsaved)
        # The registry drops a watcher that falls behind: watch again at once.
        log.warning("audit: fell behind the registry's changes; some decisions may be missing")


async def _save(hub: HubService, unsaved: collections.OrderedDict[str, AuditEntry]) -> None:
    """Record the unsaved entries, oldest first, until the store refuses one."""
    try:
        while unsaved:
            key, entry = next(iter(unsaved.items()))
            await trail(hub).record(entry)
            del unsaved[key]
    except Exception as e:
        hub.registry.store_trouble("audit", e)
    else:
        hub.registry.store_trouble("audit", None)


@handles("audit/list")
async def list_entries(hub: HubService, p: dict[str, Any]) -> list[dict[str, Any]]:
    limit = p.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if limit != int(limit) or not 0 < limit <= MAX_LIMIT:
        raise InvalidParams(f"limit must be a whole number from 1 to {MAX_LIMIT}", param="limit")
    entries = await trail(hub).entries(since=p.get("since"), limit=int(limit))
    return [e.record() for e in entries]
