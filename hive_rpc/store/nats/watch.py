"""The asyncio side of ``NatsStore.changes()``: one ordered consumer per bucket,
starting just after the bucket's last revision, feeding one queue; resumed from the
last revision seen after a reconnection."""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import nats.errors
from nats.aio.msg import Msg
from nats.js import api
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE

from hive_rpc.store.nats.names import BUCKETS, PROMPTS_BUCKET, StoreChange, decode_name

if TYPE_CHECKING:
    from hive_rpc.store.nats.store import NatsStore

log = logging.getLogger(__name__)

WATCH_QUEUE = 1024
"""Changes held on the asyncio side before the watch stops reading from NATS."""


class Watch:
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
            change = parse(bucket, msg.subject[len(prefix) :], msg)
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


def parse(bucket: str, key: str, msg: Msg) -> StoreChange | None:
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
