"""Errors a person can act on, each carrying the JSON-RPC code it travels under.

Every face, whether JSON-RPC, EPC, MCP or HTTP, reports the same rule broken with the
same number and the same words.  The codes are those of protocol/methods.py's
``ERRORS`` (with the HTTP status of each); tests/service/test_protocol_table.py holds each
class here to its row.  Codes -32000..-32099 are JSON-RPC's range for server-defined
errors.
"""

from __future__ import annotations

from typing import Any

_BY_KIND: dict[str, type[HiveError]] = {}
"""Each error class by its ``kind`` (the first class of a kind: -32007 has two)."""


class HiveError(Exception):
    """Base of every error the hub reports to a client, on both sides of the wire.

    ``message`` is the sentence shown to the person; ``data`` carries the structured
    facts (ids, who answered, when) so clients can act without parsing the sentence.
    A client gets the same class back (``from_wire``), so a face catches one type
    whether the hub runs in its process or behind a socket.
    """

    code: int = -32000
    kind: str = "hive_error"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _BY_KIND.setdefault(cls.kind, cls)

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = {"kind": self.kind, **data}

    @staticmethod
    def from_wire(code: int, message: str, data: Any = None) -> HiveError:
        """The error a JSON-RPC peer sent, as the class the hub raised: found by
        ``data.kind`` and ``code``.  One no class matches (a JSON-RPC error such as
        -32603, another server's) is a plain ``HiveError`` carrying that code and
        kind.  Built without the class's ``__init__``: the message is the hub's own."""
        facts: dict[str, Any] = dict(data) if isinstance(data, dict) else {}
        kind = facts.get("kind")
        found = _BY_KIND.get(kind) if isinstance(kind, str) else None
        cls = found if found is not None and found.code == code else HiveError
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.message = message
        error.data = facts
        if cls is HiveError:
            error.code = code
            error.kind = kind if isinstance(kind, str) else HiveError.kind
        return error


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


class NotAnApprover(HiveError):
    """Only an approver may do this: answer a permission prompt, add or remove an
    answer rule.  A connection becomes one by proving it can read the hub's approver
    token (``hive/proveApprover``), which an agent's sandbox is kept from reading,
    so an agent cannot approve its own tool use (docs/security.md)."""

    code = -32013
    kind = "not_an_approver"


class StoreWriteFailed(HiveError):
    """The local store refused a write (a full disk, an I/O error): nothing was saved.

    Same code and kind as NATS's ``StoreUnavailable``: to a client both mean "the hub
    could not save this, try again later"."""

    code = -32007
    kind = "store_unavailable"

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(
            f"the store ({where}) could not save: {reason}; nothing was saved; "
            "try again once it has room (`hive-rpc doctor` checks it)",
            reason=reason,
        )
        self.reason = reason


class StoreUnavailable(HiveError):
    """The shared store (NATS) could not be reached in time."""

    code = -32007
    kind = "store_unavailable"

    def __init__(
        self,
        url: str,
        reason: str,
        *,
        write: bool = False,
        maybe_saved: bool = False,
        outcome: str | None = None,
    ):
        if outcome is None and maybe_saved:
            outcome = "this change may or may not have been saved (check before retrying)"
        elif outcome is None:
            outcome = "nothing was saved" if write else "nothing was read"
        super().__init__(
            f"the shared store (NATS at {url}) is unreachable: {reason}; {outcome}; "
            "try again when it is back",
            url=url,
            reason=reason,
            maybe_saved=maybe_saved,
        )


class PromptUnreadable(HiveError):
    """The client asked for a prompt whose stored record cannot be read (it was set
    aside, see ``hive-rpc doctor``): a fact about the store, not a hub bug."""

    code = -32008
    kind = "unreadable"

    def __init__(self, prompt_id: str, reason: str) -> None:
        super().__init__(
            f"prompt {prompt_id} is stored but cannot be read ({reason}); "
            "`hive-rpc doctor` lists it",
            id=prompt_id,
            reason=reason,
        )


class InternalError(HiveError):
    """A handler failed in a way nobody planned for (a bug of ours, not the client's
    mistake): the request gets this error, the session that sent it goes on.  The
    message names the method and the exception; ``data.traceback`` holds the last
    frames, so a bug report can quote them.  JSON-RPC's own -32603."""

    code = -32603
    kind = "internal"

    @classmethod
    def of(cls, method: str, raised: BaseException) -> InternalError:
        import traceback  # only for a bug: a one-shot command's start skips it

        trace = "".join(traceback.format_exception(raised, limit=8))
        return cls(
            f"internal error in {method}: {type(raised).__name__}: {raised}",
            method=method,
            traceback=trace,
        )


class HubUnreachable(ConnectionError):
    """No hub answers on the socket (and none could be started), or the connection to
    it was lost.  A ``ConnectionError``, not a ``HiveError``: it is about the link, not
    a refusal by the hub; faces report it as ``HubLost`` (below)."""


class HubTimeout(HubUnreachable):
    """The hub took the request but did not answer in time (stopped, or stuck)."""


class HubLost(HiveError):
    """What a face (``hive-rpc lsp``, ``epc``, ``mcp``) answers when the hub behind it
    could not be reached for this request: -32014, a server error of its own, not
    -32603, so that a client tells a bug (report it) from a lost hub (the face
    reconnects, and the same request may succeed once the hub is back)."""

    code = -32014
    kind = "hub_unreachable"
