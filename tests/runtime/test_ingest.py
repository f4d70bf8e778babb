"""Two registries on one store, as two hubs on one NATS bucket: what one does reaches
the other's waiters and subscribers through ``Registry.ingest`` (the store's change
feed is played by hand here; tests/store/test_nats_store.py has the real one)."""

from __future__ import annotations

import trio
import trio.testing

from hive_rpc.core.prompt import Ask, Prompt, Status
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore


async def test_an_ask_on_one_hub_reaches_the_others_subscribers_and_an_answer_comes_back() -> None:
    store = MemoryStore()
    async with open_registry(store) as laptop, open_registry(store) as server:
        with laptop.watch() as watch:
            asked = await server.ask(Ask(agent_id="builder", question="Deploy?"))
            await laptop.ingest(asked)  # the store told the laptop's hub
            change = await watch.__aiter__().__anext__()
            assert (change.event, change.prompt.id) == ("ask", asked.id)
            assert [p.id for p in laptop.list_pending()] == [asked.id]

            async with trio.open_nursery() as nursery:
                got: list[Status] = []

                async def agent_waits_on_the_server() -> None:
                    got.append((await server.wait(asked.id, timeout_s=30)).status)

                nursery.start_soon(agent_waits_on_the_server)
                await trio.testing.wait_all_tasks_blocked()
                answered = await laptop.respond(asked.id, answer="yes", by="alice")
                await server.ingest(answered)
            assert got == [Status.RESPONDED]
            assert server.list_pending() == []
            # the laptop's own write, echoed back, changes nothing
            await laptop.ingest(answered)
            assert laptop.list_pending() == []


async def test_own_echoes_and_stale_records_change_nothing() -> None:
    store = MemoryStore()
    async with open_registry(store) as one, open_registry(store) as two:
        with one.watch() as watch:
            asked = await one.ask(Ask(agent_id="a", question="Q?"))
            await one.ingest(asked)  # echo of our own ask
            await one.cancel(asked.id, by="a")
            await two.ingest(asked)  # a late copy of the pending record
            assert two.list_pending() == []  # the store says it is cancelled
            events = []
            with trio.move_on_after(0.1):
                async for change in watch:
                    events.append(change.event)
            assert events == ["ask", "cancel"]


async def test_typing_on_another_hub_stops_the_countdown_here() -> None:
    store = MemoryStore()
    async with open_registry(store) as one, open_registry(store) as two:
        asked = await one.ask(Ask(agent_id="a", question="Name?", timeout_s=60))
        await two.ingest(asked)
        typed = await two.typing(asked.id)
        await one.ingest(typed)
        (mine,) = one.list_pending()
        assert mine.deadline_at == mine.max_deadline_at
        assert mine.typing_at is not None


class LaggingStore(MemoryStore):
    """A MemoryStore whose reads miss one prompt, as a NATS bucket's just elected
    leader answered before it had applied every write (nats-server 2.9.10: the
    frozen-leader test of tests/store/test_nats_failover.py hid a prompt from one
    hub's editor in 1 run of 6, its ingest logging the read that found nothing)."""

    def __init__(self) -> None:
        super().__init__()
        self.missing: str | None = None

    async def get(self, prompt_id: str) -> Prompt | None:
        return None if prompt_id == self.missing else await super().get(prompt_id)


async def test_a_prompt_the_store_cannot_find_yet_is_still_shown() -> None:
    """The watch brought another hub's pending prompt, and the read that checks it
    found nothing: the prompt is this hub's to show, not dropped.  Before, it was
    dropped, and no later change of it came (nobody answers what no one sees)."""
    store = LaggingStore()
    async with open_registry(store) as laptop, open_registry(store) as server:
        asked = await server.ask(Ask(agent_id="builder", question="Deploy?"))
        store.missing = asked.id
        with laptop.watch() as watch:
            await laptop.ingest(asked)
            assert [p.id for p in laptop.list_pending()] == [asked.id]
            change = await watch.receive()  # published before ingest returned
        assert (change.event, change.prompt.id) == ("ask", asked.id)
