"""One error type on both sides of the wire: what the hub raises comes back to a
client as the same class (``HiveError.from_wire``, by ``data.kind`` and code), so a
face catches ``HiveError`` subclasses whether the hub is in its process or behind the
socket; an error no class matches keeps its code and kind."""

from __future__ import annotations

import pytest

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import (
    HiveError,
    InvalidParams,
    MethodNotFound,
    PromptNotFound,
    StoreUnavailable,
    StoreWriteFailed,
)


async def test_the_hubs_errors_come_back_as_their_classes(client: HubClient) -> None:
    with pytest.raises(PromptNotFound) as missing:
        await client.call("hive/poll", {"id": "0" * 16})
    assert (missing.value.code, missing.value.kind) == (-32001, "not_found")
    assert missing.value.data["kind"] == "not_found"
    with pytest.raises(InvalidParams) as bad:
        await client.call("hive/ask", {"question": 3})
    assert bad.value.code == -32602
    assert "question" in bad.value.message
    with pytest.raises(MethodNotFound):
        await client.call("hive/nothing", {})


def test_an_error_no_class_matches_keeps_its_code_and_kind() -> None:
    error = HiveError.from_wire(-32603, "internal error in x", {"kind": "mystery", "n": 1})
    assert type(error) is HiveError
    assert (error.code, error.kind, error.message, error.data["n"]) == (
        -32603, "mystery", "internal error in x", 1,
    )  # fmt: skip
    bare = HiveError.from_wire(-32700, "parse error", None)
    assert (type(bare), bare.code, bare.kind, bare.data) == (HiveError, -32700, "hive_error", {})
    # A known kind under another code is not taken for that class.
    assert type(HiveError.from_wire(-32000, "x", {"kind": "not_found"})) is HiveError
    # Two classes share -32007: the first of the kind is the one rebuilt.
    store = HiveError.from_wire(-32007, "the store ...", {"kind": "store_unavailable"})
    assert isinstance(store, StoreWriteFailed | StoreUnavailable)
