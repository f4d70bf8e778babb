"""The stored prompt record is byte-compatible across the write path's speed-ups
(issue 18): the two records below were written by ``_dump`` before it kept one
precompiled encoder, so an old database reads the same and a new one writes the same.
``records.encode_prompt`` (the text written straight from the fields) is held to
``json.dumps(to_record())`` for any prompt, odd values included.  Issue 27 added
``origin``, ``shown_at``, ``cleared_at`` and ``unseen`` at the end, and ``confirm``
after ``detail``; issue 29 ``decisions`` after ``confirm``: a record written before
them (``OLD_PENDING``) still reads, as the prompt it was."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import Action, Ask, Prompt, new_prompt
from hive_rpc.store import SqliteStore
from hive_rpc.store.records import decode_prompt, encode_prompt

PENDING = (
    '{"id":"00112233aabbccdd","agent_id":"bench","question":"Ship it? \\u00e9 \\ud800",'
    '"created_at":1000.5,"deadline_at":87400.5,"max_deadline_at":87400.5,'
    '"choices":["yes","no"],"schema":null,"urgent":false,"timeout_s":null,"task_id":"t1",'
    '"in_reply_to":null,"kind":"question","detail":null,"confirm":null,"decisions":null,"status":"pending","typing_at":null,'
    '"answered_at":null,"expired_at":null,"cancelled_at":null,"expiry_reason":null,'
    '"answer":null,"by":null,"action":null,"origin":null,"shown_at":null,"cleared_at":null,'
    '"expired":false,"unseen":false}'
)
OLD_PENDING = (
    PENDING.replace(',"origin":null,"shown_at":null,"cleared_at":null', "")
    .replace(',"unseen":false', "")
    .replace(',"confirm":null', "")
    .replace(',"decisions":null', "")
)
RESPONDED = (
    '{"id":"00112233aabbccdd","agent_id":"bench","question":"Ship it? \\u00e9 \\ud800",'
    '"created_at":1000.5,"deadline_at":87400.5,"max_deadline_at":87400.5,"choices":null,'
    '"schema":null,"urgent":false,"timeout_s":null,"task_id":"t1","in_reply_to":null,'
    '"kind":"question","detail":null,"confirm":null,"decisions":null,'
    '"status":"responded","typing_at":null,'
    '"answered_at":1002.25,"expired_at":null,"cancelled_at":null,"expiry_reason":null,'
    '"answer":"yes \\u2713, [1, 2.5]","by":"emacs","action":"accept","origin":null,'
    '"shown_at":null,"cleared_at":null,"expired":false,"unseen":false}'
)
ID = "00112233aabbccdd"


def _pending(choices: list[str] | None) -> Prompt:
    ask = Ask(agent_id="bench", question="Ship it? \u00e9 \ud800", choices=choices, task_id="t1")
    return new_prompt(ask, now=1000.5, prompt_id=ID)


def _responded() -> Prompt:
    return lifecycle.respond(
        _pending(None), answer="yes \u2713, [1, 2.5]", by="emacs", action=Action.ACCEPT, now=1002.25
    )


async def test_records_are_the_bytes_the_old_code_wrote(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    try:
        await store.insert(_pending(["yes", "no"]))
        pending = store._db.execute("SELECT record FROM prompts").fetchone()[0]
        await store.update(_responded(), expected=_pending(None).status)
        responded = store._db.execute("SELECT record FROM prompts").fetchone()[0]
    finally:
        await store.aclose()
    assert pending == PENDING
    assert responded == RESPONDED


def test_a_record_written_before_issue_27_reads_as_the_same_prompt() -> None:
    assert OLD_PENDING.endswith('"action":null,"expired":false}')
    assert decode_prompt(ID, OLD_PENDING) == _pending(["yes", "no"])


def old_encoding(prompt: Prompt) -> str:
    return json.dumps(prompt.to_record(), separators=(",", ":"))


texts = st.text(max_size=6)  # any code point, lone surrogates included
times = st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 2**40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """A stored record as any hub (or a hand edit) may have left it: numbers as ints
    or non-finite, any answer, every optional field set or not."""
    optional_time = st.none() | times
    optional_text = st.none() | texts
    return {
        "id": draw(texts),
        "agent_id": draw(texts),
        "question": draw(texts),
        "created_at": draw(times),
        "deadline_at": draw(times),
        "max_deadline_at": draw(times),
        "choices": draw(st.none() | st.lists(texts, max_size=3)),
        "schema": draw(st.none() | st.dictionaries(texts, json_values, max_size=2)),
        "urgent": draw(st.booleans()),
        "timeout_s": draw(optional_time),
        "task_id": draw(optional_text),
        "in_reply_to": draw(optional_text),
        "kind": draw(st.sampled_from(["question", "permission"])),
        "detail": draw(optional_text),
        "confirm": draw(
            st.none()
            | st.lists(st.fixed_dictionaries({"choice": texts, "text": texts}), max_size=2)
        ),
        "decisions": draw(
            st.none() | st.dictionaries(texts, st.sampled_from(["allow", "deny"]), max_size=2)
        ),
        "status": draw(st.sampled_from(["pending", "responded", "expired", "cancelled"])),
        "typing_at": draw(optional_time),
        "answered_at": draw(optional_time),
        "expired_at": draw(optional_time),
        "cancelled_at": draw(optional_time),
        "expiry_reason": draw(st.sampled_from([None, "timeout", "max_lifetime"])),
        "answer": draw(json_values),
        "by": draw(optional_text),
        "action": draw(st.sampled_from([None, "accept", "decline", "cancel"])),
    }


@given(records())
def test_the_direct_encoding_is_the_old_one_for_any_record(record: dict[str, Any]) -> None:
    prompt = Prompt.from_record(record)
    assert encode_prompt(prompt) == old_encoding(prompt)


@given(st.booleans(), texts.filter(str.strip), st.floats(0, 4e9))
def test_the_direct_encoding_is_the_old_one_for_new_prompts(
    answered: bool, text: str, now: float
) -> None:
    prompt = new_prompt(Ask(question=text, choices=[text, "no"] if text != "no" else None), now=now)
    if answered:
        prompt = lifecycle.respond(prompt, answer=text, by=text, action=Action.ACCEPT, now=now)
    assert encode_prompt(prompt) == old_encoding(prompt)


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


def test_times_are_written_as_the_encoder_writes_them() -> None:
    """0.0 and -0.0, and times of every magnitude, are written as ``json.dumps``
    writes them."""

    def written_right(now: float) -> bool:
        prompt = new_prompt(Ask(agent_id="a", question="q"), now=now, prompt_id="p1")
        return encode_prompt(prompt) == old_encoding(prompt)

    assert all(written_right(now) for now in [0.0, -0.0, 1.5, 1e-7, 1e22, 1_800_000_000.0 + 1 / 7])
