"""Errors a person can act on, each carrying the JSON-RPC code it travels under.

The codes live here (not in the protocol layer) so that every face, whether JSON-RPC,
EPC or MCP, reports the same rule broken with the same number and the same words.
Codes -32000..-32099 are JSON-RPC's range for server-defined errors.
"""

from __future__ import annotations

from typing import Any, ClassVar


class HiveError(Exception):
    """Base of every error the hub reports to a client.

    ``message`` is the sentence shown to the person; ``data`` carries the structured
    facts (ids, who answered, when) so clients can act without parsing the sentence.
    """

    code: ClassVar[int] = -32000
    kind: ClassVar[str] = "hive_error"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = {"kind": self.kind, **data}


class PromptNotFound(HiveError):
    """No prompt has this id, or it belongs to another agent (not leaked either way)."""

    code = -32001
    kind = "not_found"


class AlreadyAnswered(HiveError):
    """The prompt was answered before: the first answer wins."""

    code = -32002
    kind = "already_answered"


class PromptClosed(HiveError):
    """The prompt expired or was cancelled, so it takes no answer and no typing."""

    code = -32003
    kind = "closed"


class InvalidAnswer(HiveError):
    """The answer is outside ``choices`` or does not validate against ``schema``."""

    code = -32004
    kind = "invalid_answer"


class InvalidParams(HiveError):
    """Missing, unknown or mistyped parameters, or a malformed question (bad schema,
    choices, timeout ...)."""

    code = -32602
    kind = "invalid_params"


class MethodNotFound(HiveError):
    code = -32601
    kind = "method_not_found"


class NotAParticipant(HiveError):
    """A turn's sender or receiver is not in the dialogue (event ``agora/not-a-participant``)."""

    code = -32005
    kind = "not_a_participant"


class LingNotFound(HiveError):
    """No ling (agent terminal) is registered under this name."""

    code = -32006
    kind = "ling_not_found"


class LimitReached(HiveError):
    """A limit on what the hub holds was reached: pending prompts of one agent or in
    all, or the size of one reply.  ``data.limit`` names it (see core/limits.py);
    unlike -32602 the request itself was well formed, and may succeed later."""

    code = -32012
    kind = "limit_reached"
