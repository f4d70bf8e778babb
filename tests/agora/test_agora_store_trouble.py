"""Store writes the Agora makes on its own never end the hub: a held message's
outcome, recorded after its dispatch was answered, and a registration the human
approved, are tried again with a doubling wait while the hub shows ``degraded``, and
land once the store takes writes again.  Units on trio's autojump clock, with a
scripted terminal (the real terminals are tested in test_agora.py)."""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
import trio
import trio.testing

from hive_rpc.agora import STORE_RETRY_MAX_S, open_agora
from hive_rpc.core.errors import StoreWriteFailed
from hive_rpc.core.ling import Ling
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.proc import process
from hive_rpc.relay.target import TargetState
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore

AGENT = process(os.getpid())
"""The stand-in terminal's agent: this test's own process (alive, as /proc says)."""

EPOCH = 1_800_000_000.0
DISK_FULL = "database or disk is full"


class DocumentsRefused(MemoryStore):
    """A MemoryStore whose document writes fail while ``full`` is set (as SQLite's on
    a full disk); it counts the refused writes."""

    def __init__(self) -> None:
        super().__init__()
        self.full = False
        self.refused = 0

    def _refuse(self) -> None:
        if self.full:
            self.refused += 1
            raise StoreWriteFailed("test", DISK_FULL)

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        self._refuse()
        await super().put_document(kind, key, body)

    async def delete_document(self, kind: str, key: str) -> bool:
        self._refuse()
        return await super().delete_document(kind, key)


class HeldTerminal:
    """A terminal that shows a dialog (so the relay holds the message) until
    ``free`` is set, then types into nowhere."""

    kind = "tmux"
    address = "%1"

    def __init__(self) -> None:
        self.free = trio.Event()
        self.typed: list[str] = []

    async def check(self) -> TargetState:
        await trio.lowlevel.checkpoint()
        if self.free.is_set():
            return TargetState(alive=True, tail="\u276f ", command="claude", foreground=AGENT)
        return TargetState(
            alive=True,
            tail="Bash command\n  make deploy\nDo you want to proceed?",
            command="claude",
            foreground=AGENT,
        )

    async def type_text(self, text: str) -> None:
        await trio.lowlevel.checkpoint()
        self.typed.append(text)


async def test_a_held_deliverys_outcome_waits_out_a_full_disk(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = DocumentsRefused()
    terminal = HeldTerminal()

    def target(ling: Ling) -> Any:
        return terminal

    async with open_registry(store, epoch=EPOCH) as registry, trio.open_nursery() as nursery:
        agora = await open_agora(
            store, registry.now, DeliveryPeers(), nursery, target=target,
            registry=registry, dispatch_wait_s=1,
        )  # fmt: skip
        await agora.register("b", "tmux", "%1", owner=True)
        d = await agora.create("topic", ["a", "b"])
        sent = await agora.dispatch(
            d["id"], sender="a", to="b", signal="propose", message="use sqlite"
        )
        assert sent["delivery"]["state"] == "queued"  # held by the dialog
        store.full = True
        with caplog.at_level(logging.ERROR, logger="hive_rpc.runtime.registry"):
            terminal.free.set()
            await trio.sleep(300)  # the hub goes on; the outcome is tried again and again
        assert terminal.typed  # delivered
        assert registry.degraded_reason() == f"store: {DISK_FULL}"
        assert store.refused > 3
        assert len([r for r in caplog.records if "agora write failed" in r.getMessage()]) == 1
        assert agora.status(d["id"])["turns"][-1]["delivery"]["state"] == "queued"
        store.full = False
        await trio.sleep(STORE_RETRY_MAX_S + 1)
        assert agora.status(d["id"])["turns"][-1]["delivery"]["state"] == "delivered"
        assert registry.degraded_reason() is None
        nursery.cancel_scope.cancel()


async def test_an_approval_carried_out_on_a_full_disk_lands_later(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = DocumentsRefused()
    terminal = HeldTerminal()
    async with open_registry(store, epoch=EPOCH) as registry, trio.open_nursery() as nursery:
        agora = await open_agora(
            store, registry.now, DeliveryPeers(), nursery, target=lambda ling: terminal,
            registry=registry,
        )  # fmt: skip
        asked = await agora.register("b", "tmux", "%1")
        assert asked["state"] == "pending"
        store.full = True
        await registry.respond(asked["prompt_id"], answer="approve", by="human")
        await trio.sleep(100)
        assert registry.degraded_reason() == f"store: {DISK_FULL}"
        # Not registered until stored; still listed as the request it was, never as nothing.
        assert [(x["name"], x["state"]) for x in await agora.lings()] == [("b", "pending")]
        store.full = False
        await trio.sleep(STORE_RETRY_MAX_S + 1)
        assert [(x["name"], x["state"]) for x in await agora.lings()] == [("b", "registered")]
        assert registry.degraded_reason() is None
        nursery.cancel_scope.cancel()
