"""The lifecycle's moves make each new record as ``dataclasses.replace`` would, every
field of the same value and type, and leave the source prompt alone."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.core import lifecycle
from hive_rpc.core.prompt import (
    Action,
    Ask,
    ExpiryReason,
    Kind,
    Prompt,
    Status,
    evolve,
    new_prompt,
)

NOW = 1_800_000_000.0
names = st.text(min_size=1, max_size=8).filter(str.strip)
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
SCHEMA = {"type": "object", "properties": {"env": {"type": "string"}}}


@st.composite
def prompts(draw: st.DrawFn) -> Prompt:
    """A pending prompt from ``new_prompt``, any optional field set or not."""
    choices = draw(st.none() | st.lists(names, min_size=1, max_size=4, unique=True))
    ask = Ask(
        question=draw(names),
        choices=choices,
        schema=None if choices else draw(st.none() | st.just(SCHEMA)),
        urgent=draw(st.booleans()),
        timeout_s=draw(st.none() | st.floats(min_value=0.5, max_value=1e5)),
        agent_id=draw(names),
        task_id=draw(st.none() | names),
        in_reply_to=draw(st.none() | names),
        kind=draw(st.sampled_from(list(Kind))).value,
        detail=draw(st.none() | names),
    )
    return new_prompt(ask, now=draw(times))


FIELDS = [f.name for f in dataclasses.fields(Prompt)]


def same(a: Prompt, b: Prompt) -> None:
    """Equal field by field, each value of the same type."""
    assert a == b
    assert [getattr(a, n) for n in FIELDS] == [getattr(b, n) for n in FIELDS]
    assert [type(getattr(a, n)) for n in FIELDS] == [type(getattr(b, n)) for n in FIELDS]
    assert hash(a) == hash(b)
    assert a.to_record() == b.to_record()


@given(prompts(), names, times)
def test_each_move_makes_what_replace_made(prompt: Prompt, by: str, now: float) -> None:
    answered = lifecycle.respond(prompt, answer=None, by=by, action=Action.DECLINE, now=now)
    same(
        answered,
        dataclasses.replace(
            prompt,
            status=Status.RESPONDED,
            answer=None,
            by=by,
            action=Action.DECLINE,
            answered_at=now,
        ),
    )
    reason = (
        ExpiryReason.MAX_LIFETIME
        if prompt.deadline_at >= prompt.max_deadline_at
        else ExpiryReason.TIMEOUT
    )
    same(
        lifecycle.expire(prompt, now=now),
        dataclasses.replace(prompt, status=Status.EXPIRED, expired_at=now, expiry_reason=reason),
    )
    same(
        lifecycle.cancel(prompt, by=by, now=now),
        dataclasses.replace(prompt, status=Status.CANCELLED, by=by, cancelled_at=now),
    )
    typed = lifecycle.typing(prompt, now=now)
    same(typed, dataclasses.replace(prompt, typing_at=now, deadline_at=prompt.max_deadline_at))
    deadline = prompt.max_deadline_at
    if prompt.timeout_s is not None:
        deadline = min(now + prompt.timeout_s, prompt.max_deadline_at)
    same(
        lifecycle.defer(typed, now=now),
        dataclasses.replace(typed, typing_at=None, deadline_at=deadline),
    )


def test_an_evolved_prompt_is_still_frozen_and_leaves_its_source_alone() -> None:
    prompt = new_prompt(Ask(agent_id="a1", question="Ship it?"), now=NOW)
    before = prompt.to_record()
    new = evolve(prompt, status=Status.CANCELLED, by="x", cancelled_at=NOW + 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.by = "y"  # type: ignore[misc]
    assert prompt.to_record() == before
    assert new.status is Status.CANCELLED
    assert new.closed_at == NOW + 1
