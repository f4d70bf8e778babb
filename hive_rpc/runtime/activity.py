"""The activity stream: every change of a prompt, a dialogue or an agent's task, in
order, with an id a client can resume from (``GET /activity``, Server-Sent Events).

Why it exists: the results of asynchronous work do not reach a UI when their
completion data never reaches what the UI watches, or when the UI cannot match a
task id to what it waits for.  So every entry here carries:

* correlation ids: ``task_id`` and ``in_reply_to`` (a prompt's, or a task report's),
  so a client that only knows a task id can pick out what concerns it;
* completion data once finished: ``outcome`` (``success``, ``failed`` or
  ``cancelled``), ``result``, ``error``, ``completed_at``.

Entries live in a ring (newest ``size``) and, once finished, for ``ttl_s`` seconds.
Ids never repeat across the hub's runs: a run numbers from its start time in
microseconds (``first_id``), so a client that resumes with an id from an earlier run
names an id below this run's, and gets a reset instead of silently skipping the
entries that reused its numbers.  A resume gets a reset whenever any entry after its
id is gone: from an earlier run, pushed out of the ring, or dropped by age.
A result over ``INLINE_RESULT_BYTES`` is stored once as a blob (keyed by its SHA-256)
and entries carry a reference (``result_ref``, ``result_size``) instead of a copy.  On a
store shared by several hubs (``ResultObjects``: NATS) the report saved for the others
names such a result by its digest, kept apart in the store, and any hub reads it from
there when asked for it (``read_blob``): the seed's "store large results in object
store, reference in KV".

The log is trio-side state of one hub; the hub feeds it from the registry's watch,
the Agora's events and ``hive/reportResult`` (see hub.py).  ``follow`` waits on an
event, never polls; expiry is lazy (on publish and read), so no timer runs.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import re
import secrets
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import trio

from hive_rpc.core.completion import OUTCOMES, completion
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.limits import check_name
from hive_rpc.core.prompt import Prompt
from hive_rpc.store.base import ResultObjects

DEFAULT_SIZE = 10_000
DEFAULT_TTL_S = 3600.0
INLINE_RESULT_BYTES = 16 * 1024
MAX_RESULT_BYTES = 4 << 20
MAX_BLOBS = 256
TASK_DOC = "task"
"""The document kind of task reports in the store."""
_DIGEST = re.compile(r"[0-9a-f]{64}")
"""A blob's name: the SHA-256 of its JSON, in hex."""
TASK_FIELDS = ("task_id", "in_reply_to", "agent_id", "outcome", "result", "error", "completed_at")


def result_blob(result: Any) -> tuple[str, str] | None:
    """A result too large to be copied into entries and shared task reports (over
    ``INLINE_RESULT_BYTES`` of JSON): the SHA-256 of its JSON, in hex, and the JSON;
    None for a smaller one."""
    if result is None:
        return None
    text = json.dumps(result, separators=(",", ":"), default=str)
    if len(text) <= INLINE_RESULT_BYTES:
        return None
    return hashlib.sha256(text.encode()).hexdigest(), text


def _stored_task(body: dict[str, Any]) -> dict[str, Any] | None:
    """A task document's fields as its entry has them, a result kept apart as a
    reference to the blob (``read_blob``); None for a document that is no report."""
    task_id = body.get("task_id")
    if not isinstance(task_id, str) or body.get("outcome") not in OUTCOMES:
        return None
    data = {k: body.get(k) for k in TASK_FIELDS}
    digest = body.get("result_sha256")
    if isinstance(digest, str) and _DIGEST.fullmatch(digest):
        data["result"] = None
        data["result_ref"] = f"/activity/blobs/{digest}"
        data["result_size"] = body.get("result_size")
    return data


def first_id_at(now: float) -> int:
    """The first entry id of a run that starts at wall-clock ``now``: its microseconds
    since 1970 (about 1.8e15 in 2027, well within JavaScript's exact integers)."""
    return max(1, math.floor(now * 1_000_000))


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    kind: str
    """``prompt``, ``dialogue``, ``task`` or ``ling``."""
    event: str
    """What happened: ``ask``, ``respond``, ``expire``, ``cancel``, ``typing``,
    ``agora/consensus`` ..., ``task/report``."""
    key: str
    """The prompt id, dialogue id, task id or ling name."""
    at: float
    data: dict[str, Any]

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "event": self.event,
            "key": self.key,
            "at": self.at,
            **self.data,
        }

    @property
    def finished(self) -> bool:
        return self.data.get("outcome") is not None


def prompt_data(prompt: Prompt) -> dict[str, Any]:
    """A prompt's record plus the completion data and correlation ids every entry has.
    The prompt's own ``kind`` (question or permission) is ``prompt_kind``: ``kind`` is
    the entry's (``prompt``)."""
    data = {
        **prompt.to_record(),
        "task_id": prompt.task_id,
        "in_reply_to": prompt.in_reply_to,
        **completion(prompt),
    }
    data["prompt_kind"] = data.pop("kind")
    return data


class ActivityLog:
    def __init__(
        self,
        now: Callable[[], float],
        *,
        size: int = DEFAULT_SIZE,
        ttl_s: float = DEFAULT_TTL_S,
        first_id: int | None = None,
        results: ResultObjects | None = None,
    ) -> None:
        """``first_id`` is the id of this run's first entry: by default ``now()`` in
        microseconds, larger than any id an earlier run of the hub gave unless that run
        logged more than a million entries a second, or the clock went back.
        ``results`` is the shared store's keeper of large results, which ``read_blob``
        asks for a blob this log does not hold (another hub's)."""
        self._now = now
        self._ttl = ttl_s
        self._entries: collections.deque[Entry] = collections.deque(maxlen=size)
        self._finished: collections.deque[float] = collections.deque()
        """When each finished entry was published, oldest first (for the TTL)."""
        self.first_id = first_id_at(now()) if first_id is None else first_id
        self._next_id = self.first_id
        self.origin = secrets.token_hex(8)
        """This log's hub run, named in the task documents it saves (``hub``), so
        that its own come back through a shared store unlogged."""
        self._gone = self.first_id - 1
        """The newest id that is gone: below ``first_id``, ids of earlier runs (never
        held); then entries pushed out of the ring or dropped by age."""
        self._changed = trio.Event()
        self._blobs: collections.OrderedDict[str, str] = collections.OrderedDict()
        self.results = results

    @property
    def last_id(self) -> int:
        return self._next_id - 1

    # --- writing ---------------------------------------------------------------------

    def publish(self, kind: str, event: str, key: str, data: dict[str, Any]) -> Entry:
        """Append one entry and wake every follower."""
        data = self._store_large_result(dict(data))
        entry = Entry(self._next_id, kind, event, key, self._now(), data)
        self._next_id += 1
        self._expire()
        if len(self._entries) == self._entries.maxlen:
            self._gone = max(self._gone, self._entries[0].id)  # the ring pushes it out
        self._entries.append(entry)
        if entry.finished:
            self._finished.append(entry.at)
        self._changed.set()
        self._changed = trio.Event()
        return entry

    def prompt_changed(self, event: str, prompt: Prompt) -> Entry:
        return self.publish("prompt", event, prompt.id, prompt_data(prompt))

    def report_task(self, **fields: Any) -> Entry:
        """An agent loop's outcome under its task id, logged at once: ``task_data``'s
        fields, checked, then ``publish_task``.  ``hive/reportResult`` takes the two
        steps itself, to save the report in the store in between
        (service/activity.py); this one step is for a log with no store to save
        the report in first (the log's own tests)."""
        return self.publish_task(self.task_data(**fields))

    def publish_task(self, data: dict[str, Any]) -> Entry:
        """Log a task report made by ``task_data`` (once the store has it)."""
        return self.publish("task", "task/report", data["task_id"], data)

    def task_data(
        self,
        *,
        task_id: str,
        outcome: str,
        result: Any = None,
        error: str | None = None,
        agent_id: str | None = None,
        in_reply_to: str | None = None,
    ) -> dict[str, Any]:
        """A task report's fields, checked (InvalidParams says what is wrong)."""
        check_name(task_id, "task_id")
        if outcome not in OUTCOMES:
            raise InvalidParams(f"outcome must be one of {', '.join(OUTCOMES)}", param="outcome")
        if error is not None and not isinstance(error, str):
            raise InvalidParams("error must be a string", param="error")
        size = len(json.dumps(result, default=str))
        if size > MAX_RESULT_BYTES:
            raise InvalidParams(
                f"result is {size} bytes of JSON, over the {MAX_RESULT_BYTES}-byte limit",
                param="result",
            )
        return {
            "task_id": task_id,
            "in_reply_to": in_reply_to,
            "agent_id": agent_id,
            "outcome": outcome,
            "result": result,
            "error": error,
            "completed_at": self._now(),
        }

    # --- task reports in a store shared by several hubs ----------------------------

    def task_document(
        self, data: dict[str, Any], blob: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        """The document a task report is saved as (kind ``task``, key its task id;
        docs/multi-machine.md), for other hubs and any service watching the store.
        Given ``blob`` (``result_blob``'s, its result already kept apart by a
        ``ResultObjects`` store), the result is left out: its size and SHA-256 name
        it, and every hub reads it by that name (``read_blob``)."""
        body = {**data, "hub": self.origin}
        if blob is not None:
            digest, text = blob
            body["result"] = None
            body["result_size"] = len(text)
            body["result_sha256"] = digest
        return body

    def ingest_task(self, body: dict[str, Any] | None) -> Entry | None:
        """A task document another hub saved: logged here as that hub logged it, a
        result kept apart referred to as this hub's blob (``read_blob`` fetches it).
        This hub's own reports come back through the store too, and are skipped."""
        if not isinstance(body, dict) or body.get("hub") == self.origin:
            return None
        data = _stored_task(body)
        return None if data is None else self.publish_task(data)

    def stored_task(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """A task document as the record of an entry this log no longer holds, or
        never held (reported before this hub started): ``id`` null, ``at`` when it
        was completed.  None for a document that is not a task report."""
        data = _stored_task(body)
        if data is None:
            return None
        key, at = data["task_id"], data["completed_at"]
        return {"id": None, "kind": "task", "event": "task/report", "key": key, "at": at, **data}

    def _store_large_result(self, data: dict[str, Any]) -> dict[str, Any]:
        blob = result_blob(data.get("result"))
        if blob is None:
            return data
        digest, text = blob
        self._keep_blob(digest, text)
        data["result"] = None
        data["result_ref"] = f"/activity/blobs/{digest}"
        data["result_size"] = len(text)
        return data

    def _keep_blob(self, digest: str, text: str) -> None:
        self._blobs[digest] = text
        self._blobs.move_to_end(digest)
        while len(self._blobs) > MAX_BLOBS:
            self._blobs.popitem(last=False)

    def blob(self, digest: str) -> str | None:
        """A large result's JSON text, by the digest in its ``result_ref``, if this
        log holds it (the newest ``MAX_BLOBS``)."""
        return self._blobs.get(digest)

    async def read_blob(self, digest: str) -> str | None:
        """``blob``, else the result as the shared store keeps it (``results``),
        which holds every hub's large results until ``--retain`` removes them with
        their reports: another hub's, or one this log has dropped.  Held here once
        read.  None when neither has it (StoreUnavailable when the store fails)."""
        if (text := self.blob(digest)) is not None or self.results is None:
            return text
        if not _DIGEST.fullmatch(digest):
            return None
        text = await self.results.get_result(digest, limit=MAX_RESULT_BYTES)
        if text is not None:
            self._keep_blob(digest, text)
        return text

    def _expire(self) -> None:
        """Drop finished entries older than the TTL (lazily; the ring is rebuilt only
        when one is due, so the cost is amortised over the entries dropped)."""
        cutoff = self._now() - self._ttl
        if not self._finished or self._finished[0] >= cutoff:
            return
        while self._finished and self._finished[0] < cutoff:
            self._finished.popleft()
        kept = []
        for e in self._entries:
            if e.finished and e.at < cutoff:
                self._gone = max(self._gone, e.id)
            else:
                kept.append(e)
        self._entries = collections.deque(kept, maxlen=self._entries.maxlen)

    # --- reading ---------------------------------------------------------------------

    def since(self, last_id: int) -> list[Entry] | None:
        """Entries after ``last_id``; None when some of them are gone (the client
        must start again from a snapshot).  ``last_id`` 0 (or less) is "from this
        run's first entry": a client that has seen nothing has nothing to reload."""
        self._expire()
        if last_id <= 0:
            last_id = self.first_id - 1
        if last_id >= self.last_id:
            return []
        if last_id < self._gone:
            return None
        # Followers mostly want the last few: walk back from the newest, so the cost
        # is the number of new entries, not the size of the ring.
        newer: list[Entry] = []
        for entry in reversed(self._entries):
            if entry.id <= last_id:
                break
            newer.append(entry)
        newer.reverse()
        return newer

    def recent(self, limit: int = 100) -> list[Entry]:
        self._expire()
        return list(self._entries)[-limit:]

    def task(self, task_id: str) -> list[Entry]:
        """What is known of one task id: its reports and the prompts asked under it."""
        self._expire()
        return [
            e
            for e in self._entries
            if e.data.get("task_id") == task_id or e.data.get("in_reply_to") == task_id
        ]

    async def follow(self, last_id: int) -> AsyncGenerator[list[Entry] | None]:
        """Batches of new entries as they come (None once: the client fell behind)."""
        while True:
            batch = await self.after(last_id)
            if batch is None:
                yield None
                last_id = self.last_id
                continue
            last_id = batch[-1].id
            yield batch

    async def after(self, last_id: int) -> list[Entry] | None:
        """The entries after ``last_id``, waiting for one if there is none yet; None
        when some of them are gone (``since``).  A plain coroutine, where ``follow``
        is a generator: a follower may wait under a timeout and call it again (the
        activity stream's pings, faces/web.py), with no task of its own to carry it."""
        while not (batch := self.since(last_id)) and batch is not None:
            await self._changed.wait()
        return batch
