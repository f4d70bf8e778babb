"""The agent's credential is not the human's (issue 26, section 1; docs/security.md,
"Two credentials").

The attack, as it was run against the installed hub: an agent connected over
Streamable HTTP holds the MCP token. It asks the hub to register a tmux pane where a
python3 REPL runs (``ling_register``: a pending request, the hub asks the human), then
answers the hub's own consent question itself with ``POST /api/respond``, the same
token and an ``Origin`` header, and types ``__import__('os').system('touch ...')``
into the REPL. Each test here runs against the real hub (socket and HTTP faces), the
MCP SDK's real client, and a real tmux pane running the real python3.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from test_activity_http import as_human, base_url, bearer, http, human_token_of, own_origin
from test_approver import answer_command
from test_approver_faces import ask_permission
from test_mcp import http_client
from test_relay_consent import registered, tmux
from waiting import logged

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import HiveError
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
    pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning"),
]


@contextmanager
def python_pane(short_tmp: Path) -> Iterator[tuple[Path, str]]:
    """A tmux server of its own with one pane running the python3 REPL."""
    socket = short_tmp / "tmux.sock"
    tmux(socket, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50")
    try:
        pane = tmux(socket, "new-window", "-d", "-P", "-F", "#{pane_id}", f"{sys.executable} -q -i")
        yield socket, pane
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], check=False)


async def wait_prompt(socket: Path, pane: str) -> None:
    with trio.fail_after(20):
        while ">>>" not in tmux(socket, "capture-pane", "-p", "-t", pane):  # noqa: ASYNC110
            await trio.sleep(0.05)  # tmux gives no event for a screen change


async def kid_approved(hub: HubService) -> None:
    """Until the hub's own task has registered ``kid``, and said so."""
    await logged(
        hub.activity,
        lambda e: e.kind == "ling" and (e.event, e.key) == ("ling/approved", "kid"),
        within_s=20,
    )


def structured(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None, result.content
    content: dict[str, Any] = result.structured_content
    return content


async def test_an_agent_cannot_approve_its_own_terminal_with_the_mcp_token(
    http_hub: HubService, short_tmp: Path
) -> None:
    planted = short_tmp / "PWNED"
    code = f"__import__('os').system('touch {planted}')"
    with python_pane(short_tmp) as (socket, pane):
        await wait_prompt(socket, pane)
        async with (
            await HubClient.connect(Path(str(http_hub.info.socket))) as client,
            http_client(http_hub, "legacy", agent="sneaky", tools="ask,lings,events") as agent,
            http(http_hub, **bearer(http_hub), **own_origin(http_hub)) as agents_http,
        ):
            asked = structured(
                await agent.call_tool(
                    "ling_register",
                    {"name": "victim", "kind": "tmux", "address": f"{pane}@{socket}"},
                )
            )
            assert asked["state"] == "pending"
            # The attack: the agent answers the hub's own question with its MCP token.
            reply = await agents_http.post(
                "/api/respond", json={"id": asked["prompt_id"], "answer": "approve"}
            )
            assert reply.status_code == 403, reply.text
            error = reply.json()["error"]
            assert (error["code"], error["data"]["kind"]) == (-32013, "not_an_approver")
            assert error["data"]["lacks"] == "human"
            assert str(http_hub.info.approver_token_file) in error["message"]
            assert "agent's credential (the MCP token)" in error["message"]
            # Nor does it cancel, stop the countdown or defer on the human's behalf.
            for route in ("/api/cancel", "/api/typing", "/api/defer"):
                refused = await agents_http.post(route, json={"id": asked["prompt_id"]})
                assert refused.status_code == 403, route
            record = await client.call("hive/poll", {"id": asked["prompt_id"]})
            assert (record["status"], record["typing_at"]) == ("pending", None)
            assert await registered(client) == []
            typed = await agent.call_tool("answer_question", {"agent": "victim", "message": code})
            assert typed.is_error
        assert ">>> __import__" not in tmux(socket, "capture-pane", "-p", "-t", pane)
    assert not planted.exists()


async def test_the_bare_socket_cannot_answer_the_hubs_own_question(
    http_hub: HubService, short_tmp: Path
) -> None:
    """The socket is what an agent's Bash reaches (``hive-rpc answer``, ``nc -U``): the
    consent question wants the approver proof there too, not only in MCP's tool."""
    with python_pane(short_tmp) as (socket, pane):
        async with await HubClient.connect(Path(str(http_hub.info.socket))) as agent:
            asked = await agent.call(
                "ling/register",
                {"name": "victim", "kind": "tmux", "address": f"{pane}@{socket}"},
            )
            with pytest.raises(HiveError) as refused:
                await agent.call("hive/respond", {"id": asked["prompt_id"], "answer": "approve"})
            assert refused.value.code == -32013
            assert "the hub's own question" in refused.value.message
            assert refused.value.data["lacks"] == "approver"
            assert await registered(agent) == []
            # The human's editor proves it holds the human's credential, then answers.
            assert await prove_approver(agent.call) is None
            done = await agent.call("hive/respond", {"id": asked["prompt_id"], "answer": "deny"})
            assert (done["status"], done["answer"]) == ("responded", "deny")


async def test_the_dashboard_signs_in_with_the_humans_token_and_decides(
    http_hub: HubService, short_tmp: Path
) -> None:
    """The human's sign-in (the approver token for a cookie) is an approver's: it
    answers the consent question and a permission request; the MCP token signs in to
    nothing."""
    with python_pane(short_tmp) as (socket, pane):
        async with (
            await HubClient.connect(Path(str(http_hub.info.socket))) as client,
            httpx2.AsyncClient(base_url=base_url(http_hub), timeout=10) as browser,
        ):
            refused = await browser.get(
                "/dashboard", params={"token": bearer(http_hub)["Authorization"][7:]}
            )
            assert refused.status_code == 403
            assert "never signs in" in refused.text
            signed_in = await browser.get("/dashboard", params={"token": human_token_of(http_hub)})
            assert signed_in.status_code == 303
            asked = await client.call(
                "ling/register",
                {"name": "kid", "kind": "tmux", "address": f"{pane}@{socket}"},
            )
            permission = await ask_permission(client)
            post = {"headers": own_origin(http_hub)}
            approved = await browser.post(
                "/api/respond", json={"id": asked["prompt_id"], "answer": "approve"}, **post
            )
            allowed = await browser.post(
                "/api/respond", json={"id": permission["id"], "answer": "allow"}, **post
            )
            assert approved.status_code == 200, approved.text
            assert (approved.json()["answer"], approved.json()["by"]) == ("approve", "dashboard")
            assert (allowed.status_code, allowed.json()["answer"]) == (200, "allow")
            await kid_approved(http_hub)
            assert await registered(client) == ["kid"]
        # The human's token works as a bearer token too, for the human's own scripts.
        async with http(http_hub, **as_human(http_hub), **own_origin(http_hub)) as script:
            asked = await script.post("/api/cancel", json={"id": "0123456789abcdef"})
            assert asked.json()["error"]["code"] == -32001  # past the guard: no such prompt


@pytest.mark.parametrize(
    "name", ["hive-rpc", "human", "dashboard", "rule", "hive-rpc-bot", "the hub itself (HIVE-RPC)"]
)
async def test_no_agent_asks_under_the_hubs_or_the_humans_name(
    http_hub: HubService, name: str
) -> None:
    """A question asked as ``hive-rpc`` would look exactly like the hub's consent
    question on every screen, and only the human could answer it."""
    async with await HubClient.connect(Path(str(http_hub.info.socket))) as client:
        with pytest.raises(HiveError) as refused:
            await client.call("hive/ask", {"question": "approve?", "agent_id": name})
        assert refused.value.code == -32602
        assert f"agent_id {name!r} is reserved" in refused.value.message
        # Fullwidth letters fold to the same name (NFKC): no look-alike either.
        fullwidth = "".join(chr(ord(c) + 0xFEE0) if c.isalpha() else c for c in name)
        with pytest.raises(HiveError, match="is reserved"):
            await client.call("hive/ask", {"question": "approve?", "agent_id": fullwidth})
        async with http_client(http_hub, "legacy", agent=name) as agent:
            result = await agent.call_tool("hivemind_ask_async", {"question": "approve?"})
            assert result.is_error
        assert await client.call("hive/list", {}) == []


async def test_hive_rpc_answer_proves_the_humans_credential_for_the_hubs_question(
    http_hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    """The human's CLI reads the approver token and proves it before answering the
    hub's own question, as it does for a permission prompt."""
    with python_pane(short_tmp) as (socket, pane):
        async with await HubClient.connect(hub_config.socket) as client:
            asked = await client.call(
                "ling/register", {"name": "kid", "kind": "tmux", "address": f"{pane}@{socket}"}
            )
            done = await trio.run_process(
                answer_command(hub_config, asked["prompt_id"], "approve"),
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            await kid_approved(http_hub)
            assert await registered(client) == ["kid"]


def test_every_face_names_the_hubs_own_question_as_the_hubs() -> None:
    """The desktop notification's summary (the editors and the dashboard spell the
    same label: their own tests); an agent's question keeps its agent's name."""
    from hive_rpc.core.prompt import Ask, new_prompt
    from hive_rpc.faces.desktop_notify import summary_text

    hubs = new_prompt(Ask(question="may kid be typed into?", agent_id="hive-rpc"), now=0.0)
    agents = new_prompt(Ask(question="deploy?", agent_id="deployer"), now=0.0)
    assert summary_text(hubs) == "the hub itself (hive-rpc) needs input"
    assert summary_text(agents) == "deployer needs input"
