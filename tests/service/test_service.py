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
        ({"question": "q", "choices": "a,b"}, "'choices' must be an array, got str"),
        ({"question": "q", "schema": []}, "'schema' must be an object, got list"),
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


def test_every_mcp_tool_is_named_by_the_rows_it_calls() -> None:
    """``Method.mcp`` is what the MCP face offers of each method: every tool there is
    (faces/mcp/groups.py), each named once, but the few that run several methods."""
    from hive_rpc.faces.mcp.tools import COMPOSITE_TOOLS, GROUP_OF

    named = [tool for m in METHODS.values() for tool in m.mcp]
    assert sorted(named) == sorted(set(GROUP_OF) - COMPOSITE_TOOLS)
    assert set(GROUP_OF) >= COMPOSITE_TOOLS


def test_faces_derive_from_the_row() -> None:
    assert METHODS["hive/ask"].faces == ("socket", "lsp", "epc", "mcp")
    assert METHODS["hive/typing"].faces == ("socket", "lsp")
    assert METHODS["agora/abort"].faces == ("socket", "mcp")
    assert METHODS["ling/list"].faces == ("socket", "mcp")
    assert METHODS["hive/subscribe"].faces == ("socket", "lsp")
    assert METHODS["hive/offerDelivery"].faces == ("socket",)
    assert all(m.name == name for name, m in METHODS.items())


def test_connection_scoped_rows_have_no_handler_and_take_no_params() -> None:
    scoped = {n for n, m in METHODS.items() if m.scope == "connection"}
    assert scoped == {
        "hive/subscribe", "hive/unsubscribe", "hive/offerDelivery", "hive/proveApprover",
        "hive/openMcp", "hive/bufferChanged",
    }  # fmt: skip
    from hive_rpc.service import HANDLERS

    assert set(HANDLERS) == set(METHODS) - scoped
    with pytest.raises(InvalidParams, match=r"unknown parameter 'x'; accepted: none"):
        check_params("hive/offerDelivery", {"x": 1})


async def test_the_service_refuses_a_connection_scoped_method() -> None:
    from hive_rpc.runtime.registry import open_registry
    from hive_rpc.service import HubService
    from hive_rpc.store.memory import MemoryStore

    async with open_registry(MemoryStore()) as registry:
        service = HubService(registry)
        for name in ("hive/subscribe", "hive/offerDelivery"):
            with pytest.raises(MethodNotFound, match=f"{name} needs a streaming transport"):
                await service.call(name, {})


def test_a_method_is_handled_once() -> None:
    from hive_rpc.service import HANDLERS
    from hive_rpc.service.table import handles

    async def again(hub: object, p: dict[str, Any]) -> None:
        return None

    with pytest.raises(ValueError, match="'hive/ask' has a handler already"):
        handles("hive/ask")(again)
    assert HANDLERS["hive/ask"] is not again
    assert METHODS["hive/ask"].doc.startswith("Ask a question")


def test_the_ask_row_takes_the_fields_of_an_ask() -> None:
    from hive_rpc.core.prompt import ASK_FIELDS

    # ...and waits, which says how the call is asked (service/askers.py), not what,
    # and idempotency_key, which says which ask a retry repeats (Registry.ask).
    assert list(METHODS["hive/ask"].params) == [*ASK_FIELDS, "waits", "idempotency_key"]
