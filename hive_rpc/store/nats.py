"""The distributed store: NATS JetStream key-value buckets shared by a team's hubs.

nats-py is asyncio-only, so every call crosses ``hive_rpc.store.aio_bridge``: the client,
its buckets and its subscriptions live on the bridge's asyncio thread and are
touched only by the ``_aio_*`` coroutines below, which run there.

Layout (both buckets keep one revision per key, on file storage):

- ``hive_prompts``: key = the prompt id, value = compact JSON of ``Prompt.to_record()``
  with the completion data (``records.shared_record``).
- ``hive_documents``: key = ``KIND.KEY``, value = ``{"kind", "key", "created_ns",
  "body"}``; ``created_ns`` is kept across replacements, so ``documents()`` lists in
  first-save order.

Replicas: on a cluster a bucket kept by one node stops every hub when that node is
lost, so each bucket is created with ``replicas`` copies: by default 3 when the server
says (``connect_urls`` in its INFO) the cluster has 3 or more servers, else 1.  An
existing bucket with fewer is raised to that number (JetStream allows editing a
stream's ``num_replicas``); if the server refuses, the hub says so and how to fix it.

Several servers may be given, comma-separated (``nats://a:4222,nats://b:4222``):
nats-py tries them in turn and fails over among them and those the cluster
advertises.  Logs name the server actually reached.

KV keys allow only ``[-/_=.a-zA-Z0-9]``.  A name made of ``[-_a-zA-Z0-9]`` is used as
is; any other is written ``=`` + base32 of its UTF-8 (raw names never contain ``=``,
so the two never collide, and the original can always be read back from the key).

First answer wins across hubs: ``update`` reads the record with its revision, checks
the status, and writes with ``last=revision``.  A hub that loses that race gets a
wrong-last-sequence error, reads again, and returns what the winner wrote.

When NATS cannot be reached every operation fails within ``timeout`` seconds with
``StoreUnavailable``.  The client is connected with a zero-byte reconnect buffer, so
nothing is queued while disconnected to be sent later behind the caller's back: a
refused write was not saved.  nats-py keeps reconnecting (forever, every 0.5 s);
once it is back, operations work again.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import nats.errors
import nats.js.errors
import trio
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE, KeyValue

from hive_rpc.core.errors import PromptUnreadable, StoreUnavailable
from hive_rpc.core.prompt import Prompt, Status
from hive_rpc.store.aio_bridge import AsyncioThread, open_asyncio_thread
from hive_rpc.store.base import RETENTION_BATCH
from hive_rpc.store.records import UnreadableRecord, decode_prompt, shared_record

log = logging.getLogger(__name__)

T = TypeVar("T")

PROMPTS_BUCKET = "hive_prompts"
DOCUMENTS_BUCKET = "hive_documents"
BUCKETS = (PROMPTS_BUCKET, DOCUMENTS_BUCKET)
CLUSTER_REPLICAS = 3
"""Replicas of a bucket on a cluster of at least this many servers (else 1): one node
can be lost, and JetStream keeps a quorum of the other two."""
DEFAULT_TIMEOUT_S = 5.0
"""Longest any one store operation may take before it fails with StoreUnavailable."""
CAS_ATTEMPTS = 20
"""Read-check-write rounds before ``update``/``put_document`` give up under contention."""
WATCH_QUEUE = 1024
"""Changes held on the asyncio side before the watch stops reading from NATS."""

_RAW_NAME = re.compile(r"[-_a-zA-Z0-9]+")


@dataclass(frozen=True, slots=True)
class StoreChange:
    """One write to the shared store, by any hub (this one included)."""

    kind: Literal["prompt", "document"]
    key: str
    """The prompt id, or the document's own key."""
    doc_kind: str | None
    """The document's kind (``dialogue``, ``ling`` ...); None for a prompt."""
    value: dict[str, Any] | None
    """The prompt record or the document body; None when it was deleted."""


def encode_name(name: str) -> str:
    """A KV key token for ``name``: itself if plain, else ``=`` + base32 of its UTF-8."""
    if _RAW_NAME.fullmatch(name):
        return name
    data = name.encode("utf-8", "surrogatepass")
    return "=" + base64.b32encode(data).decode("ascii").rstrip("=")


def decode_name(token: str) -> str:
    """The name ``encode_name`` turned into ``token``."""
    if not token.startswith("="):
        return token
    body = token[1:]
    body += "=" * (-len(body) % 8)
    return base64.b32decode(body).decode("utf-8", "surrogatepass")


def redact_url(url: str) -> str:
    """The URL without its password or token, fit for messages and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def server_urls(url: str) -> list[str]:
    """The servers of a ``--store`` value: one URL or several, comma-separated."""
    return [part.strip() for part in url.split(",") if part.strip()]


def _shown(url: str) -> str:
    """``url`` (one or a comma-separated list) with every password or token hidden."""
    return ",".join(redact_url(u) for u in server_urls(url))


def cluster_size(server_info: dict[str, Any]) -> int:
    """How many servers the cluster has, from the INFO a server sends on connect: its
    ``connect_urls`` lists the client URL of every server in the cluster, its own
    included (nats-server 2.9; absent on a lone server)."""
    urls = server_info.get("connect_urls") or []
    return max(1, len(set(urls)))


def default_replicas(servers: int) -> int:
    """The replicas a bucket gets unless ``--replicas`` says otherwise."""
    return CLUSTER_REPLICAS if servers >= CLUSTER_REPLICAS else 1


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("ascii")


def _doc_key(kind: str, key: str) -> str:
    return f"{encode_name(kind)}.{encode_name(key)}"


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
        self.url = _shown(url)
        self.timeout = timeout
        self.replicas = replicas
        """The replicas this hub wants of each bucket (``--replicas``, or the default)."""
        self._closed = False
        self._watches: set[_Watch] = set()
        self._link_watchers: set[asyncio.Queue[str | None]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_created_ns = 0
        self.unreadable: dict[str, str] = {}
        """Prompt ids whose records this hub could not read, with the reason."""

    # -- crossing to asyncio -------------------------------------------------------

    async def _call(self, write: bool, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return await self._bridge.run(self._aio_guarded, write, fn, *args)

    async def _aio_guarded(self, write: bool, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """On the loop: run ``fn`` within the timeout; NATS trouble -> StoreUnavailable."""
        if self._nc.is_closed:
            raise StoreUnavailable(self.url, "the connection is closed", write=write)
        if not self._nc.is_connected:
            raise StoreUnavailable(self.url, "not connected (reconnecting)", write=write)
        try:
            async with asyncio.timeout(self.timeout):
                return await fn(*args)
        except TimeoutError:  # also nats.errors.TimeoutError
            raise StoreUnavailable(
                self.url, f"no answer within {self.timeout:g} s", write=write, maybe_saved=write
            ) from None
        except (
            nats.errors.OutboundBufferLimitError,
            nats.errors.ConnectionClosedError,
            nats.errors.ConnectionReconnectingError,
            nats.errors.StaleConnectionError,
        ):
            raise StoreUnavailable(self.url, "the connection was lost", write=write) from None
        except nats.errors.NoRespondersError:
            raise StoreUnavailable(self.url, "JetStream is not answering", write=write) from None
        except nats.js.errors.ServiceUnavailableError as exc:
            raise StoreUnavailable(
                self.url, f"JetStream is unavailable ({exc.description})", write=write
            ) from None

    # -- prompts -------------------------------------------------------------------

    async def insert(self, prompt: Prompt) -> None:
        await self._call(True, self._aio_insert, prompt)

    async def _aio_insert(self, prompt: Prompt) -> None:
        try:
            await self._prompts.create(encode_name(prompt.id), _dumps(shared_record(prompt)))
        except nats.js.errors.KeyWrongLastSequenceError:
            raise KeyError(f"prompt {prompt.id} already exists") from None

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        return await self._call(True, self._aio_update, prompt, expected)

    async def _aio_update(self, prompt: Prompt, expected: Status) -> Prompt | None:
        key = encode_name(prompt.id)
        value = _dumps(shared_record(prompt))
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
        """Every readable pending prompt; an unreadable one is logged and skipped."""
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        pending = [p for p in self._readable(records) if p.status is Status.PENDING]
        return sorted(pending, key=lambda p: p.created_at)

    async def find(self, prefix: str) -> list[Prompt]:
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        found = self._readable(records)
        return sorted((p for p in found if p.id.startswith(prefix)), key=lambda p: p.created_at)

    async def prune_closed(self, before: float, *, limit: int = RETENTION_BATCH) -> int:
        """Purge up to ``limit`` closed prompts created before ``before``.  Every hub
        sharing the bucket may run it; purging a purged key changes nothing."""
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        old = [p.id for p in self._readable(records) if not p.is_pending and p.created_at < before][
            :limit
        ]
        if old:
            await self._call(True, self._aio_purge, old)
        return len(old)

    async def _aio_purge(self, prompt_ids: list[str]) -> None:
        for prompt_id in prompt_ids:
            await self._prompts.purge(encode_name(prompt_id))

    async def counts(self) -> dict[str, int]:
        records = await self._call(False, self._aio_scan, self._prompts, ">")
        counts = {s.value: 0 for s in Status}
        for p in self._readable(records):  # unreadable records are not counted
            counts[p.status.value] += 1
        return counts

    async def _aio_scan(self, kv: KeyValue, keys: str) -> list[KeyValue.Entry]:
        """Every live entry whose key matches ``keys`` (a KV wildcard pattern).

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
                if entry.operation is None:  # not a delete or purge marker
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
        kv_key = _doc_key(kind, key)
        for _ in range(CAS_ATTEMPTS):
            try:
                entry = await self._docs.get(kv_key)
            except nats.js.errors.KeyNotFoundError:
                record = {"kind": kind, "key": key, "created_ns": self._created_ns(), "body": body}
                try:
                    await self._docs.create(kv_key, _dumps(record))
                except nats.js.errors.KeyWrongLastSequenceError:
                    continue  # another hub saved it first: replace theirs
                return
            created = json.loads(entry.value or b"{}").get("created_ns") or self._created_ns()
            record = {"kind": kind, "key": key, "created_ns": created, "body": body}
            try:
                await self._docs.update(kv_key, _dumps(record), last=entry.revision)
            except nats.js.errors.KeyWrongLastSequenceError:
                continue
            return
        raise StoreUnavailable(self.url, "too much contention on one document", write=True)

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        entries = await self._call(False, self._aio_scan, self._docs, f"{encode_name(kind)}.*")
        found = [(json.loads(e.value), e.revision or 0) for e in entries if e.value]
        found.sort(key=lambda pair: (pair[0].get("created_ns", 0), pair[1]))
        return [record["body"] for record, _ in found]

    async def delete_document(self, kind: str, key: str) -> bool:
        return await self._call(True, self._aio_delete_document, kind, key)

    async def _aio_delete_document(self, kind: str, key: str) -> bool:
        kv_key = _doc_key(kind, key)
        try:
            await self._docs.get(kv_key)
        except nats.js.errors.KeyNotFoundError:
            return False
        await self._docs.delete(kv_key)
        return True

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
        watch = _Watch(self)
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

    @classmethod
    async def _aio_connect(
        cls, bridge: AsyncioThread, url: str, op_timeout_s: float, replicas: int | None
    ) -> NatsStore:
        """On the loop: connect and open (or create) the two buckets."""
        shown = _shown(url)

        made: list[NatsStore] = []
        reached = [shown]  # the server connected to last (one of them, or one advertised)

        def server() -> str:
            current = nc.connected_url
            return redact_url(current.geturl()) if current is not None else shown

        async def disconnected() -> None:
            if made and not made[0]._closed:  # not while connecting, nor when closing
                log.warning("lost the connection to NATS at %s; reconnecting", reached[0])
                made[0]._aio_link(f"lost the connection to NATS at {reached[0]}; reconnecting")

        async def reconnected() -> None:
            reached[0] = server()
            log.info("reconnected to NATS at %s", reached[0])
            if made:
                made[0]._aio_link(None)
                made[0]._aio_reconnected()

        errors: list[Exception] = []

        async def error(exc: Exception) -> None:
            errors.append(exc)
            del errors[:-1]
            log.debug("NATS client error: %r", exc)

        nc = NatsClient()
        try:
            async with asyncio.timeout(op_timeout_s):
                await nc.connect(
                    server_urls(url),
                    name="hive-rpc hub",
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.5,  # type: ignore[arg-type]  # int in its hints
                    connect_timeout=max(1, int(op_timeout_s)),
                    allow_reconnect=True,
                    pending_size=0,  # refuse, rather than queue, while disconnected
                    ping_interval=10,
                    max_outstanding_pings=2,
                    disconnected_cb=disconnected,
                    reconnected_cb=reconnected,
                    error_cb=error,
                )
                reached[0] = server()
                # nats-py 2.x keeps the server's INFO only as this private dict (no
                # public accessor; its discovered_servers leaves out configured ones).
                servers = cluster_size(nc._server_info)
                wanted = replicas if replicas is not None else default_replicas(servers)
                js = nc.jetstream(timeout=op_timeout_s)
                prompts = await _bucket(js, PROMPTS_BUCKET, wanted)
                docs = await _bucket(js, DOCUMENTS_BUCKET, wanted)
        except nats.js.errors.APIError as exc:
            with contextlib.suppress(Exception):
                await nc.close()
            reason = f"JetStream refused the buckets ({exc.description or exc})"
            if replicas is not None:
                reason += f" with --replicas {replicas}"
            raise StoreUnavailable(shown, reason, outcome="the hub cannot use it") from None
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            with contextlib.suppress(Exception):
                await nc.close()
            if not isinstance(exc, TimeoutError):
                errors.append(exc)
            reason = f"could not connect within {op_timeout_s:g} s"
            if errors:
                reason += f" (last error: {str(errors[-1]) or type(errors[-1]).__name__})"
            raise StoreUnavailable(shown, reason, outcome="the hub cannot use it") from None
        log.info(
            "connected to NATS at %s (%d server%s); buckets kept with %d replica%s",
            reached[0],
            servers,
            "" if servers == 1 else "s",
            wanted,
            "" if wanted == 1 else "s",
        )
        store = cls(bridge, nc, js, prompts, docs, url=url, timeout=op_timeout_s, replicas=wanted)
        made.append(store)
        return store


async def _bucket(js: JetStreamContext, name: str, replicas: int) -> KeyValue:
    """The bucket ``name``, created with ``replicas`` copies if missing, raised to
    ``replicas`` if it has fewer (never lowered: another hub may want more)."""
    try:
        kv = await js.key_value(name)
    except nats.js.errors.BucketNotFoundError:
        return await js.create_key_value(
            bucket=name,
            history=1,
            storage=api.StorageType.FILE,
            description="hive-rpc",
            replicas=replicas,
        )
    stream = f"KV_{name}"
    info = await js.stream_info(stream)
    have = info.config.num_replicas or 1
    if have < replicas:
        info.config.num_replicas = replicas
        try:
            await js.update_stream(info.config)
        except nats.js.errors.APIError as exc:
            log.warning(
                "bucket %s (stream %s) has %d replica(s), %d wanted, and JetStream refused "
                "to raise it (%s): losing the node that keeps it stops the store; raise it "
                "with `nats stream edit %s --replicas %d`, or delete the bucket (losing its "
                "prompts) to have it created again",
                name,
                stream,
                have,
                replicas,
                exc.description or exc,
                stream,
                replicas,
            )
        else:
            log.warning(
                "bucket %s (stream %s) had %d replica(s); raised it to %d",
                name,
                stream,
                have,
                replicas,
            )
    return kv


class _Watch:
    """The asyncio side of ``changes()``: one ordered consumer per bucket, starting
    just after the bucket's last revision, feeding one queue."""

    def __init__(self, store: NatsStore) -> None:
        self._store = store
        self._queue: asyncio.Queue[StoreChange] = asyncio.Queue(maxsize=WATCH_QUEUE)
        self._subs: list[Any] = []
        self._seen: dict[str, int] = {}

    async def start(self) -> None:
        for bucket in BUCKETS:
            info = await self._store._js.stream_info(f"KV_{bucket}")
            self._seen[bucket] = info.state.last_seq
        await self._subscribe()
        self._store._watches.add(self)

    async def _subscribe(self) -> None:
        for bucket in BUCKETS:
            config = api.ConsumerConfig(
                deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=self._seen[bucket] + 1,
            )
            sub = await self._store._js.subscribe(
                f"$KV.{bucket}.>",
                stream=f"KV_{bucket}",
                config=config,
                cb=self._receiver(bucket),
                ordered_consumer=True,
                inactive_threshold=60,
            )
            self._subs.append(sub)

    async def resume(self) -> None:
        """Subscribe again from just after what was seen (after a reconnection)."""
        await self._unsubscribe()
        for _ in range(20):  # JetStream may need a moment after a restart
            try:
                await self._subscribe()
            except (nats.errors.Error, TimeoutError) as exc:
                log.debug("watch not resumed yet: %r", exc)
                await self._unsubscribe()
                await asyncio.sleep(0.5)
            else:
                return
        log.warning("could not resume watching the shared store; changes may be missed")

    def _receiver(self, bucket: str) -> Callable[[Msg], Awaitable[None]]:
        prefix = f"$KV.{bucket}."

        async def receive(msg: Msg) -> None:
            revision = msg.metadata.sequence.stream
            if revision <= self._seen[bucket]:
                return  # replayed after the consumer was reset
            self._seen[bucket] = revision
            change = _parse(bucket, msg.subject[len(prefix) :], msg)
            if change is not None:
                await self._queue.put(change)

        return receive

    async def items(self) -> AsyncIterator[StoreChange]:
        while True:
            yield await self._queue.get()

    async def stop(self) -> None:
        self._store._watches.discard(self)
        await self._unsubscribe()

    async def _unsubscribe(self) -> None:
        subs, self._subs = self._subs, []
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


def _parse(bucket: str, key: str, msg: Msg) -> StoreChange | None:
    deleted = bool(msg.headers) and (msg.headers or {}).get(KV_OP) in (KV_DEL, KV_PURGE)
    try:
        value = None if deleted else json.loads(msg.data)
    except ValueError:
        log.warning("skipping a value that is not JSON under %s in %s", key, bucket)
        return None
    try:
        if bucket == PROMPTS_BUCKET:
            return StoreChange("prompt", decode_name(key), None, value)
        kind_token, _, key_token = key.partition(".")
        body = value.get("body") if isinstance(value, dict) else None
        return StoreChange("document", decode_name(key_token), decode_name(kind_token), body)
    except (binascii.Error, UnicodeDecodeError):
        log.warning("skipping a key hive-rpc did not write: %s in %s", key, bucket)
        return None


@asynccontextmanager
async def open_nats_store(
    url: str, *, op_timeout_s: float = DEFAULT_TIMEOUT_S, replicas: int | None = None
) -> AsyncIterator[NatsStore]:
    """Connect to NATS at ``url`` (``nats://[user:pass@]host:port``, ``tls://...``, or
    several of them comma-separated) and yield a store on its JetStream KV buckets,
    created on first use with ``replicas`` copies (None: ``default_replicas``).

    Raises ``StoreUnavailable`` when NATS does not answer within ``op_timeout_s``
    seconds; every later operation is bounded by the same time.
    """
    async with open_asyncio_thread(name="hive-nats") as bridge:
        store = await bridge.run(NatsStore._aio_connect, bridge, url, op_timeout_s, replicas)
        try:
            yield store
        finally:
            await store.aclose()


if TYPE_CHECKING:
    from hive_rpc.store.base import SharedStore

    def _is_a_shared_store(store: NatsStore) -> SharedStore:
        return store  # mypy checks NatsStore against the protocol here


__all__ = [
    "DOCUMENTS_BUCKET",
    "PROMPTS_BUCKET",
    "NatsStore",
    "StoreChange",
    "StoreUnavailable",
    "decode_name",
    "encode_name",
    "open_nats_store",
    "redact_url",
    "server_urls",
]
