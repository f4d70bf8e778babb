"""A stored prompt's text: written directly, read back without trusting it.

A row was written by some hub, maybe an older one with looser checks, maybe edited by
hand, maybe half-written by a disk that filled up.  Agents are untrusted input
(docs/security.md), and what they sent is in the row: a schema nested 980 deep was
accepted once and made every restart raise RecursionError.  So every store decodes
through ``decode_prompt``, which turns whatever is wrong with a row into one
``UnreadableRecord`` with a reason a person can read; the store then sets the row
aside (SQLite's ``quarantine`` table) instead of letting it stop the hub.

Writing goes the other way, on the registry's write path: ``encode_prompt``
makes the compact JSON of ``Prompt.to_record()`` without building that dict.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _string
from typing import Any

from hive_rpc.core.completion import COMPLETION_FIELDS, completion
from hive_rpc.core.limits import record_problem
from hive_rpc.core.prompt import Prompt, Status

ENCODE = json.JSONEncoder(separators=(",", ":")).encode
"""Compact JSON, ASCII escapes (so any string Python holds is storable, lone
surrogates included): the stored records' format.  One encoder for every write:
``json.dumps`` with ``separators`` builds a new ``JSONEncoder`` per call."""


def _number(value: float) -> str:
    """A finite float as ``ENCODE`` writes it (its ``repr``); anything else raises, so
    that ``encode_prompt`` falls back to the encoder (an int from an old record, inf)."""
    if type(value) is not float or value - value != 0.0:
        raise TypeError(value)
    return repr(value)


def _flag(value: object) -> str:
    """``ENCODE`` of a bool; raises for anything else (``encode_prompt``'s fallback)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise TypeError(value)


def encode_prompt(prompt: Prompt) -> str:
    """``ENCODE(prompt.to_record())``, byte for byte, at about half the cost: the
    text is written straight from the fields, with no dict in between.

    The fields are in ``to_record``'s order (the dataclass's).  The enums are
    ``StrEnum``s, so their text is their value.  A value of a type the record's
    writers never make (a prompt read from a hand-edited row) raises on the way and
    the record is encoded from ``to_record`` instead: the same bytes either way
    (tests/store/test_record_bytes.py), and a new field breaks those tests until it
    is added here.  The optional fields are written inline, not through a helper
    each: a function call apiece was a third of the cost (measured).
    """
    p = prompt
    try:
        answer = p.answer
        answer_text = (
            _string(answer) if type(answer) is str else "null" if answer is None else ENCODE(answer)
        )
        return (
            f'{{"id":{_string(p.id)},"agent_id":{_string(p.agent_id)},'
            f'"question":{_string(p.question)},"created_at":{_number(p.created_at)},'
            f'"deadline_at":{_number(p.deadline_at)},'
            f'"max_deadline_at":{_number(p.max_deadline_at)},'
            f'"choices":{"null" if p.choices is None else ENCODE(list(p.choices))},'
            f'"schema":{"null" if p.schema is None else ENCODE(dict(p.schema))},'
            f'"urgent":{"false" if p.urgent is False else _flag(p.urgent)},'
            f'"timeout_s":{"null" if p.timeout_s is None else _number(p.timeout_s)},'
            f'"task_id":{"null" if p.task_id is None else _string(p.task_id)},'
            f'"in_reply_to":{"null" if p.in_reply_to is None else _string(p.in_reply_to)},'
            f'"kind":{_string(p.kind)},'
            f'"detail":{"null" if p.detail is None else _string(p.detail)},'
            f'"confirm":{"null" if p.confirm is None else ENCODE([dict(c) for c in p.confirm])},'
            f'"decisions":{"null" if p.decisions is None else ENCODE(dict(p.decisions))},'
            f'"status":{_string(p.status)},'
            f'"typing_at":{"null" if p.typing_at is None else _number(p.typing_at)},'
            f'"answered_at":{"null" if p.answered_at is None else _number(p.answered_at)},'
            f'"expired_at":{"null" if p.expired_at is None else _number(p.expired_at)},'
            f'"cancelled_at":{"null" if p.cancelled_at is None else _number(p.cancelled_at)},'
            '"expiry_reason":'
            f"{'null' if p.expiry_reason is None else _string(p.expiry_reason)},"
            f'"answer":{answer_text},'
            f'"by":{"null" if p.by is None else _string(p.by)},'
            f'"action":{"null" if p.action is None else _string(p.action)},'
            f'"origin":{"null" if p.origin is None else _string(p.origin)},'
            f'"shown_at":{"null" if p.shown_at is None else _number(p.shown_at)},'
            f'"cleared_at":{"null" if p.cleared_at is None else _number(p.cleared_at)},'
            f'"expired":{"true" if p.status is Status.EXPIRED else "false"},'
            f'"unseen":{"true" if p.unseen else "false"}}}'
        )
    except TypeError:
        return ENCODE(prompt.to_record())


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
    its completion data (core/completion.py: ``outcome``, ``result``, ``error``,
    ``completed_at``), so a service watching the bucket reads how a prompt ended
    without knowing hive_rpc's statuses.  ``Prompt.from_record`` ignores the extra
    fields when the record is read back."""
    return {**prompt.to_record(), **completion(prompt)}
