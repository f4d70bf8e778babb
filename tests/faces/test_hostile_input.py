"""Hostile input at a live hub: every limit of core/limits.py, seen by a client.

Each test here reproduces a failure found by acting as an attacker (issue 11): an
answer that froze every client for 30 s, a 400-digit number that was an internal
error, a 980-deep value that stopped the restart, no cap on pending prompts or on
the size of ``hive/list``.  Timing is asserted only as "settles" within generous
deadlines; the figures are in docs/benchmarks.md (bench/hostile.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from hive_rpc.client.async_client import HubClient
from hive_rpc.core import limits
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import ErrorResponse
from hive_rpc.service import HubService

FORMATS_SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "uri": {"type": "string", "format": "uri"},
        "date": {"type": "string", "format": "date"},
        "date_time": {"type": "string", "format": "date-time"},
        "n": {"type": "number"},
    },
}
HOSTILE = 100_000
"""Characters of each hostile answer: ten times what froze the hub before."""
WORST: dict[str, list[str]] = {
    "email": [
        "a@" + "." * HOSTILE + "@",  # the quadratic case: 30 s at 60,000 dots
        "a@" + "a." * (HOSTILE // 2),
        "a" * HOSTILE + "@",
    ],
    "uri": ["a" * HOSTILE, "a:" + " " * HOSTILE, "a" * HOSTILE + ":"],
    "date": ["9" * HOSTILE, "2024-01-01" + "0" * HOSTILE],
    "date_time": ["2024-01-01T" + "1" * HOSTILE, "2024-01-01T00:00:00" + "+" * HOSTILE],
}


def nest(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


async def raw_refused(client: HubClient, method: str, params: dict[str, Any], depth: int) -> Any:
    """Send ``params`` with the string "DEEP" replaced by a value nested ``depth``
    levels, written by hand (json.dumps itself recurses), and return the error."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    body = body.replace('"DEEP"', "[" * depth + '"leaf"' + "]" * depth)
    await client.send_raw(encode_frame(body.encode()))
    reply = await client.next_message()
    assert isinstance(reply, ErrorResponse), reply
    return reply


async def refused(client: HubClient, method: str, params: dict[str, Any]) -> HiveError:
    with pytest.raises(HiveError) as err:
        await client.call(method, params)
    return err.value


async def test_hostile_answers_for_every_format_settle_and_others_are_served(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    asked = await client.call("hive/ask", {"question": "formats?", "schema": FORMATS_SCHEMA})
    async with await HubClient.connect(hub_config.socket) as other:
        for field, values in WORST.items():
            for value in values:
                # Generous: the old email check took ~80 s on this; a linear one, ms.
                with trio.fail_after(10):
                    async with trio.open_nursery() as nursery:
                        statuses: list[dict[str, Any]] = []

                        async def status() -> None:
                            statuses.append(await other.call("hive/status"))  # noqa: B023

                        nursery.start_soon(status)
                        error = await refused(
                            client, "hive/respond", {"id": asked["id"], "answer": {field: value}}
                        )
                assert error.code == -32004, (field, error.message)
                assert f"'{field}' must be a valid" in error.message
                assert len(statuses) == 1
                assert statuses[0]["counts"]["pending"] == 1
    # And well-formed values still pass.
    good = {
        "email": "a.b@example.org",
        "uri": "https://example.org/x?y=1",
        "date": "2024-02-29",
        "date_time": "2024-02-29T12:00:00+01:00",
        "n": 1.5,
    }
    done = await client.call("hive/respond", {"id": asked["id"], "answer": good})
    assert done["status"] == "responded"


async def test_integer_too_large_for_a_double_is_invalid_params(
    hub: HubService, client: HubClient
) -> None:
    asked = await client.call("hive/ask", {"question": "n?", "schema": FORMATS_SCHEMA})
    error = await refused(client, "hive/respond", {"id": asked["id"], "answer": {"n": 10**400}})
    assert error.code == -32602, error.message
    assert error.data["limit"] == "int_bits"
    assert error.data["param"] == "answer"
    assert (await client.call("hive/poll", {"id": asked["id"]}))["status"] == "pending"


async def test_deep_values_are_refused_naming_the_limit(hub: HubService, client: HubClient) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "title": "DEEP"}
    for method, params, depth in [
        ("hive/ask", {"question": "deep?", "schema": schema}, 300),
        ("hive/reportResult", {"task_id": "t", "outcome": "success", "result": "DEEP"}, 300),
        ("event/post", {"kind": "child-complete", "from": "x", "pr": "DEEP"}, 100),
        ("hive/respond", {"id": "0" * 16, "answer": {"a": "DEEP"}}, 40),
    ]:
        error = await raw_refused(client, method, params, depth)
        assert error.data, (method, error)
        assert (error.code, error.data["limit"]) == (-32602, "json_depth"), method
        assert "nested deeper than 32" in error.message
    # The deepest value allowed goes through and is listed.
    fits = {"type": "object", "properties": {"a": {"type": "string"}}, "title": nest(29)}
    asked = await client.call("hive/ask", {"question": "deep enough", "schema": fits})
    assert [r["id"] for r in await client.call("hive/list")] == [asked["id"]]


async def test_pending_prompts_are_capped_per_agent_and_in_all(
    hub: HubService, client: HubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_PENDING_PER_AGENT", 3)
    monkeypatch.setattr(limits, "AGENT_SHARE_PERCENT", 100)  # the share: its own test
    monkeypatch.setattr(limits, "MAX_PENDING", 5)
    first = [await client.call("hive/ask", {"question": "q", "agent_id": "a"}) for _ in range(3)]
    error = await refused(client, "hive/ask", {"question": "q", "agent_id": "a"})
    assert (error.code, error.data["limit"]) == (-32012, "pending_per_agent")
    assert "agent 'a' has 3 pending prompts" in error.message
    for _ in range(2):
        await client.call("hive/ask", {"question": "q", "agent_id": "b"})
    error = await refused(client, "hive/ask", {"question": "q", "agent_id": "c"})
    assert (error.code, error.data["limit"]) == (-32012, "pending_total")
    await client.call("hive/respond", {"id": first[0]["id"], "answer": "x"})
    await client.call("hive/ask", {"question": "q", "agent_id": "a"})  # room again


async def test_pending_characters_are_capped_per_agent_and_in_all(
    hub: HubService, client: HubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS_PER_AGENT", 25_000)
    monkeypatch.setattr(limits, "AGENT_SHARE_PERCENT", 100)  # the share: its own test
    monkeypatch.setattr(limits, "MAX_PENDING_CHARS", 35_000)
    big = "x" * 10_000
    asked = [await client.call("hive/ask", {"question": big, "agent_id": "a"}) for _ in range(2)]
    error = await refused(client, "hive/ask", {"question": big, "agent_id": "a"})
    assert (error.code, error.data["limit"]) == (-32012, "pending_chars_per_agent")
    await client.call("hive/ask", {"question": big, "agent_id": "b"})
    error = await refused(client, "hive/ask", {"question": big, "agent_id": "c"})
    assert (error.code, error.data["limit"]) == (-32012, "pending_chars")
    await client.call("hive/cancel", {"id": asked[0]["id"]})
    await client.call("hive/ask", {"question": big, "agent_id": "c"})  # room again


async def test_list_pages_with_limit_and_cursor(hub: HubService, client: HubClient) -> None:
    ids = [
        (await client.call("hive/ask", {"question": f"q{i}", "agent_id": f"a{i % 2}"}))["id"]
        for i in range(25)
    ]
    seen: list[str] = []
    sizes = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 10}
        if cursor:
            params["cursor"] = cursor
        page = await client.call("hive/list", params)
        sizes.append(len(page["prompts"]))
        seen += [r["id"] for r in page["prompts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sizes == [10, 10, 5]
    assert seen == ids
    mine = await client.call("hive/list", {"agent_id": "a1", "limit": 1000})
    assert [r["id"] for r in mine["prompts"]] == ids[1::2]
    assert mine["next_cursor"] is None
    assert [r["id"] for r in await client.call("hive/list")] == ids  # unpaged, as before
    for bad in ({"limit": 0}, {"limit": 1001}, {"limit": 2.5}, {"cursor": "nonsense"}):
        error = await refused(client, "hive/list", bad)
        assert error.code == -32602, bad


async def test_pages_neither_repeat_nor_skip_while_prompts_come_and_go(
    hub: HubService, client: HubClient
) -> None:
    ids = [(await client.call("hive/ask", {"question": f"q{i}"}))["id"] for i in range(30)]
    first = await client.call("hive/list", {"limit": 7})
    assert [r["id"] for r in first["prompts"]] == ids[:7]
    closed = {ids[2], ids[9], ids[20]}
    for prompt_id in closed:
        await client.call("hive/cancel", {"id": prompt_id})
    late = [(await client.call("hive/ask", {"question": "late"}))["id"] for _ in range(2)]
    seen: list[str] = []
    cursor = first["next_cursor"]
    while cursor is not None:
        page = await client.call("hive/list", {"limit": 7, "cursor": cursor})
        seen += [r["id"] for r in page["prompts"]]
        cursor = page["next_cursor"]
    assert seen == [i for i in ids[7:] if i not in closed] + late


async def test_a_list_over_the_reply_limit_is_refused_whole_and_paged_by_size(
    hub: HubService, client: HubClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_REPLY_BYTES", 30_000)
    ids = [(await client.call("hive/ask", {"question": "x" * 5000}))["id"] for _ in range(12)]
    error = await refused(client, "hive/list", {})
    assert (error.code, error.data["limit"]) == (-32012, "reply_bytes")
    assert '"limit" and "cursor"' in error.message
    seen: list[str] = []
    cursor = None
    while True:
        page = await client.call("hive/list", {"limit": 1000, "cursor": cursor})
        assert 1 <= len(page["prompts"]) <= 6
        seen += [r["id"] for r in page["prompts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids
