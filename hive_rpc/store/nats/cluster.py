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


STREAM_NAME_IN_USE = 10058
"""JetStream's ``err_code`` for a stream created meanwhile with another config."""


async def open_bucket(js: JetStreamContext, name: str, replicas: int) -> KeyValue:
    """The bucket ``name``, created with ``replicas`` copies if missing, raised to
    ``replicas`` if it has fewer (never lowered: another hub may want more).  A create
    refused because the stream was made meanwhile with another config opens that one.
    (Two hubs creating it at the same moment with different replicas: nats-server
    2.9.10 never answers the second create, measured; that hub's start times out.)"""
    try:
        kv = await js.key_value(name)
    except nats.js.errors.BucketNotFoundError:
        try:
            return await js.create_key_value(
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
    await _raise_replicas(js, name, replicas)
    return kv


async def _raise_replicas(js: JetStreamContext, name: str, replicas: int) -> None:
    """Raise the bucket's stream to ``replicas`` copies, saying what came of it.
    JetStream takes ``num_replicas`` 3 on a lone server (nats-server 2.9) and keeps
    one copy: only the stream's cluster info says how many it keeps."""
    stream = f"KV_{name}"
    info = await js.stream_info(stream)
    have = info.config.num_replicas or 1
    if have >= replicas:
        return
    info.config.num_replicas = replicas
    try:
        raised = await js.update_stream(info.config)
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
        return
    if raised.cluster is None:
        log.warning(
            "bucket %s (stream %s): %d replicas wanted, but this NATS server is not part "
            "of a cluster, so JetStream keeps one copy whatever the stream's config says; "
            "run a cluster of %d or more servers, or --replicas 1",
            name,
            stream,
            replicas,
            replicas,
        )
        return
    log.warning(
        "bucket %s (stream %s) had %d replica(s); raised it to %d", name, stream, have, replicas
    )
