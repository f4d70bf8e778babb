"""Property tests over every method's params at the service: what any face reaches.

Whatever a client sends, the answer is a result or a HiveError that is the client's
(-326xx / -320xx), never an internal error: a -32603 for client-caused input means a
check is missing.  Nested, huge and odd values are refused with -32602 naming the
limit of core/limits.py that they break.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hive_rpc.agora import open_agora
from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError, InvalidParams
from hive_rpc.protocol.jsonrpc import INTERNAL_ERROR
from hive_rpc.relay.target import DeliveryError, TargetState
from hive_rpc.runtime.registry import open_registry
from hive_rpc.service import METHODS, HubService, check_params
from hive_rpc.store.memory import MemoryStore

SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "uri": {"type": "string", "format": "uri"},
        "date": {"type": "string", "format": "date"},
        "when": {"type": "string", "format": "date-time"},
        "n": {"type": "number", "minimum": 0, "maximum": 10},
        "i": {"type": "integer"},
        "pick": {"type": "array", "items": {"enum": ["a", "b"]}},
        "yes": {"type": "boolean"},
    },
}
ANSWERING = ["hive/respond"] * 8 + ["hive/ask"] * 4
"""Drawn more often: these take the deepest client values (schema, answer)."""
SEEDS = ("$schema", "$choices", "$free")
"""Placeholders for the ids of prompts each example starts with."""


def nest(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", " ", "a@b.c", "2024-01-01", "x:y", "\u2028", "%0", "s:not-a-pane"]),
)
json_value = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
hostile = st.one_of(
    st.integers(limits.MAX_JSON_DEPTH + 1, 300).map(nest),
    st.integers(limits.MAX_INT_BITS + 1, 4000).map(lambda bits: -(2**bits)),
    st.integers(limits.MAX_INT_BITS + 1, 4000).map(lambda bits: 2**bits),
    st.just("x" * (limits.MAX_STRING_CHARS + 1)),
    st.just([0] * (limits.MAX_NODES + 1)),
    st.sampled_from(["a@" + "." * 60_000 + "@", "9" * 100_000, "a" * 100_000]),
)
TYPED: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=30),
    "number": st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "object": st.dictionaries(st.text(max_size=6), json_value, max_size=4),
    "array": st.lists(json_value, max_size=4),
    "any": json_value,
}
NAMED: dict[str, st.SearchStrategy[Any]] = {
    "id": st.sampled_from(SEEDS * 4) | st.text(max_size=20),
    "prefix": st.sampled_from(["$sche", "0000"]) | st.text(max_size=20),
    "kind": st.sampled_from(["tmux", "zellij", "emacs-buffer", "child-complete"])
    | st.text(max_size=10),
    "address": st.sampled_from(["%0", "s:not-a-pane", "main:1", "*scratch*", ""])
    | st.text(max_size=20),
    "name": st.sampled_from(["main.a", "main.b", "bad name"]) | st.text(max_size=20),
    "action": st.sampled_from(["accept", "decline", "cancel"]) | st.text(max_size=10),
    "outcome": st.sampled_from(["success", "failed", "cancelled"]) | st.text(max_size=10),
    "answer": st.fixed_dictionaries(
        {},
        optional={
            k: st.one_of(leaf, hostile, json_value, st.integers(), st.integers(2**1023, 2**1100))
            for k in ("email", "uri", "date", "when", "n", "i", "pick", "yes")
        },
    )
    | json_value,
    "schema": st.just(SCHEMA) | TYPED["object"],
    "timeout_s": st.floats(min_value=0, max_value=1e300) | TYPED["number"],
    "question": st.sampled_from(["Deploy?", "q"]) | st.text(min_size=1, max_size=30),
    "choices": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
    "agent_id": st.sampled_from(["a", "b"]),
    "by": st.sampled_from(["human", "a"]),
    "task_id": st.sampled_from(["T-1"]),
    "participants": st.lists(st.sampled_from(["main.a", "main.b", "x"]), max_size=3),
}


@st.composite
def params_for(draw: st.DrawFn, method: str) -> dict[str, Any]:
    """Plausible params with at most one odd one: a junk value in every slot at once
    is refused by the first check and reaches nothing deeper."""
    spec = METHODS[method].params
    params: dict[str, Any] = {}
    for name, param in spec.items():
        if param.required or draw(st.integers(0, 2)) == 0:
            params[name] = draw(NAMED.get(name, TYPED[param.type]))
    odd = draw(st.sampled_from([None, "bogus", *spec]))
    if odd == "bogus":
        params["bogus"] = 1
    elif odd is not None:
        params[odd] = draw(st.one_of(TYPED[spec[odd].type], json_value, hostile))
    return params


@dataclass
class Gone:
    """A terminal that is never there: nothing is typed anywhere by these tests."""

    kind: str
    address: str

    async def check(self) -> TargetState:
        return TargetState(alive=False, reason="a stand-in terminal")

    async def type_text(self, text: str) -> None:
        raise DeliveryError("a stand-in terminal")


def _substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str) and value in ids:
        return ids[value]
    if isinstance(value, str) and value.startswith("$sche"):
        return ids["$schema"][: len(value)]
    return value


async def call_once(method: str, params: dict[str, Any]) -> HiveError | None:
    """Run ``method`` on a fresh hub holding three prompts; the HiveError, if any.
    Anything else raised is what a face would send as -32603."""
    store = MemoryStore()
    async with trio.open_nursery() as nursery, open_registry(store) as registry:
        service = HubService(registry)
        service.agora = await open_agora(
            store,
            registry.now,
            service.delivery_peers,
            nursery,
            target=lambda ling: Gone(ling.kind, ling.address),
        )
        ids = {
            "$schema": (await service.call("hive/ask", {"question": "s", "schema": SCHEMA}))["id"],
            "$choices": (await service.call("hive/ask", {"question": "c", "choices": ["a"]}))["id"],
            "$free": (await service.call("hive/ask", {"question": "f", "agent_id": "a"}))["id"],
        }
        params = {k: _substitute(v, ids) for k, v in params.items()}
        error: HiveError | None = None
        with trio.move_on_after(600):  # virtual time: long polls end at once
            try:
                await service.call(method, params)
            except HiveError as e:
                error = e
        nursery.cancel_scope.cancel()
    return error


def run(method: str, params: dict[str, Any]) -> HiveError | None:
    clock = trio.testing.MockClock(autojump_threshold=0)
    result: HiveError | None = trio.run(call_once, method, params, clock=clock)
    return result


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_no_client_input_is_an_internal_error(data: st.DataObject) -> None:
    method = data.draw(st.sampled_from(sorted(METHODS) + ANSWERING), label="method")
    params = data.draw(params_for(method), label="params")
    error = run(method, params)
    if error is not None:
        assert error.code != INTERNAL_ERROR, (method, error.message)
        assert error.message


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.sampled_from(SEEDS), NAMED["answer"], st.sampled_from([None, "decline", "cancel"]))
def test_no_answer_is_an_internal_error(seed: str, answer: Any, action: str | None) -> None:
    """Answers reach the deepest checks (schema validation, formats, bounds)."""
    error = run("hive/respond", {"id": seed, "answer": answer, "action": action})
    if error is not None:
        assert error.code != INTERNAL_ERROR, error.message
        assert error.message


BREAKERS: list[tuple[str, Callable[[], Any], set[str]]] = [
    ("nested", lambda: nest(limits.MAX_JSON_DEPTH + 1), {"json_depth"}),
    ("huge int", lambda: 10**400, {"int_bits"}),
    ("long string", lambda: "x" * (limits.MAX_STRING_CHARS + 1), {"string_chars"}),
    ("many values", lambda: list(range(limits.MAX_NODES + 1)), {"json_nodes"}),
    (
        "many strings",
        lambda: (
            ["y" * limits.MAX_STRING_CHARS]
            * (limits.MAX_TOTAL_CHARS // limits.MAX_STRING_CHARS + 1)
        ),
        {"total_chars"},
    ),
]


@pytest.mark.parametrize(
    ("method", "name"),
    [(m, n) for m, spec in sorted(METHODS.items()) for n in spec.params],
)
@pytest.mark.parametrize(("what", "make", "names"), BREAKERS, ids=[b[0] for b in BREAKERS])
def test_every_param_refuses_values_over_the_limits(
    method: str, name: str, what: str, make: Callable[[], Any], names: set[str]
) -> None:
    sample = {"string": "x", "number": 1, "boolean": True, "object": {}, "array": [], "any": 1}
    params = {n: sample[p.type] for n, p in METHODS[method].params.items() if p.required}
    params[name] = make()
    with pytest.raises(InvalidParams) as err:
        check_params(method, params)
    assert err.value.code == -32602
    assert err.value.data["limit"] in names, err.value.message
    assert err.value.data["param"] == name
    assert f"(limit {err.value.data['limit']}:" in err.value.message


def test_limits_are_sane() -> None:
    assert math.ldexp(1, limits.MAX_INT_BITS) < float("inf")
    assert limits.LIST_PAGE_DEFAULT <= limits.LIST_PAGE_MAX
    assert limits.MAX_QUESTION_CHARS <= limits.MAX_STRING_CHARS
    for entry in limits.LIMITS.values():
        assert entry.value > 0
        assert entry.reason
