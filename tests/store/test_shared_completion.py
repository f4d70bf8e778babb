"""Seed 003 in the shared store: a prompt's record in ``hive_prompts`` carries its
completion data (``outcome``, ``result``, ``error``, ``completed_at``), and task
reports (``hive/reportResult``) are documents of ``hive_documents``; a plain nats-py
KV watcher, which knows nothing of hive_rpc, reads both, and a second hub on the same
store logs the report in its own activity stream (docs/multi-machine.md's format)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import pytest
import trio
from nats_support import NATS_SERVER, NatsServer
from waiting import logged

from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(NATS_SERVER is None, reason="needs nats-server")


@asynccontextmanager
async def nats_hub(root: Path, name: str, url: str) -> AsyncIterator[HubService]:
    config = HubConfig(socket=root / name / "hub.sock", data_dir=root / name / "data", store=url)
    async with trio.open_nursery() as nursery:
        service: HubService = await nursery.start(run_hub, config)
        yield service
        nursery.cancel_scope.cancel()


class OutsideWatcher:
    """Another service: nats-py on asyncio in a thread, watching the two buckets
    until it has seen the prompt closed and the task reported."""

    def __init__(self, url: str, prompt_id: str, task_id: str) -> None:
        self.url, self.prompt_id, self.task_id = url, prompt_id, task_id
        self.watching = threading.Event()
        self.prompt: dict[str, Any] | None = None
        self.task: dict[str, Any] | None = None
        self.task_key: str | None = None

    def run(self) -> None:
        asyncio.run(asyncio.wait_for(self._watch(), 20))

    async def _watch(self) -> None:
        nc = await nats.connect(self.url)
        try:
            js = nc.jetstream()
            prompts = await (await js.key_value("hive_prompts")).watch(self.prompt_id)
            tasks = await (await js.key_value("hive_documents")).watch("task.*")
            self.watching.set()
            while self.prompt is None or self.task is None:
                for watcher in (prompts, tasks):
                    try:
                        entry = await watcher.updates(timeout=0.1)
                    except nats.errors.TimeoutError:
                        continue
                    if entry is None or not entry.value:
                        continue
                    value = json.loads(entry.value)
                    if watcher is prompts and value.get("outcome") is not None:
                        self.prompt = value
                    elif watcher is tasks and value["body"]["task_id"] == self.task_id:
                        self.task, self.task_key = value, entry.key
        finally:
            await nc.close()


async def test_a_plain_kv_watcher_reads_completion_data_and_task_reports(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    with trio.fail_after(30):
        async with nats_hub(short_tmp, "build", nats_server.url) as hub:
            asked = await hub.call(
                "hive/ask", {"question": "Deploy 412?", "agent_id": "ci", "task_id": "deploy-412"}
            )
            watcher = OutsideWatcher(nats_server.url, asked["id"], "deploy-412")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, watcher.run)
                await trio.to_thread.run_sync(watcher.watching.wait)
                await hub.call("hive/respond", {"id": asked["id"], "answer": "yes", "by": "ada"})
                await hub.call(
                    "hive/reportResult",
                    {
                        "task_id": "deploy-412",
                        "outcome": "success",
                        "result": {"url": "https://example.test/412"},
                        "in_reply_to": asked["id"],
                        "agent_id": "ci",
                    },
                )
    prompt, task = watcher.prompt, watcher.task
    assert prompt is not None
    assert task is not None
    assert (prompt["status"], prompt["task_id"]) == ("responded", "deploy-412")
    assert (prompt["outcome"], prompt["result"], prompt["error"]) == ("success", "yes", None)
    assert prompt["completed_at"] == prompt["answered_at"]
    assert watcher.task_key == "task.deploy-412"
    assert (task["kind"], task["key"]) == ("task", "deploy-412")
    body = task["body"]
    assert (body["outcome"], body["result"]) == ("success", {"url": "https://example.test/412"})
    assert (body["in_reply_to"], body["agent_id"], body["error"]) == (asked["id"], "ci", None)
    assert isinstance(body["completed_at"], float)


def task_report(task_id: str) -> Callable[[Entry], bool]:
    return lambda e: e.kind == "task" and e.key == task_id


async def test_another_hub_logs_a_task_report_once(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    with trio.fail_after(30):
        async with (
            nats_hub(short_tmp, "build", nats_server.url) as build,
            nats_hub(short_tmp, "laptop", nats_server.url) as laptop,
        ):
            await build.call(
                "hive/reportResult",
                {"task_id": "build-413", "outcome": "failed", "error": "tests red"},
            )
            await logged(laptop.activity, task_report("build-413"), within_s=20)  # via NATS
            # Later reports, each way: once each hub has logged the other's, it has
            # read the store past build-413 (the laptop its second copy, if any; build
            # its own echo).
            marker = await build.call("hive/reportResult", {"task_id": "m", "outcome": "success"})
            await logged(laptop.activity, task_report("m"), within_s=20)
            await laptop.call("hive/reportResult", {"task_id": "m2", "outcome": "success"})
            await logged(build.activity, task_report("m2"), within_s=20)
            on_laptop = laptop.activity.task("build-413")
            on_build = build.activity.task("build-413")
    assert marker["task_id"] == "m"
    assert [e.data["outcome"] for e in on_build] == ["failed"]  # its own echo: not again
    (entry,) = on_laptop
    assert (entry.kind, entry.event, entry.key) == ("task", "task/report", "build-413")
    assert (entry.data["error"], entry.data["completed_at"]) == (
        "tests red",
        on_build[0].data["completed_at"],
    )
