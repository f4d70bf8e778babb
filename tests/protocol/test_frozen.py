"""The codecs' messages keep what they had as frozen dataclasses (protocol/frozen.py).

Request, Notification, Response, ErrorResponse, Frame and Oversized were
``@dataclass(frozen=True, slots=True)``; they are ``Frozen`` records now, so that a
one-shot command does not import ``dataclasses``.  The hub, the faces and the tests
compare, hash, print and copy them: each of those is checked here as the dataclasses
behaved (these tests pass on the dataclasses too, but for ``test_no_other_attribute``).
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from hive_rpc.protocol.framing import Frame, Oversized
from hive_rpc.protocol.jsonrpc import ErrorResponse, Notification, Request, Response

EXAMPLES: list[Any] = [
    Request(1, "hive/ask", {"question": "Deploy?"}),
    Request("hub-1", "hive/prompt"),
    Notification("hive/prompt", {"id": "p1"}),
    Response(7, {"ok": True}),
    ErrorResponse(None, -32700, "invalid JSON"),
    ErrorResponse(3, -32001, "no prompt", {"kind": "prompt_not_found"}),
    Frame(b"{}"),
    Oversized(2 << 20, 1 << 20),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=repr)
def test_equal_to_an_equal_record_of_its_class_only(message: Any) -> None:
    fields = [getattr(message, name) for name in message.__match_args__]
    assert message == type(message)(*copy.deepcopy(fields))
    assert message != tuple(fields)
    assert [message] == [type(message)(*fields)]


def test_records_of_different_classes_with_equal_fields_differ() -> None:
    assert Response(1, "x") != Request(1, "x")
    assert Notification("m", {}) != Response("m", {})
    assert Frame(b"") != b""


def test_fields_in_order_with_their_defaults() -> None:
    assert Request(1, "m").params == {}
    assert Notification("m").params == {}
    assert ErrorResponse(1, -32603, "boom").data is None
    assert Request.__match_args__ == ("id", "method", "params")
    assert ErrorResponse.__match_args__ == ("id", "code", "message", "data")
    assert Request(1, "m").params is not Request(2, "m").params  # a new dict each


def test_repr_is_the_dataclass_repr() -> None:
    assert repr(Request(1, "m", {"a": 1})) == "Request(id=1, method='m', params={'a': 1})"
    assert repr(ErrorResponse(None, -1, "no")) == (
        "ErrorResponse(id=None, code=-1, message='no', data=None)"
    )
    assert repr(Oversized(5, 4)) == "Oversized(length=5, limit=4)"


def test_hash_of_the_fields_and_unhashable_with_a_dict() -> None:
    assert hash(Frame(b"ab")) == hash(Frame(b"ab"))
    assert len({Oversized(5, 4), Oversized(5, 4), Oversized(6, 4)}) == 2
    assert len({Response(1, "a"), Response(1, "a")}) == 1
    with pytest.raises(TypeError):
        hash(Request(1, "m", {}))


@pytest.mark.parametrize("message", EXAMPLES, ids=repr)
def test_frozen(message: Any) -> None:
    name = message.__match_args__[0]
    with pytest.raises(AttributeError):
        setattr(message, name, "changed")
    with pytest.raises(AttributeError):
        delattr(message, name)


def test_no_other_attribute() -> None:
    """Nor an attribute that is no field (Python 3.11's frozen slots dataclasses
    raised a TypeError from their ``super()`` call here)."""
    with pytest.raises(AttributeError):
        Frame(b"").not_a_field = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("message", EXAMPLES, ids=repr)
def test_copies_and_pickles(message: Any) -> None:
    assert copy.copy(message) == message
    assert copy.deepcopy(message) == message
    assert pickle.loads(pickle.dumps(message)) == message


def test_matched_by_position() -> None:
    match Request(4, "hive/status", {}):
        case Request(msg_id, "hive/status", params):
            assert (msg_id, params) == (4, {})
        case _:
            pytest.fail("not matched")
