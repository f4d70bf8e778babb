"""``Content-Length`` framing, the one framing Emacs's jsonrpc.el, LSP and vscode-jsonrpc share.

Each message is ``Content-Length: N\\r\\n`` (other headers allowed, ignored)
``\\r\\n`` then exactly N bytes of UTF-8 JSON.  Rules of this decoder:

* the header block is at most ``MAX_HEADER_BYTES``; ``Content-Length`` is required,
  decimal, and appears once;
* a body longer than the decoder's ``max_body`` is skipped byte for byte and
  reported as ``Oversized`` so the peer gets an error and the stream stays in step;
* anything else malformed raises ``FramingError`` and the decoder refuses further
  input: a stream that lost its frame boundaries cannot be trusted again.
"""

from __future__ import annotations

from hive_rpc.protocol.frozen import Frozen, init_field

MAX_BODY_BYTES = 1 << 20
"""Documented cap on one message (1 MiB).  Questions are text, not payloads."""
MAX_HEADER_BYTES = 4096
_SEPARATOR = b"\r\n\r\n"


class FramingError(ValueError):
    """The byte stream is not Content-Length framed; the connection must close."""


class Frame(Frozen):
    __match_args__ = ("body",)
    __slots__ = __match_args__
    body: bytes

    def __init__(self, body: bytes) -> None:
        init_field(self, "body", body)


class Oversized(Frozen):
    __match_args__ = ("length", "limit")
    __slots__ = __match_args__
    length: int
    limit: int

    def __init__(self, length: int, limit: int) -> None:
        init_field(self, "length", length)
        init_field(self, "limit", limit)


def encode_frame(body: bytes) -> bytes:
    """Wrap one message body in its header."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class FrameDecoder:
    """Feed bytes with ``receive_data``; take events with ``next_event`` until it returns None."""

    def __init__(self, max_body: int = MAX_BODY_BYTES) -> None:
        self._buf = bytearray()
        self._max_body = max_body
        self._need: int | None = None
        self._skip = 0
        self._broken: str | None = None

    def receive_data(self, data: bytes | bytearray) -> None:
        if self._broken is not None:
            raise FramingError(self._broken)
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._buf += data

    def next_event(self) -> Frame | Oversized | None:
        if self._broken is not None:
            raise FramingError(self._broken)
        if self._skip:
            return None
        if self._need is None:
            end = self._buf.find(_SEPARATOR, 0, MAX_HEADER_BYTES + len(_SEPARATOR))
            if end < 0:
                # Only once the whole search window is in hand: a header of exactly
                # MAX_HEADER_BYTES whose separator is still arriving must not fail.
                if len(self._buf) >= MAX_HEADER_BYTES + len(_SEPARATOR):
                    self._fail(f"header block longer than {MAX_HEADER_BYTES} bytes")
                return None
            length = self._content_length(bytes(self._buf[:end]))
            del self._buf[: end + len(_SEPARATOR)]
            if length > self._max_body:
                dropped = min(length, len(self._buf))
                del self._buf[:dropped]
                self._skip = length - dropped
                return Oversized(length, self._max_body)
            self._need = length
        if len(self._buf) < self._need:
            return None
        body = bytes(self._buf[: self._need])
        del self._buf[: self._need]
        self._need = None
        return Frame(body)

    def _content_length(self, header: bytes) -> int:
        length: int | None = None
        for raw in header.split(b"\r\n"):
            name, sep, value = raw.partition(b":")
            if not sep or not name.strip():
                self._fail(f"malformed header line {raw[:80]!r} (want 'Name: value')")
            if name.strip().lower() == b"content-length":
                text = value.strip()
                if length is not None:
                    self._fail("Content-Length given twice")
                if not text.isdigit() or len(text) > 12:
                    self._fail(f"Content-Length must be a decimal byte count, got {text[:20]!r}")
                length = int(text)
        if length is None:
            self._fail("missing Content-Length header")
        assert length is not None
        return length

    def _fail(self, why: str) -> None:
        self._broken = f"framing error: {why}; closing the connection"
        raise FramingError(self._broken)
