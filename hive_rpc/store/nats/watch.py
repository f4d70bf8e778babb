"""The asyncio side of ``NatsStore.changes()``: one ordered consumer per bucket,
starting just after the bucket's last revision, feeding one queue.

A watch must never go quiet while the bucket moves on (issue 31: after a node was
frozen, editors saw only their own hub's questions for 17 s and more).  nats-py's
ordered consumer recovers by itself only from a gap it sees; a consumer lost with its
node, or reset by a leader change and then not recreated (its recreation's failure
goes to the error callback, and the next try waits two missed heartbeats), stalls in
silence.  So the watch resubscribes from just after the last revision it delivered:

- at once, after every reconnection (``resume``, called by the connection);
- when its consumer stalls: every ``CHECK_S`` it asks JetStream for each bucket's last
  revision, and a bucket that was ahead of what the watch had delivered at the last
  check, while nothing was delivered since, is resubscribed;
- again at the next check when resubscribing failed.  Meanwhile the check reads
  what it missed itself, message by message, from the bucket's leader (a message
  get; not JetStream's direct get, which the buckets do not allow and which a lagging
  replica would answer): creating a consumer needs the cluster's meta leader, and
  when the frozen node led that too, the new one took 10 s more than the bucket's
  own leader.

A revision already delivered is dropped, so a resubscription never repeats a change."""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import api
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE

from hive_rpc.store.nats.names import BUCKETS, PROMPTS_BUCKET, StoreChange, decode_name

if TYPE_CHECKING:
    from hive_rpc.store.nats.store import NatsStore

log = logging.getLogger(__name__)

WATCH_QUEUE = 1024
"""Changes held on the asyncio side before the watch stops reading from NATS."""
HEARTBEAT_S = 1.0
"""The ordered consumers' idle heartbeat: nats-py resets a consumer after two missed."""
CHECK_S = 1.0
"""How often a watch compares what it delivered with each bucket's last revision: a
stall is found within two checks (one to see the bucket ahead, one to see no progress)."""
CHECK_TIMEOUT_S = 2.0
"""Longest one check, or one resubscription's request, may wait for JetStream."""
CATCH_UP_MAX = 1000
"""Messages a check reads itself, per bucket, while no consumer can be made."""

Message = Msg | api.RawStreamMsg
"""A message from a consumer, or one read by its sequence (a catch-up)."""


class Watch:
    """The asyncio side of ``changes()``: one ordered consumer per bucket, starting
    just after the bucket's last revision, feeding one queue; resubscribed from the
    last revision delivered after a reconnection or a stall (the module's doc)."""

    def __init__(self, store: NatsStore) -> None:
        self._store = store
        self._queue: asyncio.Queue[StoreChange] = asyncio.Queue(maxsize=WATCH_QUEUE)
        self._subs: list[Any] = []
        self._seen: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self._broken = False
        """The last resubscription failed: the next check tries again, stalled or not."""
        self._checker: asyncio.Task[None] | None = None
        self.resumed = 0
        """Resubscriptions made (after reconnections and stalls), for tests and logs."""

    async def start(self) -> None:
        for bucket in BUCKETS:
            info = await self._store._js.stream_info(f"KV_{bucket}")
            self._seen[bucket] = info.state.last_seq
        await self._subscribe()
        self._store._watches.add(self)
        self._checker = asyncio.get_running_loop().create_task(self._check_forever())

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
                idle_heartbeat=HEARTBEAT_S,
                inactive_threshold=60,
            )
            self._subs.append(sub)

    async def resume(self, why: str = "reconnected") -> None:
        """Subscribe again from just after what was delivered.  One try: when it fails
        (JetStream still electing a leader) the next check tries again."""
        async with self._lock:
            await self._unsubscribe()
            try:
                async with asyncio.timeout(CHECK_TIMEOUT_S):
                    await self._subscribe()
            except (nats.errors.Error, TimeoutError) as exc:
                if not self._broken:
                    log.info("watch not resumed yet (%s): %r; trying again", why, exc)
                self._broken = True
                await self._unsubscribe()
                return
            self.resumed += 1
            log.info(
                "watch resumed (%s) after revision %s",
                why,
                ", ".join(f"{bucket} {seen}" for bucket, seen in self._seen.items()),
            )
            self._broken = False

    async def _check_forever(self) -> None:
        """Every ``CHECK_S``: resubscribe a broken or stalled watch (the module's doc).
        It sleeps between checks as nats-py's own heartbeat check does: this side runs
        on the bridge's asyncio loop, where JetStream offers no stall event."""
        ahead: dict[str, int] = {}  # bucket -> what the watch had delivered when behind
        while True:
            await asyncio.sleep(CHECK_S)
            if not self._store._nc.is_connected:
                ahead.clear()  # the reconnection resumes it
                continue
            if self._broken:
                await self._catch_up()
                await self.resume("resubscribing failed")
                ahead.clear()
                continue
            stalled = []
            for bucket in BUCKETS:
                try:
                    async with asyncio.timeout(CHECK_TIMEOUT_S):
                        info = await self._store._js.stream_info(f"KV_{bucket}")
                except (nats.errors.Error, TimeoutError):
                    continue  # JetStream not answering: its leader is being elected
                seen = self._seen[bucket]
                if ahead.get(bucket) == seen and not self._queue.full():
                    stalled.append(bucket)
                if info.state.last_seq > seen:
                    ahead[bucket] = seen
                else:
                    ahead.pop(bucket, None)
            if stalled:
                await self.resume(f"stalled on {', '.join(stalled)}")
                ahead.clear()

    async def _catch_up(self) -> None:
        """Deliver what each bucket holds past what was delivered, read one message at
        a time (``CATCH_UP_MAX`` per check), while no consumer can be made."""
        js = self._store._js
        for bucket in BUCKETS:
            stream = f"KV_{bucket}"
            try:
                async with asyncio.timeout(CHECK_TIMEOUT_S):
                    last = (await js.stream_info(stream)).state.last_seq
                for seq in range(self._seen[bucket] + 1, last + 1)[:CATCH_UP_MAX]:
                    try:
                        async with asyncio.timeout(CHECK_TIMEOUT_S):
                            msg = await js.get_msg(stream, seq)
                    except nats.js.errors.NotFoundError:
                        self._seen[bucket] = seq  # replaced by a later revision since
                        continue
                    await self._deliver(bucket, seq, msg.subject or "", msg)
            except (nats.errors.Error, TimeoutError) as exc:
                log.debug("watch: catching up on %s stopped: %r", bucket, exc)
                continue  # the next check goes on from there

    def _receiver(self, bucket: str) -> Callable[[Msg], Awaitable[None]]:
        async def receive(msg: Msg) -> None:
            await self._deliver(bucket, msg.metadata.sequence.stream, msg.subject, msg)

        return receive

    async def _deliver(self, bucket: str, revision: int, subject: str, msg: Message) -> None:
        if revision <= self._seen[bucket]:
            return  # replayed after the consumer was reset, or read by a catch-up
        change = parse(bucket, subject[len(f"$KV.{bucket}.") :], msg)
        if change is not None:
            await self._queue.put(change)
        self._seen[bucket] = revision  # once queued: a put cancelled is read again

    async def items(self) -> AsyncIterator[StoreChange]:
        while True:
            yield await self._queue.get()

    async def stop(self) -> None:
        self._store._watches.discard(self)
        if self._checker is not None:
            self._checker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checker
        await self._unsubscribe()

    async def _unsubscribe(self) -> None:
        subs, self._subs = self._subs, []
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


def parse(bucket: str, key: str, msg: Message) -> StoreChange | None:
    deleted = bool(msg.headers) and (msg.headers or {}).get(KV_OP) in (KV_DEL, KV_PURGE)
    try:
        value = None if deleted else json.loads(msg.data or b"")
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
