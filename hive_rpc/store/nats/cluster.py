"""Replicas: on a cluster a bucket kept by one node stops every hub when that node is
lost, so each bucket is created with ``replicas`` copies: by default 3 when the server
says (``connect_urls`` in its INFO) the cluster has 3 or more servers, else 1.  An
existing bucket with fewer is raised to that number (JetStream allows editing a
stream's ``num_replicas``); if the server refuses, the hub says so and how to fix it.
Runs on the bridge's asyncio thread (store.py)."""

from __future__ import annotations

import logging
from typing import Any

import nats.js.errors
from nats.js import JetStreamContext, api
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

log = logging.getLogger(__name__)

CLUSTER_REPLICAS = 3
"""Replicas of a bucket on a cluster of at least this many servers (else 1): one node
can be lost, and JetStream keeps a quorum of the other two."""


def cluster_size(server_info: dict[str, Any]) -> int:
    """How many servers the cluster has, from the INFO a server sends on connect: its
    ``connect_urls`` lists the client URL of every server in the cluster, its own
    included (nats-server 2.9; absent on a lone server)."""
    urls = server_info.get("connect_urls") or []
    return max(1, len(set(urls)))


def default_replicas(servers: int) -> int:
    """The replicas a bucket gets unless ``--replicas`` says otherwise."""
    return CLUSTER_REPLICAS if servers >= CLUSTER_REPLICAS else 1


EXACT_ANSWERS_SINCE = (2, 11)
"""The nats-server release from which a replicated bucket takes one compare-and-set
write of a key per revision during a leader change too (nats-server#6194).  2.9.10,
Debian 12's, accepted both racing hubs' answers in 4 of 8 leader faults measured
(bench/nats_failover.py): each hub told "ok", one answer lost."""


def server_version(server_info: dict[str, Any]) -> tuple[int, int] | None:
    """The server's (major, minor) from its INFO's ``version``, None if unreadable."""
    parts = str(server_info.get("version") or "").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def answers_at_risk(server_info: dict[str, Any], kept: int) -> str | None:
    """Why answers may be accepted twice on this server, or None: only a bucket with
    replicas (a leader that can change) on a server older than 2.11."""
    version = server_version(server_info)
    if kept < 2 or version is None or version >= EXACT_ANSWERS_SINCE:
        return None
    return (
        f"nats-server {server_info.get('version')} keeps the buckets with {kept} "
        "replicas, and before 2.11 JetStream may accept two answers to one question "
        'while the bucket\'s leader changes (both hubs are told "ok", one answer is '
        "lost; nats-server#6194): run nats-server 2.11 or later on every node"
    )


STREAM_NAME_IN_USE = 10058
"""JetStream's ``err_code`` for a stream created meanwhile with another config."""


async def open_bucket(js: JetStreamContext, name: str, replicas: int) -> tuple[KeyValue, int]:
    """The bucket ``name``, created with ``replicas`` copies if missing, raised to
    ``replicas`` if it has fewer (never lowered: another hub may want more), and the
    copies JetStream keeps of it.  A create refused because the stream was made
    meanwhile with another config opens that one.  (Two hubs creating it at the same
    moment with different replicas: nats-server 2.9.10 never answers the second
    create, measured, and that hub's start times out; 2.15.1 answers both.)"""
    try:
        kv = await js.key_value(name)
    except nats.js.errors.BucketNotFoundError:
        try:
            kv = await js.create_key_value(
                bucket=name,
                history=1,
                storage=api.StorageType.FILE,
                description="hive-rpc",
                replicas=replicas,
            )
        except nats.js.errors.APIError as exc:
            if exc.err_code != STREAM_NAME_IN_USE:
                raise
            kv = await js.key_value(name)  # another hub made it meanwhile
    return kv, await _raise_replicas(js, name, replicas)


async def open_objects(
    js: JetStreamContext, name: str, replicas: int, ttl_s: float | None
) -> tuple[ObjectStore, int]:
    """The object store ``name``, created with ``replicas`` copies and a ``max_age`` of
    ``ttl_s`` (None: none) if missing, and the copies JetStream keeps of it.  As for a
    bucket, replicas are raised, never lowered; so is the age: an existing store that
    keeps objects for less than ``ttl_s`` is given ``ttl_s`` (another hub's
    ``--retain`` may be longer, and none may drop a result its report still names)."""
    stream = f"OBJ_{name}"
    try:
        objects = await js.object_store(name)
    except nats.js.errors.BucketNotFoundError:
        config = api.ObjectStoreConfig(
            bucket=name,
            description="hive-rpc",
            ttl=ttl_s,
            storage=api.StorageType.FILE,
            replicas=replicas,
        )
        try:
            objects = await js.create_object_store(name, config)
        except nats.js.errors.APIError as exc:
            if exc.err_code != STREAM_NAME_IN_USE:
                raise
            objects = await js.object_store(name)  # another hub made it meanwhile
    await _lengthen(js, stream, ttl_s)
    return objects, await _raise_replicas(js, name, replicas, stream=stream)


async def _lengthen(js: JetStreamContext, stream: str, ttl_s: float | None) -> None:
    """Give ``stream`` a ``max_age`` of at least ``ttl_s`` (None: unlimited)."""
    info = await js.stream_info(stream)
    age = info.config.max_age or 0.0  # 0: unlimited
    if age == 0.0 or (ttl_s is not None and age >= ttl_s):
        return
    info.config.max_age = ttl_s or 0.0
    await js.update_stream(info.config)
    log.info("stream %s kept objects for %g s; now for %s", stream, age, ttl_s or "ever")


def _clustered(info: api.StreamInfo) -> bool:
    """The stream's server is part of a cluster: its cluster info names one (2.9
    sends none outside a cluster, 2.11 and later one without a name)."""
    return info.cluster is not None and info.cluster.name is not None


def _kept(info: api.StreamInfo) -> int:
    """The copies JetStream keeps of a stream: one on a server outside any cluster,
    whatever its config says (nats-server 2.9 takes ``num_replicas`` 3 there)."""
    return (info.config.num_replicas or 1) if _clustered(info) else 1


async def _raise_replicas(
    js: JetStreamContext, name: str, replicas: int, *, stream: str | None = None
) -> int:
    """Raise the bucket's stream (``KV_NAME`` unless ``stream`` says) to ``replicas``
    copies, saying what came of it; the copies kept.  On a server outside any cluster
    there is one copy, said as such: nats-server 2.9 takes ``num_replicas`` 3 in an
    edit and keeps one copy (only the stream's cluster info tells), 2.11 and later
    refuse the edit."""
    stream = stream or f"KV_{name}"
    info = await js.stream_info(stream)
    have = _kept(info)
    if have >= replicas:
        return have
    if _clustered(info):
        info.config.num_replicas = replicas
        try:
            raised = await js.update_stream(info.config)
        except nats.js.errors.APIError as exc:
            log.warning(
                "bucket %s (stream %s) has %d replica(s), %d wanted, and JetStream refused "
                "to raise it (%s): losing the node that keeps it stops the store; raise "
                "it with `nats stream edit %s --replicas %d`, or delete the bucket "
                "(losing what it holds) to have it created again",
                name,
                stream,
                have,
                replicas,
                exc.description or exc,
                stream,
                replicas,
            )
            return have
        log.warning(
            "bucket %s (stream %s) had %d replica(s); raised it to %d",
            name,
            stream,
            have,
            replicas,
        )
        return _kept(raised)
    log.warning(
        "bucket %s (stream %s): %d replicas wanted, but this NATS server is not part "
        "of a cluster, so JetStream keeps one copy; run a cluster of %d or more "
        "servers, or --replicas 1",
        name,
        stream,
        replicas,
        replicas,
    )
    return 1
