"""The Content-Length frame decoder: sans-IO, so every test here is plain and synchronous."""

from __future__ import annotations

import pytest
from fuzzing import mutate
from hypothesis import given, settings
from hypothesis import strategies as st

from hive_rpc.protocol.framing import (
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    Frame,
    FrameDecoder,
    FramingError,
    Oversized,
    encode_frame,
)

Event = Frame | Oversized


def feed(decoder: FrameDecoder, *chunks: bytes) -> list[Event]:
    """Feed each chunk and collect every event, as a reader loop would."""
    events: list[Event] = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        while (event := decoder.next_event()) is not None:
            events.append(event)
    return events


def bodies(events: list[Event]) -> list[bytes]:
    return [e.body for e in events if isinstance(e, Frame)]


def assert_broken(decoder: FrameDecoder, why: str) -> None:
    """The decoder refuses everything after a framing error, repeating the reason."""
    with pytest.raises(FramingError, match=why):
        decoder.next_event()
    with pytest.raises(FramingError, match=why):
        decoder.receive_data(encode_frame(b"{}"))
    with pytest.raises(FramingError, match=why):
        decoder.next_event()


# --- well-formed streams -----------------------------------------------------------


def test_encode_frame_is_content_length_in_bytes() -> None:
    body = '{"q":"héllo ✓"}'.encode()
    assert encode_frame(body) == b"Content-Length: %d\r\n\r\n" % len(body) + body
    assert len(body) > len('{"q":"héllo ✓"}')  # counted in bytes, not characters


def test_round_trip() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"hive/status"}'
    assert feed(FrameDecoder(), encode_frame(body)) == [Frame(body)]


def test_empty_body_round_trips() -> None:
    assert feed(FrameDecoder(), encode_frame(b"")) == [Frame(b"")]


def test_nothing_until_the_frame_is_complete() -> None:
    data = encode_frame(b"0123456789")
    decoder = FrameDecoder()
    assert feed(decoder, data[:-1]) == []
    assert feed(decoder, data[-1:]) == [Frame(b"0123456789")]
    assert decoder.next_event() is None


def test_bytes_fed_one_at_a_time() -> None:
    frames = [b'{"a":1}', b"", b'{"b":"' + b"x" * 300 + b'"}']
    data = b"".join(encode_frame(b) for b in frames)
    chunks = [data[i : i + 1] for i in range(len(data))]
    assert bodies(feed(FrameDecoder(), *chunks)) == frames


def test_several_frames_in_one_chunk() -> None:
    frames = [b"[%d]" % i for i in range(50)]
    events = feed(FrameDecoder(), b"".join(encode_frame(b) for b in frames))
    assert events == [Frame(b) for b in frames]


def test_frame_split_across_header_and_body_boundaries() -> None:
    data = encode_frame(b'{"x":"y"}') + encode_frame(b"[1]")
    decoder = FrameDecoder()
    # cut inside "Content-Length", inside the separator and inside the body
    assert feed(decoder, data[:7], data[7:18], data[18:21]) == []
    assert feed(decoder, data[21:25], data[25:]) == [Frame(b'{"x":"y"}'), Frame(b"[1]")]


def test_extra_headers_are_accepted_and_ignored() -> None:
    data = (
        b"Content-Length: 2\r\n"
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
        b"X-Anything: at all\r\n\r\n{}"
    )
    assert feed(FrameDecoder(), data) == [Frame(b"{}")]


def test_content_type_before_content_length() -> None:
    data = b"Content-Type: application/json\r\nContent-Length: 3\r\n\r\n[1]"
    assert feed(FrameDecoder(), data) == [Frame(b"[1]")]


@pytest.mark.parametrize("name", [b"content-length", b"CONTENT-LENGTH", b"cOnTeNt-LeNgTh"])
def test_header_name_is_case_insensitive(name: bytes) -> None:
    assert feed(FrameDecoder(), name + b": 2\r\n\r\n{}") == [Frame(b"{}")]


def test_whitespace_around_the_value_is_allowed() -> None:
    assert feed(FrameDecoder(), b"Content-Length:2\r\n\r\n{}") == [Frame(b"{}")]
    assert feed(FrameDecoder(), b"Content-Length:   2  \r\n\r\n{}") == [Frame(b"{}")]


def test_header_of_exactly_max_header_bytes_is_accepted_however_it_arrives() -> None:
    header = b"Content-Length: 2\r\nX-Pad: "
    header += b"p" * (MAX_HEADER_BYTES - len(header))
    assert len(header) == MAX_HEADER_BYTES
    data = header + b"\r\n\r\n{}"
    assert feed(FrameDecoder(), data) == [Frame(b"{}")]
    # Byte by byte, the separator is still arriving when the buffer passes
    # MAX_HEADER_BYTES; that alone must not be taken for an over-long header.
    assert feed(FrameDecoder(), *[data[i : i + 1] for i in range(len(data))]) == [Frame(b"{}")]


# --- malformed headers: FramingError, and the decoder stays broken ------------------


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (b"Content-Type: application/json\r\n\r\n", "missing Content-Length"),
        (b"\r\n\r\n", "malformed header line"),
        (b"Content-Length: abc\r\n\r\n", "Content-Length must be a decimal byte count"),
        (b"Content-Length: -1\r\n\r\n", "Content-Length must be a decimal byte count"),
        (b"Content-Length: 1.5\r\n\r\n", "Content-Length must be a decimal byte count"),
        (b"Content-Length: 0x10\r\n\r\n", "Content-Length must be a decimal byte count"),
        (b"Content-Length: \r\n\r\n", "Content-Length must be a decimal byte count"),
        (b"Content-Length: 9999999999999\r\n\r\n", "Content-Length must be a decimal"),
        (b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "Content-Length given twice"),
        (b"Content-Length: 2\r\ncontent-length: 3\r\n\r\n{}", "Content-Length given twice"),
        (b"Content-Length 2\r\n\r\n{}", "malformed header line"),
        (b"Content-Length: 2\r\nno colon here\r\n\r\n{}", "malformed header line"),
        (b": 2\r\n\r\n{}", "malformed header line"),
        (b'{"jsonrpc":"2.0"}\r\n\r\n', "missing Content-Length"),  # bare JSON, no header
    ],
)
def test_malformed_header_is_a_framing_error(header: bytes, why: str) -> None:
    decoder = FrameDecoder()
    with pytest.raises(FramingError, match=why) as info:
        feed(decoder, header)
    assert "closing the connection" in str(info.value)
    assert_broken(decoder, why)


def test_header_block_over_max_header_bytes() -> None:
    decoder = FrameDecoder()
    why = f"header block longer than {MAX_HEADER_BYTES} bytes"
    with pytest.raises(FramingError, match=why):
        feed(decoder, b"X" * (MAX_HEADER_BYTES + len(b"\r\n\r\n")))
    assert_broken(decoder, why)


def test_header_one_byte_over_the_limit_fails_whole_or_byte_by_byte() -> None:
    header = b"Content-Length: 2\r\nX-Pad: "
    header += b"p" * (MAX_HEADER_BYTES + 1 - len(header))
    data = header + b"\r\n\r\n{}"
    with pytest.raises(FramingError, match="header block longer"):
        feed(FrameDecoder(), data)
    with pytest.raises(FramingError, match="header block longer"):
        feed(FrameDecoder(), *[data[i : i + 1] for i in range(len(data))])


def test_endless_header_fails_without_waiting_for_a_separator() -> None:
    decoder = FrameDecoder()
    chunk = b"Content-Length: 2\r\nX-Loop: " + b"a" * 100
    with pytest.raises(FramingError, match="header block longer"):
        feed(decoder, *[chunk] * 100)


def test_frames_before_the_bad_header_are_delivered_first() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(encode_frame(b"[1]") + b"Content-Length: x\r\n\r\n")
    assert decoder.next_event() == Frame(b"[1]")
    with pytest.raises(FramingError, match="decimal byte count"):
        decoder.next_event()
    assert_broken(decoder, "decimal byte count")


# --- oversized bodies --------------------------------------------------------------


def test_oversized_body_is_reported_and_skipped_in_one_chunk() -> None:
    decoder = FrameDecoder(max_body=10)
    data = encode_frame(b"x" * 11) + encode_frame(b"[ok]")
    assert feed(decoder, data) == [Oversized(11, 10), Frame(b"[ok]")]


def test_body_of_exactly_max_body_is_accepted() -> None:
    assert feed(FrameDecoder(max_body=10), encode_frame(b"y" * 10)) == [Frame(b"y" * 10)]


def test_oversized_is_reported_at_the_header_before_the_body_arrives() -> None:
    decoder = FrameDecoder(max_body=10)
    assert feed(decoder, b"Content-Length: 1000\r\n\r\n") == [Oversized(1000, 10)]


def test_oversized_body_arriving_in_later_chunks_is_skipped() -> None:
    decoder = FrameDecoder(max_body=10)
    # The body holds what looks like a whole frame: it must be skipped, not decoded.
    inner = encode_frame(b'{"smuggled":1}')
    body = inner + b"z" * (100 - len(inner))
    data = encode_frame(body) + encode_frame(b"[next]")
    header_end = data.index(b"\r\n\r\n") + 4
    events = feed(decoder, data[: header_end + 3])
    assert events == [Oversized(100, 10)]
    events = feed(decoder, data[header_end + 3 : header_end + 40])
    events += feed(decoder, data[header_end + 40 : header_end + 99])
    assert events == []
    # the last body byte and the next frame together
    assert feed(decoder, data[header_end + 99 :]) == [Frame(b"[next]")]


def test_oversized_skip_ends_exactly_at_a_chunk_boundary() -> None:
    decoder = FrameDecoder(max_body=4)
    assert feed(decoder, b"Content-Length: 8\r\n\r\n") == [Oversized(8, 4)]
    assert feed(decoder, b"12345678") == []
    assert feed(decoder, encode_frame(b"[1]")) == [Frame(b"[1]")]


def test_oversized_byte_by_byte_then_a_frame() -> None:
    data = encode_frame(b"q" * 30) + encode_frame(b"{}")
    events = feed(FrameDecoder(max_body=8), *[data[i : i + 1] for i in range(len(data))])
    assert events == [Oversized(30, 8), Frame(b"{}")]


def test_several_oversized_in_a_row() -> None:
    data = encode_frame(b"a" * 20) + encode_frame(b"b" * 30) + encode_frame(b"ok")
    assert feed(FrameDecoder(max_body=5), data) == [
        Oversized(20, 5),
        Oversized(30, 5),
        Frame(b"ok"),
    ]


def test_default_limit_is_max_body_bytes() -> None:
    decoder = FrameDecoder()
    too_big = b"Content-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1)
    assert feed(decoder, too_big) == [Oversized(MAX_BODY_BYTES + 1, MAX_BODY_BYTES)]
    assert feed(decoder, b"\0" * (MAX_BODY_BYTES + 1) + encode_frame(b"[]")) == [Frame(b"[]")]


# --- properties --------------------------------------------------------------------


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    pieces, start = [], 0
    for p in points:
        pieces.append(data[start:p])
        start = p
    pieces.append(data[start:])
    return pieces


@given(
    st.lists(st.binary(max_size=300), max_size=12),
    st.lists(st.integers(min_value=0, max_value=4000), max_size=40),
)
def test_any_bodies_survive_any_split(body_list: list[bytes], cuts: list[int]) -> None:
    data = b"".join(encode_frame(b) for b in body_list)
    events = feed(FrameDecoder(), *split_at(data, cuts))
    assert events == [Frame(b) for b in body_list]


@given(
    st.lists(st.binary(max_size=64), max_size=8),
    st.integers(min_value=0, max_value=40),
    st.lists(st.integers(min_value=0, max_value=600), max_size=20),
)
def test_oversized_bodies_are_skipped_under_any_split(
    body_list: list[bytes], limit: int, cuts: list[int]
) -> None:
    data = b"".join(encode_frame(b) for b in body_list)
    events = feed(FrameDecoder(max_body=limit), *split_at(data, cuts))
    expected = [Frame(b) if len(b) <= limit else Oversized(len(b), limit) for b in body_list]
    assert events == expected


TOKENS = [
    b"Content-Length: ",
    b"content-length:",
    b"Content-Type: x",
    b"\r\n",
    b"\r\n\r\n",
    b":",
    b"0",
    b"2",
    b"99999",
    b"{}",
    b"-",
    b" ",
]

header_soup = st.lists(st.sampled_from(TOKENS) | st.binary(max_size=8), max_size=30).map(b"".join)
edit = st.tuples(st.integers(0, 2), st.integers(0, 10_000), st.integers(0, 255))
hostile_stream = st.one_of(
    st.binary(max_size=600),
    header_soup,
    st.builds(
        mutate,
        st.lists(st.binary(max_size=40), max_size=6).map(
            lambda bs: b"".join(encode_frame(b) for b in bs)
        ),
        st.lists(edit, max_size=6),
    ),
)


def decode_all(chunks: list[bytes], max_body: int) -> tuple[list[Event], str | None]:
    """Events up to the first FramingError (and its text).  Fails on anything else,
    and on more events than the bytes could possibly hold (a decoder that loops)."""
    decoder = FrameDecoder(max_body)
    budget = sum(len(c) for c in chunks) + 1
    events: list[Event] = []
    error: str | None = None
    try:
        for chunk in chunks:
            decoder.receive_data(chunk)
            while (event := decoder.next_event()) is not None:
                events.append(event)
                assert len(events) <= budget, "decoder keeps producing events"
    except FramingError as e:
        error = str(e)
    if error is not None:
        assert error.startswith("framing error: ")
        with pytest.raises(FramingError):
            decoder.next_event()
        with pytest.raises(FramingError):
            decoder.receive_data(b"Content-Length: 0\r\n\r\n")
    return events, error


@settings(max_examples=300)
@given(
    hostile_stream,
    st.lists(st.integers(min_value=0, max_value=700), max_size=20),
    st.sampled_from([0, 4, 64, MAX_BODY_BYTES]),
)
def test_hostile_streams_only_ever_raise_framing_error(
    data: bytes, cuts: list[int], max_body: int
) -> None:
    chunked = decode_all(split_at(data, cuts), max_body)
    # and the outcome does not depend on how the bytes were cut up
    assert chunked == decode_all([data], max_body)
    events, _ = chunked
    for event in events:
        if isinstance(event, Frame):
            assert len(event.body) <= max_body
        else:
            assert event.length > event.limit == max_body
