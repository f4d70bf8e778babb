"""The hub process: one store, one registry, the editor socket; started and stopped as one.

``run_hub`` follows trio's server convention: ``await nursery.start(run_hub, config)``
returns once the socket accepts connections, with the service as the start value.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

import trio

from hive_rpc.agora import open_agora
from hive_rpc.agora.pull_requests import PullRequestWatcher
from hive_rpc.client import start_record
from hive_rpc.core.dialogue import Dialogue
from hive_rpc.core.errors import PromptUnreadable, StoreUnavailable
from hive_rpc.core.prompt import DEFAULT_MAX_LIFETIME_S, Prompt
from hive_rpc.core.sessions import Session
from hive_rpc.faces.desktop_notify import run_desktop_notifications
from hive_rpc.faces.editor_socket import bind_socket, remove_socket, serve_editor_socket
from hive_rpc.host.paths import (
    DB_NAME,
    SOCKET_CHOICE,
    DataDirUnusable,
    HubLock,
    cannot_write,
    load_approver_token,
    prepare_socket_dir,
    usable_data_dir,
)
from hive_rpc.runtime.activity import DEFAULT_TTL_S, TASK_DOC, ActivityLog
from hive_rpc.runtime.registry import Registry, open_registry
from hive_rpc.service import HubInfo, HubService
from hive_rpc.service.askers import Askers
from hive_rpc.service.audit import AUDIT_DOC, record_decisions, trail
from hive_rpc.store import MemoryStore, PromptStore, SqliteStore
from hive_rpc.store.base import RETENTION_BATCH, ResultObjects, SharedStore
from hive_rpc.store.records import UnreadableRecord, prompt_from_record

log = logging.getLogger(__name__)

ACTIVITY_BUFFER = 100_000
"""Changes the activity feed may fall behind by (it never blocks: it only appends)."""

CLOSE_TIMEOUT_S = 10.0
"""How long a stopping hub gives its store and listener to close, cancelled or not."""
STORES = ("sqlite", "memory", "nats://HOST:PORT")
DEFAULT_RETAIN_S = 30 * 86400.0
"""How long closed prompts are kept (``serve --retain``): long enough to poll an old
answer, short enough that the store does not grow without end."""
RETENTION_EVERY_S = 3600.0
"""How often the retention task looks for closed prompts past ``--retain``."""
NATS_SCHEMES = ("nats://", "tls://")
START_RECORD_RETRY_S = 60.0
"""How often a hub that could not write its start record (a full disk) tries again."""
INGEST_RETRY_S = 0.1
"""First pause before another hub's change that could not be ingested is tried again."""
INGEST_RETRY_MAX_S = 2.0
"""Longest pause between those tries (``ingest_until_done``)."""


class HubAlreadyRunning(RuntimeError):
    """Another live hub holds this socket or this data dir."""


@dataclass
class HubConfig:
    socket: Path
    data_dir: Path
    store: str = "sqlite"
    max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S
    http: str | None = None
    """``HOST:PORT`` on loopback for the MCP Streamable HTTP endpoint, or None for none."""
    activity_ttl_s: float = DEFAULT_TTL_S
    """How long finished entries stay in the activity stream."""
    notify: bool = False
    """Raise desktop notifications for urgent prompts (the CLI turns it on; tests'
    in-process hubs stay quiet on a developer's desktop)."""
    retain_s: float | None = DEFAULT_RETAIN_S
    """Closed prompts older than this are deleted (``serve --retain``); None keeps all."""
    replicas: int | None = None
    """Copies of each NATS bucket (``serve --replicas``); None: 3 on a cluster of 3 or
    more servers, else 1."""
    nats_ping_s: float | None = None
    """How often a NATS hub pings its server (``serve --nats-ping``): a frozen server
    is left for another after ``nats_ping_misses`` unanswered; None: 2 s."""
    nats_ping_misses: int | None = None
    """Unanswered pings before the server is deemed gone; None: 2."""
    watch_prs: bool = False
    """Watch the pull requests of lings' branches with gh (``serve --watch-prs``, on
    by default there when gh is on PATH; in-process hubs of tests stay off)."""


@asynccontextmanager
async def open_store(config: HubConfig) -> AsyncIterator[PromptStore]:
    """The configured store for the block; closed (shielded) when it ends."""
    if config.store.startswith(NATS_SCHEMES):
        # Imported here: only a hub on NATS needs nats-py and its asyncio thread.
        from hive_rpc.store.nats import DEFAULT_PINGS, Pings, open_nats_store

        pings = Pings(
            config.nats_ping_s or DEFAULT_PINGS.interval_s,
            config.nats_ping_misses or DEFAULT_PINGS.outstanding,
        )
        # A large task result outlives its report by at most one retention look.
        ttl = None if config.retain_s is None else config.retain_s + RETENTION_EVERY_S
        async with open_nats_store(
            config.store, replicas=config.replicas, pings=pings, results_ttl_s=ttl
        ) as nats_store:
            yield nats_store
        return
    store: PromptStore
    if config.store == "sqlite":
        store = SqliteStore(config.data_dir / DB_NAME)
    elif config.store == "memory":
        store = MemoryStore()
    else:
        raise ValueError(f"unknown store {config.store!r}; choose one of {', '.join(STORES)}")
    try:
        yield store
    finally:
        # Shielded so a cancelled hub still closes its store (a checkpoint), bounded
        # so that a stuck disk cannot keep a stopping hub forever.
        with trio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
            await store.aclose()


def _lock(stack: ExitStack, path: Path, what: str) -> None:
    lock = HubLock(path)
    try:
        acquired = lock.acquire()
    except OSError as e:  # its directory is read-only, not ours to write, ...
        raise DataDirUnusable(_unwritable(path.parent, e, what)) from None
    if not acquired:
        raise HubAlreadyRunning(
            f"another hub (pid {lock.holder()}) already serves this {what} ({path})"
        )
    stack.callback(lock.release)


def _unwritable(directory: Path, error: OSError, what: str) -> str:
    if what == "socket":
        return cannot_write(directory, error, "the socket's directory", SOCKET_CHOICE)
    return cannot_write(directory, error)


def freeze_startup_objects() -> None:
    """Keep what start-up built out of the cyclic garbage collector's way.

    A hub process imports large libraries (the MCP SDK, pydantic, starlette,
    hypercorn) and builds long-lived state at start.  Every full collection walks all
    of it, which showed as a tail of ~80 ms when 100 activity subscribers were fed
    (bench/sse_fanout.py: p99 29x the floor, ~5x after this).  ``gc.freeze`` moves
    those objects to the permanent generation; reference counting still frees them.
    Called once by ``hive-rpc serve`` after the hub is up, not by in-process hubs."""
    gc.collect()
    gc.freeze()


async def run_hub(config: HubConfig, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run the hub until cancelled."""
    prepare_socket_dir(config.socket)
    usable_data_dir(config.data_dir)
    with ExitStack() as stack:
        _lock(stack, config.socket.with_name(config.socket.name + ".lock"), "socket")
        _lock(stack, config.data_dir / "hub.lock", "data dir")
        try:
            listener = await bind_socket(config.socket)
        except OSError as e:  # the socket's directory is read-only, full, ...
            raise DataDirUnusable(_unwritable(config.socket.parent, e, "socket")) from None
        try:
            async with open_store(config) as store:
                await _serve(config, store, listener, task_status)
        finally:
            remove_socket(config.socket)
            with trio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
                await listener.aclose()


async def keep_start_record(
    registry: Registry,
    socket: Path,
    record: start_record.StartRecord,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Write the hub's start record (start_record.py) once it listens.  When it cannot
    be written (a hub restarted after a crash on a full disk), the hub serves anyway,
    degraded: ``hive/status`` says which directory is full and what to do; it tries
    again every ``START_RECORD_RETRY_S`` and is healthy once the record is written."""
    task_status.started()
    while problems := start_record.write(socket, record):
        registry.store_trouble("start_record", RuntimeError("; ".join(problems)))
        await trio.sleep(START_RECORD_RETRY_S)
    registry.store_trouble("start_record", None)


async def feed_activity(
    service: HubService, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Every prompt change into the activity stream (the Agora feeds it directly), and
    into the table of agent sessions (which agent waits on the human)."""
    with service.registry.watch(buffer=ACTIVITY_BUFFER) as watch:
        service.sessions.load_pending(watch.pending)
        task_status.started()
        async for change in watch:
            service.activity.prompt_changed(change.event, change.prompt)
            service.sessions.prompt_changed(change.prompt)


def _session_activity(service: HubService) -> Callable[[str, Session | None, str], None]:
    """Each session's change as an activity entry (``kind`` session: the dashboard's
    sessions panel and any follower of the stream read them)."""

    def publish(agent_id: str, session: Session | None, event: str) -> None:
        data = session.record() if session is not None else {"agent_id": agent_id, "removed": True}
        service.activity.publish("session", event, agent_id, data)

    return publish


def _agora_activity(service: HubService) -> Callable[[dict[str, Any], Dialogue | None], None]:
    def publish(event: dict[str, Any], dialogue: Dialogue | None) -> None:
        if dialogue is not None:
            data = {**dialogue.summary(), "level": event.get("level"), "event_facts": event}
            service.activity.publish("dialogue", event["event"], dialogue.id, data)
        else:
            key = str(event.get("ling") or event.get("child") or "")
            service.activity.publish("ling", event["event"], key, dict(event))

    return publish


async def ingest_until_done(registry: Registry, prompt: Prompt) -> None:
    """``registry.ingest(prompt)``, tried again until the store lets it through.

    Ingesting another hub's new question reads the store (its record may have moved
    on); during a failover that read fails, and a change skipped then is never sent
    again: its prompt stayed hidden from this hub's editors for good (issue 31, the
    "ingest write failed" of a killed leader).  So a failing ingest holds the changes
    behind it (they wait in the watch, in order) and is tried again, after
    ``INGEST_RETRY_S`` doubling up to ``INGEST_RETRY_MAX_S``: a failing store gives no
    event to wait for, and each try is itself bounded by the store's timeout."""
    delay = INGEST_RETRY_S
    while True:
        try:
            await registry.ingest(prompt)
        except PromptUnreadable as e:  # a bad record, not a failing store
            log.warning("store: skipping a change: %s", e.message)
            return
        except StoreUnavailable as e:  # the store could not be read: try this one again
            registry.store_trouble("ingest", e)
        except Exception as e:  # not the store's state: trying again would not help
            registry.store_trouble("ingest", e)
            log.exception("store: skipping a change of prompt %s", prompt.id)
            return
        else:
            registry.store_trouble("ingest", None)
            return
        await trio.sleep(delay)
        delay = min(delay * 2, INGEST_RETRY_MAX_S)


async def follow_shared_store(
    service: HubService, store: SharedStore, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """What other hubs sharing the store change, made this hub's own: their prompts
    reach this hub's subscribers and waiters, their task reports its activity
    stream, their dialogues and lings its Agora."""
    registry = service.registry
    async with store.changes() as changes:
        task_status.started()
        async for change in changes:
            if change.kind == "prompt":
                if change.value is None:
                    continue
                try:
                    prompt = prompt_from_record(change.key, change.value)
                except UnreadableRecord as e:
                    log.warning("store: skipping a change: %s", e)
                    continue
                await ingest_until_done(registry, prompt)
            elif change.doc_kind == TASK_DOC:  # another hub's task report
                service.activity.ingest_task(change.value)
            elif change.doc_kind == AUDIT_DOC:  # a decision, maybe made on another hub
                trail(service).ingest(change.value)
            elif service.agora is not None:
                service.agora.ingest(change.doc_kind, change.key, change.value)


class _Linked(Protocol):
    """A store with a connection that can be lost (NATS: ``link_changes``)."""

    def link_changes(self) -> AbstractAsyncContextManager[AsyncIterator[str | None]]: ...


async def follow_store_link(
    registry: Registry, store: _Linked, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """While the store's connection is lost (NATS down), the hub is ``degraded``
    saying so (``hive/status``, and ``hive/health`` to subscribed editors), before
    any write of its own fails for it; healthy again once it is back."""
    async with store.link_changes() as changes:
        task_status.started()
        async for down in changes:
            registry.store_trouble("connection", None if down is None else ConnectionError(down))


async def run_retention(
    registry: Registry, retain_s: float, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Delete closed prompts and task reports older than ``retain_s``, every
    ``RETENTION_EVERY_S`` (``PromptStore.prune_closed``).

    Off the hot path: small batches (``RETENTION_BATCH`` rows, one short statement
    each) with a trio checkpoint between them, so requests run in between.  A failed
    delete is store trouble like any other (``hive/status`` shows it), never fatal."""
    task_status.started()
    while True:
        before = registry.now() - retain_s
        deleted = 0
        try:
            while (n := await registry.store.prune_closed(before)) > 0:
                deleted += n
                if n < RETENTION_BATCH:
                    break
                await trio.lowlevel.checkpoint()
        except Exception as e:
            registry.store_trouble("retention", e)
        else:
            registry.store_trouble("retention", None)
        if deleted:
            log.info(
                "retention: deleted %d closed prompts and task reports older than %g s",
                deleted,
                retain_s,
            )
        await trio.sleep(RETENTION_EVERY_S)


async def _serve(
    config: HubConfig, store: PromptStore, listener: trio.SocketListener, task_status: Any
) -> None:
    async with open_registry(store, max_lifetime_s=config.max_lifetime_s) as registry:
        info = HubInfo(
            socket=os.fspath(config.socket), data_dir=os.fspath(config.data_dir), store=store.kind
        )
        results = store if isinstance(store, ResultObjects) else None
        activity = ActivityLog(registry.now, ttl_s=config.activity_ttl_s, results=results)
        service = HubService(registry, info, activity=activity)
        try:
            token, token_file = load_approver_token(config.data_dir)
        except OSError as e:  # PermissionError (an unsafe file) says what to do itself
            if isinstance(e, PermissionError) and e.errno is None:
                raise
            raise DataDirUnusable(cannot_write(config.data_dir, e)) from None
        service.approver_token, info.approver_token_file = token, os.fspath(token_file)
        async with trio.open_nursery() as nursery:
            if isinstance(store, SqliteStore):
                await nursery.start(partial(store.run_checkpoints, trouble=registry.store_trouble))
            if config.retain_s is not None:
                await nursery.start(run_retention, registry, config.retain_s)
            service.agora = await open_agora(
                store, registry.now, service.delivery_peers, nursery, registry=registry
            )
            service.agora.on_event = _agora_activity(service)
            service.sessions.on_change = _session_activity(service)
            await nursery.start(service.sessions.run)
            await nursery.start(feed_activity, service)
            await nursery.start(record_decisions, service)
            # After the trail: a question withdrawn at the start is in it too.
            service.askers = Askers(registry, store, shared=hasattr(store, "changes"))
            await nursery.start(service.askers.run)
            if hasattr(store, "changes"):  # shared by several hubs: follow the others
                await nursery.start(follow_shared_store, service, cast("SharedStore", store))
            if hasattr(store, "link_changes"):  # a connection that can be lost
                await nursery.start(follow_store_link, registry, cast("_Linked", store))
            if config.http is not None:
                # Imported here: the MCP SDK is heavy and only this endpoint needs it.
                from hive_rpc.faces.mcp.http import serve_mcp_http

                url, token_file = await nursery.start(
                    serve_mcp_http, service, config.http, config.data_dir
                )
                info.http_url, info.token_file = url, os.fspath(token_file)
            if config.watch_prs:
                publish = _agora_activity(service)
                watcher = PullRequestWatcher(
                    service.agora, store, report=lambda event: publish(event, None)
                )
                service.pull_requests = watcher
                await nursery.start(watcher.run)
            if config.notify:
                # start_soon: the hub does not wait for the bus (up to 5 s) to serve.
                nursery.start_soon(run_desktop_notifications, service)
            await nursery.start(serve_editor_socket, service, listener)
            log.info("hub %d listening on %s (%s store)", os.getpid(), config.socket, store.kind)
            task_status.started(service)
