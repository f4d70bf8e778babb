"""Reading a stored prompt back, without trusting it.

A row was written by some hub, maybe an older one with looser checks, maybe edited by
hand, maybe half-written by a disk that filled up.  Agents are untrusted input
(docs/security.md), and what they sent is in the row: a schema nested 980 deep was
accepted once and made every restart raise RecursionError.  So every store decodes
through ``decode_prompt``, which turns whatever is wrong with a row into one
``UnreadableRecord`` with a reason a person can read; the store then sets the row
aside (SQLite's ``quarantine`` table) instead of letting it stop the hub.
"""

from __future__ import annotations

import json
from typing import Any

from hive_rpc.core.completion import COMPLETION_FIELDS, completion
from hive_rpc.core.errors import (
    PromptUnreadable as PromptUnreadable,
)  # its home before core/errors.py
from hive_rpc.core.limits import record_problem
from hive_rpc.core.prompt import Prompt


class UnreadableRecord(ValueError):
    """A stored prompt record that cannot be decoded or breaks a limit."""

    def __init__(self, prompt_id: str, reason: str) -> None:
        super().__init__(f"stored prompt {prompt_id} cannot be read: {reason}")
        self.prompt_id = prompt_id
        self.reason = reason


def decode_prompt(prompt_id: str, text: str | bytes) -> Prompt:
    """The prompt in ``text``, or ``UnreadableRecord`` saying what is wrong with it.

    Linear in the size of the text: ``json.loads`` refuses (RecursionError) what is
    nested beyond the interpreter's stack, and ``limits.record_problem`` walks the rest
    iteratively, so a deep value is refused before anything recurses over it.
    """
    try:
        record = json.loads(text)
    except RecursionError:
        raise UnreadableRecord(prompt_id, "JSON nested too deep to decode") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise UnreadableRecord(prompt_id, f"not JSON ({e})") from None
    return prompt_from_record(prompt_id, record)


def prompt_from_record(prompt_id: str, record: Any) -> Prompt:
    """The prompt in a decoded ``record`` (see ``decode_prompt``)."""
    if isinstance(record, dict) and "outcome" in record:
        # Completion data (shared_record) repeats the answer as ``result``: derived,
        # not read back, so not counted against the limits a second time.
        record = {k: v for k, v in record.items() if k not in COMPLETION_FIELDS}
    # The same limits the door applies (a record nests a client's schema or answer
    # exactly as deep as the request's params did).
    why = record_problem(record)
    if why is not None:
        raise UnreadableRecord(prompt_id, why)
    try:
        prompt = Prompt.from_record(record)
        prompt.to_record()  # what every face will do with it
    except Exception as e:  # any field missing or of the wrong type
        raise UnreadableRecord(
            prompt_id, f"not a prompt record ({type(e).__name__}: {e})"
        ) from None
    if prompt.id != prompt_id:
        raise UnreadableRecord(prompt_id, f"the record's id is {prompt.id!r}")
    for name in ("created_at", "deadline_at", "max_deadline_at"):
        if not isinstance(getattr(prompt, name, None), int | float):
            raise UnreadableRecord(prompt_id, f"{name} is not a number")
    return prompt


def shared_record(prompt: Prompt) -> dict[str, Any]:
    """What a store shared with other services keeps of a prompt: its record plus
    seed 003's completion data (``outcome``, ``result``, ``error``,
    ``completed_at``), so a service watching the bucket reads how a prompt ended
    without knowing hive_rpc's statuses.  ``Prompt.from_record`` ignores the extra
    fields when the record is read back."""
    return {**prompt.to_record(), **completion(prompt)}
