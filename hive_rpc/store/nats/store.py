"""``NatsStore``: the ``PromptStore`` on two JetStream KV buckets shared by a team's
hubs (the package's doc says the layout).

nats-py is asyncio-only, so every call crosses ``hive_rpc.store.aio_bridge``: the client,
its buckets and its subscriptions live on the bridge's asyncio thread and are
touched only by the ``_aio_*`` coroutines below, which run there.

First answer wins across hubs: ``update`` reads the record with its revision, checks
the status, and writes with ``last=revision``.  A hub that loses that race gets a
wrong-last-sequence error, reads again, and returns what the winner wrote.

When NATS cannot be reached every operation fails within ``timeout`` seconds with
``StoreUnavailable``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import datetime
import hashlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import nats.errors
import nats.js.errors
import trio
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.kv import KeyValue
from nats.js.object_store import OBJ_CHUNKS_PRE_TEMPLATE, OBJ_META_PRE_TEMPLATE, ObjectStore

from hive_rpc.core.errors import PromptUnreadable, StoreUnavailable
from hive_rpc.core.prompt import Prompt, Status
from hive_rpc.store.aio_bridge import AsyncioThread
from hive_rpc.store.base import RETAINED_DOCUMENTS, RETENTION_BATCH
from hive_rpc.store.nats.names import (
    DOCUMENTS_BUCKET,
    PROMPTS_BUCKET,
    RESULTS_BUCKET,
    StoreChange,
    decode_name,
    doc_key,
    dumps,
    encode_name,
    shown,
)
from hive_rpc.store.nats.watch import Watch
from hive_rpc.store.records import UnreadableRecord, decode_prompt, shared_record

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 5.0
"""Longest any one store operation may take before it fails with StoreUnavailable."""
CAS_ATTEMPTS = 20
"""Read-check-write rounds before ``update``/``put_document`` give up under contention."""

PURGE_CHUNK = 50
"""Keys purged per round trip by ``prune_closed``: each purge scans the stream on
the server (v2.9), so a chunk stays well inside the operation timeout."""


def _maybe_pending(value: bytes) -> bool:
    """False only for a record that cannot be pending: it names a status and the
    word ``"pending"`` is nowhere in it (a record without a status reads as pending)."""
    return b'"pending"' in value or b'"status"' not in value


_STATUSES = frozenset(s.value for s in Status)
_CLOSED = _STATUSES - {Status.PENDING.value}
_STATUS = re.compile(rb'"status":"([a-z]+)"')


def _status(value: bytes) -> str | None:
    """A record's status read from its bytes without decoding it, or None (no
    status hive-rpc knows).  The hubs write compact JSON, so the record's own
    status reads ``"status":"..."``; only when that appears once can no nested value
    (a schema, an answer) have one too, else ``json.loads`` decides."""
    found = _STATUS.findall(value)
    if len(found) == 1:
        status: Any = found[0].decode("ascii")
    else:
        record = _json_object(value)
        status = record.get("status") if record else None
    return status if isinstance(status, str) and status in _STATUSES else None


def _json_object(value: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _timestamp(created: Any) -> float:
    """A KV entry's ``created`` (nats-py gives a datetime) as Unix seconds; 0 if absent."""
    if isinstance(created, datetime.datetime):
        return created.timestamp()
    return float(created) if isinstance(created, int | float) else 0.0


class NatsStore:
    """``PromptStore`` on two JetStream KV buckets, through an asyncio bridge.

    Make one with ``open_nats_store(url)``.
    """

    kind = "nats"

    def __init__(
        self,
        bridge: AsyncioThread,
        nc: NatsClient,
        js: JetStreamContext,
        prompts: KeyValue,
        docs: KeyValue,
        results: ObjectStore,
        *,
        url: str,
        timeout: float,
        replicas: int = 1,
    ) -> None:
        self._bridge = bridge
        self._nc = nc
        self._js = js
        self._prompts = prompts
        self._docs = docs
        self._results = results
        self.url = shown(url)
        self.timeout = timeout
        self.replicas = replicas
        """The copies JetStream keeps of each bucket (of the one with fewer): what
        ``--replicas`` (or its default) asked, unless the server could not give it."""
        self._closed = False
        self._watches: set[Watch] = set()
        self._link_watchers: set[asyncio.Queue[str | None]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_created_ns = 0
        self._prune_plan: tuple[float, list[tuple[str, str, int]]] | None = None
        """``prune_closed``'s ``before`` and what it has still to purge for it."""
        self.unreadable: dict[str, str] = {}
        """Prompt ids whose records this hub could not read, with the reason."""
        self._denied: tuple[float, str] | None = None
        """The last permissions violation the server reported (the loop's time, its
        words): a publish the hub's NATS user may not make is dropped by the server
        with only this asynchronous error, so the request waits out its timeout."""

    # -- crossing to asyncio -------------------------------------------------------

    async def _call(self, write: bool, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return await self._bridge.run(self._aio_guarded, write, fn, *args)

    async def _aio_guarded(self, write: bool, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """On the loop: run ``fn`` within the timeout; every NATS failure becomes
        StoreUnavailable (-32007), whose message says what happened in words a person
        can act on and whether a write may have been saved (``maybe_saved``): only
        when the request may have reached the stream and its answer never came back.
        Refusals before sending (not connected, no stream leader, JetStream's 503)
        saved nothing."""
        if self._nc.is_closed:
            raise StoreUnavailable(self.url, "the connection is closed", write=write)
        if not self._nc.is_connected:
            raise StoreUnavailable(self.url, "not connected (reconnecting)", write=write)
        began = asyncio.get_running_loop().time()
        try:
            async with asyncio.timeout(self.timeout):
                return await fn(*args)
        except nats.js.errors.KeyValueError:
            raise  # a key's state (not found, moved on): ``fn``'s business, not an outage
        except TimeoutError:  # also nats.errors.TimeoutError
            why = f"no answer within {self.timeout:g} s"
            if self._denied is not None and self._denied[0] >= began:
                why += (
                    f", and meanwhile the server refused this hub's NATS user: "
                    f"{self._denied[1]}; give that user the subjects docs/multi-machine.md "
                    "lists ($KV.hive_prompts.>, $KV.hive_documents.>, $O.hive_results.>, "
                    "$JS.API.>, _INBOX.>)"
                )
            raise StoreUnavailable(self.url, why, write=write, maybe_saved=write) from None
        except (
            nats.errors.OutboundBufferLimitError,
            nats.errors.ConnectionClosedError,
            nats.errors.ConnectionReconnectingError,
        ):
            raise StoreUnavailable(self.url, "the connection was lost", write=write) from None
        except nats.errors.StaleConnectionError:  # after the request went out, maybe
            raise StoreUnavailable(
                self.url, "the connection was lost", write=write, maybe_saved=write
            ) from None
        except (nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError):
            # Nobody leads the bucket's stream: its node is down or cut off, and the
            # others elect a new leader within seconds (or cannot, without a quorum).
            raise StoreUnavailable(
                self.url,
                "no NATS server holds the bucket's lead right now (a node is down; the "
                "cluster elects another within seconds if enough nodes are up)",
                write=write,
            ) from None
        except nats.js.errors.APIError as exc:
            raise self._refused(exc, write) from None
        except nats.errors.Error as exc:
            raise StoreUnavailable(
                self.url,
                f"NATS failed ({exc or type(exc).__name__})",
                write=write,
                maybe_saved=write,
            ) from None

    def _refused(self, exc: nats.js.errors.APIError, write: bool) -> StoreUnavailable:
        """JetStream answered with an error: a 503 (no quorum, no leader) saved
        nothing; a 408 or 500 may have come after the write was proposed."""
        what = exc.description or "no description"
        if exc.code == 503 or isinstance(exc, nats.js.errors.ServiceUnavailableError):
            return StoreUnavailable(
                self.url, f"JetStream is unavailable ({what}; a node may be down)", write=write
            )
        return StoreUnavailable(
            self.url,
            f"JetStream refused ({exc.code} {what})",
            write=write,
            maybe_saved=write and exc.code not in (400, 404),
        )

    # -- prompts -------------------------------------------------------------------

    async def insert(self, prompt: Prompt) -> None:
        await self._call(True, self._aio_insert, prompt)

    async def _aio_insert(self, prompt: Prompt) -> None:
        """Create the prompt, or raise KeyError when it exists (and can be read).

        Another hub's create of the same key (a keyed ask retried elsewhere) may be
        in flight at the bucket's leader: ours is refused ("wrong last sequence")
        while no message is there to read yet, and nats-py's check that the key was
        not a deleted one raises KeyNotFoundError.  Trying again settles it: by then
        the other create was applied (ours conflicts, and the prompt reads) or
        failed (ours creates it)."""
        key, value = encode_name(prompt.id), dumps(shared_record(prompt))
        for _ in range(CAS_ATTEMPTS):
            try:
                await self._prompts.create(key, value)
            except nats.js.errors.KeyWrongLastSequenceError:
                raise KeyError(f"prompt {prompt.id} already exists") from None
            except nats.js.errors.KeyNotFoundError:
                continue  # another create of it, not yet readable
            return
        raise StoreUnavailable(self.url, "too much contention on one prompt", write=True)

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        return await self._call(True, self._aio_update, prompt, expected)

    async def _aio_update(self, prompt: Prompt, expected: Status) -> Prompt | None:
        key = encode_name(prompt.id)
        value = dumps(shared_record(prompt))
        for _ in range(CAS_ATTEMPTS):
            try:
                entry = await self._prompts.get(key)
            except nats.js.errors.KeyNotFoundError:
                raise KeyError(f"prompt {prompt.id} is not in the store") from None
            current = self._decode_or_raise(prompt.id, entry.value or b"{}")
            if current.status is not expected:
                return current
            try:
                await self._prompts.update(key, value, last=entry.revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                continue  # another hub wrote first: look at what it wrote
            return None
        raise StoreUnavailable(self.url, "too much contention on one prompt", write=True)

    async def get(self, prompt_id: str) -> Prompt | None:
        return await self._call(False, self._aio_get, prompt_id)

    async def _aio_get(self, prompt_id: str) -> Prompt | None:
        try:
            entry = await self._prompts.get(encode_name(prompt_id))
        except nats.js.errors.KeyNotFoundError:
            return None
        return self._decode_or_raise(prompt_id, entry.value or b"{}")

    def _decode_or_raise(self, prompt_id: str, value: bytes) -> Prompt:
        try:
            return decode_prompt(prompt_id, value)
        except UnreadableRecord as e:
            self._note_unreadable(e)
            raise PromptUnreadable(prompt_id, e.reason) from None

    def _note_unreadable(self, error: UnreadableRecord) -> None:
        """Log an unreadable record once per hub: it stays in the bucket (other hubs
        share it), skipped by every scan; ``unreadable`` lists it."""
        if error.prompt_id not in self.unreadable:
            log.warning("store: skipping %s", error)
        self.unreadable[error.prompt_id] = error.reason

    def _readable(self, records: list[KeyValue.Entry]) -> list[Prompt]:
        found = []
        for entry in records:
            if not entry.value:
                continue
            try:
                found.append(decode_prompt(decode_name(entry.key), entry.value))
            except UnreadableRecord as e:
                self._note_unreadable(e)
            except (binascii.Error, UnicodeDecodeError):
                log.warning("store: skipping a key hive-rpc did not write: %s", entry.key)
        return found

    async def pending(self) -> list[Prompt]:
        """Every readable pending prompt; an unreadable one is logged and skipped.

        Only records that may be pending are decoded: a pending record holds the
        word ``"pending"`` (its status), so the closed history kept until
        ``--retain`` prunes it costs its transfer, not the two thirds of a scan that
        decoding every record took (bench/nats_restart.py)."""
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        maybe = [e for e in records if e.value and _maybe_pending(e.value)]
        pending = [p for p in self._readable(maybe) if p.status is Status.PENDING]
        return sorted(pending, key=lambda p: p.created_at)

    async def find(self, prefix: str) -> list[Prompt]:
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        found = self._readable(records)
        return sorted((p for p in found if p.id.startswith(prefix)), key=lambda p: p.created_at)

    async def prune_closed(self, before: float, *, limit: int = RETENTION_BATCH) -> int:
        """Purge up to ``limit`` old records: closed prompts created before
        ``before``, task reports completed before it (``RETAINED_DOCUMENTS``) with
        the large results only they name (``put_result``), and the delete markers a
        bucket keeps of removed keys.

        The buckets are scanned once per ``before`` (the hub calls again with the
        same one until fewer than ``limit`` go): a scan per batch made pruning
        quadratic, 36.7 s for 20,000 prompts.  Each record is purged from the stream
        up to the revision scanned, leaving no marker, so the next scan, and the next
        restart, no longer walks it; a record rewritten since (a task reported again)
        keeps its newer revision.  Every hub sharing the buckets may run it: purging
        a purged key changes nothing, and hubs ignore a prompt's removal.

        (A KV stream refuses deleting a message by sequence, and ``kv.purge`` leaves
        a marker per key that every scan then walks; a purge by subject costs the
        server about 2.5 ms at 20,000 messages, hence ``PURGE_CHUNK``.)"""
        if self._prune_plan is None or self._prune_plan[0] != before:
            # A scan per bucket, each within the operation timeout on its own.
            prompts = await self._call(False, self._aio_prune_prompts, before)
            put = await self._call(False, self._aio_last_result)  # before the reports' scan
            documents = await self._call(False, self._aio_prune_documents, before, put)
            self._prune_plan = (before, prompts + documents)
        plan = self._prune_plan[1]
        batch, self._prune_plan = plan[:limit], (before, plan[limit:])
        for start in range(0, len(batch), PURGE_CHUNK):
            await self._call(True, self._aio_purge, batch[start : start + PURGE_CHUNK])
        return len(batch)

    async def _aio_prune_prompts(self, before: float) -> list[tuple[str, str, int]]:
        """What ``prune_closed`` purges of the prompts: (bucket, key, revision)."""
        plan: list[tuple[str, str, int]] = []
        for entry in await self._aio_scan(self._prompts, ">", markers=True):
            if entry.operation is not None or not entry.value:
                plan.append((PROMPTS_BUCKET, entry.key, entry.revision or 0))
            elif _status(entry.value) in _CLOSED:
                record = _json_object(entry.value)
                created = record.get("created_at") if record else None
                if isinstance(created, int | float) and created < before:
                    plan.append((PROMPTS_BUCKET, entry.key, entry.revision or 0))
        return plan

    async def _aio_prune_documents(
        self, before: float, results_seq: int
    ) -> list[tuple[str, str, int]]:
        """What ``prune_closed`` purges of the documents: (bucket, key, revision); and
        of the large results (``put_result``): each named by a report purged and by
        no report kept, with ``results_seq``, the results stream's last sequence
        before this scan (``_aio_remove_result``)."""
        plan: list[tuple[str, str, int]] = []
        named: set[str] = set()
        kept: set[str] = set()
        for entry in await self._aio_scan(self._docs, ">", markers=True):
            if entry.operation is not None or not entry.value:
                # A removed document's marker: kept until ``before`` so that a hub
                # resuming its watch within ``--retain`` still sees the removal.
                if _timestamp(entry.created) < before:
                    plan.append((DOCUMENTS_BUCKET, entry.key, entry.revision or 0))
                continue
            kind, _, _ = entry.key.partition(".")
            field = RETAINED_DOCUMENTS.get(kind)  # the retained kinds are plain names
            record = _json_object(entry.value) if field else None
            body = record.get("body") if record else None
            if not isinstance(body, dict):
                continue
            ended = body.get(field) if field else None
            digest = body.get("result_sha256")
            old = isinstance(ended, int | float) and ended < before
            if old:
                plan.append((DOCUMENTS_BUCKET, entry.key, entry.revision or 0))
            if isinstance(digest, str):
                (named if old else kept).add(digest)
        plan.extend((RESULTS_BUCKET, digest, results_seq) for digest in sorted(named - kept))
        return plan

    async def _aio_last_result(self) -> int:
        """The last sequence of the results' stream: a result put after it is newer
        than the scan of reports that follows.  0 when the stream is gone (deleted
        by hand while the hub runs): there is no result to remove then."""
        try:
            info = await self._js.stream_info(f"OBJ_{RESULTS_BUCKET}")
        except nats.js.errors.NotFoundError:
            return 0
        return info.state.last_seq or 0

    async def _aio_purge(self, items: list[tuple[str, str, int]]) -> None:
        """Remove each key's messages up to the revision planned, marker and all, and
        each large result planned (``_aio_remove_result``)."""
        await asyncio.gather(  # one round trip for the batch, not one per key
            *(
                self._aio_remove_result(key, revision)
                if bucket == RESULTS_BUCKET
                else self._js.purge_stream(
                    f"KV_{bucket}", subject=f"$KV.{bucket}.{key}", seq=revision + 1
                )
                for bucket, key, revision in items
            )
        )

    async def _aio_remove_result(self, digest: str, scanned: int) -> None:
        """Purge a large result, meta and chunks, leaving no marker (the object
        store's ``delete`` would leave one), unless it was put again after sequence
        ``scanned``: each report puts its result again before it is saved, so a
        report the scan could not see (saved meanwhile, naming the same result) has
        put it after.  The meta is purged only up to the message read, so a put that
        comes in between keeps its own.  (A report whose put came before the scan's
        first read and whose save came after the scan began, a round trip apart, is
        the one case missed: its result is gone.)"""
        stream = f"OBJ_{RESULTS_BUCKET}"
        name = base64.urlsafe_b64encode(digest.encode()).decode()
        meta_subject = OBJ_META_PRE_TEMPLATE.format(bucket=RESULTS_BUCKET, obj=name)
        try:
            found = await self._js.get_last_msg(stream, meta_subject)
        except nats.js.errors.NotFoundError:
            return  # removed already (by another hub, or the store's max_age)
        if (found.seq or 0) > scanned:
            return
        await self._js.purge_stream(stream, subject=meta_subject, seq=(found.seq or 0) + 1)
        meta = _json_object(found.data or b"")
        nuid = meta.get("nuid") if meta else None
        if isinstance(nuid, str) and nuid:
            chunks = OBJ_CHUNKS_PRE_TEMPLATE.format(bucket=RESULTS_BUCKET, obj=nuid)
            await self._js.purge_stream(stream, subject=chunks)

    async def counts(self) -> dict[str, int]:
        """Prompts by status, each read from the record's bytes (``_status``): not
        decoded, which cost two thirds of a scan.  A record whose status cannot be
        read so is decoded; unreadable records are not counted."""
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        counts = {s.value: 0 for s in Status}
        undecided = []
        for entry in records:
            if not entry.value:
                continue
            status = _status(entry.value)
            if status is None:
                undecided.append(entry)  # decoded: counted, or noted as unreadable
            elif not (self.unreadable and self._unreadable_key(entry.key)):
                counts[status] += 1
        for p in self._readable(undecided):
            counts[p.status.value] += 1
        return counts

    def _unreadable_key(self, key: str) -> bool:
        try:
            return decode_name(key) in self.unreadable
        except (binascii.Error, UnicodeDecodeError):
            return True

    async def _aio_scan(
        self, kv: KeyValue, keys: str, *, markers: bool = False
    ) -> list[KeyValue.Entry]:
        """Every live entry whose key matches ``keys`` (a KV wildcard pattern), and
        with ``markers`` the delete and purge markers too.

        A KV watch marks the end of its initial values with ``None``, but nats-py
        decides that from the consumer's ``num_pending`` when it is created: values the
        server has already pushed, and the client not yet handed to the watcher, count
        as none, so the marker can come first and the scan would end empty (a resuming
        hub seeing no pending prompt).  So deletes are watched too (every key then
        yields an entry), the initial values end at the entry whose ``delta`` is 0, and
        a marker before any entry is believed only when the stream has no message
        under ``keys`` at all."""
        watcher = await kv.watch(keys, ignore_deletes=False, inactive_threshold=30)
        entries: list[KeyValue.Entry] = []
        seen = 0
        try:
            async for entry in watcher:
                if entry is None:
                    if seen == 0 and not await self._aio_has_keys(kv, keys):
                        break
                    continue  # an early marker: the values are on their way
                seen += 1
                if markers or entry.operation is None:  # not a delete or purge marker
                    entries.append(entry)
                if entry.delta == 0:
                    break
        finally:
            with contextlib.suppress(Exception):
                await watcher.stop()  # type: ignore[no-untyped-call]
        return entries

    async def _aio_has_keys(self, kv: KeyValue, keys: str) -> bool:
        """Whether the bucket's stream holds any message whose key matches ``keys``
        (its stream is ``KV_<bucket>``, its subjects ``$KV.<bucket>.<key>``)."""
        bucket = PROMPTS_BUCKET if kv is self._prompts else DOCUMENTS_BUCKET
        info = await self._js.stream_info(f"KV_{bucket}", subjects_filter=f"$KV.{bucket}.{keys}")
        return bool(info.state.subjects)

    # -- documents -----------------------------------------------------------------

    def _created_ns(self) -> int:
        """Wall-clock nanoseconds, strictly increasing within this hub."""
        self._last_created_ns = max(time.time_ns(), self._last_created_ns + 1)
        return self._last_created_ns

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        await self._call(True, self._aio_put_document, kind, key, body)

    async def _aio_put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        kv_key = doc_key(kind, key)
        for _ in range(CAS_ATTEMPTS):
            try:
                entry = await self._docs.get(kv_key)
            except nats.js.errors.KeyNotFoundError:
                record = {"kind": kind, "key": key, "created_ns": self._created_ns(), "body": body}
                try:
                    await self._docs.create(kv_key, dumps(record))
                except nats.js.errors.KeyWrongLastSequenceError:
                    continue  # another hub saved it first: replace theirs
                return
            created = json.loads(entry.value or b"{}").get("created_ns") or self._created_ns()
            record = {"kind": kind, "key": key, "created_ns": created, "body": body}
            try:
                await self._docs.update(kv_key, dumps(record), last=entry.revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                continue
            return
        raise StoreUnavailable(self.url, "too much contention on one document", write=True)

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        entries = await self._call(False, self._aio_scan, self._docs, f"{encode_name(kind)}.*")
        found = [(json.loads(e.value), e.revision or 0) for e in entries if e.value]
        found.sort(key=lambda pair: (pair[0].get("created_ns", 0), pair[1]))
        return [record["body"] for record, _ in found]

    async def get_document(self, kind: str, key: str) -> dict[str, Any] | None:
        return await self._call(False, self._aio_get_document, kind, key)

    async def _aio_get_document(self, kind: str, key: str) -> dict[str, Any] | None:
        try:
            entry = await self._docs.get(doc_key(kind, key))
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            return None
        record = _json_object(entry.value or b"")
        body = record.get("body") if record else None
        return body if isinstance(body, dict) else None

    async def delete_document(self, kind: str, key: str) -> bool:
        return await self._call(True, self._aio_delete_document, kind, key)

    async def _aio_delete_document(self, kind: str, key: str) -> bool:
        kv_key = doc_key(kind, key)
        try:
            await self._docs.get(kv_key)
        except nats.js.errors.KeyNotFoundError:
            return False
        await self._docs.delete(kv_key)
        return True

    # -- large results -------------------------------------------------------------

    async def put_result(self, digest: str, text: str) -> None:
        """Keep a task result's JSON in ``hive_results`` under its SHA-256, for every
        hub (``ResultObjects``).  Put again when it is there already: the put is
        what dates it, for ``--retain`` and the store's ``max_age``."""
        await self._call(True, self._aio_put_result, digest, text.encode())

    async def _aio_put_result(self, digest: str, data: bytes) -> None:
        await self._results.put(digest, data)

    async def get_result(self, digest: str, *, limit: int) -> str | None:
        """A result's JSON by its SHA-256, or None: not kept (never put, removed with
        its report, aged out), over ``limit`` bytes, or not what its name says."""
        return await self._call(False, self._aio_get_result, digest, limit)

    async def _aio_get_result(self, digest: str, limit: int) -> str | None:
        try:
            info = await self._results.get_info(digest)
            if (info.size or 0) > limit:
                log.warning("store: result %s is %d bytes, over %d", digest, info.size, limit)
                return None
            found = await self._results.get(digest)
        except (nats.js.errors.NotFoundError, nats.js.errors.DigestMismatchError):
            return None  # removed meanwhile, or a chunk lost
        data = found.data or b""
        if hashlib.sha256(data).hexdigest() != digest:
            log.warning("store: result %s holds other bytes; not served", digest)
            return None
        return data.decode()

    # -- changes -------------------------------------------------------------------

    def changes(self) -> AbstractAsyncContextManager[AsyncIterator[StoreChange]]:
        """Every change made to the store by anyone after the block starts, in order
        per bucket (prompts and documents are two streams, so not across them).

        Use as ``async with store.changes() as changes: async for change in changes``.
        The watch resumes by itself after NATS comes back; a change is never
        reported twice (revisions already seen are dropped).
        """
        return self._changes()

    @asynccontextmanager
    async def _changes(self) -> AsyncIterator[AsyncIterator[StoreChange]]:
        watch = Watch(self)
        try:
            await self._call(False, watch.start)
            async with self._bridge.stream(watch.items, buffer=64) as items:
                yield items
        finally:
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(self.timeout),
                contextlib.suppress(Exception),
            ):
                await self._bridge.run(watch.stop)

    # -- the connection's state ----------------------------------------------------

    def link_changes(self) -> AbstractAsyncContextManager[AsyncIterator[str | None]]:
        """Each time the connection to NATS is lost (why, a sentence) or comes back
        (None), after the block starts: the hub's ``degraded`` while NATS is down,
        before any write of its own has failed for it.

        Use as ``async with store.link_changes() as changes: async for down in changes``.
        """
        return self._bridge.stream(self._aio_link_changes, buffer=8)

    async def _aio_link_changes(self) -> AsyncIterator[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._link_watchers.add(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._link_watchers.discard(queue)

    def _aio_denied(self, words: str) -> None:
        """On the loop: the server reported a permissions violation (``words``, as it
        says it); a request that then times out names it."""
        self._denied = (asyncio.get_running_loop().time(), words)

    def _aio_link(self, down: str | None) -> None:
        """On the loop: tell every ``link_changes`` the connection's new state."""
        for queue in self._link_watchers:
            queue.put_nowait(down)

    # -- closing -------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with trio.move_on_after(self.timeout) as scope:
            scope.shield = True
            with contextlib.suppress(Exception):
                await self._bridge.run(self._nc.close)

    def _aio_reconnected(self) -> None:
        """On the loop, after nats-py reconnected: restart every watch at once, from
        just after the last revision it saw (its own recovery would wait for missed
        heartbeats, ~10 s, when the server restarted and lost its consumers)."""
        for watch in self._watches:
            task = asyncio.get_running_loop().create_task(watch.resume())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
