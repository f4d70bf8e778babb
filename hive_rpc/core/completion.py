"""How a prompt ended, in the words of any finished work: ``outcome``, ``result``, ``error`` and
``completed_at``, the completion data an asynchronous result carries wherever it is
watched (the activity stream, and the shared store's records, so that a service
watching the NATS bucket reads the outcome without knowing hive_rpc's statuses).

Pure: derived from the prompt's own fields, so a record and its completion data can
never disagree."""

from __future__ import annotations

from typing import Any

from hive_rpc.core.prompt import Action, Prompt, Status

OUTCOMES = ("success", "failed", "cancelled")
EXPIRED_ERROR = "expired: nobody answered in time"
COMPLETION_FIELDS = ("outcome", "result", "error", "completed_at")


def completion(prompt: Prompt) -> dict[str, Any]:
    """``outcome`` (None while pending; then success, failed or cancelled),
    ``result`` (the accepted answer), ``error`` (why not, in words) and
    ``completed_at`` (when it closed, in float Unix seconds)."""
    outcome: str | None = None
    result: Any = None
    error: str | None = None
    completed_at: float | None = None
    if prompt.status is Status.RESPONDED:
        outcome, result, completed_at = "success", prompt.answer, prompt.answered_at
        if prompt.action not in (None, Action.ACCEPT):
            assert prompt.action is not None
            outcome, result, error = "cancelled", None, f"the human chose {prompt.action.value}"
    elif prompt.status is Status.EXPIRED:
        outcome, error, completed_at = "failed", EXPIRED_ERROR, prompt.expired_at
    elif prompt.status is Status.CANCELLED:
        outcome, completed_at = "cancelled", prompt.cancelled_at
    return {"outcome": outcome, "result": result, "error": error, "completed_at": completed_at}
