"""JSON-RPC 2.0 over Content-Length frames, sans-IO, in the style of h11.

``Endpoint`` is one side of one connection.  Give it bytes with ``receive_data``
and it returns the messages (or the precise ``RpcError`` for each bad one); ask it
for the bytes of a request, notification, result or error and write them yourself.
Both the hub (server side) and hive_rpc's own client use it.

Rules: ``jsonrpc`` must be "2.0"; ids are strings or integers; ``params`` is an
object (named parameters) or absent (``null``, or an empty array: Neovim's
``vim.lsp`` encodes an empty Lua table as ``[]``, and an empty array carries no
parameters either); a non-empty array (positional parameters) is refused; batches
are refused with a clear error; NaN, Infinity and lone UTF-16 surrogates are not
JSON and are refused too.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any

from hive_rpc.protocol.framing import (
    MAX_BODY_BYTES,
    Frame,
    FrameDecoder,
    FramingError,
    Oversized,
    encode_frame,
)
from hive_rpc.protocol.frozen import Frozen, init_field

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MESSAGE_TOO_LARGE = -32010
OVERLOADED = -32011

Id = str | int
Params = dict[str, Any]


# Records on protocol/frozen.py, not dataclasses: every one-shot command imports this.


class Request(Frozen):
    __match_args__ = ("id", "method", "params")
    __slots__ = __match_args__
    id: Id
    method: str
    params: Params

    def __init__(self, id: Id, method: str, params: Params | None = None) -> None:
        init_field(self, "id", id)
        init_field(self, "method", method)
        init_field(self, "params", {} if params is None else params)


class Notification(Frozen):
    __match_args__ = ("method", "params")
    __slots__ = __match_args__
    method: str
    params: Params

    def __init__(self, method: str, params: Params | None = None) -> None:
        init_field(self, "method", method)
        init_field(self, "params", {} if params is None else params)


class Response(Frozen):
    __match_args__ = ("id", "result")
    __slots__ = __match_args__
    id: Id
    result: Any

    def __init__(self, id: Id, result: Any) -> None:
        init_field(self, "id", id)
        init_field(self, "result", result)


class ErrorResponse(Frozen):
    __match_args__ = ("id", "code", "message", "data")
    __slots__ = __match_args__
    id: Id | None
    code: int
    message: str
    data: Any

    def __init__(self, id: Id | None, code: int, message: str, data: Any = None) -> None:
        init_field(self, "id", id)
        init_field(self, "code", code)
        init_field(self, "message", message)
        init_field(self, "data", data)


Message = Request | Notification | Response | ErrorResponse


class RpcError(Exception):
    """A message we must refuse; ``id`` is the request's id when it could be read.

    ``notification`` is True when the refused message was a notification: JSON-RPC
    never answers one, so ``Endpoint.receive_data`` drops such errors.
    """

    def __init__(
        self,
        code: int,
        message: str,
        *,
        id: Id | None = None,
        data: Any = None,
        notification: bool = False,
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id
        self.data = data
        self.notification = notification


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # float() turns an out-of-range literal such as 1e400 into inf, which is the
    # Infinity we refuse, and which dumps() could then not send back.
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    # Iterative, not dumps(): re-encoding a value nested close to the recursion
    # limit could raise RecursionError out of loads() depending on the caller's stack.
    # Decoding joined every valid escape pair, so any surrogate left is a lone one.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
    return False


PEEK_BYTES = 1 << 16
"""How much of a message ``peek_id`` reads for its id: the id comes before the params
in what every client writes, and a message refused unread (too large) must still get
an answer its caller can match."""
_PEEK_TOKEN = re.compile(r'[{\[]+|[}\]]+|"')
_PEEK_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_PEEK_SPACE = re.compile(r"[ \t\r\n]*")
_PEEK_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?=[ \t\r\n,}])")


def peek_id(text: str | bytes) -> Id | None:
    """The ``id`` member of the JSON object ``text`` starts with, read without decoding
    the rest: for a message refused before it could be decoded (nested too deeply, too
    large), so the caller still learns which call failed.  None unless a top-level
    ``"id"`` that is a string or an integer is whole in the first ``PEEK_BYTES``.

    One pass over at most ``PEEK_BYTES``: strings are skipped by one pattern without
    backtracking, runs of brackets only counted, so no nesting depth costs a stack
    and no message costs more than that much reading."""
    text = text[:PEEK_BYTES]
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "ignore")
    start = _PEEK_SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("{", start):
        return None
    depth, pos = 0, start
    while (token := _PEEK_TOKEN.search(text, pos)) is not None:
        pos = token.end()
        run = token.group()
        if run[0] in "{[":
            depth += len(run)
            continue
        if run[0] in "}]":
            depth -= len(run)
            if depth <= 0:
                return None
            continue
        string = _PEEK_STRING.match(text, token.start())
        if string is None:
            return None  # a string cut off at the end of what was read
        pos = string.end()
        if depth != 1:
            continue
        after = _PEEK_SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if not text.startswith(":", after):
            continue
        try:
            is_id = json.loads(string.group()) == "id"
        except ValueError:
            return None
        if not is_id:
            continue
        value_at = _PEEK_SPACE.match(text, after + 1).end()  # type: ignore[union-attr]
        number = _PEEK_INT.match(text, value_at)
        if number is not None:
            return int(number.group())
        value = _PEEK_STRING.match(text, value_at)
        if value is None:
            return None
        try:
            decoded = json.loads(value.group())
        except ValueError:
            return None
        return decoded if isinstance(decoded, str) and not _SURROGATE.search(decoded) else None
    return None


def loads(body: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no lone surrogates; errors say where."""
    try:
        value = json.loads(
            body.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float
        )
    except UnicodeDecodeError as e:
        raise RpcError(PARSE_ERROR, f"message is not UTF-8: {e.reason} at byte {e.start}") from None
    except RecursionError:
        # Valid JSON, perhaps, but deeper than the decoder's stack: the id is still
        # there to read, and a client with calls in flight needs it.
        raise RpcError(PARSE_ERROR, "JSON nested too deeply", id=peek_id(body)) from None
    except ValueError as e:
        raise RpcError(PARSE_ERROR, f"invalid JSON: {e}") from None
    if _SURROGATE_ESCAPE.search(body) and _has_lone_surrogate(value):
        raise RpcError(PARSE_ERROR, "invalid JSON: lone UTF-16 surrogate escape")
    return value


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON.  Content-Length is counted in bytes, so non-ASCII is fine."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _valid_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def parse_message(body: bytes) -> Message:
    """Turn one frame body into a message, or raise the RpcError to answer with."""
    return parse_object(loads(body))


def parse_object(obj: Any) -> Message:
    """A decoded JSON value as a message, or raise the RpcError to answer with."""
    if isinstance(obj, list):
        raise RpcError(INVALID_REQUEST, "batch requests are not supported; send one per frame")
    if not isinstance(obj, dict):
        raise RpcError(INVALID_REQUEST, "a JSON-RPC message must be a JSON object")
    raw_id = obj.get("id")
    msg_id = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'missing or wrong "jsonrpc": must be "2.0"', id=msg_id)
    if "id" in obj and raw_id is not None and not _valid_id(raw_id):
        raise RpcError(INVALID_REQUEST, '"id" must be a string or an integer')
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            raise RpcError(INVALID_REQUEST, '"method" must be a non-empty string', id=msg_id)
        params = obj.get("params", {})
        if params is None or params == []:  # no parameters; [] is Neovim's empty table
            params = {}
        if not isinstance(params, dict):
            raise RpcError(
                INVALID_PARAMS,
                '"params" must be an object of named parameters',
                id=msg_id,
                notification="id" not in obj,
            )
        if "id" not in obj:
            return Notification(method, params)
        if msg_id is None:
            raise RpcError(INVALID_REQUEST, '"id" must be a string or an integer')
        return Request(msg_id, method, params)
    if msg_id is None and raw_id is not None:
        raise RpcError(INVALID_REQUEST, '"id" must be a string or an integer')
    if "result" in obj and msg_id is not None:
        return Response(msg_id, obj["result"])
    error = obj.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return ErrorResponse(
            msg_id, error["code"], str(error.get("message", "")), error.get("data")
        )
    raise RpcError(INVALID_REQUEST, "message is neither a request, a notification nor a response")


class Endpoint:
    """One side of a JSON-RPC connection, with no I/O of its own."""

    def __init__(self, max_body: int = MAX_BODY_BYTES, *, id_prefix: str | None = None) -> None:
        """``id_prefix``: this side's request ids are strings ``PREFIX-N`` rather than
        integers (the hub's requests to an editor: ``hub-1`` reads as the hub's own)."""
        self._decoder = FrameDecoder(max_body)
        self._ids = itertools.count(1)
        self._id_prefix = id_prefix

    def receive_data(self, data: bytes | bytearray) -> list[Message | RpcError | FramingError]:
        """Messages parsed from ``data``; a bad one becomes the RpcError to answer with.

        A notification that cannot be used is dropped: it must not be answered.
        When the stream itself breaks, the messages decoded before the break come
        first and the FramingError comes last; later calls raise it.
        """
        self._decoder.receive_data(data)
        out: list[Message | RpcError | FramingError] = []
        while True:
            try:
                event = self._decoder.next_event()
            except FramingError as e:
                out.append(e)
                break
            if event is None:
                break
            if isinstance(event, Oversized):
                out.append(
                    RpcError(
                        MESSAGE_TOO_LARGE,
                        f"message of {event.length} bytes is over the {event.limit}-byte "
                        "limit; it was discarded",
                        data={"limit": event.limit, "length": event.length},
                    )
                )
                continue
            assert isinstance(event, Frame)
            try:
                out.append(parse_message(event.body))
            except RpcError as e:
                if not e.notification:
                    out.append(e)
        return out

    def request(self, method: str, params: Params | None = None) -> tuple[Id, bytes]:
        n = next(self._ids)
        msg_id: Id = n if self._id_prefix is None else f"{self._id_prefix}-{n}"
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}
        return msg_id, encode_frame(dumps(msg))

    def notify(self, method: str, params: Params | None = None) -> bytes:
        return encode_frame(dumps({"jsonrpc": "2.0", "method": method, "params": params or {}}))

    def result(self, msg_id: Id, result: Any) -> bytes:
        return encode_frame(dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    def error(self, msg_id: Id | None, code: int, message: str, data: Any = None) -> bytes:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        return encode_frame(dumps({"jsonrpc": "2.0", "id": msg_id, "error": err}))


__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MESSAGE_TOO_LARGE",
    "METHOD_NOT_FOUND",
    "OVERLOADED",
    "PARSE_ERROR",
    "Endpoint",
    "ErrorResponse",
    "FramingError",
    "Message",
    "Notification",
    "Request",
    "Response",
    "RpcError",
    "dumps",
    "loads",
    "parse_message",
    "parse_object",
    "peek_id",
]
