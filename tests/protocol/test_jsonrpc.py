"""JSON-RPC 2.0 parsing and the sans-IO Endpoint."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MESSAGE_TOO_LARGE,
    PARSE_ERROR,
    Endpoint,
    ErrorResponse,
    FramingError,
    Message,
    Notification,
    Request,
    Response,
    RpcError,
    dumps,
    loads,
    parse_message,
    peek_id,
)

JSONRPC_CODES = {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS}


def refused(body: bytes) -> RpcError:
    with pytest.raises(RpcError) as info:
        parse_message(body)
    err = info.value
    assert err.message
    assert str(err) == err.message
    return err


def obj(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


# --- well-formed messages ----------------------------------------------------------


def test_request() -> None:
    msg = parse_message(obj(jsonrpc="2.0", id=7, method="hive/ask", params={"question": "q"}))
    assert msg == Request(7, "hive/ask", {"question": "q"})


def test_request_with_string_id_and_no_params() -> None:
    assert parse_message(obj(jsonrpc="2.0", id="a-1", method="hive/status")) == Request(
        "a-1", "hive/status", {}
    )


def test_null_params_mean_no_params() -> None:
    assert parse_message(obj(jsonrpc="2.0", id=1, method="m", params=None)) == Request(1, "m", {})


def test_an_empty_array_means_no_params() -> None:
    """Neovim's vim.lsp encodes an empty Lua table (its params for a method without
    any) as ``[]``; a non-empty array is positional and still refused below."""
    assert parse_message(b'{"jsonrpc":"2.0","id":1,"method":"m","params":[]}') == Request(
        1, "m", {}
    )
    assert parse_message(b'{"jsonrpc":"2.0","method":"m","params":[]}') == Notification("m", {})


def test_notification() -> None:
    msg = parse_message(obj(jsonrpc="2.0", method="hive/typing", params={"id": "p"}))
    assert msg == Notification("hive/typing", {"id": "p"})


def test_response() -> None:
    assert parse_message(obj(jsonrpc="2.0", id=3, result={"ok": True})) == Response(3, {"ok": True})


def test_response_with_null_result() -> None:
    assert parse_message(obj(jsonrpc="2.0", id="x", result=None)) == Response("x", None)


def test_error_response() -> None:
    body = obj(jsonrpc="2.0", id=4, error={"code": -32001, "message": "no", "data": {"k": 1}})
    assert parse_message(body) == ErrorResponse(4, -32001, "no", {"k": 1})


def test_error_response_with_null_id() -> None:
    body = obj(jsonrpc="2.0", id=None, error={"code": -32700, "message": "bad"})
    assert parse_message(body) == ErrorResponse(None, -32700, "bad", None)


def test_non_ascii_and_astral_text_survive() -> None:
    body = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"héllo \\ud83d\\ude00 ✓"}}'
    msg = parse_message(body.encode())
    assert isinstance(msg, Request)
    assert msg.params == {"q": "héllo \U0001f600 ✓"}


def test_escaped_backslash_u_is_not_a_surrogate() -> None:
    # the JSON text "\\ud800" is a backslash followed by "ud800", which is fine
    msg = parse_message(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"\\\\ud800"}}')
    assert isinstance(msg, Request)
    assert msg.params == {"q": "\\ud800"}


# --- refused messages --------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "msg_id", "words"),
    [
        # not JSON at all
        (b"", PARSE_ERROR, None, "invalid JSON"),
        (b"{", PARSE_ERROR, None, "invalid JSON"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m",}', PARSE_ERROR, None, "invalid JSON"),
        (b"\xff\xfe{}", PARSE_ERROR, None, "not UTF-8"),
        (b'{"jsonrpc":"2.0","id":1,"method":"\xc3"}', PARSE_ERROR, None, "not UTF-8"),
        (b'"\xed\xa0\x80"', PARSE_ERROR, None, "not UTF-8"),  # a surrogate encoded in UTF-8
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}', PARSE_ERROR, None, "NaN"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":Infinity}}', -32700, None, "Inf"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":-Infinity}}', -32700, None, "Inf"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1e400}}', -32700, None, "range"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":-1e999}}', -32700, None, "range"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"\\ud800"}}', -32700, None, "surr"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"a\\uDFFFb"}}', -32700, None, "surr"),
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"\\udc00":1}}', -32700, None, "surr"),
        (b'"\\ude00\\ud83d"', PARSE_ERROR, None, "surrogate"),  # a pair in the wrong order
        (b"[" * 100_000, PARSE_ERROR, None, "nested too deeply"),
        (b"[" * 100_000 + b"]" * 100_000, PARSE_ERROR, None, "nested too deeply"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, PARSE_ERROR, None, "nested too deeply"),
        # JSON, but not a JSON-RPC 2.0 message
        (b'[{"jsonrpc":"2.0","id":1,"method":"m"}]', INVALID_REQUEST, None, "batch"),
        (b"[]", INVALID_REQUEST, None, "batch"),
        (b'"hello"', INVALID_REQUEST, None, "JSON object"),
        (b"42", INVALID_REQUEST, None, "JSON object"),
        (b"null", INVALID_REQUEST, None, "JSON object"),
        (obj(id=1, method="m"), INVALID_REQUEST, 1, '"jsonrpc"'),
        (obj(jsonrpc="1.0", id="r", method="m"), INVALID_REQUEST, "r", '"jsonrpc"'),
        (obj(jsonrpc=2.0, id=5, method="m"), INVALID_REQUEST, 5, '"jsonrpc"'),
        (obj(jsonrpc="2.0", id=1.5, method="m"), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=True, method="m"), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=False, method="m"), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id={"a": 1}, method="m"), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=[1], method="m"), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=None, method="m"), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=1.0, result=1), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=True, result=1), INVALID_REQUEST, None, '"id"'),
        (obj(jsonrpc="2.0", id=9, method=5), INVALID_REQUEST, 9, '"method"'),
        (obj(jsonrpc="2.0", id=9, method=None), INVALID_REQUEST, 9, '"method"'),
        (obj(jsonrpc="2.0", id="s", method=["m"]), INVALID_REQUEST, "s", '"method"'),
        (obj(jsonrpc="2.0", id=9, method=""), INVALID_REQUEST, 9, '"method"'),
        (obj(jsonrpc="2.0", method=5), INVALID_REQUEST, None, '"method"'),
        (obj(jsonrpc="2.0", id=3, method="m", params=[1, 2]), INVALID_PARAMS, 3, '"params"'),
        (obj(jsonrpc="2.0", id="z", method="m", params="x"), INVALID_PARAMS, "z", '"params"'),
        (obj(jsonrpc="2.0", id=3, method="m", params=0), INVALID_PARAMS, 3, '"params"'),
        (obj(jsonrpc="2.0", method="m", params=[1]), INVALID_PARAMS, None, '"params"'),
        (obj(jsonrpc="2.0"), INVALID_REQUEST, None, "neither"),
        (obj(jsonrpc="2.0", id=1), INVALID_REQUEST, None, "neither"),
        (obj(jsonrpc="2.0", result=1), INVALID_REQUEST, None, "neither"),
        (obj(jsonrpc="2.0", id=1, error="bad"), INVALID_REQUEST, None, "neither"),
        (obj(jsonrpc="2.0", id=1, error={"message": "x"}), INVALID_REQUEST, None, "neither"),
        (obj(jsonrpc="2.0", id=1, error={"code": "1"}), INVALID_REQUEST, None, "neither"),
    ],
)
def test_refused_with_code_and_id(body: bytes, code: int, msg_id: Any, words: str) -> None:
    err = refused(body)
    assert (err.code, err.id) == (code, msg_id)
    assert words in err.message


def test_parse_error_says_where() -> None:
    err = refused(b'{"jsonrpc": "2.0", "id": 1, "method": }')
    assert "line 1 column" in err.message


def test_not_utf8_says_which_byte() -> None:
    assert "at byte 3" in refused(b'"ab\xff"').message


def at_stack_depth(frames: int, body: bytes) -> Message | RpcError:
    if frames:
        return at_stack_depth(frames - 1, body)
    try:
        return parse_message(body)
    except RpcError as e:
        return e


def test_deep_nesting_is_a_parse_error_whatever_the_callers_stack() -> None:
    # Near the recursion limit, decoding may succeed where re-encoding would not;
    # the surrogate check must not turn that into a RecursionError.
    limit = sys.getrecursionlimit()
    for nesting in range(limit - 200, limit + 10, 5):
        body = b"[" * nesting + b'"\\ud800"' + b"]" * nesting
        for frames in range(0, 300, 15):
            outcome = at_stack_depth(frames, body)
            assert isinstance(outcome, RpcError)
            assert outcome.code == PARSE_ERROR


def test_loads_and_dumps_round_trip() -> None:
    value = {"s": "é✓\U0001f600", "n": [1, -2.5, None, True], "o": {}}
    assert loads(dumps(value)) == value
    assert dumps({"a": "é"}) == '{"a":"é"}'.encode()


def test_dumps_refuses_nan() -> None:
    with pytest.raises(ValueError, match="JSON"):
        dumps({"x": float("nan")})


# --- Endpoint --------------------------------------------------------------------


def test_endpoint_builds_what_it_parses() -> None:
    client, server = Endpoint(), Endpoint()
    id1, data1 = client.request("hive/ask", {"question": "q"})
    id2, data2 = client.request("hive/status")
    assert id1 != id2
    note = client.notify("hive/typing", {"id": "p"})
    assert server.receive_data(data1 + note + data2) == [
        Request(id1, "hive/ask", {"question": "q"}),
        Notification("hive/typing", {"id": "p"}),
        Request(id2, "hive/status", {}),
    ]
    reply = server.result(id1, {"id": "p"}) + server.error(id2, -32601, "nope", {"k": 1})
    assert client.receive_data(reply) == [
        Response(id1, {"id": "p"}),
        ErrorResponse(id2, -32601, "nope", {"k": 1}),
    ]
    assert client.receive_data(server.error(None, PARSE_ERROR, "bad")) == [
        ErrorResponse(None, PARSE_ERROR, "bad")
    ]


def test_endpoint_turns_bad_messages_into_errors_and_carries_on() -> None:
    ep = Endpoint()
    out = ep.receive_data(
        encode_frame(b"{oops")
        + encode_frame(obj(jsonrpc="2.0", id=2, method="m", params=[1]))
        + encode_frame(obj(jsonrpc="2.0", id=3, method="m"))
    )
    assert [type(m) for m in out] == [RpcError, RpcError, Request]
    assert isinstance(out[0], RpcError)
    assert isinstance(out[1], RpcError)
    assert (out[0].code, out[0].id) == (PARSE_ERROR, None)
    assert (out[1].code, out[1].id) == (INVALID_PARAMS, 2)
    assert out[2] == Request(3, "m", {})


def test_endpoint_oversized_becomes_message_too_large() -> None:
    ep = Endpoint(max_body=16)
    big = obj(jsonrpc="2.0", id=1, method="hive/ask", params={"question": "x" * 40})
    out = ep.receive_data(encode_frame(big) + encode_frame(b'{"id":2}'))
    assert len(out) == 2
    err = out[0]
    assert isinstance(err, RpcError)
    assert err.code == MESSAGE_TOO_LARGE
    assert err.id is None
    assert err.data == {"limit": 16, "length": len(big)}
    assert str(len(big)) in err.message
    assert "16" in err.message
    # the frame after the oversized one was decoded (to its own error), not swallowed
    assert isinstance(out[1], RpcError)
    assert (out[1].code, out[1].id) == (INVALID_REQUEST, 2)


def test_bad_notification_is_refused_but_not_answered() -> None:
    body = obj(jsonrpc="2.0", method="hive/typing", params=["p"])
    err = refused(body)
    assert (err.code, err.id, err.notification) == (INVALID_PARAMS, None, True)
    # the Endpoint gives back only what must be answered: nothing for this one
    ep = Endpoint()
    assert ep.receive_data(encode_frame(body) + encode_frame(obj(jsonrpc="2.0", method="m"))) == [
        Notification("m", {})
    ]


@pytest.mark.parametrize(
    "body",
    [
        obj(jsonrpc="2.0", id=1, method="m", params=[1]),  # a request: answered
        obj(jsonrpc="2.0", id=None, method="m", params=[1]),  # id null: not a notification
        obj(jsonrpc="2.0", method=5),  # not a valid notification: an invalid request
        obj(method="m"),
        b"{not json",
    ],
)
def test_only_notifications_go_unanswered(body: bytes) -> None:
    assert not refused(body).notification
    [err] = Endpoint().receive_data(encode_frame(body))
    assert isinstance(err, RpcError)


def test_endpoint_framing_error_comes_last_and_sticks() -> None:
    ep = Endpoint()
    good = encode_frame(b'{"jsonrpc":"2.0","id":1,"method":"hive/status"}')
    first, broken = ep.receive_data(good + b"Content-Length: lots\r\n\r\n")
    assert isinstance(first, Request)  # what came before the break is still delivered
    assert isinstance(broken, FramingError)
    assert "Content-Length" in str(broken)
    with pytest.raises(FramingError):
        ep.receive_data(encode_frame(b"{}"))


# --- properties --------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
finite_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])
message_like = st.dictionaries(
    field_names,
    json_values
    | st.sampled_from(["2.0", "hive/ask", "hive/status", 0, 1, "id"])
    | st.fixed_dictionaries({"code": st.integers(), "message": json_values}),
    max_size=6,
)


def encode_json(value: Any) -> bytes:
    """Encode as Python would, NaN and Infinity included, so they reach the parser."""
    return json.dumps(value, allow_nan=True).encode()


body_strategy = st.one_of(
    st.binary(max_size=200),
    json_values.map(encode_json),
    message_like.map(encode_json),
    st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(min_value=1, max_value=3000).map(lambda n: b'{"a":' * n + b"0" + b"}" * n),
    st.sampled_from([b'"\\ud800"', b'"\\udfff\\ud800"', b"1e400", b"-1e400", b"NaN"]),
    st.sampled_from([b"1e400", b"-2E+999", b"NaN", b'"\\udc00"', b"Infinity"]).map(
        lambda bad: b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":%s}}' % bad
    ),
)


def check_outcome(item: object, body_len: int, max_body: int) -> None:
    assert isinstance(item, Request | Notification | Response | ErrorResponse | RpcError)
    if isinstance(item, RpcError):
        assert isinstance(item.message, str)
        assert item.message
        assert item.id is None or (isinstance(item.id, str | int) and not isinstance(item.id, bool))
        if body_len > max_body:
            assert item.code == MESSAGE_TOO_LARGE
        else:
            assert item.code in JSONRPC_CODES
    else:
        assert body_len <= max_body
        if isinstance(item, Request | Notification):
            assert isinstance(item.method, str)
            assert item.method
            assert isinstance(item.params, dict)
        if isinstance(item, Request | Response):
            assert isinstance(item.id, str | int)
            assert not isinstance(item.id, bool)
        # whatever was accepted can be sent on again
        for part in ("params", "result", "data"):
            dumps(getattr(item, part, None))


def outcome_key(item: Message | RpcError) -> object:
    if isinstance(item, RpcError):
        return ("error", item.code, item.id, item.message, item.data)
    return item


@settings(max_examples=300)
@given(st.lists(body_strategy, max_size=6), st.sampled_from([64, 1 << 20]))
def test_endpoint_never_raises_on_any_frame_bodies(body_list: list[bytes], max_body: int) -> None:
    one_by_one = []
    for body in body_list:
        out = Endpoint(max_body).receive_data(encode_frame(body))
        # one outcome per frame, except a bad notification, which is not answered
        if not out:
            with pytest.raises(RpcError) as info:
                parse_message(body)
            assert info.value.notification
            assert len(body) <= max_body
        assert len(out) <= 1
        for item in out:
            check_outcome(item, len(body), max_body)
        one_by_one += out
    together = Endpoint(max_body).receive_data(b"".join(encode_frame(b) for b in body_list))
    assert [outcome_key(x) for x in together] == [outcome_key(x) for x in one_by_one]


@given(body_strategy)
def test_parse_message_raises_only_rpc_error(body: bytes) -> None:
    try:
        msg = parse_message(body)
    except RpcError as e:
        check_outcome(e, len(body), len(body))
    else:
        check_outcome(msg, len(body), len(body))


@given(
    st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=10),
    st.text(min_size=1, max_size=20),
    st.dictionaries(st.text(max_size=8), finite_json_values, max_size=5),
)
def test_requests_round_trip(msg_id: int | str, method: str, params: dict[str, Any]) -> None:
    ep = Endpoint()
    body = dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    assert ep.receive_data(encode_frame(body)) == [Request(msg_id, method, params)]
    assert ep.receive_data(ep.notify(method, params)) == [Notification(method, params)]
    assert ep.receive_data(ep.result(msg_id, params)) == [Response(msg_id, params)]


@pytest.mark.parametrize(
    ("text", "msg_id"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"m"}', 7),
        ('{"method":"m","params":{"id":3,"a":[{"id":4}]},"id":"x"}', "x"),
        ('{"a":"\\"id\\":5","id":-12 }', -12),  # "id" inside a string is no key
        ('{"x": "a}b", "id": "q"}', "q"),
        ('{"\\u0069d":9}', 9),
        ('{"x":[[]],"id":1}', 1),
        ('{"id":1.5}', None),
        ('{"id":null}', None),
        ('{"id":true}', None),
        ('{"id":"\\ud800"}', None),
        ('[{"id":1}]', None),
        ('  {"x":{"id":2}}', None),
        ('{"x":[[]]],"id":1}', None),  # more closed than opened
        ('{"id":12', None),  # cut off: 12 may be 123
        ('{"id":"ab', None),
        ('{"q":"' + "a" * 70_000 + '","id":1}', None),  # past PEEK_BYTES
    ],
)
def test_peek_id_reads_a_top_level_id_or_nothing(text: str, msg_id: object) -> None:
    assert peek_id(text) == msg_id
    assert peek_id(text.encode()) == msg_id


def test_a_message_too_deep_to_decode_is_refused_with_its_id() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RpcError, match="nested too deeply") as refused:
        parse_message(b'{"jsonrpc":"2.0","id":"r7","method":"m","params":{"a":%s}}' % deep.encode())
    assert (refused.value.code, refused.value.id) == (PARSE_ERROR, "r7")
