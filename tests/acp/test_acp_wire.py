"""hive_rpc/acp/wire.py: lines cut, parsed or refused precisely, the MCP server added
to a session's params, each session's cwd followed; no I/O."""

from __future__ import annotations

import json

import pytest

from hive_rpc.acp import wire


def test_lines_are_cut_at_newlines_and_a_partial_line_waits() -> None:
    lines = wire.Lines()
    assert lines.feed(b'{"a":1}\n{"b"') == [(b'{"a":1}\n', True)]
    assert lines.feed(b":2}\n\n") == [(b'{"b":2}\n', True), (b"\n", True)]
    assert lines.feed(b"tail") == []
    assert lines.end() == b"tail"


def test_a_line_longer_than_the_limit_goes_on_in_pieces_never_parsed() -> None:
    lines = wire.Lines(max_bytes=4)
    assert lines.feed(b"abcdef") == [(b"abcdef", False)]
    assert lines.feed(b"gh") == [(b"gh", False)]
    # the rest of the long line, then a whole line again
    assert lines.feed(b"i\n{}\n") == [(b"i\n", False), (b"{}\n", True)]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"not json\n", "not JSON"),
        (b"[1, 2]\n", "a JSON list, not a JSON-RPC object"),
        (b"\xff\xfe\n", "not JSON"),
        (b"[" * 100_000 + b"\n", "not JSON"),
    ],
)
def test_a_line_that_is_no_message_says_what_it_is(line: bytes, why: str) -> None:
    with pytest.raises(wire.Malformed, match=why):
        wire.parse(line)


def test_the_answers_are_one_line_each_with_the_agents_id() -> None:
    assert json.loads(wire.selected(7, "proceed_once")) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}},
    }
    assert json.loads(wire.cancelled("x")) == {
        "jsonrpc": "2.0",
        "id": "x",
        "result": {"outcome": {"outcome": "cancelled"}},
    }
    assert wire.selected(1, "a\u2028b").count(b"\n") == 1


ENTRY = wire.mcp_server("/opt/bin/hive-rpc", ["mcp", "--agent", "gemini-1"])


def test_the_mcp_server_is_added_after_the_clients_own() -> None:
    own = {"name": "github", "command": "/usr/bin/gh-mcp", "args": [], "env": []}
    params = {"cwd": "/src", "mcpServers": [own]}
    assert wire.with_mcp_server(params, ENTRY) == {"cwd": "/src", "mcpServers": [own, ENTRY]}
    assert ENTRY == {
        "name": "hive-rpc",
        "command": "/opt/bin/hive-rpc",
        "args": ["mcp", "--agent", "gemini-1"],
        "env": [],
    }
    assert params["mcpServers"] == [own]  # not changed in place


def test_no_mcp_servers_param_gets_a_list_of_one() -> None:
    assert wire.with_mcp_server({"cwd": "/src"}, ENTRY) == {"cwd": "/src", "mcpServers": [ENTRY]}


def test_a_hive_rpc_server_of_the_clients_own_wins_and_a_broken_list_is_left_alone() -> None:
    own = {"name": "hive-rpc", "command": "/home/me/bin/hive-rpc", "args": ["mcp"], "env": []}
    assert wire.with_mcp_server({"cwd": "/", "mcpServers": [own]}, ENTRY) is None
    assert wire.with_mcp_server({"cwd": "/", "mcpServers": "nope"}, ENTRY) is None


def test_sessions_learn_their_cwd_from_new_once_answered_and_from_load() -> None:
    sessions = wire.Sessions()

    def new(request_id: int, cwd: str) -> dict[str, object]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": {"cwd": cwd}}

    sessions.from_client(new(3, "/a"))
    assert sessions.cwd == {}
    sessions.from_agent({"jsonrpc": "2.0", "id": 3, "result": {"sessionId": "s1"}})
    load = {"sessionId": "s2", "cwd": "/b", "mcpServers": []}
    sessions.from_client({"jsonrpc": "2.0", "id": 4, "method": "session/load", "params": load})
    assert sessions.cwd == {"s1": "/a", "s2": "/b"}
    # an error response, or a response to something else, teaches nothing
    sessions.from_client(new(5, "/c"))
    sessions.from_agent({"jsonrpc": "2.0", "id": 5, "error": {"code": -32603, "message": "no"}})
    sessions.from_agent({"jsonrpc": "2.0", "id": 6, "result": {"sessionId": "s3"}})
    assert sessions.cwd == {"s1": "/a", "s2": "/b"}
