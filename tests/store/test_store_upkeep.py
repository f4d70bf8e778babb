"""A store's life over releases and months: schema migrations, a damaged file (the
hub says to run ``hive-rpc doctor``, which recovers what can be read), and retention
(closed prompts past ``--retain`` are deleted, pending ones kept; NATS too)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
import trio
import trio.testing
from cli_support import Shell
from nats_support import NatsServer

from hive_rpc import cli
from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Status, new_prompt
from hive_rpc.host.paths import DB_NAME
from hive_rpc.hub import RETENTION_EVERY_S, run_retention
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import MemoryStore, SqliteStore
from hive_rpc.store.base import StoreCorrupt
from hive_rpc.store.sqlite import SCHEMA_VERSION

EPOCH = 1_800_000_000.0

OLD_DDL = """
CREATE TABLE IF NOT EXISTS prompts (
    id         TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at REAL NOT NULL,
    record     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS prompts_status ON prompts (status, created_at);
CREATE INDEX IF NOT EXISTS prompts_agent ON prompts (agent_id, created_at);
CREATE TABLE IF NOT EXISTS documents (
    kind TEXT NOT NULL,
    key  TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, key)
);
"""
"""The tables exactly as hive-rpc made them before the schema had a version (0)."""

OLD_PENDING = (
    '{"id":"0123456789abcdef","agent_id":"old","question":"made by the old version",'
    '"created_at":1800000000.0,"deadline_at":4000000000.0,"max_deadline_at":4000000000.0,'
    '"choices":["yes","no"],"schema":null,"urgent":false,"timeout_s":null,"task_id":null,'
    '"in_reply_to":null,"status":"pending","typing_at":null,"answered_at":null,'
    '"expired_at":null,"cancelled_at":null,"expiry_reason":null,"answer":null,"by":null,'
    '"action":null,"expired":false}'
)


def _old_file(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(OLD_DDL)
    db.execute(
        "INSERT INTO prompts VALUES (?,?,?,?,?)",
        ("0123456789abcdef", "old", "pending", 1_800_000_000.0, OLD_PENDING),
    )
    db.execute(
        "INSERT INTO documents VALUES (?,?,?)", ("ling", "main", '{"name":"main","kind":"tmux"}')
    )
    db.close()


async def test_a_file_from_before_versioning_is_migrated_and_keeps_its_prompts(
    short_tmp: Path,
) -> None:
    path = short_tmp / DB_NAME
    _old_file(path)
    store = SqliteStore(path)
    assert store.schema_version_found == 0
    async with open_registry(store) as registry:
        (prompt,) = registry.list_pending()
        assert prompt.id == "0123456789abcdef"
        assert prompt.choices == ("yes", "no")
        await registry.respond(prompt.id, answer="yes", by="human")
    assert await store.documents("ling") == [{"name": "main", "kind": "tmux"}]
    assert store.quarantined() == []
    await store.aclose()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()
    again = SqliteStore(path)  # reopening a current file migrates nothing
    assert again.schema_version_found == SCHEMA_VERSION
    assert (await again.get("0123456789abcdef")).answer == "yes"  # type: ignore[union-attr]
    await again.aclose()


def test_a_file_from_a_newer_version_is_refused_with_a_reason(short_tmp: Path) -> None:
    path = short_tmp / DB_NAME
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreCorrupt, match="made by a newer hive-rpc"):
        SqliteStore(path)


# -- a damaged file -------------------------------------------------------------------

PROMPTS = 40
PAGE = 4096


async def _fill_store(path: Path) -> list[str]:
    """PROMPTS pending prompts of about one page each, so a damaged page costs one."""
    store = SqliteStore(path)
    async with open_registry(store) as registry:
        ids = [
            (await registry.ask(Ask(agent_id="a", question=f"{i:03d} " + "x" * 3000))).id
            for i in range(PROMPTS)
        ]
    await store.aclose()
    return ids


def _damage_a_page(path: Path) -> None:
    data = bytearray(path.read_bytes())
    pages = len(data) // PAGE
    middle = pages // 2
    data[middle * PAGE : (middle + 1) * PAGE] = b"\xa5" * PAGE
    path.write_bytes(bytes(data))


async def test_damaged_file_names_doctor_and_recover_keeps_the_readable_rows(
    sh: Shell,
) -> None:
    sh.data_dir.mkdir(mode=0o700, parents=True)
    ids = await _fill_store(sh.data_dir / DB_NAME)
    _damage_a_page(sh.data_dir / DB_NAME)

    # The hub refuses to start, and says what to run, not just SQLite's words.
    served = await trio.to_thread.run_sync(lambda: sh.run("serve"))
    assert served.returncode == cli.EXIT_REFUSED, served.stderr
    assert "is damaged" in served.stderr
    assert "hive-rpc doctor --recover" in served.stderr
    assert "Traceback" not in served.stderr
    listed = await trio.to_thread.run_sync(lambda: sh.run("list"))  # autostart says it too
    assert "hive-rpc doctor" in listed.stderr, listed.stderr

    doctor = await trio.to_thread.run_sync(lambda: sh.run("doctor"))
    assert doctor.returncode == cli.EXIT_REFUSED
    assert "is damaged" in doctor.stdout
    assert "hive-rpc doctor --recover" in doctor.stdout

    recovered = await trio.to_thread.run_sync(lambda: sh.run("doctor", "--recover"))
    assert recovered.returncode == cli.EXIT_OK, recovered.stderr
    kept = [p for p in sh.data_dir.iterdir() if p.name.startswith(f"{DB_NAME}.damaged-")]
    assert len(kept) == 1, list(sh.data_dir.iterdir())
    assert f"kept as {kept[0]}" in recovered.stdout

    checked = await trio.to_thread.run_sync(lambda: sh.run("doctor"))
    assert checked.returncode == cli.EXIT_OK, checked.stdout
    back = await trio.to_thread.run_sync(lambda: sh.json("list"))
    # One damaged page holds at most one of these rows (or only index entries).
    assert len(back) >= PROMPTS - 1
    assert {p["id"] for p in back} <= set(ids)


async def test_recover_refuses_while_a_hub_runs(sh: Shell) -> None:
    await trio.to_thread.run_sync(lambda: sh.run("ask", "a hub now runs"))
    out = await trio.to_thread.run_sync(lambda: sh.run("doctor", "--recover"))
    assert out.returncode == cli.EXIT_REFUSED
    assert "stop it first" in out.stderr


async def test_a_file_that_is_not_a_database_names_doctor(sh: Shell) -> None:
    sh.data_dir.mkdir(mode=0o700, parents=True)
    (sh.data_dir / DB_NAME).write_bytes(b"not a database at all " * 300)
    served = await trio.to_thread.run_sync(lambda: sh.run("serve"))
    assert served.returncode == cli.EXIT_REFUSED
    assert "hive-rpc doctor" in served.stderr
    assert "Traceback" not in served.stderr


# -- retention ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_retention_deletes_old_closed_prompts_in_batches_and_keeps_pending(
    kind: str, short_tmp: Path, autojump_clock: trio.testing.MockClock
) -> None:
    store = MemoryStore() if kind == "memory" else SqliteStore(short_tmp / DB_NAME)
    retain_s = 600.0
    async with open_registry(store, epoch=EPOCH) as registry:
        kept = await registry.ask(Ask(agent_id="a", question="still pending"))
        closed = []
        for i in range(1234):  # more than two batches
            p = await registry.ask(Ask(agent_id="a", question=f"q{i}"))
            if i % 2:
                await registry.respond(p.id, answer="ok", by="h")
            else:
                await registry.cancel(p.id, by="a")
            closed.append(p.id)
        async with trio.open_nursery() as nursery:
            await nursery.start(run_retention, registry, retain_s)
            assert (await store.counts())["cancelled"] == 617  # young: nothing deleted
            # Just before the next look, a prompt younger than retain_s closes.
            await trio.sleep(RETENTION_EVERY_S - retain_s / 2)
            assert (await store.counts())["cancelled"] == 617  # no look since
            late = await registry.ask(Ask(agent_id="a", question="answered just before"))
            await registry.respond(late.id, answer="ok", by="h")
            await trio.sleep(retain_s / 2 + 1)  # the next look
            counts = await store.counts()
            nursery.cancel_scope.cancel()
        assert counts == {"pending": 1, "responded": 1, "expired": 0, "cancelled": 0}
        assert await store.get(closed[0]) is None
        assert (await registry.poll(kept.id)).status is Status.PENDING
        assert (await registry.poll(late.id)).answer == "ok"
        assert registry.degraded_reason() is None
    await store.aclose()


@pytest.mark.skipif(shutil.which("nats-server") is None, reason="nats-server is not installed")
async def test_nats_retention_purges_old_closed_keys(nats_server: NatsServer) -> None:
    from hive_rpc.store.nats import open_nats_store

    with trio.fail_after(30):
        async with open_nats_store(nats_server.url) as store:
            old = [new_prompt(Ask(agent_id="a", question=f"q{i}"), now=EPOCH) for i in range(5)]
            young = new_prompt(Ask(agent_id="a", question="young"), now=EPOCH + 1000)
            pending = new_prompt(Ask(agent_id="a", question="pending"), now=EPOCH)
            for p in [*old, young, pending]:
                await store.insert(p)
            for p in [*old, young]:
                done = lifecycle.respond(p, answer="y", by="h", action=Action.ACCEPT, now=EPOCH)
                assert await store.update(done, expected=Status.PENDING) is None
            assert await store.prune_closed(EPOCH + 500, limit=3) == 3
            assert await store.prune_closed(EPOCH + 500) == 2
            assert await store.prune_closed(EPOCH + 500) == 0
            assert await store.get(old[0].id) is None
            assert (await store.get(young.id)) is not None
            assert [p.id for p in await store.pending()] == [pending.id]
            counts = await store.counts()
    assert counts == {"pending": 1, "responded": 1, "expired": 0, "cancelled": 0}


def test_retain_takes_a_duration() -> None:
    parser = cli._parser()
    assert parser.parse_args(["serve"]).retain == 30 * 86400
    assert parser.parse_args(["serve", "--retain", "12h"]).retain == 12 * 3600
    assert parser.parse_args(["serve", "--retain", "90"]).retain == 90
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--retain", "0d"])
