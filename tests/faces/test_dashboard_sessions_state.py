"""``GET /api/state``'s ``sessions`` (issue 30, item 1): the dashboard's sessions panel
starts from them, then follows the stream's ``session`` entries from the snapshot's
``last_id``.  So the snapshot must list every session in ``hive/sessions``' order, and
every change after it must come as an entry past that id.  A real hub with ``--http``
runs in-process; httpx2 talks to it over TCP."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import trio
from waiting import logged

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService

# httpx2 leaves its streaming generators to the garbage collector (as in test_mcp.py).
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)


async def state_of(service: HubService) -> dict[str, Any]:
    """``GET /api/state`` with the agent's credential: reading it takes no more."""
    token = (await trio.Path(str(service.info.token_file)).read_text()).strip()
    base = str(service.info.http_url).removesuffix("/mcp")
    async with httpx2.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=10
    ) as http:
        reply = await http.get("/api/state")
    assert reply.status_code == 200, reply.text
    got: dict[str, Any] = reply.json()
    return got


def session_change(agent_id: str, **fields: Any) -> Any:
    def wanted(entry: Entry) -> bool:
        return (
            entry.kind == "session"
            and entry.key == agent_id
            and all(entry.data.get(k) == v for k, v in fields.items())
        )

    return wanted


async def test_the_snapshot_lists_the_sessions_and_the_stream_goes_on_from_it(
    http_hub: HubService, hub_config: HubConfig
) -> None:
    async with await HubClient.connect(hub_config.socket) as agent:
        asked = await agent.call("hive/ask", {"question": "Ship it?", "agent_id": "deployer"})
        await logged(http_hub.activity, session_change("deployer", state="waiting"), within_s=30)
        await agent.call("agent/session", {"agent_id": "builder", "event": "start"})
        await agent.call(
            "agent/session",
            {"agent_id": "builder", "event": "prompt", "project_dir": "/srv/<b>app</b>"},
        )

        snapshot = await state_of(http_hub)
        sessions = snapshot["sessions"]
        assert sessions == await agent.call("hive/sessions", {})
        assert [(s["agent_id"], s["state"]) for s in sessions] == [
            ("deployer", "waiting"),
            ("builder", "working"),
        ]
        deployer, builder = sessions
        assert (deployer["questions"], deployer["permissions"]) == (1, 0)
        assert deployer["prompt_ids"] == [asked["id"]]
        assert builder["project_dir"] == "/srv/<b>app</b>"  # as given: the page makes it text
        assert builder["last_event"] == "prompt"

        # Known only by its question, the deployer leaves the list once it is answered:
        # the change is an entry after the snapshot's last_id, which the page follows.
        await agent.call("hive/proveApprover", {"token": http_hub.approver_token})
        await agent.call("hive/respond", {"id": asked["id"], "answer": "yes"})
        removed = await logged(
            http_hub.activity,
            session_change("deployer", removed=True),
            within_s=30,
            after=snapshot["last_id"],
        )
        assert removed.record()["agent_id"] == "deployer"
        later = await state_of(http_hub)
        assert [(s["agent_id"], s["state"]) for s in later["sessions"]] == [("builder", "working")]
        assert later["last_id"] >= removed.id


async def test_no_sessions_is_an_empty_list(http_hub: HubService) -> None:
    with trio.fail_after(30):
        assert (await state_of(http_hub))["sessions"] == []
