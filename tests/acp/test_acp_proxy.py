"""hive_rpc/acp/proxy.py: the trio proxy between an ACP client (memory streams here)
and a real agent process that echoes every line it reads, so a line the client sends
comes back as one the agent sends.  Bad lines pass both ways; a permission request is
answered by a rule, left to the client or refused without a hub, and cancelled with
its turn; the proxy ends with either side."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from hive_rpc.acp.permission import Unanswered
from hive_rpc.acp.proxy import ProxyConfig, run_proxy
from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

ECHO = (
    "import sys\n"
    "for line in sys.stdin.buffer:\n"
    "    sys.stdout.buffer.write(line)\n"
    "    sys.stdout.buffer.flush()\n"
)
"""The agent: every line it reads, written back."""

OPTIONS = [
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
]


def permission_line(request_id: int, session: str = "s-1") -> bytes:
    call = {
        "toolCallId": "c1",
        "title": "Shell",
        "kind": "execute",
        "content": [{"type": "content", "content": {"type": "text", "text": "make deploy"}}],
    }
    params = {"sessionId": session, "toolCall": call, "options": OPTIONS}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "session/request_permission"}
    return json.dumps({**message, "params": params}).encode() + b"\n"


@dataclass
class Client:
    """The ACP client's end of the proxy: lines written to it, lines read from it."""

    send: trio.testing.MemorySendStream
    receive: trio.testing.MemoryReceiveStream
    done: trio.Event = field(default_factory=trio.Event)
    code: int | None = None
    _buffer: bytes = b""

    async def write(self, data: bytes) -> None:
        await self.send.send_all(data)

    async def line(self) -> bytes:
        while b"\n" not in self._buffer:
            data = await self.receive.receive_some()
            assert data, "the proxy closed its output"
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"


ENTRY = {"name": "hive-rpc", "command": "/opt/hive-rpc", "args": ["mcp"], "env": []}


@asynccontextmanager
async def proxied(
    socket: Path,
    unanswered: Unanswered = "client",
    argv: list[str] | None = None,
    mcp_entry: dict[str, Any] | None = None,
) -> AsyncIterator[Client]:
    """A proxy running the echo agent (or ``argv``); closes the client's end on exit
    and waits for the proxy to end."""
    to_proxy, proxy_in = trio.testing.memory_stream_one_way_pair()
    proxy_out, from_proxy = trio.testing.memory_stream_one_way_pair()
    client = Client(to_proxy, from_proxy)
    config = ProxyConfig(
        argv=argv or [sys.executable, "-c", ECHO],
        socket=socket,
        agent_id="echo-1",
        timeout_s=60,
        unanswered=unanswered,
        mcp_entry=mcp_entry,
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                client.code = await run_proxy(config, proxy_in, proxy_out)
                client.done.set()

            nursery.start_soon(run)
            yield client
            await to_proxy.aclose()
            await client.done.wait()


async def test_bad_lines_pass_both_ways_unchanged_and_are_named_on_stderr(
    short_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [b"not json\n", b"[1, 2]\n", b'{"jsonrpc":"2.0","method":"x/y"}\n', b"\xff\n"]
    async with proxied(short_tmp / "none.sock") as client:
        for line in lines:
            await client.write(line)
        assert [await client.line() for _ in lines] == lines
    assert client.code == 0
    err = capsys.readouterr().err
    assert "passed on a line from the client that is not JSON" in err
    assert "passed on a line from the agent that is a JSON list, not a JSON-RPC object" in err


async def test_session_new_and_load_get_the_mcp_server_other_requests_pass_as_they_are(
    short_tmp: Path,
) -> None:
    def request(request_id: int, method: str, **params: Any) -> bytes:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return json.dumps(message).encode() + b"\n"

    own = {"name": "own", "command": "/bin/true", "args": [], "env": []}
    async with proxied(short_tmp / "none.sock", mcp_entry=ENTRY) as client:
        await client.write(request(1, "session/new", cwd="/src", mcpServers=[own]))
        await client.write(request(2, "session/load", sessionId="s", cwd="/src", mcpServers=[]))
        prompt = request(3, "session/prompt", sessionId="s", prompt=[])
        await client.write(prompt)
        new = json.loads(await client.line())
        load = json.loads(await client.line())
        same = await client.line()
    assert new["params"]["mcpServers"] == [own, ENTRY]
    assert load["params"]["mcpServers"] == [ENTRY]
    assert same == prompt


async def test_without_a_hub_the_request_goes_to_the_client_as_it_came(short_tmp: Path) -> None:
    async with proxied(short_tmp / "none.sock", "client") as client:
        await client.write(permission_line(9))
        assert await client.line() == permission_line(9)


async def test_without_a_hub_unanswered_deny_selects_the_reject_option(short_tmp: Path) -> None:
    async with proxied(short_tmp / "none.sock", "deny") as client:
        await client.write(permission_line(9))
        # the proxy's answer went to the agent, which echoed it
        assert json.loads(await client.line()) == {
            "jsonrpc": "2.0",
            "id": 9,
            "result": {"outcome": {"outcome": "selected", "optionId": "cancel"}},
        }


async def test_a_malformed_permission_request_is_left_to_the_client(
    short_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = b'{"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{}}\n'
    async with proxied(short_tmp / "none.sock", "deny") as client:
        await client.write(bad)
        assert await client.line() == bad
    assert "left a permission request to the client: no sessionId string" in capsys.readouterr().err


async def test_a_rule_answers_without_asking(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    assert await prove_approver(client.call) is None
    await client.call("rule/add", {"pattern": "execute", "decision": "allow", "scope": "global"})
    async with proxied(hub_config.socket, "deny") as acp:
        await acp.write(permission_line(5))
        reply = json.loads(await acp.line())
    assert reply["result"] == {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
    assert await client.call("hive/list", {}) == []


async def test_the_humans_answer_from_an_editor_selects_its_option(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    assert await prove_approver(client.call) is None
    await client.call("hive/subscribe", {})
    async with proxied(hub_config.socket, "deny") as acp:
        await acp.write(permission_line(6))
        prompt = await next_prompt(client)
        assert prompt["detail"] == "title: Shell\n\nkind: execute\n\nmake deploy"
        await client.call("hive/respond", {"id": prompt["id"], "answer": "Allow"})
        reply = json.loads(await acp.line())
    assert reply["result"] == {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}


async def test_a_cancelled_turn_withdraws_the_question_and_answers_cancelled(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    await client.call("hive/subscribe", {})
    cancel = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}\n'
    async with proxied(hub_config.socket, "client") as acp:
        await acp.write(permission_line(7))
        prompt = await next_prompt(client)
        await acp.write(cancel)
        assert await acp.line() == cancel  # the agent's echo of the client's notification
        reply = json.loads(await acp.line())
    assert reply == {"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}}
    record = await client.call("hive/poll", {"id": prompt["id"]})
    assert record["status"] == "cancelled"


async def test_the_proxy_ends_with_the_agent_and_returns_its_exit_code(short_tmp: Path) -> None:
    argv = [sys.executable, "-c", "import sys; sys.exit(3)"]
    async with proxied(short_tmp / "none.sock", argv=argv) as client:
        await client.done.wait()
    assert client.code == 3


async def next_prompt(human: HubClient) -> dict[str, Any]:
    note = await human.next_notification()
    while note.method != "hive/prompt":
        note = await human.next_notification()
    prompt: dict[str, Any] = note.params
    return prompt
