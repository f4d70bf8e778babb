"""``hive/health``: subscribed editors learn when the hub's store stops taking the
hub's own writes (and when it takes them again), over a real Unix socket, from a
real hub whose SQLite connection refuses writes as on a full disk."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import trio

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.jsonrpc import Notification
from hive_rpc.service import HubService
from hive_rpc.store import SqliteStore

FULL = "database or disk is full"
DEGRADED = f"store: {FULL}"
TIMEOUT_S = 30


class FullDisk:
    """Stands in for the store's SQLite connection: while ``full``, every write
    statement fails as SQLite fails on a full disk; reads go through."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.full = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.full and sql.lstrip().upper().startswith(("UPDATE", "INSERT", "DELETE")):
            raise sqlite3.OperationalError(FULL)
        return self._db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


@pytest.fixture
def disk(hub: HubService, monkeypatch: pytest.MonkeyPatch) -> FullDisk:
    store = hub.registry.store
    assert isinstance(store, SqliteStore)
    fake = FullDisk(store._db)
    monkeypatch.setattr(store, "_db", fake)
    return fake


async def next_health(client: HubClient) -> Notification:
    """The next ``hive/health`` the client is sent (prompts and dismissals skipped)."""
    while True:
        note = await client.next_notification()
        if note.method == "hive/health":
            return note


def health_notes(client: HubClient) -> list[Notification]:
    return [n for n in client.notifications if n.method == "hive/health"]


async def test_a_subscribed_editor_is_told_when_the_store_degrades_and_recovers(
    hub: HubService, hub_config: HubConfig, disk: FullDisk
) -> None:
    with trio.fail_after(TIMEOUT_S):
        async with (
            await HubClient.connect(hub_config.socket) as editor,
            await HubClient.connect(hub_config.socket) as bystander,
            await HubClient.connect(hub_config.socket) as former,
        ):
            assert (await editor.call("hive/subscribe"))["subscribed"] is True
            await former.call("hive/subscribe")
            assert (await former.call("hive/unsubscribe"))["was_subscribed"] is True
            asked = await bystander.call(
                "hive/ask", {"question": "due soon", "agent_id": "a", "timeout_s": 0.5}
            )
            disk.full = True  # the ask is in; its expiry will be refused

            note = await next_health(editor)
            assert note.params == {"degraded": DEGRADED}
            assert (await bystander.call("hive/status"))["degraded"] == DEGRADED
            polled = await bystander.call("hive/poll", {"id": asked["id"]})
            assert polled["status"] == "pending"  # overdue, kept, retried

            disk.full = False  # room again: the retried expiry goes through
            note = await next_health(editor)
            assert note.params == {"degraded": None}
            assert (await bystander.call("hive/status"))["degraded"] is None
            polled = await bystander.call("hive/poll", {"id": asked["id"]})
            assert polled["status"] == "expired"

            # Once each way, not once per refused try.
            await editor.call("hive/status")
            assert health_notes(editor) == []
            # Neither a client that never subscribed nor one that unsubscribed hears it.
            await former.call("hive/status")
            assert health_notes(bystander) == []
            assert health_notes(former) == []


async def test_an_editor_subscribing_while_degraded_is_told_at_once(
    hub: HubService, hub_config: HubConfig, disk: FullDisk
) -> None:
    with trio.fail_after(TIMEOUT_S):
        async with await HubClient.connect(hub_config.socket) as first:
            await first.call("hive/subscribe")
            await first.call("hive/ask", {"question": "due", "agent_id": "a", "timeout_s": 0.2})
            disk.full = True
            assert (await next_health(first)).params == {"degraded": DEGRADED}
            async with await HubClient.connect(hub_config.socket) as late:
                await late.call("hive/subscribe")
                assert (await next_health(late)).params == {"degraded": DEGRADED}
                disk.full = False
                assert (await next_health(late)).params == {"degraded": None}


async def test_a_healthy_hub_sends_no_health_on_subscribe(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(TIMEOUT_S):
        async with await HubClient.connect(hub_config.socket) as editor:
            await editor.call("hive/subscribe")
            await editor.call("hive/ask", {"question": "q", "agent_id": "a"})
            await editor.call("hive/status")
            assert [n.method for n in editor.notifications] == ["hive/prompt"]
