"""The distributed store: NATS JetStream key-value buckets shared by a team's hubs.

One module per job: ``names`` (keys, server URLs, the values written), ``cluster``
(replicas), ``connect`` (the connection and its failover), ``store`` (``NatsStore``,
the operations), ``watch`` (the changes any hub makes).  nats-py is asyncio-only, so
every call crosses ``hive_rpc.store.aio_bridge``: the client, its buckets and its
subscriptions live on the bridge's asyncio thread.

Layout (the buckets keep one revision per key; everything is on file storage):

- ``hive_prompts``: key = the prompt id, value = compact JSON of ``Prompt.to_record()``
  with the completion data (``records.shared_record``).
- ``hive_documents``: key = ``KIND.KEY``, value = ``{"kind", "key", "created_ns",
  "body"}``; ``created_ns`` is kept across replacements, so ``documents()`` lists in
  first-save order.
- ``hive_results`` (an object store): a task result over 16 KiB of JSON, named by its
  SHA-256, which its report in ``hive_documents`` names (``result_sha256``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from hive_rpc.core.errors import StoreUnavailable
from hive_rpc.store.aio_bridge import open_asyncio_thread
from hive_rpc.store.nats.connect import DEFAULT_PINGS, Pings, aio_connect
from hive_rpc.store.nats.names import (
    BUCKETS,
    DOCUMENTS_BUCKET,
    PROMPTS_BUCKET,
    RESULTS_BUCKET,
    StoreChange,
    decode_name,
    encode_name,
    redact_url,
    server_urls,
)
from hive_rpc.store.nats.store import DEFAULT_TIMEOUT_S, NatsStore


@asynccontextmanager
async def open_nats_store(
    url: str,
    *,
    op_timeout_s: float = DEFAULT_TIMEOUT_S,
    replicas: int | None = None,
    pings: Pings = DEFAULT_PINGS,
    results_ttl_s: float | None = None,
) -> AsyncIterator[NatsStore]:
    """Connect to NATS at ``url`` (``nats://[user:pass@]host:port``, ``tls://...``, or
    several of them comma-separated) and yield a store on its JetStream KV buckets,
    created on first use with ``replicas`` copies (None: ``default_replicas``), the
    connection checked by ``pings`` (``serve --nats-ping``), and the object store of
    large task results, which keeps each for ``results_ttl_s`` (None: until
    ``prune_closed`` removes it with its report).

    Raises ``StoreUnavailable`` when NATS does not answer within ``op_timeout_s``
    seconds; every later operation is bounded by the same time.
    """
    async with open_asyncio_thread(name="hive-nats") as bridge:
        store = await bridge.run(
            aio_connect, bridge, url, op_timeout_s, replicas, pings, results_ttl_s
        )
        try:
            yield store
        finally:
            await store.aclose()


if TYPE_CHECKING:
    from hive_rpc.store.base import SharedStore

    def _is_a_shared_store(store: NatsStore) -> SharedStore:
        return store  # mypy checks NatsStore against the protocol here


__all__ = [
    "BUCKETS",
    "DEFAULT_PINGS",
    "DOCUMENTS_BUCKET",
    "PROMPTS_BUCKET",
    "RESULTS_BUCKET",
    "NatsStore",
    "Pings",
    "StoreChange",
    "StoreUnavailable",
    "decode_name",
    "encode_name",
    "open_nats_store",
    "redact_url",
    "server_urls",
]
