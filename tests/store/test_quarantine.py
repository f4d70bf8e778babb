"""A row the hub cannot read never stops a restart: it is set aside (quarantine),
logged with its id, listed by ``hive-rpc doctor``; every other prompt comes back.

The rows are planted in the SQLite file of a real hub process between two lives, as
a hand edit, an older hub with looser checks, or a hostile ask would leave them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import trio
from cli_support import Shell
from nats_support import NatsServer

from hive_rpc import cli
from hive_rpc.core.errors import PromptUnreadable
from hive_rpc.core.prompt import Ask
from hive_rpc.host.paths import DB_NAME, LOG_NAME
from hive_rpc.runtime.registry import open_registry
from hive_rpc.store import SqliteStore

T0 = 1_800_000_000.0


def _record(prompt_id: str, **changes: object) -> dict[str, object]:
    """A pending prompt record as a hub writes it, due in a day."""
    record: dict[str, object] = {
        "id": prompt_id,
        "agent_id": "planted",
        "question": "planted?",
        "created_at": T0,
        "deadline_at": 4_000_000_000.0,
        "max_deadline_at": 4_000_000_000.0,
        "status": "pending",
    }
    record.update(changes)
    return record


def _nested(depth: int) -> object:
    value: object = []
    for _ in range(depth - 1):
        value = [value]
    return value


BAD_ROWS = {
    # id: (status, record text, what the reason says)
    "bad0000000000001": ("pending", '{"id": "bad0000000000001", "agent', "not JSON"),
    "bad0000000000002": ("pending", "{}", "not a prompt record"),
    "bad0000000000003": (
        "pending",
        # The hub-killer: a schema title nested 980 deep (RecursionError).
        json.dumps(_record("bad0000000000003", schema={"title": "TITLE"})).replace(
            '"TITLE"', "[" * 980 + "]" * 980
        ),
        "deep",
    ),
    "bad0000000000004": (
        "pending",
        json.dumps(_record("bad0000000000004", answer=_nested(40))),
        "json_depth",
    ),
    "bad0000000000005": ("responded", "{}", "not a prompt record"),
}


def _plant(db_path: Path) -> None:
    db = sqlite3.connect(db_path, isolation_level=None)
    for prompt_id, (status, text, _) in BAD_ROWS.items():
        db.execute(
            "INSERT INTO prompts (id, agent_id, status, created_at, record) VALUES (?,?,?,?,?)",
            (prompt_id, "planted", status, T0, text),
        )
    db.close()


def test_restart_sets_bad_rows_aside_and_doctor_lists_them(sh: Shell) -> None:
    kept = sh.run("ask", "still here?", "--choices", "yes,no").stdout.strip()
    answered = sh.run("ask", "answered before").stdout.strip()
    assert sh.run("answer", answered, "fine").returncode == cli.EXIT_OK
    sh.stop()
    _plant(sh.data_dir / DB_NAME)

    # The hub starts again (`hive-rpc restart`: stopped on purpose, no autostart would
    # start it), and every readable prompt is back.
    assert sh.run("restart").returncode == cli.EXIT_OK
    listed = sh.json("list")
    assert [p["id"] for p in listed] == [kept]
    assert sh.json("poll", answered)["answer"] == "fine"
    status = sh.json("status")
    assert status["counts"]["pending"] == 1
    assert status["degraded"] is None

    # A closed row that cannot be read answers poll with its own error, not -32603.
    out = sh.run("poll", "bad0000000000005")
    assert out.returncode == cli.EXIT_REFUSED
    assert "bad0000000000005 is stored but cannot be read" in out.stderr
    assert "hive-rpc doctor" in out.stderr
    assert "Traceback" not in out.stderr

    # doctor, beside the running hub, lists each row set aside with its reason.
    doctor = sh.run("doctor")
    assert doctor.returncode == cli.EXIT_OK, doctor.stdout + doctor.stderr
    assert "passes PRAGMA integrity_check" in doctor.stdout
    assert "is running on this data dir" in doctor.stdout
    for prompt_id, (_, _, why) in BAD_ROWS.items():
        line = next(ln for ln in doctor.stdout.splitlines() if prompt_id in ln)
        assert line.lstrip().startswith("quarantined prompt"), line
        assert why in line, line
    report = json.loads(sh.run("doctor", "--json").stdout)
    assert {row["id"] for row in report["quarantined"]} == set(BAD_ROWS)
    assert report["ok"] is True

    # The autostarted hub logged each one with its id.
    log = (sh.data_dir / LOG_NAME).read_text()
    for prompt_id in BAD_ROWS:
        assert f"set aside unreadable prompt {prompt_id}" in log


async def test_poll_of_an_unreadable_closed_row_is_32008(short_tmp: Path) -> None:
    path = short_tmp / DB_NAME
    SqliteStore(path)._db.close()  # the tables, as a hub makes them
    _plant(path)
    store = SqliteStore(path)
    async with open_registry(store) as registry:
        assert registry.list_pending() == []
        with pytest.raises(PromptUnreadable) as raised:
            await registry.poll("bad0000000000005")
        assert raised.value.code == -32008
        assert raised.value.data["reason"].startswith("not a prompt record")
        # Set aside on the way: a second poll says the same, from the quarantine table.
        with pytest.raises(PromptUnreadable):
            await registry.poll("bad0000000000005")
        assert (await registry.find("bad")) == []
        with pytest.raises(PromptUnreadable):  # a whole id, as `hive-rpc poll` looks it up
            await registry.find("bad0000000000001")
        with trio.fail_after(5):
            await registry.ask(Ask(agent_id="a", question="the hub goes on"))
    assert {row["id"] for row in store.quarantined()} == set(BAD_ROWS)
    await store.aclose()


@pytest.mark.skipif(shutil.which("nats-server") is None, reason="nats-server is not installed")
async def test_nats_skips_records_it_cannot_read(nats_server: NatsServer) -> None:
    """A shared bucket is not this hub's to rearrange: bad records stay, skipped and
    logged; ``get`` of one is -32008, and every readable prompt comes back."""
    from hive_rpc.core.prompt import new_prompt
    from hive_rpc.store.nats import open_nats_store

    with trio.fail_after(30):
        async with open_nats_store(nats_server.url) as store:
            good = new_prompt(Ask(agent_id="a", question="readable"), now=T0)
            await store.insert(good)
            for prompt_id, (_, text, _) in BAD_ROWS.items():
                await store._call(True, store._prompts.put, prompt_id, text.encode())
            assert [p.id for p in await store.pending()] == [good.id]
            assert [p.id for p in await store.find("")] == [good.id]
            with pytest.raises(PromptUnreadable) as raised:
                await store.get("bad0000000000005")
            assert raised.value.code == -32008
            assert set(store.unreadable) == set(BAD_ROWS)
            assert (await store.counts())["pending"] == 1
            async with open_registry(store) as registry:  # resume skips them too
                assert [p.id for p in registry.list_pending()] == [good.id]
