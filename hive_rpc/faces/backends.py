"""Backends: how a face reaches the hub's methods, in-process or over the editor socket.

Faces that serve agents or editors on their own transport (MCP, EPC, LSP) reach the
hub through a backend: one ``call(method, params)`` with the hub's method names and
parameters (see hive_rpc/service/), plus the ids of prompts as they close
(``Backend``).  ``LocalBackend`` is the hub's own service, in-process (both MCP
transports, which run in the hub); ``RemoteBackend`` is a hub reached over its
editor socket, reconnecting (and starting a hub) when it goes away (``hive-rpc lsp``
and ``hive-rpc epc``, processes of their own).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import trio

from hive_rpc.client.async_client import prove_approver
from hive_rpc.client.hub_connection import HubConnection, HubUnreachable, open_hub_connection
from hive_rpc.protocol.methods import METHODS
from hive_rpc.service import HubService

log = logging.getLogger(__name__)


class Backend(Protocol):
    """What the tools need from the hub."""

    async def call(self, method: str, params: dict[str, Any]) -> Any: ...


class LocalBackend:
    """The hub's own service, in-process: the MCP tools of both transports (the
    Streamable HTTP endpoint, and the relayed sessions of ``hive-rpc mcp``), which run
    in the hub."""

    def __init__(self, service: HubService) -> None:
        self.service = service

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        return await self.service.call(method, params)


RETRYABLE = frozenset(name for name, method in METHODS.items() if method.retryable)
"""Methods that are safe to send again on a new connection after the hub went away
(flagged ``retryable`` in the method table)."""


class RemoteBackend:
    """The hub over its editor socket, from a face in a process of its own: ``hive-rpc
    lsp`` (one per VS Code window) and ``hive-rpc epc`` (for Emacs's epc.el).

    Connects lazily and again after the hub goes away (starting a new hub unless
    told not to): prompts are durable, so a read-only call in flight is simply sent
    again, while an ask, answer or cancel reports the lost connection rather than
    risk doing it twice.  Use ``open_remote_backend``.
    """

    def __init__(
        self,
        socket: Path,
        data_dir: Path,
        nursery: trio.Nursery,
        *,
        start: bool,
        approver: bool = False,
    ):
        self._socket, self._data_dir, self._start = socket, data_dir, start
        self._approver = approver
        """Prove each new connection an approver, so the editor behind it may answer
        permission prompts (``hive-rpc lsp`` and ``epc`` ask for it)."""
        self._nursery = nursery
        self._conn: HubConnection | None = None
        self._connect_lock = trio.Lock()

    @property
    def nursery(self) -> trio.Nursery:
        """Where this backend's connections live: tasks started here outlive any one
        request and end with the backend."""
        return self._nursery

    async def connection(self) -> HubConnection:
        """The current connection to the hub, made now (starting a hub if allowed)
        when there is none or it was lost; HubUnreachable when none can be had."""
        return await self._connection()

    async def _connection(self) -> HubConnection:
        async with self._connect_lock:
            if self._conn is None or self._conn.lost:
                self._conn = await self._nursery.start(self._hold)
                if self._approver:  # before any request: the lock is held
                    why = await prove_approver(self._conn.call)
                    if why is not None:
                        log.warning("not an approver (permission prompts refused): %s", why)
            return self._conn

    async def _hold(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with open_hub_connection(self._socket, self._data_dir, start=self._start) as conn:
            task_status.started(conn)
            await conn.wait_lost()

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        try:
            conn = await self._connection()
            try:
                return await conn.call(method, params)
            except HubUnreachable:
                if method not in RETRYABLE:
                    raise
                return await (await self._connection()).call(method, params)
        except HubUnreachable as e:
            raise HubUnreachable(f"{e}; {self._advice()}") from None

    def _advice(self) -> str:
        if self._start:
            return "a new hub starts with the next call: try again (nothing asked is lost)"
        return f"start one with `hive-rpc serve --socket {self._socket}` and try again"


@asynccontextmanager
async def open_remote_backend(
    socket: Path, data_dir: Path, *, start: bool = True, approver: bool = False
) -> AsyncIterator[RemoteBackend]:
    """A RemoteBackend whose connections live in this block's nursery; ``approver``:
    each proves it is one, if it can read the hub's approver token."""
    async with trio.open_nursery() as nursery:
        backend = RemoteBackend(socket, data_dir, nursery, start=start, approver=approver)
        await backend._connection()  # fail early, at start-up, if no hub can be had
        try:
            yield backend
        finally:
            nursery.cancel_scope.cancel()
