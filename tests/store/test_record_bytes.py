"""The stored prompt record is byte-compatible across the write path's speed-ups
(issue 18): the two records below were written by ``_dump`` before it kept one
precompiled encoder, so an old database reads the same and a new one writes the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Prompt, new_prompt
from hive_rpc.store import SqliteStore
from hive_rpc.store.sqlite import _dump

PENDING = (
    '{"id":"00112233aabbccdd","agent_id":"bench","question":"Ship it? \\u00e9 \\ud800",'
    '"created_at":1000.5,"deadline_at":87400.5,"max_deadline_at":87400.5,'
    '"choices":["yes","no"],"schema":null,"urgent":false,"timeout_s":null,"task_id":"t1",'
    '"in_reply_to":null,"kind":"question","detail":null,"status":"pending","typing_at":null,'
    '"answered_at":null,"expired_at":null,"cancelled_at":null,"expiry_reason":null,'
    '"answer":null,"by":null,"action":null,"expired":false}'
)
RESPONDED = (
    '{"id":"00112233aabbccdd","agent_id":"bench","question":"Ship it? \\u00e9 \\ud800",'
    '"created_at":1000.5,"deadline_at":87400.5,"max_deadline_at":87400.5,"choices":null,'
    '"schema":null,"urgent":false,"timeout_s":null,"task_id":"t1","in_reply_to":null,'
    '"kind":"question","detail":null,"status":"responded","typing_at":null,'
    '"answered_at":1002.25,"expired_at":null,"cancelled_at":null,"expiry_reason":null,'
    '"answer":"yes \\u2713, [1, 2.5]","by":"emacs","action":"accept","expired":false}'
)
ID = "00112233aabbccdd"


def _pending(choices: list[str] | None) -> Prompt:
    ask = Ask(agent_id="bench", question="Ship it? \u00e9 \ud800", choices=choices, task_id="t1")
    return new_prompt(ask, now=1000.5, prompt_id=ID)


def _responded() -> Prompt:
    return lifecycle.respond(
        _pending(None), answer="yes \u2713, [1, 2.5]", by="emacs", action=Action.ACCEPT, now=1002.25
    )


def test_records_are_the_bytes_the_old_code_wrote() -> None:
    assert _dump(_pending(["yes", "no"])) == PENDING
    assert _dump(_responded()) == RESPONDED


async def test_a_record_written_by_the_old_code_loads(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = SqliteStore(path)
    await store.insert(_pending(None))
    await store.aclose()
    with sqlite3.connect(path) as db:  # as the old code left it, answered
        db.execute(
            "UPDATE prompts SET status = 'responded', record = ? WHERE id = ?", (RESPONDED, ID)
        )
    db.close()
    store = SqliteStore(path)
    try:
        assert await store.get(ID) == _responded()
    finally:
        await store.aclose()
