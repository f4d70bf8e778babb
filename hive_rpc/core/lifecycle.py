"""The prompt lifecycle: one table of legal moves, and the refusals for the rest.

    pending --respond--> responded     (answer checked against choices / schema)
    pending --expire---> expired       (countdown or hard maximum lifetime ran out)
    pending --cancel---> cancelled     (the asking agent or a coordinator withdrew it)
    pending --typing---> pending       (the human started typing: countdown stops,
                                        the hard maximum lifetime still applies)
    pending --defer----> pending       (the human who typed left without answering:
                                        the countdown starts again)
    pending --shown----> pending       (an editor put the question before the human)
    expired --clear----> expired       (the human saw that it expired unseen)

Every other (status, event) pair is illegal.  ``responded``, ``expired`` and
``cancelled`` are final: no event changes their status or answer (``clear`` only
notes that the human saw an unseen expiry).  An illegal move raises the error
that tells the caller what actually happened: the second answerer learns who
answered first and when.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from hive_rpc.core.errors import (
    AlreadyAnswered,
    HiveError,
    InvalidAnswer,
    InvalidParams,
    PromptClosed,
)
from hive_rpc.core.prompt import Action, ExpiryReason, Prompt, Status, evolve
from hive_rpc.core.schema import validate_against


class Event(StrEnum):
    """Something that happens to a prompt."""

    RESPOND = "respond"
    EXPIRE = "expire"
    CANCEL = "cancel"
    TYPING = "typing"
    DEFER = "defer"
    SHOWN = "shown"
    CLEAR = "clear"


TRANSITIONS: dict[tuple[Status, Event], Status] = {
    (Status.PENDING, Event.RESPOND): Status.RESPONDED,
    (Status.PENDING, Event.EXPIRE): Status.EXPIRED,
    (Status.PENDING, Event.CANCEL): Status.CANCELLED,
    (Status.PENDING, Event.TYPING): Status.PENDING,
    (Status.PENDING, Event.DEFER): Status.PENDING,
    (Status.PENDING, Event.SHOWN): Status.PENDING,
    (Status.EXPIRED, Event.CLEAR): Status.EXPIRED,
}
"""The whole lifecycle.  A pair missing here is an illegal move."""

FINAL_STATUSES = frozenset(Status) - {s for (s, _), to in TRANSITIONS.items() if to is not s}
"""The statuses no event leaves: every move from them keeps them (``clear``)."""


def _when(ts: float | None) -> str:
    if ts is None:
        return "an unknown time"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def refusal(prompt: Prompt, event: Event) -> HiveError:
    """The error for ``event`` on ``prompt`` when the table has no such move."""
    if prompt.status is Status.RESPONDED:
        return AlreadyAnswered(
            f"prompt {prompt.id} was already answered by {prompt.by} at "
            f"{_when(prompt.answered_at)}; the first answer wins",
            id=prompt.id,
            status=prompt.status.value,
            by=prompt.by,
            answered_at=prompt.answered_at,
            action=prompt.action.value if prompt.action else None,
        )
    if prompt.status is Status.EXPIRED:
        why = (
            "its countdown ran out"
            if prompt.expiry_reason is ExpiryReason.TIMEOUT
            else ("it reached the hub's maximum lifetime")
        )
        return PromptClosed(
            f"prompt {prompt.id} expired at {_when(prompt.expired_at)} ({why}); "
            f"it no longer takes a {event.value}",
            id=prompt.id,
            status=prompt.status.value,
            expired_at=prompt.expired_at,
        )
    return PromptClosed(
        f"prompt {prompt.id} was cancelled by {prompt.by} at {_when(prompt.cancelled_at)}; "
        f"it no longer takes a {event.value}",
        id=prompt.id,
        status=prompt.status.value,
        cancelled_at=prompt.cancelled_at,
    )


def _move(prompt: Prompt, event: Event) -> Status:
    target = TRANSITIONS.get((prompt.status, event))
    if target is None:
        raise refusal(prompt, event)
    return target


def check_answer(prompt: Prompt, answer: Any, action: Action) -> Any:
    """Return the answer to store, or raise InvalidAnswer saying what is wrong.

    ``accept`` needs an answer: one of ``choices``, an object matching ``schema``, or
    free text.  ``decline`` and ``cancel`` carry no answer.
    """
    if action is not Action.ACCEPT:
        if answer is not None:
            raise InvalidAnswer(
                f"a {action.value} carries no answer; send answer null",
                param="answer",
                action=action.value,
            )
        return None
    if prompt.choices is not None:
        if answer not in prompt.choices:
            raise InvalidAnswer(
                f"answer {answer!r} is not one of the choices: {', '.join(prompt.choices)}",
                param="answer",
                choices=list(prompt.choices),
            )
        return answer
    if prompt.schema is not None:
        return validate_against(prompt.schema, answer)
    if not isinstance(answer, str):
        raise InvalidAnswer("this prompt wants a free-text answer (a string)")
    return answer


def respond(prompt: Prompt, *, answer: Any, by: str, action: Action, now: float) -> Prompt:
    """Record the first answer.  Raises if the prompt is closed or the answer invalid."""
    status = _move(prompt, Event.RESPOND)
    checked = check_answer(prompt, answer, action)
    return evolve(prompt, status=status, answer=checked, by=by, action=action, answered_at=now)


def expire(prompt: Prompt, *, now: float) -> Prompt:
    """Close a prompt whose deadline passed, saying which deadline it was."""
    status = _move(prompt, Event.EXPIRE)
    reason = (
        ExpiryReason.MAX_LIFETIME
        if prompt.deadline_at >= prompt.max_deadline_at
        else ExpiryReason.TIMEOUT
    )
    return evolve(prompt, status=status, expired_at=now, expiry_reason=reason)


def cancel(prompt: Prompt, *, by: str, now: float) -> Prompt:
    """Withdraw a pending prompt; editors take it off the screen."""
    status = _move(prompt, Event.CANCEL)
    return evolve(prompt, status=status, by=by, cancelled_at=now)


def typing(prompt: Prompt, *, now: float) -> Prompt:
    """The human started typing: stop the countdown, keep the hard maximum lifetime.

    Idempotent: later keystrokes keep the first ``typing_at``.
    """
    status = _move(prompt, Event.TYPING)
    if prompt.typing_at is not None:
        return prompt
    return evolve(prompt, status=status, typing_at=now, deadline_at=prompt.max_deadline_at)


def defer(prompt: Prompt, *, now: float) -> Prompt:
    """The human who had typed left without answering (Escape, C-g, a closed form):
    undo ``typing``, so the countdown runs again, its whole ``timeout_s`` from ``now``
    (never past the hard maximum lifetime).

    Why the whole timeout and not what was left when typing began: the countdown
    of Calva Backseat Driver's ``request_human_input``, which the MCP tool of that
    name follows, is an attention timer, a
    fresh 60 s each time the box is shown, cancelled by the first keystroke.  The
    agent's ``timeout_s`` therefore says how long a question may wait unattended; a
    human who typed attended to it, so the unattended wait starts again when he
    leaves.  Giving back only the remainder would expire a question typed into in
    its last seconds the moment its typist stepped away.

    Idempotent, and nothing to restore on a prompt nobody typed into ("hidden
    blank": its countdown never stopped): the same value comes back.
    """
    status = _move(prompt, Event.DEFER)
    if prompt.typing_at is None:
        return prompt
    deadline = prompt.max_deadline_at
    if prompt.timeout_s is not None:
        deadline = min(now + prompt.timeout_s, prompt.max_deadline_at)
    return evolve(prompt, status=status, typing_at=None, deadline_at=deadline)


def shown(prompt: Prompt, *, now: float) -> Prompt:
    """An editor put the question before the human.  The first time counts: an
    expiry after it is "shown, no answer", before it "unseen".  Idempotent."""
    _move(prompt, Event.SHOWN)
    if prompt.shown_at is not None:
        return prompt
    return evolve(prompt, shown_at=now)


def clear(prompt: Prompt, *, now: float) -> Prompt:
    """The human saw that the prompt expired unseen: its trace comes down.
    Idempotent; refused for a prompt that was shown (there is no trace to clear)."""
    if prompt.is_pending:
        raise InvalidParams(
            f"prompt {prompt.id} is still pending; only an expired prompt's trace is cleared",
            id=prompt.id,
        )
    _move(prompt, Event.CLEAR)
    if prompt.shown_at is not None:
        raise InvalidParams(
            f"prompt {prompt.id} was shown before it expired; only an unseen expiry "
            "leaves a trace to clear",
            id=prompt.id,
        )
    if prompt.cleared_at is not None:
        return prompt
    return evolve(prompt, cleared_at=now)
