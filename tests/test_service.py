"""The transport-neutral method table: parameter checks shared by every face."""

from __future__ import annotations

from typing import Any

import pytest

from hive_rpc.core.errors import InvalidParams, MethodNotFound
from hive_rpc.service import METHODS, check_params


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_refuses_unknown_parameters(method: str) -> None:
    with pytest.raises(InvalidParams, match=f"{method}: unknown parameter 'bogus'"):
        check_params(method, {"bogus": 1})


@pytest.mark.parametrize(
    ("method", "name"),
    [(m, n) for m, spec in sorted(METHODS.items()) for n, p in spec.params.items() if p.required],
)
def test_every_required_parameter_is_required(method: str, name: str) -> None:
    sample = {"string": "x", "number": 1, "boolean": True, "object": {}, "array": [], "any": 1}
    others = {
        n: sample[p.type] for n, p in METHODS[method].params.items() if p.required and n != name
    }
    with pytest.raises(InvalidParams, match=f"missing required parameter '{name}'"):
        check_params(method, others)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"question": 5}, "'question' must be a string, got int"),
        ({"question": "q", "timeout_s": "10"}, "'timeout_s' must be a number, got str"),
        ({"question": "q", "timeout_s": True}, "'timeout_s' must be a number, got bool"),
        ({"question": "q", "timeout_s": float("inf")}, "'timeout_s' must be a number"),
        ({"question": "q", "urgent": 1}, "'urgent' must be a boolean, got int"),
        ({"question": "q", "choices": "a,b"}, "'choices' must be a array, got str"),
        ({"question": "q", "schema": []}, "'schema' must be a object, got list"),
    ],
)
def test_types_are_checked(params: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidParams, match=match):
        check_params("hive/ask", params)


def test_unknown_method_lists_the_real_ones() -> None:
    with pytest.raises(MethodNotFound, match="unknown method 'hive/aks'; the hub offers") as err:
        check_params("hive/aks", {})
    assert "hive/ask" in err.value.message
    assert err.value.code == -32601


def test_null_optional_parameters_are_absent() -> None:
    assert check_params("hive/ask", {"question": "q", "choices": None}) == {
        "question": "q",
        "choices": None,
    }
