"""Seed 003's mitigation, "store large results in object store, reference in KV" (issue
32, part 6): a task result over 16 KiB of JSON is kept in the object store
``hive_results`` under its SHA-256, and its report in ``hive_documents`` names it
instead of carrying it.  Any hub sharing the store reads it in full when asked (one
started after the report too), as does a plain nats-py client; ``--retain`` removes it
with the last report naming it, leaving no marker; the object store ages results out
by itself (``max_age``) an hour after ``--retain``, the KV buckets never.  SQLite keeps
the result inline.  Against a real ``nats-server -js`` (the ``nats_server`` fixture)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import nats
import pytest
import trio
from nats_support import NATS_SERVER, NatsServer
from test_nats_retention import retention_pass
from test_shared_completion import nats_hub, task_report
from waiting import logged

from hive_rpc.core.prompt import Ask, new_prompt
from hive_rpc.hub import RETENTION_EVERY_S, HubConfig, run_hub
from hive_rpc.runtime.activity import MAX_RESULT_BYTES, TASK_DOC, ActivityLog, result_blob
from hive_rpc.runtime.registry import open_registry
from hive_rpc.service import HubService
from hive_rpc.store.base import PromptStore, ResultObjects
from hive_rpc.store.nats import PROMPTS_BUCKET, RESULTS_BUCKET, open_nats_store

pytestmark = pytest.mark.skipif(NATS_SERVER is None, reason="needs nats-server")

DAY = 86400.0
HOUR = 3600.0
RESULTS_STREAM = f"OBJ_{RESULTS_BUCKET}"


def build_log(lines: int, seed: str = "") -> dict[str, Any]:
    """A result such as an agent loop reports: an LLM's answer with its build log."""
    return {
        "summary": f"build {seed} failed: 3 tests red",
        "log": [f"{seed}{i:05d} test_case_{i} ... " + "ok " * 30 for i in range(lines)],
    }


def json_of(result: Any) -> str:
    return json.dumps(result, separators=(",", ":"))


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def meta_subject(digest: str) -> str:
    return f"$O.{RESULTS_BUCKET}.M.{base64.urlsafe_b64encode(digest.encode()).decode()}"


def read_outside(url: str, task_key: str, digest: str) -> tuple[bytes, bytes]:
    """The task report's KV value and the object it names, read as any service
    watching the store would: nats-py on asyncio, knowing nothing of hive_rpc."""

    async def read() -> tuple[bytes, bytes]:
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            report = await (await js.key_value("hive_documents")).get(task_key)
            result = await (await js.object_store(RESULTS_BUCKET)).get(digest)
            return report.value or b"", result.data or b""
        finally:
            await nc.close()

    return asyncio.run(read())


def stream_state(url: str, stream: str) -> tuple[dict[str, int], float]:
    """The subjects ``stream`` holds a message for (with how many), and its max_age."""

    async def read() -> tuple[dict[str, int], float]:
        nc = await nats.connect(url)
        try:
            info = await nc.jetstream().stream_info(stream, subjects_filter=">")
            return dict(info.state.subjects or {}), info.config.max_age or 0.0
        finally:
            await nc.close()

    return asyncio.run(read())


async def test_a_large_result_reported_through_one_hub_is_read_in_full_through_another(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    result = build_log(1700)
    text = json_of(result)
    assert 190_000 < len(text) < 230_000  # "a 200 KB result"
    digest = sha256(text)
    with trio.fail_after(60):
        async with (
            nats_hub(short_tmp, "build", nats_server.url) as build,
            nats_hub(short_tmp, "laptop", nats_server.url) as laptop,
        ):
            assert isinstance(laptop.activity.results, ResultObjects)
            reported = await build.call(
                "hive/reportResult",
                {"task_id": "build-414", "outcome": "failed", "result": result, "agent_id": "ci"},
            )
            assert reported["result_ref"] == f"/activity/blobs/{digest}"
            entry = await logged(laptop.activity, task_report("build-414"), within_s=20)
            # The laptop's entry refers to the result as the build hub's does ...
            assert entry.data["result"] is None
            assert entry.data["result_ref"] == f"/activity/blobs/{digest}"
            assert entry.data["result_size"] == len(text)
            # ... which it reads from the store when asked for the task, not before.
            assert laptop.activity.blob(digest) is None
            (asked,) = await laptop.call("hive/activity", {"task_id": "build-414"})
            assert asked["result"] == result
            assert asked["result_ref"] == f"/activity/blobs/{digest}"
            assert laptop.activity.blob(digest) == text  # held once read
            (own,) = await build.call("hive/activity", {"task_id": "build-414"})
            assert own["result"] == result
        # A hub started after the report, which never logged it, reads it in full too.
        async with nats_hub(short_tmp, "desk", nats_server.url) as desk:
            assert desk.activity.task("build-414") == []
            (stored,) = await desk.call("hive/activity", {"task_id": "build-414"})
            assert (stored["id"], stored["kind"], stored["key"]) == (None, "task", "build-414")
            assert (stored["outcome"], stored["result"]) == ("failed", result)
            assert stored["at"] == stored["completed_at"] == reported["completed_at"]
            assert await desk.call("hive/activity", {"task_id": "never"}) == []
            assert await desk.activity.read_blob("0" * 64) is None  # never kept
    # In the store: the report names the result; the object store holds it.
    value, kept = await trio.to_thread.run_sync(
        read_outside, nats_server.url, "task.build-414", digest
    )
    assert len(value) < 1024  # the report stays small in the bucket every hub scans
    body = json.loads(value)["body"]
    assert (body["result"], body["result_sha256"], body["result_size"]) == (
        None,
        digest,
        len(text),
    )
    assert (body["outcome"], body["agent_id"]) == ("failed", "ci")
    assert kept == text.encode()
    # The object store ages results out by itself an hour after --retain (30 days
    # here); the KV buckets, which hold pending prompts and answer rules, never.
    _, results_age = await trio.to_thread.run_sync(stream_state, nats_server.url, RESULTS_STREAM)
    assert results_age == 30 * DAY + RETENTION_EVERY_S
    for bucket in ("KV_hive_prompts", "KV_hive_documents"):
        _, age = await trio.to_thread.run_sync(stream_state, nats_server.url, bucket)
        assert age == 0.0


async def save_report(store: PromptStore, task_id: str, at: float, result: Any) -> str:
    """A task report with a large result as ``hive/reportResult`` saves it on NATS,
    completed at ``at``; the result's digest."""
    log = ActivityLog(lambda: at)
    data = log.task_data(task_id=task_id, outcome="success", result=result)
    blob = result_blob(result)
    assert blob is not None
    assert isinstance(store, ResultObjects)
    await store.put_result(*blob)
    await store.put_document(TASK_DOC, task_id, log.task_document(data, blob))
    return blob[0]


def mcp_token(service: HubService) -> str:
    """The agent's credential over HTTP, the MCP token (tests/faces/test_activity_http.py)."""
    return Path(str(service.info.token_file)).read_text().strip()


async def test_a_hub_serves_another_hubs_large_result_at_its_blob_url(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    """The ``result_ref`` every hub's entry carries, ``/activity/blobs/SHA256``, is
    served by every hub: one that never read the result fetches it from the store.
    It answered 404 there, serving only what the hub held in memory."""
    result = build_log(1700)
    text = json_of(result)
    with trio.fail_after(60):
        async with nats_hub(short_tmp, "build", nats_server.url) as build:
            reported = await build.call(
                "hive/reportResult",
                {"task_id": "build-415", "outcome": "failed", "result": result, "agent_id": "ci"},
            )
        data_dir = short_tmp / "web" / "data"
        config = HubConfig(
            socket=short_tmp / "web" / "hub.sock", data_dir=data_dir, store=nats_server.url,
            http="127.0.0.1:0",
        )  # fmt: skip
        async with trio.open_nursery() as nursery:
            web: HubService = await nursery.start(run_hub, config)
            assert web.activity.blob(sha256(text)) is None  # never read here
            base = str(web.info.http_url).removesuffix("/mcp")
            headers = {"Authorization": f"Bearer {mcp_token(web)}"}
            async with httpx2.AsyncClient(base_url=base, headers=headers) as client:
                got = await client.get(reported["result_ref"])
                unknown = await client.get("/activity/blobs/" + "0" * 64)
            nursery.cancel_scope.cancel()
    assert (got.status_code, got.headers["content-type"]) == (200, "application/json")
    assert got.text == text
    assert unknown.status_code == 404


async def test_retain_removes_a_large_result_with_the_last_report_naming_it(
    nats_server: NatsServer,
) -> None:
    url, now = nats_server.url, time.time()
    alone, shared = build_log(300, "a"), build_log(300, "s")
    with trio.fail_after(60):
        async with open_nats_store(url) as store:
            gone = await save_report(store, "old", now - 3 * HOUR, alone)
            kept = await save_report(store, "old-too", now - 3 * HOUR, shared)
            assert await save_report(store, "young", now - 60, shared) == kept
        before, _ = await trio.to_thread.run_sync(stream_state, url, RESULTS_STREAM)
        assert {meta_subject(gone), meta_subject(kept)} < set(before)

        async with open_nats_store(url) as store, open_registry(store) as registry:
            await retention_pass(registry, 2 * HOUR)

        after, _ = await trio.to_thread.run_sync(stream_state, url, RESULTS_STREAM)
        async with open_nats_store(url) as store:
            assert [d["task_id"] for d in await store.documents(TASK_DOC)] == ["young"]
            assert await store.get_result(gone, limit=MAX_RESULT_BYTES) is None
            assert await store.get_result(kept, limit=MAX_RESULT_BYTES) == json_of(shared)
            # Over the reader's bound, a result is not read.
            assert await store.get_result(kept, limit=1000) is None
    # Only the kept result's meta and chunks are left: no marker of the other.
    metas = {s for s in after if s.startswith(f"$O.{RESULTS_BUCKET}.M.")}
    chunks = {s for s in after if s.startswith(f"$O.{RESULTS_BUCKET}.C.")}
    assert metas == {meta_subject(kept)}
    assert len(chunks) == 1  # the kept result's (one nuid)
    assert after[meta_subject(kept)] == 1


async def test_a_large_result_reported_again_while_retention_runs_is_kept(
    nats_server: NatsServer,
) -> None:
    """Retention plans from one scan; a report saved after it that names the same
    result has put it again, which the purge of the old report's result leaves."""
    now = time.time()
    result = build_log(300)
    with trio.fail_after(30):
        async with open_nats_store(nats_server.url) as store:
            digest = await save_report(store, "nightly-1", now - 3 * DAY, result)
            before = now - 2 * DAY
            assert await store.prune_closed(before, limit=1) == 1  # the report
            assert await save_report(store, "nightly-2", now, result) == digest
            assert await store.prune_closed(before) == 1  # its result: planned, left
            assert await store.prune_closed(before) == 0
            assert await store.get_result(digest, limit=MAX_RESULT_BYTES) == json_of(result)


async def test_a_results_store_is_kept_as_long_as_the_longest_retain(
    nats_server: NatsServer,
) -> None:
    """The object store's max_age is set when a hub creates it, and raised, never
    lowered, by a hub with a longer ``--retain``: none may age out a result its
    report still names."""
    url = nats_server.url
    with trio.fail_after(30):
        async with open_nats_store(url, results_ttl_s=2 * DAY):
            pass
        async with open_nats_store(url, results_ttl_s=1 * DAY):
            pass
        _, age = await trio.to_thread.run_sync(stream_state, url, RESULTS_STREAM)
        assert age == 2 * DAY
        async with open_nats_store(url, results_ttl_s=5 * DAY):
            pass
        _, age = await trio.to_thread.run_sync(stream_state, url, RESULTS_STREAM)
        assert age == 5 * DAY


def make_aging_bucket(url: str, bucket: str, max_age_s: float) -> None:
    """Create ``bucket`` as the hubs would, but with a ``max_age``: a bucket TTL."""

    async def make() -> None:
        nc = await nats.connect(url)
        try:
            await nc.jetstream().create_key_value(bucket=bucket, history=1, ttl=max_age_s)
        finally:
            await nc.close()

    asyncio.run(make())


async def test_a_bucket_max_age_would_drop_a_pending_prompt_and_tell_no_hub(
    nats_server: NatsServer,
) -> None:
    """Why the KV buckets have no ``max_age`` (multi-machine.md, "Retention and
    TTLs"): given one (1 s here), JetStream ages out a pending prompt nobody wrote
    again, and no watch hears of it: every hub would keep showing a question the
    store no longer has, and a restarted hub would not know it was ever asked."""
    url = nats_server.url
    await trio.to_thread.run_sync(make_aging_bucket, url, PROMPTS_BUCKET, 1.0)
    ask = Ask(agent_id="a", question="q", timeout_s=DAY)
    with trio.fail_after(30):
        async with open_nats_store(url) as store, store.changes() as changes:
            waiting = new_prompt(ask, now=time.time())
            await store.insert(waiting)
            asked = await anext(changes)
            assert (asked.key, asked.value is not None) == (waiting.id, True)
            # The server ages the key out by itself, outside this process, with no
            # event to follow: its absence is polled for, within the deadline above.
            while await store.get(waiting.id) is not None:  # noqa: ASYNC110 (the server's clock)
                await trio.sleep(0.1)
            assert await store.pending() == []  # a restarted hub would not know it
            later = new_prompt(ask, now=time.time())
            await store.insert(later)
            # The watch's next change is the later question: nothing told of the first.
            told = await anext(changes)
            assert (told.key, told.value is not None) == (later.id, True)


async def test_sqlite_keeps_a_large_result_inline_in_its_report(short_tmp: Path) -> None:
    """And a restarted hub, whose log is empty, reads the report from the store."""
    result = build_log(1700)
    config = HubConfig(socket=short_tmp / "run" / "hub.sock", data_dir=short_tmp / "data")
    report = {"task_id": "t", "outcome": "success", "result": result}
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            hub: HubService = await nursery.start(run_hub, config)
            assert hub.activity.results is None
            reported = await hub.call("hive/reportResult", report)
            (saved,) = await hub.registry.store.documents(TASK_DOC)
            nursery.cancel_scope.cancel()
        async with trio.open_nursery() as nursery:
            hub = await nursery.start(run_hub, config)
            (stored,) = await hub.call("hive/activity", {"task_id": "t"})
            nursery.cancel_scope.cancel()
    assert saved["result"] == result
    assert "result_sha256" not in saved
    assert (stored["id"], stored["result"]) == (None, result)
    assert stored["completed_at"] == reported["completed_at"]
