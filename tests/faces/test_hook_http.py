"""``POST /hook/claude-code`` (faces/hook_http.py): the permission hook served by the hub
itself, against the real hub's HTTP server and a real HTTP client.

The route's own credential (the hook token) and the other two never mix; a body it
cannot read is a precise 400/413/415 and nothing else; the question is withdrawn
when the request dies; the asker is the process the kernel says holds the client
socket (docs/security.md, "The hook token")."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from test_activity_http import as_human, base_url, bearer, http, own_origin
from waiting import logged

from hive_rpc.core.permission_hook import HOOK_PATH, SETTLED_BY
from hive_rpc.faces.hook_http import MAX_BODY, _proc_lookup, holder_of, peer_agent, socket_of
from hive_rpc.host.paths import HOOK_TOKEN_NAME
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService
from hive_rpc.service.approver import APPROVER
from hive_rpc.service.askers import GONE

pytestmark = pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning")


def hook_token(service: HubService) -> str:
    return (Path(str(service.info.data_dir)) / HOOK_TOKEN_NAME).read_text().strip()


def as_hook(service: HubService) -> dict[str, str]:
    return {"Authorization": f"Bearer {hook_token(service)}"}


def event(**fields: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PermissionRequest",
        "session_id": "3f2a9c1d-0000-4000-8000-000000000000",
        "cwd": "/tmp",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test"},
        **fields,
    }


def asked(entry: Entry) -> bool:
    return entry.kind == "prompt" and entry.event == "ask"


async def answer(service: HubService, prompt_id: str, choice: str) -> None:
    """The human's answer, as an editor that proved the approver token gives it."""
    proved = APPROVER.set(True)
    try:
        await service.call("hive/respond", {"id": prompt_id, "answer": choice, "by": "ada"})
    finally:
        APPROVER.reset(proved)


async def post_answered(service: HubService, choice: str) -> httpx2.Response:
    """The hook's reply once the human picked ``choice`` for its question."""
    reply: list[httpx2.Response] = []
    async with http(service, **as_hook(service)) as client, trio.open_nursery() as nursery:

        async def post() -> None:
            reply.append(await client.post(HOOK_PATH, json=event()))

        nursery.start_soon(post)
        entry = await logged(service.activity, asked, within_s=20)
        await answer(service, entry.key, choice)
    return reply[0]


async def test_the_humans_allow_is_the_hooks_decision(http_hub: HubService) -> None:
    with trio.fail_after(30):
        reply = await post_answered(http_hub, "allow")
    assert reply.status_code == 200
    assert reply.json() == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }


async def test_the_humans_deny_carries_the_message(http_hub: HubService) -> None:
    with trio.fail_after(30):
        reply = await post_answered(http_hub, "deny")
    decision = reply.json()["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny"
    assert "The human denied this Bash request from hive-rpc (ada)" in decision["message"]


async def test_the_question_names_the_session_when_no_agent_process_asks(
    http_hub: HubService,
) -> None:
    """The test process is no ``claude``: /proc finds no agent holding the socket, so the
    session names the asker (core/claude_code.py session_agent)."""
    with trio.fail_after(30):
        async with http(http_hub, **as_hook(http_hub)) as client, trio.open_nursery() as nursery:
            nursery.start_soon(partial(client.post, HOOK_PATH + "?timeout=30", json=event()))
            entry = await logged(http_hub.activity, asked, within_s=20)
            assert entry.data["agent_id"] == "claude-code-3f2a9c1d"
            assert "wants to run Bash: npm test" in entry.data["question"]
            await answer(http_hub, entry.key, "deny")


async def test_the_request_dying_withdraws_the_question(http_hub: HubService) -> None:
    with trio.fail_after(30):
        async with http(http_hub, **as_hook(http_hub)) as client, trio.open_nursery() as nursery:
            nursery.start_soon(partial(client.post, HOOK_PATH, json=event()))
            entry = await logged(http_hub.activity, asked, within_s=20)
            nursery.cancel_scope.cancel()  # the client closes its connection
        withdrawn = await logged(
            http_hub.activity,
            lambda e: e.kind == "prompt" and e.key == entry.key and e.event != "ask",
            within_s=20,
            after=entry.id,
        )
    assert (withdrawn.event, withdrawn.data["status"], withdrawn.data["by"]) == (
        "cancel",
        "cancelled",
        GONE,
    )


async def test_no_answer_in_time_decides_nothing(http_hub: HubService) -> None:
    """``{}``: Claude Code asks in its own dialog; the question is withdrawn."""
    with trio.fail_after(30):
        async with http(http_hub, **as_hook(http_hub)) as client:
            reply = await client.post(HOOK_PATH + "?timeout=0.2", json=event())
    assert (reply.status_code, reply.json()) == (200, {})
    assert http_hub.registry.list_pending() == []


# --- the hook token and the other two ---------------------------------------------------


@pytest.mark.parametrize(
    ("whose", "status", "says"),
    [
        ("mcp", 403, "that is the agents' MCP token, which never opens /hook/claude-code"),
        ("human", 403, "that is the human's approver token, which never opens"),
        ("none", 401, "missing or wrong bearer token: /hook/claude-code takes the hook token"),
        ("wrong", 401, "missing or wrong bearer token"),
    ],
)
async def test_only_the_hook_token_opens_the_hook(
    http_hub: HubService, whose: str, status: int, says: str
) -> None:
    headers = {
        "mcp": bearer(http_hub),
        "human": as_human(http_hub),
        "none": {},
        "wrong": {"Authorization": "Bearer x" + hook_token(http_hub)},
    }[whose]
    async with http(http_hub, **headers) as client:
        reply = await client.post(HOOK_PATH, json=event())
    assert reply.status_code == status
    assert says in reply.json()["error"]["message"]
    assert http_hub.registry.list_pending() == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/state"),
        ("GET", "/activity/blobs/" + "0" * 64),
        ("POST", "/api/respond"),
        ("POST", "/api/cancel"),
        ("POST", "/api/event"),
        ("POST", "/mcp"),
        ("GET", "/dashboard?token=HOOK"),
    ],
)
async def test_the_hook_token_opens_nothing_else(
    http_hub: HubService, method: str, path: str
) -> None:
    token = hook_token(http_hub)
    async with http(http_hub, **as_hook(http_hub), **own_origin(http_hub)) as client:
        reply = await client.request(method, path.replace("HOOK", token), json={"id": "x"})
    assert reply.status_code == 401, reply.text


async def test_a_foreign_origin_and_a_foreign_host_are_refused(http_hub: HubService) -> None:
    async with http(http_hub, **as_hook(http_hub)) as client:
        origin = await client.post(
            HOOK_PATH, json=event(), headers={"Origin": "http://evil.example"}
        )
        host = await client.post(HOOK_PATH, json=event(), headers={"Host": "evil.example:80"})
    assert (origin.status_code, host.status_code) == (403, 421)
    assert http_hub.registry.list_pending() == []


async def test_the_hook_token_file_is_private(http_hub: HubService) -> None:
    path = Path(str(http_hub.info.data_dir)) / HOOK_TOKEN_NAME
    assert path.stat().st_mode & 0o777 == 0o600


# --- bodies it cannot read -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "status", "says"),
    [
        (b"{not json", "application/json", 400, "the body is not JSON"),
        (b"[" * 100_000, "application/json", 400, "the body is not JSON"),
        (b"[]", "application/json", 400, "not a Claude Code hook event (no hook_event_name)"),
        (json.dumps(event(tool_input=["rm"])).encode(), "application/json", 400,
         "tool_input must be a JSON object"),
        (json.dumps(event(tool_name=7)).encode(), "application/json", 400,
         "tool_name must be a non-empty string"),
        (json.dumps(event(session_id=[1])).encode(), "application/json", 400,
         "session_id must be a string"),
        (json.dumps(event(hook_event_name="Stop")).encode(), "application/json", 400,
         "this hook answers only PermissionRequest"),
        (json.dumps(event()).encode(), "text/plain", 415, "application/json"),
        (b'{"x": "' + b"a" * MAX_BODY + b'"}', "application/json", 413, "larger than"),
    ],
)  # fmt: skip
async def test_a_bad_body_is_a_precise_error_and_nothing_else(
    http_hub: HubService, body: bytes, content_type: str, status: int, says: str
) -> None:
    async with http(http_hub, **as_hook(http_hub)) as client:
        reply = await client.post(HOOK_PATH, content=body, headers={"Content-Type": content_type})
        assert reply.status_code == status
        assert says in reply.json()["error"]["message"]
        assert http_hub.registry.list_pending() == []
        # The same connection, and the hub, serve the next request as before.
        fine = await client.post(HOOK_PATH + "?timeout=0.1", json=event())
    assert (fine.status_code, fine.json()) == (200, {})


async def test_other_methods_are_refused(http_hub: HubService) -> None:
    async with http(http_hub, **as_hook(http_hub)) as client:
        reply = await client.get(HOOK_PATH)
    assert (reply.status_code, reply.headers["allow"]) == (405, "POST")


# --- who asks: the process holding the client socket -------------------------------------


def test_an_ipv6_socket_is_found_both_ways() -> None:
    with (
        socket.create_server(("::1", 0), family=socket.AF_INET6) as server,
        socket.create_connection(server.getsockname()[:2]) as client,
    ):
        ends = client.getsockname()[:2], server.getsockname()[:2]
        found = socket_of(*ends)
        assert found == (os.fstat(client.fileno()).st_ino, os.getuid())
        assert _proc_lookup(*ends) == found


def test_the_socket_and_its_holder_are_found_from_proc() -> None:
    with (
        socket.create_server(("127.0.0.1", 0)) as server,
        socket.create_connection(server.getsockname()) as client,
    ):
        found = socket_of(client.getsockname(), server.getsockname())
        assert found is not None
        inode, uid = found
        assert inode == os.fstat(client.fileno()).st_ino
        # sock_diag's answer is /proc/net/tcp's (the fallback where netlink is refused).
        assert _proc_lookup(client.getsockname(), server.getsockname()) == found
        assert uid == os.getuid()
        comm = Path("/proc/self/comm").read_text().strip()
        assert holder_of(inode, uid, (comm,)) == os.getpid()
        assert holder_of(inode, uid, ("claude",)) is None
        peer = peer_agent(client.getsockname(), server.getsockname())
        assert (peer.pid, peer.known) == (None, True)


CLAUDE_LIKE = """
import json, sys, urllib.request
url, token = sys.argv[1], sys.argv[2]
request = urllib.request.Request(url, data=json.dumps(json.loads(sys.argv[3])).encode(),
    headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=30).read().decode(), flush=True)
"""


async def test_a_process_named_claude_asks_as_claude_code_pid(
    http_hub: HubService, tmp_path: Path
) -> None:
    """A process whose ``comm`` is ``claude`` (a link so named to python) holds the
    socket: the question's agent is ``claude-code-PID``, whatever session the body
    names, and its origin is that process's working directory."""
    claude = tmp_path / "claude"
    claude.symlink_to(sys.executable)
    args = [str(claude), "-c", CLAUDE_LIKE, base_url(http_hub) + HOOK_PATH, hook_token(http_hub)]
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            run = partial(trio.run_process, [*args, json.dumps(event())], stdout=subprocess.PIPE)
            proc = await nursery.start(run)
            entry = await logged(http_hub.activity, asked, within_s=20)
            assert entry.data["agent_id"] == f"claude-code-{proc.pid}"
            await answer(http_hub, entry.key, "allow")


async def test_answered_in_the_terminal_the_question_is_withdrawn(
    http_hub: HubService, tmp_path: Path
) -> None:
    """Claude Code leaves the request open when the human answers in its own dialog
    (measured on 2.1.328); the call's result in the session's transcript withdraws
    the question, ``by`` "the terminal", and the reply decides nothing."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    body = event(transcript_path=str(transcript))
    call = {"type": "tool_use", "name": "Bash", "id": "toolu_1", "input": body["tool_input"]}
    reply: list[httpx2.Response] = []
    with trio.fail_after(30):
        async with http(http_hub, **as_hook(http_hub)) as client, trio.open_nursery() as nursery:

            async def post() -> None:
                reply.append(await client.post(HOOK_PATH, json=body))

            nursery.start_soon(post)
            entry = await logged(http_hub.activity, asked, within_s=20)
            now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            lines = [
                {"message": {"content": [call]}, "timestamp": now},
                {"message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
                 "timestamp": now},
            ]  # fmt: skip
            await trio.Path(transcript).write_text("".join(json.dumps(x) + "\n" for x in lines))
        withdrawn = await logged(
            http_hub.activity,
            lambda e: e.kind == "prompt" and e.key == entry.key and e.event != "ask",
            within_s=20,
            after=entry.id,
        )
    assert (withdrawn.data["status"], withdrawn.data["by"]) == ("cancelled", SETTLED_BY)
    assert (reply[0].status_code, reply[0].json()) == (200, {})
