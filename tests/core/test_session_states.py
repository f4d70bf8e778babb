"""An agent session's state as the table derives it (core/sessions.py): waiting wins
over activity, events out of order land where they should, gone is final."""

from __future__ import annotations

import pytest

from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.sessions import (
    STATES,
    Session,
    new_session,
    on_event,
    on_prompts,
    order_key,
)


def after(*steps: tuple[str, dict[str, str]] | tuple[tuple[str, ...], tuple[str, ...]]) -> Session:
    """The session after each step: an event with its keywords, or the pending prompts
    as (question ids, permission ids)."""
    session = new_session("claude-code-4242", 0.0)
    for at, step in enumerate(steps, 1):
        first, second = step
        if isinstance(first, str):
            assert isinstance(second, dict)
            session = on_event(session, first, float(at), **second)
        else:
            assert isinstance(second, tuple)
            session = prompts(session, first, second, float(at))
    return session


def prompts(
    session: Session, questions: tuple[str, ...], permissions: tuple[str, ...], at: float
) -> Session:
    return on_prompts(session, len(questions), len(permissions), (*permissions, *questions), at)


@pytest.mark.parametrize(
    ("steps", "state"),
    [
        ((("start", {}),), "idle"),
        ((("start", {}), ("prompt", {})), "working"),
        ((("prompt", {}), ((), ("p1",))), "waiting"),
        ((("prompt", {}), ((), ("p1",)), ((), ())), "working"),
        ((("prompt", {}), (("q1",), ()), ("stop", {})), "waiting"),  # a question left
        ((("prompt", {}), (("q1",), ()), ("stop", {}), ((), ())), "idle"),
        ((("prompt", {}), ("notice", {"notice_type": "permission_prompt"})), "waiting"),
        (
            (("prompt", {}), ("notice", {"notice_type": "permission_prompt"}), ("stop", {})),
            "idle",
        ),
        ((("stop", {}), ("notice", {"notice_type": "idle_prompt"})), "idle"),
        ((("prompt", {}), ("notice", {"notice_type": "auth_success"})), "working"),
        ((("prompt", {}), ("end", {"reason": "clear"})), "working"),
        ((("prompt", {}), ("start", {"reason": "compact"})), "working"),
        ((("prompt", {}), ("start", {"reason": "clear"})), "idle"),
        ((("prompt", {}), ("end", {"reason": "prompt_input_exit"})), "gone"),
        ((("prompt", {}), ((), ("p1",)), ("exit", {})), "gone"),
        ((("end", {}), ("prompt", {})), "gone"),  # gone takes no event
        ((("failure", {"message": "overloaded"}),), "idle"),
    ],
)
def test_state_from_events(steps: tuple[tuple[str, dict[str, str]], ...], state: str) -> None:
    assert after(*steps).state == state


def test_a_prompt_the_agent_asks_through_the_hub_closes_its_own_dialog() -> None:
    """A permission_prompt notice means Claude Code's own dialog is open; the agent
    asking the hub something next means it moved on from it."""
    session = after(("prompt", {}), ("notice", {"notice_type": "permission_prompt"}))
    assert session.in_terminal
    asked = prompts(session, (), ("p1",), 9.0)
    assert not asked.in_terminal
    closed = prompts(asked, (), (), 10.0)
    assert closed.state == "working"


def test_an_unknown_event_is_refused_by_name() -> None:
    with pytest.raises(InvalidParams) as refused:
        on_event(new_session("a", 0.0), "paused", 1.0)
    assert "event must be one of start, prompt, stop, failure, end" in str(refused.value)


def test_the_record_counts_and_names_the_agent() -> None:
    session = after(("prompt", {}), (("q1", "q2"), ("p1",)))
    record = session.record()
    assert record["agent"] == "claude-code"
    assert record["display"] == "Claude Code"
    assert (record["questions"], record["permissions"]) == (2, 1)
    assert record["prompt_ids"] == ["p1", "q1", "q2"]
    assert new_session("deployer", 0.0).record()["agent"] is None
    assert new_session("codex-x1b2c3", 0.0).record()["agent"] == "codex"


def test_failure_message_is_one_bounded_line() -> None:
    session = after(("failure", {"message": "rate\x1b[31m limited\n" + "x" * 500}))
    assert session.message is not None
    assert "\n" not in session.message
    assert "\x1b" not in session.message
    assert len(session.message) == 300


def test_lists_show_what_needs_the_human_first() -> None:
    waiting_long = prompts(new_session("a", 0.0), ("q",), (), 1.0)
    waiting_new = prompts(new_session("b", 0.0), ("q",), (), 5.0)
    idle = on_event(new_session("c", 0.0), "stop", 3.0)
    working = on_event(new_session("d", 0.0), "prompt", 2.0)
    gone = on_event(new_session("e", 0.0), "end", 9.0)
    ordered = sorted([gone, idle, waiting_new, working, waiting_long], key=order_key)
    assert [s.agent_id for s in ordered] == ["a", "b", "d", "c", "e"]
    assert [s.state for s in ordered] == ["waiting", "waiting", "working", "idle", "gone"]
    assert STATES == ("waiting", "working", "idle", "gone")
