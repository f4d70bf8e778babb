"""The lifecycle table and its refusals, on plain values (no trio)."""

from __future__ import annotations

from typing import Any

import pytest

from hive_rpc.core import lifecycle
from hive_rpc.core.errors import AlreadyAnswered, InvalidAnswer, InvalidParams, PromptClosed
from hive_rpc.core.lifecycle import FINAL_STATUSES, TRANSITIONS, Event
from hive_rpc.core.prompt import (
    DEFAULT_MAX_LIFETIME_S,
    Action,
    Ask,
    ExpiryReason,
    Prompt,
    Status,
    new_prompt,
)

NOW = 1_800_000_000.0


def make(*, max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S, **kw: Any) -> Prompt:
    fields: dict[str, Any] = {"agent_id": "a1", "question": "Ship it?"}
    fields.update(kw)
    return new_prompt(Ask(**fields), now=NOW, max_lifetime_s=max_lifetime_s)


def test_table_has_exactly_the_documented_moves() -> None:
    assert TRANSITIONS == {
        (Status.PENDING, Event.RESPOND): Status.RESPONDED,
        (Status.PENDING, Event.EXPIRE): Status.EXPIRED,
        (Status.PENDING, Event.CANCEL): Status.CANCELLED,
        (Status.PENDING, Event.TYPING): Status.PENDING,
        (Status.PENDING, Event.DEFER): Status.PENDING,
        (Status.PENDING, Event.SHOWN): Status.PENDING,
        (Status.EXPIRED, Event.CLEAR): Status.EXPIRED,
    }
    assert {Status.RESPONDED, Status.EXPIRED, Status.CANCELLED} == FINAL_STATUSES


def test_shown_counts_the_first_time_and_makes_an_expiry_seen() -> None:
    p = make(timeout_s=10)
    seen = lifecycle.shown(p, now=NOW + 1)
    assert seen.shown_at == NOW + 1
    assert lifecycle.shown(seen, now=NOW + 2) is seen
    assert lifecycle.expire(p, now=NOW + 10).unseen
    assert not lifecycle.expire(seen, now=NOW + 10).unseen
    answered = lifecycle.respond(p, answer="x", by="h", action=Action.ACCEPT, now=NOW + 3)
    with pytest.raises(AlreadyAnswered):
        lifecycle.shown(answered, now=NOW + 4)


def test_clear_takes_down_only_an_unseen_expirys_trace() -> None:
    expired = lifecycle.expire(make(timeout_s=10), now=NOW + 10)
    cleared = lifecycle.clear(expired, now=NOW + 20)
    assert (cleared.status, cleared.cleared_at, cleared.unseen) == (Status.EXPIRED, NOW + 20, False)
    assert lifecycle.clear(cleared, now=NOW + 30) is cleared
    with pytest.raises(InvalidParams, match="still pending"):
        lifecycle.clear(make(), now=NOW)
    seen = lifecycle.expire(lifecycle.shown(make(timeout_s=10), now=NOW), now=NOW + 10)
    with pytest.raises(InvalidParams, match="was shown before it expired"):
        lifecycle.clear(seen, now=NOW + 11)


def test_respond_records_answer_by_and_time() -> None:
    p = make(choices=["yes", "no"])
    done = lifecycle.respond(p, answer="yes", by="human", action=Action.ACCEPT, now=NOW + 5)
    assert done.status is Status.RESPONDED
    assert (done.answer, done.by, done.action, done.answered_at) == (
        "yes",
        "human",
        Action.ACCEPT,
        NOW + 5,
    )
    assert p.status is Status.PENDING  # values are immutable


def test_second_answer_is_told_who_answered_first_and_when() -> None:
    p = lifecycle.respond(make(), answer="first", by="emacs", action=Action.ACCEPT, now=NOW + 1)
    with pytest.raises(AlreadyAnswered) as err:
        lifecycle.respond(p, answer="second", by="vscode", action=Action.ACCEPT, now=NOW + 2)
    assert "emacs" in err.value.message
    assert "first answer wins" in err.value.message
    assert err.value.data["by"] == "emacs"
    assert err.value.data["answered_at"] == NOW + 1
    assert err.value.code == -32002


@pytest.mark.parametrize("event", [Event.RESPOND, Event.CANCEL, Event.TYPING, Event.EXPIRE])
def test_expired_prompt_refuses_every_move(event: Event) -> None:
    p = lifecycle.expire(make(timeout_s=5), now=NOW + 5)
    with pytest.raises(PromptClosed, match="expired") as err:
        _apply(p, event)
    assert err.value.data["status"] == "expired"


@pytest.mark.parametrize("event", [Event.RESPOND, Event.CANCEL, Event.TYPING, Event.EXPIRE])
def test_cancelled_prompt_refuses_every_move(event: Event) -> None:
    p = lifecycle.cancel(make(), by="a1", now=NOW + 1)
    with pytest.raises(PromptClosed, match="cancelled by a1"):
        _apply(p, event)


def _apply(p: Prompt, event: Event) -> Prompt:
    if event is Event.RESPOND:
        return lifecycle.respond(p, answer="x", by="h", action=Action.ACCEPT, now=NOW + 9)
    if event is Event.CANCEL:
        return lifecycle.cancel(p, by="h", now=NOW + 9)
    if event is Event.TYPING:
        return lifecycle.typing(p, now=NOW + 9)
    return lifecycle.expire(p, now=NOW + 9)


def test_answer_outside_choices_is_refused_and_prompt_stays_pending() -> None:
    p = make(choices=["yes", "no"])
    with pytest.raises(InvalidAnswer, match="not one of the choices: yes, no"):
        lifecycle.respond(p, answer="maybe", by="h", action=Action.ACCEPT, now=NOW)
    assert p.status is Status.PENDING


def test_free_text_prompt_wants_a_string() -> None:
    with pytest.raises(InvalidAnswer, match="free-text"):
        lifecycle.respond(make(), answer=42, by="h", action=Action.ACCEPT, now=NOW)


def test_schema_answer_is_validated() -> None:
    schema = {
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["dev", "prod"]},
            "n": {"type": "integer"},
        },
        "required": ["env"],
    }
    p = make(schema=schema)
    with pytest.raises(InvalidAnswer, match="'env'"):
        lifecycle.respond(p, answer={"env": "staging"}, by="h", action=Action.ACCEPT, now=NOW)
    ok = lifecycle.respond(p, answer={"env": "prod", "n": 3}, by="h", action=Action.ACCEPT, now=NOW)
    assert ok.answer == {"env": "prod", "n": 3}


@pytest.mark.parametrize("action", [Action.DECLINE, Action.CANCEL])
def test_decline_and_cancel_carry_no_answer(action: Action) -> None:
    p = make(choices=["yes", "no"])
    with pytest.raises(InvalidAnswer, match="carries no answer"):
        lifecycle.respond(p, answer="yes", by="h", action=action, now=NOW)
    done = lifecycle.respond(p, answer=None, by="h", action=action, now=NOW)
    assert (done.status, done.action, done.answer) == (Status.RESPONDED, action, None)


def test_typing_stops_the_countdown_but_keeps_the_hard_maximum() -> None:
    p = make(timeout_s=60, max_lifetime_s=3600)
    assert p.deadline_at == NOW + 60
    typed = lifecycle.typing(p, now=NOW + 10)
    assert typed.deadline_at == NOW + 3600 == typed.max_deadline_at
    assert typed.typing_at == NOW + 10
    assert lifecycle.typing(typed, now=NOW + 20) is typed  # idempotent: first keystroke counts


def test_defer_after_typing_restarts_the_whole_countdown() -> None:
    """Typed then left: the countdown runs again, its whole timeout from the defer
    (seed 002's countdown is an attention timer), and typing can stop it again."""
    typed = lifecycle.typing(make(timeout_s=60, max_lifetime_s=3600), now=NOW + 50)
    left = lifecycle.defer(typed, now=NOW + 500)
    assert (left.typing_at, left.deadline_at) == (None, NOW + 560)
    assert lifecycle.defer(left, now=NOW + 510) is left  # idempotent
    again = lifecycle.typing(left, now=NOW + 520)
    assert (again.typing_at, again.deadline_at) == (NOW + 520, NOW + 3600)


def test_defer_never_passes_the_hard_maximum() -> None:
    typed = lifecycle.typing(make(timeout_s=60, max_lifetime_s=600), now=NOW + 1)
    left = lifecycle.defer(typed, now=NOW + 580)
    assert left.deadline_at == NOW + 600 == left.max_deadline_at
    no_timeout = lifecycle.typing(make(max_lifetime_s=600), now=NOW + 1)
    left = lifecycle.defer(no_timeout, now=NOW + 2)
    assert (left.typing_at, left.deadline_at) == (None, NOW + 600)


def test_defer_without_typing_has_nothing_to_restore() -> None:
    """Hidden blank: the box closed before any key, so the countdown never stopped."""
    p = make(timeout_s=60)
    assert lifecycle.defer(p, now=NOW + 30) is p


def test_defer_of_a_closed_prompt_is_refused() -> None:
    done = lifecycle.respond(make(), answer="x", by="h", action=Action.ACCEPT, now=NOW)
    with pytest.raises(AlreadyAnswered):
        lifecycle.defer(done, now=NOW + 1)
    gone = lifecycle.expire(make(timeout_s=1), now=NOW + 1)
    with pytest.raises(PromptClosed, match="no longer takes a defer"):
        lifecycle.defer(gone, now=NOW + 2)


def test_expiry_says_which_deadline_fired() -> None:
    by_countdown = lifecycle.expire(make(timeout_s=60), now=NOW + 60)
    assert by_countdown.expiry_reason is ExpiryReason.TIMEOUT
    typed = lifecycle.typing(make(timeout_s=60, max_lifetime_s=600), now=NOW + 1)
    by_max = lifecycle.expire(typed, now=NOW + 600)
    assert by_max.expiry_reason is ExpiryReason.MAX_LIFETIME


def test_expired_record_is_marked_and_never_a_no() -> None:
    record = lifecycle.expire(make(choices=["yes", "no"], timeout_s=1), now=NOW + 1).to_record()
    assert record["status"] == "expired"
    assert record["expired"] is True
    assert record["answer"] is None
    assert record["action"] is None
    assert record["expiry_reason"] == "timeout"


def test_record_round_trips() -> None:
    p = lifecycle.respond(
        make(choices=["a", "b"], task_id="t-1", in_reply_to="p-0", urgent=True),
        answer="b",
        by="h",
        action=Action.ACCEPT,
        now=NOW + 3,
    )
    assert Prompt.from_record(p.to_record()) == p
