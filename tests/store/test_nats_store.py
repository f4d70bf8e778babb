"""The NATS JetStream KV store against a real ``nats-server -js`` (the ``nats_server``
fixture of tests/conftest.py): first answer wins between two hubs, changes seen across
hubs, and what happens when the server dies and returns.  The store contract itself
runs on every store, NATS included, in tests/store/test_stores.py."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
import trio
from nats.js.kv import KeyValue
from nats_support import NatsServer, free_port

from hive_rpc.core import lifecycle
from hive_rpc.core.errors import HiveError
from hive_rpc.core.prompt import Action, Ask, Prompt, Status, new_prompt
from hive_rpc.store.nats import (
    NatsStore,
    StoreChange,
    StoreUnavailable,
    decode_name,
    encode_name,
    open_nats_store,
    redact_url,
)

NOW = 1_800_000_000.0

needs_nats = pytest.mark.skipif(
    shutil.which("nats-server") is None,
    reason="nats-server is not installed (Debian: apt-get install nats-server)",
)


def prompt(i: int, agent: str = "a") -> Prompt:
    return new_prompt(Ask(agent_id=agent, question=f"q{i} ✓ «ünïcode»", timeout_s=60), now=NOW + i)


@pytest.fixture
async def nats_store(nats_server: NatsServer) -> AsyncIterator[NatsStore]:
    with trio.fail_after(10):
        async with open_nats_store(nats_server.url) as s:
            yield s


# -- NATS only ------------------------------------------------------------------------


def test_names_are_encoded_into_the_kv_key_charset() -> None:
    for name in ["plain-Name_09", "a.b", "x/y", "=", "", "ü ✓", "\udc80"]:
        token = encode_name(name)
        assert token == "" or all(c.isascii() and (c.isalnum() or c in "-_=") for c in token)
        assert decode_name(token) == name
    assert encode_name("3f9c0a51d2e84b17") == "3f9c0a51d2e84b17"
    assert redact_url("nats://user:secret@host:4222") == "nats://***@host:4222"
    assert redact_url("nats://host:4222") == "nats://host:4222"


@needs_nats
async def test_first_answer_wins_across_two_hubs(nats_server: NatsServer) -> None:
    with trio.fail_after(20):
        async with open_nats_store(nats_server.url) as a, open_nats_store(nats_server.url) as b:
            for round_ in range(20):
                p = prompt(round_)
                await a.insert(p)
                assert await b.get(p.id) == p
                results: dict[str, Prompt | None] = {}
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_answer, a, p, "hub-a", results)
                    nursery.start_soon(_answer, b, p, "hub-b", results)
                winners = [by for by, stored in results.items() if stored is None]
                assert len(winners) == 1, results
                (loser,) = {"hub-a", "hub-b"} - set(winners)
                stored = results[loser]
                assert stored is not None
                assert stored.by == winners[0]
                assert (await a.get(p.id)) == (await b.get(p.id)) == stored


async def _answer(store: NatsStore, p: Prompt, by: str, results: dict[str, Prompt | None]) -> None:
    mine = lifecycle.respond(p, answer=by, by=by, action=Action.ACCEPT, now=NOW)
    results[by] = await store.update(mine, expected=Status.PENDING)


@needs_nats
async def test_changes_show_what_other_hubs_write(nats_server: NatsServer) -> None:
    with trio.fail_after(20):
        async with open_nats_store(nats_server.url) as a, open_nats_store(nats_server.url) as b:
            before = prompt(0)
            await b.insert(before)  # written before the watch: not reported
            async with a.changes() as changes:
                p = prompt(1)
                await b.insert(p)
                answered = lifecycle.respond(p, answer="y", by="b", action=Action.ACCEPT, now=NOW)
                assert await b.update(answered, expected=Status.PENDING) is None
                await b.put_document("ling", "main.feature.auth", {"name": "main.feature.auth"})
                await b.delete_document("ling", "main.feature.auth")
                await a.put_document("dialogue", "d1", {"id": "d1"})  # this hub's own too
                got: list[StoreChange] = []
                async for change in changes:
                    got.append(change)
                    if len(got) == 5:
                        break
    prompts = [c for c in got if c.kind == "prompt"]
    documents = [c for c in got if c.kind == "document"]
    assert [(c.key, c.value and c.value["status"]) for c in prompts] == [
        (p.id, "pending"),
        (p.id, "responded"),
    ]
    assert prompts[1].value is not None
    assert Prompt.from_record(prompts[1].value) == answered
    assert documents == [
        StoreChange("document", "main.feature.auth", "ling", {"name": "main.feature.auth"}),
        StoreChange("document", "main.feature.auth", "ling", None),
        StoreChange("document", "d1", "dialogue", {"id": "d1"}),
    ]


@needs_nats
async def test_unreachable_nats_fails_fast_then_recovers(nats_server: NatsServer) -> None:
    with trio.fail_after(60):
        async with open_nats_store(nats_server.url) as s:
            kept = prompt(1)
            await s.insert(kept)
            await s.put_document("ling", "kept", {"n": 1})

            nats_server.kill()
            # Each operation settles with the store's own timeout, never hangs on
            # the reconnect (the bound is generous: it only tells failing from hanging).
            with trio.fail_after(s.timeout * 4), pytest.raises(StoreUnavailable) as caught:
                await s.insert(prompt(2))
            error = caught.value
            assert isinstance(error, HiveError)
            assert error.code == -32007
            assert error.data["kind"] == "store_unavailable"
            assert "the shared store (NATS at nats://127.0.0.1:" in error.message
            assert "is unreachable" in error.message
            assert "try again when it is back" in error.message
            for op in (s.get(kept.id), s.pending(), s.counts(), s.documents("ling")):
                with trio.fail_after(s.timeout * 4), pytest.raises(StoreUnavailable):
                    await op

            nats_server.start()  # same port, same storage dir
            # nats-py reconnects by itself, every 0.5 s.  The scan must see the kept
            # prompt as soon as get() does (an early end marker once made it see none:
            # test_a_scan_is_not_ended_by_an_early_end_marker).
            while True:
                try:
                    if await s.get(kept.id) == kept:
                        break
                except StoreUnavailable:
                    pass
                await trio.sleep(0.2)
            assert [p.id for p in await s.pending()] == [kept.id]
            assert await s.documents("ling") == [{"n": 1}]
            await s.insert(prompt(3))
            assert (await s.counts())["pending"] == 2


class _EarlyEndMarker:
    """A KV watcher whose end-of-initial-values marker (``None``) comes before the
    values, as nats-py gives when the server pushed them before the client asked for
    the consumer's info (a race seen once right after a nats-server restart)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.marked = False

    def __aiter__(self) -> _EarlyEndMarker:
        return self

    async def __anext__(self) -> Any:
        if not self.marked:
            self.marked = True
            return None
        return await self.real.__anext__()

    async def stop(self) -> None:
        await self.real.stop()


@needs_nats
async def test_a_scan_is_not_ended_by_an_early_end_marker(
    nats_server: NatsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_watch = KeyValue.watch

    async def early_marker_watch(self: KeyValue, *args: Any, **kwargs: Any) -> Any:
        return _EarlyEndMarker(await real_watch(self, *args, **kwargs))

    with trio.fail_after(30):
        async with open_nats_store(nats_server.url) as s:
            monkeypatch.setattr(KeyValue, "watch", early_marker_watch)
            # Nothing stored: the marker is believed and the scan ends at once.
            assert await s.pending() == []
            assert await s.documents("ling") == []
            kept = [prompt(i) for i in range(3)]
            for p in kept:
                await s.insert(p)
            await s.put_document("ling", "kept", {"n": 1})
            assert [p.id for p in await s.pending()] == [p.id for p in kept]
            assert (await s.counts())["pending"] == 3
            assert await s.documents("ling") == [{"n": 1}]
            # A deleted document's marker is read past, never returned.
            await s.delete_document("ling", "kept")
            assert await s.documents("ling") == []


@needs_nats
async def test_changes_resume_after_nats_returns(nats_server: NatsServer) -> None:
    with trio.fail_after(60):
        async with open_nats_store(nats_server.url) as s, s.changes() as changes:
            p1 = prompt(1)
            await s.insert(p1)
            first = await changes.__anext__()
            assert first.key == p1.id
            nats_server.kill()
            nats_server.start()
            while True:
                try:
                    await s.insert(p2 := prompt(2))
                    break
                except StoreUnavailable:
                    await trio.sleep(0.2)
            second = await changes.__anext__()
            assert (second.kind, second.key) == ("prompt", p2.id)


@needs_nats
async def test_connecting_to_nothing_is_a_clear_error() -> None:
    url = f"nats://127.0.0.1:{free_port()}"
    with trio.fail_after(10), pytest.raises(StoreUnavailable) as caught:
        async with open_nats_store(url, op_timeout_s=2):
            pass
    assert url in caught.value.message
    assert "could not connect within 2 s (last error:" in caught.value.message


async def test_inserting_an_existing_id_fails(nats_store: NatsStore) -> None:
    p = prompt(1)
    await nats_store.insert(p)
    with pytest.raises(KeyError):
        await nats_store.insert(replace(p, question="another"))
    assert await nats_store.get(p.id) == p
