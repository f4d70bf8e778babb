"""The EPC codec: sans-IO, so every test here is plain and synchronous."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hive_rpc.protocol import epc


def frames(*payloads: str) -> bytes:
    return b"".join(epc.encode_payload(p) for p in payloads)


def test_frame_counts_utf8_bytes_and_the_newline() -> None:
    assert epc.encode_payload('(return 1 "é")') == b'000010(return 1 "\xc3\xa9")\n'


def test_messages_round_trip() -> None:
    data = (
        epc.encode_call(1, "ask", [{"question": "Deploy?", "choices": ["yes", "no"]}])
        + epc.encode_return(2, {"id": "x", "status": "pending"})
        + epc.encode_return_error(3, "boom")
        + epc.encode_epc_error(4, "no such method")
        + epc.encode_methods(5)
    )
    assert epc.Decoder().receive_data(data) == [
        epc.Call(1, "ask", [{"question": "Deploy?", "choices": ["yes", "no"]}]),
        epc.Return(2, {"id": "x", "status": "pending"}),
        epc.ReturnError(3, "boom"),
        epc.EpcError(4, "no such method"),
        epc.Methods(5),
    ]


def test_argument_list_that_is_a_plist_decodes_as_a_dict() -> None:
    """What ``(epc:call-deferred m 'ask '(:question "Q" :urgent t))`` sends."""
    (msg,) = epc.Decoder().receive_data(frames('(call 7 ask (:question "Q" :urgent t :x nil))'))
    assert msg == epc.Call(7, "ask", {"question": "Q", "urgent": True, "x": None})


def test_lisp_values_map_to_python() -> None:
    (msg,) = epc.Decoder().receive_data(frames('(return 1 (1 -2 1.5 "a\\"b" t nil () yes [3 4]))'))
    assert msg == epc.Return(1, [1, -2, 1.5, 'a"b', True, None, None, "yes", [3, 4]])


def test_none_false_and_empty_are_all_nil() -> None:
    assert epc.to_sexp([None, False, [], {}, True]) == "(nil nil nil nil t)"


def test_awkward_dict_keys_are_escaped_symbols() -> None:
    text = epc.to_sexp({"a b": 1, "x(y)": 2})
    (msg,) = epc.Decoder().receive_data(frames(f"(return 1 {text})"))
    assert msg == epc.Return(1, {"a b": 1, "x(y)": 2})


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), object(), {1: 2}, {"": 1}, {".": 1}, {"a\nb": 1}],
    ids=lambda v: "object()" if type(v) is object else repr(v),  # same id in every run
)
def test_values_with_no_epc_form_are_refused(value: Any) -> None:
    with pytest.raises(epc.EncodeError):
        epc.to_sexp(value)


@pytest.mark.parametrize(
    ("payload", "why", "uid"),
    [
        ("(call 3 ask", "malformed s-expression", 3),
        ("(call 3 ask ()))", "malformed s-expression", 3),
        ("(call 3 ask ()) (call 4 ask ())", "exactly one s-expression", 3),
        ('"just a string"', "list starting with its kind", None),
        ("(frobnicate 9)", "unknown message kind 'frobnicate'", 9),
        ("(call x ask ())", "integer UID", None),
        ("(call 5 ask 12)", "arguments must be a list", 5),
        ("(call 5)", "want \\(call UID METHOD", 5),
        ("(methods 6 7)", "want \\(methods UID\\)", 6),
        ("(return 8)", "want \\(return UID VALUE\\)", 8),
    ],
)
def test_malformed_messages_are_errors_with_the_uid_when_readable(
    payload: str, why: str, uid: int | None
) -> None:
    decoder = epc.Decoder()
    (err,) = decoder.receive_data(frames(payload))
    assert isinstance(err, epc.EpcProtocolError)
    assert not err.fatal
    assert err.uid == uid
    assert re.search(why, err.message), err.message
    # the stream stays in step
    assert decoder.receive_data(epc.encode_methods(1)) == [epc.Methods(1)]


def test_invalid_utf8_and_empty_frames_are_errors() -> None:
    decoder = epc.Decoder()
    (err,) = decoder.receive_data(b"000003\xff\xfe\n")
    assert isinstance(err, epc.EpcProtocolError)
    assert "not UTF-8" in err.message
    (err,) = decoder.receive_data(b"000000")
    assert isinstance(err, epc.EpcProtocolError)
    assert "empty frame" in err.message
    assert decoder.receive_data(epc.encode_methods(2)) == [epc.Methods(2)]


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    (err,) = epc.Decoder().receive_data(frames("(return 1 " + "(" * 5000 + ")" * 5001))
    assert isinstance(err, epc.EpcProtocolError)
    assert "nested" in err.message


def test_bad_header_is_fatal_and_sticks() -> None:
    decoder = epc.Decoder()
    out = decoder.receive_data(epc.encode_methods(1) + b"hello (methods 2)\n")
    assert out[0] == epc.Methods(1)
    err = out[1]
    assert isinstance(err, epc.EpcProtocolError)
    assert err.fatal
    assert "not 6 hex digits" in err.message
    with pytest.raises(epc.EpcProtocolError, match="not 6 hex digits"):
        decoder.receive_data(epc.encode_methods(3))


def test_oversized_frame_is_skipped_and_reported_with_its_uid() -> None:
    decoder = epc.Decoder(max_payload=100)
    big = epc.encode_payload('(call 42 ask ("' + "x" * 500 + '"))')
    out: list[Any] = []
    for i in range(0, len(big), 37):  # in pieces: the skip spans several reads
        out += decoder.receive_data(big[i : i + 37])
    out += decoder.receive_data(epc.encode_methods(43))
    assert len(out) == 2
    assert isinstance(out[0], epc.EpcProtocolError)
    assert out[0].uid == 42
    assert "over the 100-byte limit" in out[0].message
    assert out[1] == epc.Methods(43)


def test_nothing_received_is_evaluated() -> None:
    """Symbols come back as plain names; reader tricks stay inert text."""
    (msg,) = epc.Decoder().receive_data(frames('(call 1 ask ((delete-file "x") #\'ignore ?a))'))
    assert isinstance(msg, epc.Call)
    assert msg.args == [["delete-file", "x"], "#'ignore", "?a"]


keys = st.text(min_size=1, max_size=8).filter(lambda k: k != "." and not re.search(r"[\t-\r]", k))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=4)
        | st.dictionaries(keys, inner, min_size=1, max_size=4)
    ),
    max_leaves=12,
)


def lisp_normal(value: Any) -> Any:
    """What a value comes back as: False and empty containers are nil (None)."""
    if value is False or value in ([], {}):
        return None
    if isinstance(value, list):
        return [lisp_normal(x) for x in value]
    if isinstance(value, dict):
        return {k: lisp_normal(v) for k, v in value.items()}
    return value


def ambiguous(value: Any) -> bool:
    """A list whose even items are strings starting with ':' reads back as a plist,
    and a string key reads back from a keyword: skip those few shapes."""
    if isinstance(value, list):
        return any(ambiguous(x) for x in value) or any(
            isinstance(x, str) and x.startswith(":") for x in value
        )
    if isinstance(value, dict):
        return any(ambiguous(v) for v in value.values())
    return False


@given(json_values)
def test_values_round_trip_up_to_nil(value: Any) -> None:
    if ambiguous(value):
        return
    (msg,) = epc.Decoder().receive_data(epc.encode_return(1, value))
    assert msg == epc.Return(1, lisp_normal(value))


@given(st.lists(st.binary(max_size=40), max_size=6), st.integers(1, 50))
def test_any_split_of_the_stream_decodes_the_same(parts: list[bytes], size: int) -> None:
    data = b"".join(epc.encode_return(i, p.hex()) for i, p in enumerate(parts))
    decoder = epc.Decoder()
    out: list[Any] = []
    for i in range(0, len(data), size):
        out += decoder.receive_data(data[i : i + size])
    assert out == [epc.Return(i, p.hex() or "") for i, p in enumerate(parts)]


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise_out_of_the_decoder(junk: bytes) -> None:
    decoder = epc.Decoder()
    out = decoder.receive_data(junk)
    assert all(isinstance(x, epc.Message | epc.EpcProtocolError) for x in out)
