"""EPC, the RPC stack of Emacs's epc.el, sans-IO in the style of h11 (see jsonrpc.py).

Wire format (epc.el 0.1.1 and python-epc agree): a frame is 6 hex digits giving the
UTF-8 byte length of the payload, then the payload: one s-expression and ``"\\n"``
(the newline is counted).  The protocol's cap is 0xFFFFFF bytes; a decoder enforces
its own, smaller ``max_payload``.  Messages::

    (call UID METHOD (ARGS...))     (return UID VALUE)
    (return-error UID ERR)          (epc-error UID ERR)
    (methods UID)                   -> (return UID ((NAME ARGSPEC DOC) ...))

``Decoder.receive_data`` returns the messages in the bytes given, and for each bad
one an ``EpcProtocolError`` carrying the UID when it could be read (so the peer can be
answered with ``epc-error``).  A frame whose header is not 6 hex digits breaks the
stream: the error is ``fatal`` and the decoder refuses further input.  An oversized
payload is skipped byte for byte and reported, and the stream stays in step.

Errors: hive-rpc sends every error (``return-error`` for a call's refusal,
``epc-error`` for a message it could not take) as JSON-RPC's error object written as a
plist, ``(:code CODE :message MESSAGE :data DATA)`` (``error_value``), with the code and
``data`` (``:kind`` naming the rule) every other face sends (protocol/methods.py,
``ERRORS``).  epc.el hands an errorback the printed value (``(format "%S" ERR)``),
which ``read`` turns back into the plist (hive-rpc-epc.el: ``hive-rpc-epc-error``);
python-epc raises ``ReturnError``/``EPCError`` with it as a list.

Nothing received is ever evaluated: ``protocol.sexp`` only reads data, and symbols
are kept as names (strings), never interned or looked up.  Values map between Lisp
and Python as that module's table says (plists are dicts, ``nil`` is None, ``t`` is
True, other symbols are their names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hive_rpc.protocol import sexp
from hive_rpc.protocol.jsonrpc import INVALID_REQUEST, MESSAGE_TOO_LARGE, PARSE_ERROR

PROTOCOL_MAX_PAYLOAD = 0xFFFFFF
MAX_PAYLOAD = 1 << 20
"""Default cap on one payload (1 MiB), as for the editor socket's JSON-RPC."""
HEADER_BYTES = 6
_HEX = re.compile(rb"[0-9a-fA-F]{6}")
_UID_PREFIX = re.compile(r"\A\s*\(\s*[a-z-]+\s+(-?\d{1,18})[\s)]")


# --- messages -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    uid: int
    method: str
    args: Any
    """The argument list as Python values (``protocol.sexp``): usually a list, or a dict
    when the argument list itself is a plist."""


@dataclass(frozen=True, slots=True)
class Return:
    uid: int
    value: Any


@dataclass(frozen=True, slots=True)
class ReturnError:
    uid: int
    error: Any


@dataclass(frozen=True, slots=True)
class EpcError:
    uid: int | None
    """None when the erring frame's UID could not be read (sent as ``nil``)."""
    error: Any


@dataclass(frozen=True, slots=True)
class Methods:
    uid: int


Message = Call | Return | ReturnError | EpcError | Methods


class EpcProtocolError(Exception):
    """A frame or message to refuse with ``epc-error``; ``uid`` when it could be read.
    ``fatal``: the stream lost its frame boundaries and must be closed.  ``code``: the
    JSON-RPC code of the same fault (-32700 unreadable, -32600 not a message of EPC's
    shape, -32010 too large)."""

    def __init__(
        self,
        message: str,
        *,
        uid: int | None = None,
        fatal: bool = False,
        code: int = PARSE_ERROR,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.uid = uid
        self.fatal = fatal
        self.code = code


EncodeError = sexp.PrintError
"""A Python value with no EPC form (a NaN, an object, a non-string dict key ...)."""


# --- values ---------------------------------------------------------------------------

to_sexp = sexp.dumps


# --- frames and messages --------------------------------------------------------------


def encode_payload(text: str) -> bytes:
    """One frame around one s-expression's text."""
    data = text.encode("utf-8") + b"\n"
    if len(data) > PROTOCOL_MAX_PAYLOAD:
        raise EncodeError(f"message of {len(data)} bytes is over EPC's 0xFFFFFF-byte limit")
    return b"%06x%s" % (len(data), data)


def _uid(uid: int | None) -> str:
    return "nil" if uid is None else str(int(uid))


def encode_call(uid: int, method: str, args: list[Any]) -> bytes:
    return encode_payload(f"(call {uid} {sexp.dumps_symbol(method)} {to_sexp(list(args))})")


def encode_return(uid: int, value: Any) -> bytes:
    return encode_payload(f"(return {_uid(uid)} {to_sexp(value)})")


def encode_return_error(uid: int, error: Any) -> bytes:
    return encode_payload(f"(return-error {_uid(uid)} {to_sexp(error)})")


def encode_epc_error(uid: int | None, error: Any) -> bytes:
    return encode_payload(f"(epc-error {_uid(uid)} {to_sexp(error)})")


def error_value(code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """An error as hive-rpc sends it over EPC: ``(:code CODE :message MESSAGE :data
    DATA)``, JSON-RPC's error object as a plist (``:data`` left out when there is none)."""
    value: dict[str, Any] = {"code": code, "message": message}
    if data:
        value["data"] = data
    return value


def encode_methods(uid: int) -> bytes:
    return encode_payload(f"(methods {uid})")


def encode_method_list(uid: int, methods: list[tuple[str, str, str]]) -> bytes:
    """The answer to ``(methods UID)``: ``((NAME ARGSPEC DOC) ...)``, NAME a symbol."""
    items = " ".join(
        f"({sexp.dumps_symbol(n)} {sexp.dumps_string(a)} {sexp.dumps_string(d)})"
        for n, a, d in methods
    )
    return encode_payload(f"(return {uid} ({items}))")


def _guess_uid(text: str) -> int | None:
    m = _UID_PREFIX.match(text)
    return int(m.group(1)) if m else None


def parse_message(payload: bytes) -> Message:
    """One frame's payload as a message, or raise the EpcProtocolError to answer with."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise EpcProtocolError(f"payload is not UTF-8: {e.reason} at byte {e.start}") from None
    try:
        form = sexp.read(text)
    except sexp.ReadError as e:
        raise EpcProtocolError(f"malformed s-expression: {e}", uid=_guess_uid(text)) from None
    if not isinstance(form, list) or not isinstance(form[0], sexp.Symbol):
        raise EpcProtocolError(
            "an EPC message is a list starting with its kind",
            uid=_guess_uid(text),
            code=INVALID_REQUEST,
        )
    kind, rest = str(form[0]), form[1:]
    if kind == "epc-error" and len(rest) == 2 and rest[0] is None:
        # A peer's error about a frame whose UID it could not read.
        return EpcError(None, sexp.plain(rest[1]))
    if not rest or type(rest[0]) is not int:
        raise EpcProtocolError(
            f"{kind[:40]}: the second element must be an integer UID", code=INVALID_REQUEST
        )
    uid, rest = rest[0], rest[1:]
    if kind == "call":
        if len(rest) != 2 or not isinstance(rest[0], str):
            raise EpcProtocolError(
                "call: want (call UID METHOD (ARGS...))", uid=uid, code=INVALID_REQUEST
            )
        args = rest[1]
        if args is not None and not isinstance(args, list | dict):
            raise EpcProtocolError(
                "call: the arguments must be a list", uid=uid, code=INVALID_REQUEST
            )
        return Call(uid, str.__str__(rest[0]), args)
    if kind == "methods":
        if rest:
            raise EpcProtocolError("methods: want (methods UID)", uid=uid, code=INVALID_REQUEST)
        return Methods(uid)
    if kind in ("return", "return-error", "epc-error"):
        if len(rest) != 1:
            raise EpcProtocolError(
                f"{kind}: want ({kind} UID VALUE)", uid=uid, code=INVALID_REQUEST
            )
        value = sexp.plain(rest[0])
        if kind == "return":
            return Return(uid, value)
        if kind == "return-error":
            return ReturnError(uid, value)
        return EpcError(uid, value)
    raise EpcProtocolError(
        f"unknown message kind {kind[:40]!r}; want call, return, return-error, epc-error "
        "or methods",
        uid=uid,
        code=INVALID_REQUEST,
    )


class Decoder:
    """One side of an EPC connection's input, with no I/O of its own."""

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self._buf = bytearray()
        self._max = min(max_payload, PROTOCOL_MAX_PAYLOAD)
        self._skip = 0
        self._broken: EpcProtocolError | None = None
        self.unread: tuple[int, str] | None = None
        """``(bytes, why)``: a frame declaring more than ``bytes`` is not read at all
        but breaks the stream, the fatal error saying ``why`` (a peer that has not
        authenticated: its frames are not worth the reading).  None: no such bound."""

    def receive_data(self, data: bytes | bytearray) -> list[Message | EpcProtocolError]:
        """The messages in ``data`` and, for each bad one, the error to answer with.
        After a fatal error (last in the list) every later call raises it."""
        self.feed(data)
        out: list[Message | EpcProtocolError] = []
        while (event := self.next_event()) is not None:
            out.append(event)
            if isinstance(event, EpcProtocolError) and event.fatal:
                break
        return out

    def feed(self, data: bytes | bytearray) -> None:
        """Take ``data``; ``next_event`` then gives what it holds, one at a time, so
        that the caller can change ``unread`` between two frames (after ``auth``)."""
        if self._broken is not None:
            raise self._broken
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._buf += data

    def next_event(self) -> Message | EpcProtocolError | None:
        """The next message (or the error for a bad one) that ``feed`` gave whole, or
        None.  After a fatal error, None."""
        while self._broken is None and len(self._buf) >= HEADER_BYTES:
            header = bytes(self._buf[:HEADER_BYTES])
            if not _HEX.fullmatch(header):
                self._broken = EpcProtocolError(
                    f"frame header {header!r} is not 6 hex digits; closing the connection",
                    fatal=True,
                )
                return self._broken
            length = int(header, 16)
            if length == 0:
                del self._buf[:HEADER_BYTES]
                return EpcProtocolError("empty frame: a payload is one s-expression")
            if self.unread is not None and length > self.unread[0]:
                self._buf.clear()
                self._broken = EpcProtocolError(
                    f"a frame of {length} bytes {self.unread[1]}; closing the connection",
                    fatal=True,
                    code=MESSAGE_TOO_LARGE,
                )
                return self._broken
            if length > self._max:
                uid = _guess_uid(
                    bytes(self._buf[HEADER_BYTES : HEADER_BYTES + 64]).decode("utf-8", "replace")
                )
                del self._buf[:HEADER_BYTES]
                dropped = min(length, len(self._buf))
                del self._buf[:dropped]
                self._skip = length - dropped
                return EpcProtocolError(
                    f"message of {length} bytes is over the {self._max}-byte limit; "
                    "it was discarded",
                    uid=uid,
                    code=MESSAGE_TOO_LARGE,
                )
            if len(self._buf) < HEADER_BYTES + length:
                return None
            payload = bytes(self._buf[HEADER_BYTES : HEADER_BYTES + length])
            del self._buf[: HEADER_BYTES + length]
            try:
                return parse_message(payload)
            except EpcProtocolError as e:
                return e
        return None


__all__ = [
    "MAX_PAYLOAD",
    "PROTOCOL_MAX_PAYLOAD",
    "Call",
    "Decoder",
    "EncodeError",
    "EpcError",
    "EpcProtocolError",
    "Message",
    "Methods",
    "Return",
    "ReturnError",
    "encode_call",
    "encode_epc_error",
    "encode_method_list",
    "encode_methods",
    "encode_payload",
    "encode_return",
    "encode_return_error",
    "error_value",
    "parse_message",
    "to_sexp",
]
