"""Connecting to NATS (one URL or several, comma-separated: nats-py tries them in
turn and fails over among them and those the cluster advertises) and opening the
buckets; logs name the server actually reached.  Runs on the bridge's asyncio thread.

The client is connected with a zero-byte reconnect buffer, so nothing is queued while
disconnected to be sent later behind the caller's back: a refused write was not
saved.  nats-py keeps reconnecting (forever, every 0.5 s); once it is back, the
store's operations work again and its watches resume."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient

from hive_rpc.core.errors import StoreUnavailable
from hive_rpc.store.aio_bridge import AsyncioThread
from hive_rpc.store.nats.cluster import cluster_size, default_replicas, open_bucket
from hive_rpc.store.nats.names import (
    DOCUMENTS_BUCKET,
    PROMPTS_BUCKET,
    redact_url,
    server_urls,
    shown,
)
from hive_rpc.store.nats.store import NatsStore

log = logging.getLogger(__name__)


async def aio_connect(
    bridge: AsyncioThread, url: str, op_timeout_s: float, replicas: int | None
) -> NatsStore:
    """On the loop: connect and open (or create) the two buckets."""
    where = shown(url)

    made: list[NatsStore] = []
    reached = [where]  # the server connected to last (one of them, or one advertised)

    def server() -> str:
        current = nc.connected_url
        return redact_url(current.geturl()) if current is not None else where

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
            prompts = await open_bucket(js, PROMPTS_BUCKET, wanted)
            docs = await open_bucket(js, DOCUMENTS_BUCKET, wanted)
    except nats.js.errors.APIError as exc:
        with contextlib.suppress(Exception):
            await nc.close()
        reason = f"JetStream refused the buckets ({exc.description or exc})"
        if replicas is not None:
            reason += f" with --replicas {replicas}"
        raise StoreUnavailable(where, reason, outcome="the hub cannot use it") from None
    except (TimeoutError, OSError, nats.errors.Error) as exc:
        with contextlib.suppress(Exception):
            await nc.close()
        if not isinstance(exc, TimeoutError):
            errors.append(exc)
        reason = f"could not connect within {op_timeout_s:g} s"
        if errors:
            reason += f" (last error: {str(errors[-1]) or type(errors[-1]).__name__})"
        raise StoreUnavailable(where, reason, outcome="the hub cannot use it") from None
    log.info(
        "connected to NATS at %s (%d server%s); buckets kept with %d replica%s",
        reached[0],
        servers,
        "" if servers == 1 else "s",
        wanted,
        "" if wanted == 1 else "s",
    )
    store = NatsStore(bridge, nc, js, prompts, docs, url=url, timeout=op_timeout_s, replicas=wanted)
    made.append(store)
    return store
