"""Connecting to NATS (one URL or several, comma-separated: nats-py tries them in
turn and fails over among them and those the cluster advertises) and opening the
buckets; logs name the server actually reached.  Runs on the bridge's asyncio thread.

The client is connected with a zero-byte reconnect buffer, so nothing is queued while
disconnected to be sent later behind the caller's back: a refused write was not
saved.  nats-py keeps reconnecting (forever, every 0.5 s); once it is back, the
store's operations work again and its watches resume.

A server that is frozen (SIGSTOP, a stalled VM), not closed, is noticed only by its
unanswered pings: after ``Pings.outstanding`` of them, one ``Pings.interval_s`` apart,
the client drops it and moves to another.  nats-py's default, 10 s and 2, took ~19 s
on a 3-node cluster (issue 31); ``serve --nats-ping`` sets the interval."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from dataclasses import dataclass

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NatsClient
from nats.aio.client import Srv

from hive_rpc.core.errors import StoreUnavailable
from hive_rpc.store.aio_bridge import AsyncioThread
from hive_rpc.store.nats.cluster import (
    answers_at_risk,
    cluster_size,
    default_replicas,
    open_bucket,
    open_objects,
)
from hive_rpc.store.nats.names import (
    DOCUMENTS_BUCKET,
    PROMPTS_BUCKET,
    RESULTS_BUCKET,
    redact_url,
    server_urls,
    shown,
)
from hive_rpc.store.nats.store import NatsStore

log = logging.getLogger(__name__)

PING_S = 2.0
"""How often the client pings its server (``serve --nats-ping``): a frozen server is
left after 4-6 s, where nats-py's 10 s took ~19 s."""
PINGS_OUTSTANDING = 2
"""Pings left unanswered before the server is deemed gone (``--nats-ping-misses``)."""


@dataclass(frozen=True)
class Pings:
    """How the connection notices a server that stopped answering: a ping every
    ``interval_s``, the server left once ``outstanding`` are unanswered."""

    interval_s: float = PING_S
    outstanding: int = PINGS_OUTSTANDING


DEFAULT_PINGS = Pings()


def close_each_attempt_before_the_next(nc: NatsClient) -> None:
    """Make each connection attempt close the socket the one before left.

    nats-py (2.x) connects to each server in turn on one transport object, and a new
    connection replaces the old one without closing it.  After a failed attempt its
    reconnection loop goes straight to the next: a frozen server's socket (TCP
    accepted, no INFO within ``connect_timeout``), or one that a server starting or
    stopping accepted and closed, was left open for the collector, whose "unclosed"
    ResourceWarning fails whatever runs when it comes (an fd held until then, too).
    When a new attempt starts, the old socket is dead or about to be replaced, so
    closing it first is always right.  Private: nats-py has no hook for it."""
    connect_to_server = nc._connect_to_server

    async def connect_after_closing(server: Srv) -> None:
        transport = nc._transport
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()  # type: ignore[no-untyped-call]
        await connect_to_server(server)

    nc._connect_to_server = connect_after_closing  # type: ignore[method-assign,assignment]


async def aio_connect(
    bridge: AsyncioThread,
    url: str,
    op_timeout_s: float,
    replicas: int | None,
    pings: Pings = DEFAULT_PINGS,
    results_ttl_s: float | None = None,
) -> NatsStore:
    """On the loop: connect and open (or create) the two buckets and the object store
    of large results, which keeps each for ``results_ttl_s`` (None: until removed)."""
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
        words = _upper_prefix(str(exc).removeprefix("nats: "))
        if "permissions violation" in words:  # nats-py lowers the server's -ERR
            # Not the connection's state: a subject the hub's user may not use.  The
            # server drops that message, so the request behind it times out; the
            # store names this in that error, and the log says it at once.
            log.warning("the NATS server refused this hub's user: %s", words)
            if made:
                made[0]._aio_denied(words)
            return
        log.debug("NATS client error: %r", exc)

    nc = NatsClient()
    close_each_attempt_before_the_next(nc)
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
                ping_interval=pings.interval_s,  # type: ignore[arg-type]  # int in its hints
                max_outstanding_pings=pings.outstanding,
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
            prompts, kept_prompts = await open_bucket(js, PROMPTS_BUCKET, wanted)
            docs, kept_docs = await open_bucket(js, DOCUMENTS_BUCKET, wanted)
            results, kept_results = await open_objects(js, RESULTS_BUCKET, wanted, results_ttl_s)
            kept = min(kept_prompts, kept_docs, kept_results)
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
        kept,
        "" if kept == 1 else "s",
    )
    if (risk := answers_at_risk(nc._server_info, kept)) is not None:
        log.warning("%s", risk)
    store = NatsStore(
        bridge, nc, js, prompts, docs, results, url=url, timeout=op_timeout_s, replicas=kept
    )
    made.append(store)
    return store


def _upper_prefix(words: str) -> str:
    """nats-py lowers the whole of a server's ``-ERR``: the subject's first token is
    put back as JetStream spells it (``$o.hive_results...`` -> ``$O.hive_results...``),
    so it reads as the subject to allow; the rest cannot be recovered, and need not."""
    return re.sub(r'"\$(o|kv|js)\.', lambda m: f'"${m.group(1).upper()}.', words)
