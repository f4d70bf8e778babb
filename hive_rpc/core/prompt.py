"""The prompt record: one question from one agent, and what became of it.

A ``Prompt`` is an immutable value.  Every change is a new value made by the
lifecycle module, so the registry can compare, persist and broadcast records without
worrying about who else holds a reference.  Times are seconds since the Unix epoch
(floats): Emacs's ``float-time`` and JavaScript's ``Date.now() / 1000`` read them as is.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

# Re-exported: the hub's service reads them here (core/conventions.py says why they moved).
from hive_rpc.core.conventions import DEFAULT_AGENT
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.limits import (
    MAX_CHOICES,
    MAX_QUESTION_CHARS,
    LimitError,
    check_name,
)
from hive_rpc.core.schema import check_schema

DEFAULT_MAX_LIFETIME_S = 24 * 60 * 60.0


class Status(StrEnum):
    """Where a prompt is in its life; only ``pending`` can still change."""

    PENDING = "pending"
    RESPONDED = "responded"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class Action(StrEnum):
    """What the human did, named as in MCP elicitation results."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class Kind(StrEnum):
    """What a prompt asks for.  A ``permission`` prompt decides what an agent may do
    (a Claude Code permission request, or its own question to the human): only an
    approver may answer it (docs/security.md), never the agent that asked."""

    QUESTION = "question"
    PERMISSION = "permission"


class ExpiryReason(StrEnum):
    """Why a prompt expired: its own countdown, or the hub's hard maximum lifetime."""

    TIMEOUT = "timeout"
    MAX_LIFETIME = "max_lifetime"


@dataclass(frozen=True, slots=True)
class Prompt:
    """One question and its outcome.  Field names are the wire names (see docs/protocol.md)."""

    id: str
    agent_id: str
    question: str
    created_at: float
    deadline_at: float
    """When the prompt expires unless answered: the countdown's end, or, once the human
    has started typing, the hard maximum lifetime."""
    max_deadline_at: float
    choices: tuple[str, ...] | None = None
    schema: Mapping[str, Any] | None = field(default=None, hash=False)
    urgent: bool = False
    timeout_s: float | None = None
    task_id: str | None = None
    in_reply_to: str | None = None
    kind: Kind = Kind.QUESTION
    detail: str | None = None
    """Long text behind the question (a tool's whole input), shown where the editor
    has room: the question stays one readable line."""
    confirm: tuple[Mapping[str, str], ...] | None = field(default=None, hash=False)
    """Answers whose effect outlasts the question (an "always allow" that saves a
    rule), each ``{"choice", "text"}`` with the words saying what it will do: every
    face shows the text and asks the human again before sending that choice, so the
    rule is read before it is saved, in the asker's own words and not in a copy each
    editor would keep of how the asker words it."""
    decisions: Mapping[str, str] | None = field(default=None, hash=False)
    """What each choice of a permission prompt decides, ``allow`` or ``deny``, in the
    asker's word: an ACP agent's choices are its own options' names ("Allow for this
    session", "Reject"), so the audit trail records the decision from this, not from
    a list of words it would have to guess with."""
    status: Status = Status.PENDING
    typing_at: float | None = None
    answered_at: float | None = None
    expired_at: float | None = None
    cancelled_at: float | None = None
    expiry_reason: ExpiryReason | None = None
    answer: Any = field(default=None, hash=False)
    by: str | None = None
    action: Action | None = None
    origin: str | None = None
    """Where the asker runs, as the hub found it (the asking process's working
    directory, ``~/src/app``), never a name the asker chose: shown beside the agent so
    the human knows which project a question is about."""
    shown_at: float | None = None
    """When an editor first put the question before the human (``hive/shown``): an
    expiry before that is reported as unseen, not as a question the human let go."""
    cleared_at: float | None = None
    """When the human cleared the trace an unseen expiry left (``hive/clearUnseen``)."""

    @property
    def is_pending(self) -> bool:
        return self.status is Status.PENDING

    @property
    def unseen(self) -> bool:
        """Expired before any editor showed it, and the human has not cleared that yet."""
        return self.status is Status.EXPIRED and self.shown_at is None and self.cleared_at is None

    @property
    def closed_at(self) -> float | None:
        """When the prompt left ``pending``, whichever way it left."""
        return self.answered_at or self.expired_at or self.cancelled_at

    def to_record(self) -> dict[str, Any]:
        """The JSON-ready record sent to clients and kept by stores.

        A shallow copy (``dataclasses.asdict`` deep-copies and cost half of every
        SQLite write, see docs/benchmarks.md): treat the nested schema and answer as
        read-only.
        """
        record = {name: getattr(self, name) for name in _FIELD_NAMES}
        record["status"] = self.status.value
        record["kind"] = self.kind.value
        record["action"] = self.action.value if self.action is not None else None
        record["expiry_reason"] = self.expiry_reason.value if self.expiry_reason else None
        record["choices"] = list(self.choices) if self.choices is not None else None
        record["schema"] = dict(self.schema) if self.schema is not None else None
        record["confirm"] = [dict(c) for c in self.confirm] if self.confirm is not None else None
        record["decisions"] = dict(self.decisions) if self.decisions is not None else None
        record["expired"] = self.status is Status.EXPIRED
        record["unseen"] = self.unseen
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Prompt:
        """Rebuild a prompt a store saved with ``to_record``."""
        fields = {k: v for k, v in record.items() if k in cls.__dataclass_fields__}
        fields["status"] = Status(fields.get("status", "pending"))
        fields["kind"] = Kind(fields.get("kind") or "question")
        if fields.get("choices") is not None:
            fields["choices"] = tuple(fields["choices"])
        if fields.get("confirm") is not None:
            fields["confirm"] = tuple(fields["confirm"])
        if fields.get("action") is not None:
            fields["action"] = Action(fields["action"])
        if fields.get("expiry_reason") is not None:
            fields["expiry_reason"] = ExpiryReason(fields["expiry_reason"])
        return cls(**fields)


_FIELD_NAMES = tuple(f.name for f in fields(Prompt))


def evolve(prompt: Prompt, **changes: Any) -> Prompt:
    """``prompt`` with ``changes``: the lifecycle's moves make each new record so."""
    return replace(prompt, **changes)


def new_id() -> str:
    """A 64-bit random id in hex: short enough to type, wide enough not to collide.
    ``os.urandom`` rather than ``secrets.token_hex`` (the same bytes): importing
    ``secrets`` (``hmac``, ``hashlib``, OpenSSL) was 5 ms of every permission hook."""
    return os.urandom(8).hex()


def _optional_name(value: object, what: str) -> str | None:
    return None if value is None else check_name(value, what)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """An agent's question as it comes in, before anything is checked: built once
    where a request enters (the service's ``hive/ask``, the MCP tools, the CLI) and
    passed whole to ``Registry.ask`` and ``new_prompt``, which checks every field once.
    So a question's fields are listed here, not again at each layer (the ``hive/ask``
    row names the same ones as its params, with their JSON types; a test holds the
    two equal)."""

    question: str
    choices: Sequence[str] | None = None
    schema: Mapping[str, Any] | None = None
    urgent: bool = False
    timeout_s: float | None = None
    agent_id: str = DEFAULT_AGENT
    task_id: str | None = None
    in_reply_to: str | None = None
    kind: str = Kind.QUESTION.value
    detail: str | None = None
    confirm: Sequence[Mapping[str, str]] | None = None
    decisions: Mapping[str, str] | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Ask:
        """From ``hive/ask`` params (checked against the method table: no other names,
        and a null is an absent parameter)."""
        return cls(**{n: params[n] for n in ASK_FIELDS if params.get(n) is not None})

    def params(self) -> dict[str, Any]:
        """As ``hive/ask`` params: the fields that differ from their defaults."""
        return {
            name: value
            for name, default in _ASK_DEFAULTS.items()
            if (value := getattr(self, name)) != default
        }


_ASK_DEFAULTS = {f.name: f.default for f in fields(Ask)}
ASK_FIELDS = tuple(_ASK_DEFAULTS)
"""The ``hive/ask`` parameters, which are the fields of ``Ask``."""


def new_prompt(
    ask: Ask,
    *,
    now: float,
    max_lifetime_s: float = DEFAULT_MAX_LIFETIME_S,
    prompt_id: str | None = None,
    origin: str | None = None,
) -> Prompt:
    """Check an agent's question and make its pending prompt.

    A ``timeout_s`` beyond the hub's maximum lifetime is clamped to it: the hard
    maximum always applies.  ``timeout_s=None`` means "no countdown", so only the
    maximum lifetime ends the prompt.  ``origin`` is the hub's own finding (where
    the asker runs), not the asker's word.
    """
    question, choices, schema, urgent = ask.question, ask.choices, ask.schema, ask.urgent
    timeout_s = ask.timeout_s
    if not isinstance(question, str) or not question.strip():
        raise InvalidParams("question must be a non-empty string", param="question")
    if len(question) > MAX_QUESTION_CHARS:
        raise LimitError(
            "question", "question_chars", f"longer than {MAX_QUESTION_CHARS:,} characters"
        )
    if choices is not None and schema is not None:
        raise InvalidParams("give either choices or schema, not both", param="choices")
    checked_choices = _check_choices(choices) if choices is not None else None
    checked_schema = check_schema(schema) if schema is not None else None
    if not isinstance(urgent, bool):
        raise InvalidParams("urgent must be true or false")
    if timeout_s is not None:
        if (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, int | float)
            or not math.isfinite(timeout_s)
            or timeout_s <= 0
        ):
            raise InvalidParams("timeout_s must be a positive number of seconds")
        timeout_s = float(min(timeout_s, max_lifetime_s))
    max_deadline = now + max_lifetime_s
    kind = _check_kind(ask.kind)
    return Prompt(
        id=prompt_id or new_id(),
        agent_id=check_name(ask.agent_id, "agent_id"),
        question=question,
        created_at=now,
        deadline_at=now + timeout_s if timeout_s is not None else max_deadline,
        max_deadline_at=max_deadline,
        choices=checked_choices,
        schema=checked_schema,
        urgent=urgent,
        timeout_s=timeout_s,
        task_id=_optional_name(ask.task_id, "task_id"),
        in_reply_to=_optional_name(ask.in_reply_to, "in_reply_to"),
        kind=kind,
        detail=_check_detail(ask.detail),
        confirm=_check_confirm(ask.confirm, checked_choices) if ask.confirm is not None else None,
        decisions=(
            _check_decisions(ask.decisions, checked_choices, kind)
            if ask.decisions is not None
            else None
        ),
        origin=origin,
    )


def _check_kind(kind: object) -> Kind:
    found = _KIND_BY_VALUE.get(kind) if isinstance(kind, str) else None
    if found is not None:
        return found
    raise InvalidParams(f"kind must be one of {', '.join(_KINDS)}", param="kind")


_KINDS = tuple(k.value for k in Kind)
_KIND_BY_VALUE = {k.value: k for k in Kind}
"""A dict lookup: calling the enum (``Kind(kind)``) costs more than the rest of the check."""


def _check_detail(detail: object) -> str | None:
    if detail is None:
        return None
    if not isinstance(detail, str):
        raise InvalidParams("detail must be a string", param="detail")
    if len(detail) > MAX_QUESTION_CHARS:
        raise LimitError(
            "detail",
            "question_chars",
            f"longer than {MAX_QUESTION_CHARS:,} characters",
            param="detail",
        )
    return detail or None


DECISIONS = ("allow", "deny")
"""What a choice of a permission prompt may decide (``decisions``)."""


def _check_decisions(
    decisions: object, choices: tuple[str, ...] | None, kind: Kind
) -> Mapping[str, str]:
    """``decisions``: an object from some of a permission prompt's choices to
    ``allow`` or ``deny``.  No larger than the choices, so bounded by them."""
    if kind is not Kind.PERMISSION:
        raise InvalidParams(
            "decisions is for a permission prompt (kind permission): a question's "
            "answers decide nothing the audit trail records",
            param="decisions",
        )
    if choices is None:
        raise InvalidParams(
            "decisions needs choices: it says what each of them decides", param="decisions"
        )
    if not isinstance(decisions, Mapping):
        raise InvalidParams(
            'decisions must be an object from a choice to "allow" or "deny"',
            param="decisions",
        )
    offered = set(choices)
    for choice, decision in decisions.items():
        if choice not in offered:
            raise InvalidParams(
                f"decisions names {str(choice)[:80]!r}, which is not one of the choices",
                param="decisions",
            )
        if decision not in DECISIONS:
            raise InvalidParams(
                f'decisions[{choice[:80]!r}] must be "allow" or "deny"', param="decisions"
            )
    return dict(decisions)


CONFIRM_KEYS = frozenset({"choice", "text"})


def _check_confirm(
    confirm: object, choices: tuple[str, ...] | None
) -> tuple[Mapping[str, str], ...]:
    """``confirm``: a list of ``{"choice", "text"}``, each choice one of the prompt's
    and named once, the texts not blank and together no longer than a question may
    be (``question_chars``).  Linear in its size."""
    if choices is None:
        raise InvalidParams(
            "confirm needs choices: it names which of them to confirm", param="confirm"
        )
    if isinstance(confirm, str | Mapping) or not isinstance(confirm, Sequence):
        raise InvalidParams(
            'confirm must be a list of {"choice": ..., "text": ...} objects', param="confirm"
        )
    offered, named, total = set(choices), set(), 0
    entries: list[Mapping[str, str]] = []
    for i, entry in enumerate(confirm):
        if not isinstance(entry, Mapping) or set(entry) != CONFIRM_KEYS:
            raise InvalidParams(
                f'confirm[{i}] must be an object with exactly "choice" and "text"',
                param="confirm",
            )
        choice, text = entry["choice"], entry["text"]
        if not isinstance(choice, str) or choice not in offered:
            raise InvalidParams(f"confirm[{i}].choice is not one of the choices", param="confirm")
        if choice in named:
            raise InvalidParams(f"confirm[{i}].choice is named twice", param="confirm")
        if not isinstance(text, str) or not text.strip():
            raise InvalidParams(f"confirm[{i}].text must be a non-empty string", param="confirm")
        total += len(text)
        if total > MAX_QUESTION_CHARS:
            raise LimitError(
                "confirm",
                "question_chars",
                f"texts longer than {MAX_QUESTION_CHARS:,} characters in all",
                param="confirm",
            )
        named.add(choice)
        entries.append({"choice": choice, "text": text})
    return tuple(entries)


def _check_choices(choices: object) -> tuple[str, ...]:
    if isinstance(choices, str) or not isinstance(choices, Sequence):
        raise InvalidParams("choices must be a list of strings", param="choices")
    if not choices:
        raise InvalidParams(
            "choices must not be empty (omit it for a free-text answer)", param="choices"
        )
    if len(choices) > MAX_CHOICES:
        raise LimitError(
            "choices", "choices", f"at most {MAX_CHOICES} choices are allowed", param="choices"
        )
    if not all(isinstance(c, str) and c.strip() for c in choices):
        raise InvalidParams("every choice must be a non-empty string", param="choices")
    if len(set(choices)) != len(choices):
        raise InvalidParams("choices must be distinct", param="choices")
    return tuple(choices)
