"""The web face of the hub's HTTP server (hive_rpc/faces/web.py behind mcp.http.Guard):
the activity stream over Server-Sent Events, result blobs, the dashboard's JSON API and
its token-for-cookie sign-in.  A real hub with ``--http`` runs in-process; httpx2 talks
to it over TCP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

from hive_rpc.faces import web
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.runtime.activity import INLINE_RESULT_BYTES, ActivityLog
from hive_rpc.service import HubService

# httpx2 leaves its streaming generators to the garbage collector, which trio reports;
# that is the client library's doing, not the hub's (as in test_mcp.py).
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(x|core)2\.:ResourceWarning",
)

PING_S = 0.2


@pytest.fixture
async def web_hub(
    hub_config: HubConfig, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> HubService:
    monkeypatch.setattr(web, "PING_S", PING_S)
    hub_config.http = "127.0.0.1:0"
    service: HubService = await nursery.start(run_hub, hub_config)
    return service


def base_url(service: HubService) -> str:
    return str(service.info.http_url).removesuffix("/mcp")


def token_of(service: HubService) -> str:
    return Path(str(service.info.token_file)).read_text().strip()


def bearer(service: HubService) -> dict[str, str]:
    """The agent's credential: the MCP token, as an agent over HTTP holds it."""
    return {"Authorization": f"Bearer {token_of(service)}"}


def human_token_of(service: HubService) -> str:
    """The human's credential: the approver token, what the dashboard signs in with."""
    return Path(str(service.info.approver_token_file)).read_text().strip()


def as_human(service: HubService) -> dict[str, str]:
    """The human's token as the bearer token (a script of the human's)."""
    return {"Authorization": f"Bearer {human_token_of(service)}"}


def own_origin(service: HubService) -> dict[str, str]:
    return {"Origin": base_url(service)}


@asynccontextmanager
async def http(service: HubService, **headers: str) -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(
        base_url=base_url(service), headers=headers, timeout=httpx2.Timeout(10)
    ) as client:
        yield client


@dataclass
class Event:
    event: str = "message"
    id: int | None = None
    data: Any = None


@dataclass
class Stream:
    """One open ``GET /activity``: its events in order, and the comments seen."""

    lines: Any
    comments: list[str] = field(default_factory=list)
    retry: int | None = None

    async def next(self) -> Event:
        ev = Event()
        data: list[str] = []
        async for line in self.lines:
            if line == "":
                if data:
                    ev.data = json.loads("\n".join(data))
                    return ev
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "":
                self.comments.append(value)
            elif name == "retry":
                self.retry = int(value)
            elif name == "id":
                ev.id = int(value)
            elif name == "event":
                ev.event = value
            elif name == "data":
                data.append(value)
        raise EOFError("the stream ended")

    async def take(self, n: int) -> list[Event]:
        return [await self.next() for _ in range(n)]


@asynccontextmanager
async def activity(service: HubService, query: str = "", **headers: str) -> AsyncIterator[Stream]:
    async with (
        http(service, **bearer(service), **headers) as client,
        client.stream("GET", "/activity" + query) as reply,
    ):
        assert reply.status_code == 200, await reply.aread()
        assert reply.headers["content-type"].startswith("text/event-stream")
        async with aclosing(reply.aiter_lines()) as lines:
            yield Stream(lines)


async def ask(service: HubService, question: str = "Deploy?", **more: Any) -> dict[str, Any]:
    """A question under no agent's name: its entries are the prompt's only (an agent's
    ask also moves its session, an entry of its own: test_an_agents_ask_moves_its_session)."""
    record: dict[str, Any] = await service.call("hive/ask", {"question": question, **more})
    await trio.testing.wait_all_tasks_blocked()  # the hub's feed has logged it
    return record


# --- the stream -----------------------------------------------------------------------


async def test_stream_delivers_an_ask_and_its_answer_in_order(web_hub: HubService) -> None:
    with trio.fail_after(10):
        async with activity(web_hub, f"?last_id={web_hub.activity.last_id}") as stream:
            asked = await ask(web_hub, choices=["yes", "no"], task_id="deploy-412")
            await web_hub.call("hive/respond", {"id": asked["id"], "answer": "yes", "by": "alice"})
            first, second = await stream.take(2)
    assert stream.retry == web.RETRY_MS
    assert (first.event, second.event) == ("prompt", "prompt")
    assert first.id is not None
    assert second.id == first.id + 1
    assert (first.data["event"], first.data["status"]) == ("ask", "pending")
    assert first.data["key"] == asked["id"]
    assert first.data["task_id"] == "deploy-412"
    assert first.data["outcome"] is None
    assert (second.data["event"], second.data["status"]) == ("respond", "responded")
    assert (second.data["outcome"], second.data["result"], second.data["by"]) == (
        "success",
        "yes",
        "alice",
    )
    assert second.data["completed_at"] is not None


async def test_an_agents_ask_moves_its_session(web_hub: HubService) -> None:
    """An agent's question is two entries: the prompt, then its agent's session, now
    waiting on the human (docs/protocol.md "Agent sessions"); answered, the session
    known only by that question leaves the list."""
    with trio.fail_after(10):
        async with activity(web_hub, f"?last_id={web_hub.activity.last_id}") as stream:
            asked = await ask(web_hub, agent_id="deployer")
            await web_hub.call("hive/respond", {"id": asked["id"], "answer": "yes"})
            events = await stream.take(4)
    assert [(e.event, e.data["event"]) for e in events] == [
        ("prompt", "ask"),
        ("session", "ask"),
        ("prompt", "respond"),
        ("session", "closed"),
    ]
    assert (events[1].data["state"], events[1].data["prompt_ids"]) == ("waiting", [asked["id"]])
    assert events[3].data == {**events[3].data, "agent_id": "deployer", "removed": True}


async def test_resume_gets_only_the_later_entries(web_hub: HubService) -> None:
    start = web_hub.activity.last_id
    asked = [await ask(web_hub, f"q{i}") for i in range(3)]
    with trio.fail_after(10):
        # EventSource sends Last-Event-ID on reconnect; it wins over ?last_id.
        async with activity(web_hub, "?last_id=0", **{"Last-Event-ID": str(start + 1)}) as s:
            events = await s.take(2)
        async with activity(web_hub, f"?last_id={start + 2}") as s:
            (last,) = await s.take(1)
    assert [e.id for e in events] == [start + 2, start + 3]
    assert [e.data["key"] for e in events] == [a["id"] for a in asked[1:]]
    assert (last.id, last.data["key"]) == (start + 3, asked[2]["id"])


async def test_reset_when_the_entries_after_the_id_are_gone(web_hub: HubService) -> None:
    web_hub.activity = ActivityLog(web_hub.registry.now, size=3, first_id=1)
    for i in range(6):
        await ask(web_hub, f"q{i}")
    assert web_hub.activity.last_id == 6
    with trio.fail_after(10):
        async with activity(web_hub, "?last_id=1") as stream:
            reset = await stream.next()
            newer = await ask(web_hub, "after the reset")
            (after,) = await stream.take(1)
        # An id this log never gave (the hub restarted: ids start again): reset too.
        async with activity(web_hub, **{"Last-Event-ID": "999"}) as stream:
            restarted = await stream.next()
    assert (reset.event, reset.data) == ("reset", {"last_id": 6})
    assert (after.id, after.data["key"]) == (7, newer["id"])
    assert (restarted.event, restarted.data) == ("reset", {"last_id": 7})


async def test_a_bad_resume_id_is_refused(web_hub: HubService) -> None:
    async with http(web_hub, **bearer(web_hub)) as client:
        reply = await client.get("/activity", headers={"Last-Event-ID": "seven"})
    assert reply.status_code == 400


async def test_pings_keep_an_idle_stream_alive(web_hub: HubService) -> None:
    with trio.fail_after(10):
        async with activity(web_hub) as stream:
            while len(stream.comments) < 2:
                with trio.move_on_after(PING_S * 10):
                    await stream.next()
    assert stream.comments[:2] == ["ping", "ping"]


async def test_a_task_report_is_a_task_event(web_hub: HubService) -> None:
    with trio.fail_after(10):
        async with activity(web_hub, f"?last_id={web_hub.activity.last_id}") as stream:
            await web_hub.call(
                "hive/reportResult",
                {
                    "task_id": "build-7",
                    "outcome": "success",
                    "result": {"wheel": "hive_rpc-0.1.0.whl"},
                    "agent_id": "builder",
                },
            )
            (event,) = await stream.take(1)
    assert event.event == "task"
    data = event.data
    assert (data["kind"], data["event"], data["key"]) == ("task", "task/report", "build-7")
    assert (data["task_id"], data["outcome"], data["agent_id"]) == ("build-7", "success", "builder")
    assert data["result"] == {"wheel": "hive_rpc-0.1.0.whl"}
    assert isinstance(data["completed_at"], float)


async def test_a_large_result_is_a_blob_reference(web_hub: HubService) -> None:
    big = {"log": "x" * (INLINE_RESULT_BYTES + 100)}
    with trio.fail_after(10):
        async with activity(web_hub, f"?last_id={web_hub.activity.last_id}") as stream:
            await web_hub.call(
                "hive/reportResult", {"task_id": "t-big", "outcome": "failed", "result": big}
            )
            (event,) = await stream.take(1)
        ref = event.data["result_ref"]
        assert event.data["result"] is None
        assert ref.startswith("/activity/blobs/")
        async with http(web_hub, **bearer(web_hub)) as client:
            blob = await client.get(ref)
            unknown = await client.get("/activity/blobs/" + "0" * 64)
            malformed = await client.get("/activity/blobs/..%2f..%2fetc")
        async with http(web_hub) as anonymous:
            refused = await anonymous.get(ref)
    assert blob.status_code == 200
    assert blob.headers["content-type"].startswith("application/json")
    assert blob.json() == big
    assert event.data["result_size"] == len(blob.content)
    assert (unknown.status_code, malformed.status_code, refused.status_code) == (404, 404, 401)


async def test_the_stream_ends_cleanly_when_the_hub_stops(
    hub_config: HubConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web, "PING_S", 60.0)
    hub_config.http = "127.0.0.1:0"
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            service: HubService = await nursery.start(run_hub, hub_config)
            async with activity(service) as stream:
                nursery.cancel_scope.cancel()
                with pytest.raises(EOFError):
                    await stream.next()


# --- the guard ------------------------------------------------------------------------


async def test_token_origin_and_host_are_checked(web_hub: HubService) -> None:
    port = base_url(web_hub).rsplit(":", 1)[1]
    token_file = str(web_hub.info.token_file)
    async with http(web_hub) as anonymous, http(web_hub, **bearer(web_hub)) as client:
        for path in ("/activity", "/api/state", "/dashboard", "/activity/blobs/" + "0" * 64):
            reply = await anonymous.get(path)
            assert reply.status_code == 401, path
            assert token_file in reply.text
            assert "/dashboard?token=" in reply.text
        wrong = await anonymous.get("/api/state", headers={"Authorization": "Bearer " + "x" * 43})
        assert wrong.status_code == 401
        foreign = await client.get("/activity", headers={"Origin": "http://evil.example"})
        assert (foreign.status_code, "evil.example" in foreign.text) == (403, True)
        other_port = await client.get("/api/state", headers={"Origin": "http://localhost:1"})
        assert other_port.status_code == 403
        rebinding = await client.get("/api/state", headers={"Host": f"evil.example:{port}"})
        assert rebinding.status_code == 421
        assert (await client.get("/api/state", headers={"Host": f"localhost:{port}"})).is_success


async def test_the_dashboard_trades_the_token_for_a_cookie(web_hub: HubService) -> None:
    token = human_token_of(web_hub)
    async with http(web_hub) as browser:
        wrong = await browser.get("/dashboard", params={"token": "y" * 43})
        agents = await browser.get("/dashboard", params={"token": token_of(web_hub)})
        assert "set-cookie" not in agents.headers
        signed_in = await browser.get("/dashboard", params={"token": token})
        cookie = signed_in.headers["set-cookie"]
        page = await browser.get("/dashboard")
        state = await browser.get("/api/state")
        script = await browser.get("/dashboard/app.js")
        root = await browser.get("/")
        # The cookie opens the web routes only, never MCP.
        mcp = await browser.post("/mcp", json={}, headers={"Accept": "application/json"})
        with trio.fail_after(10):
            async with browser.stream("GET", "/activity") as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
    assert wrong.status_code == 401
    # The agents' MCP token never signs in: the page decides for the human.
    assert agents.status_code == 403
    assert str(web_hub.info.approver_token_file) in agents.text
    assert (signed_in.status_code, signed_in.headers["location"]) == (303, "/dashboard")
    assert cookie.startswith("hive_human=")
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert attribute in cookie
    assert token not in cookie
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "Waiting for you" in page.text
    assert state.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert (root.status_code, root.headers["location"]) == (303, "/dashboard")
    assert mcp.status_code == 401


async def test_a_post_needs_this_servers_origin_and_json(web_hub: HubService) -> None:
    asked = await ask(web_hub)
    body = {"id": asked["id"]}
    port = base_url(web_hub).rsplit(":", 1)[1]
    async with http(web_hub, **as_human(web_hub)) as client:
        no_origin = await client.post("/api/cancel", json=body)
        other = await client.post("/api/cancel", json=body, headers={"Origin": "http://127.0.0.1"})
        alias = await client.post(
            "/api/cancel", json=body, headers={"Origin": f"http://localhost:{port}"}
        )
        form = await client.post(
            "/api/cancel",
            content=f"id={asked['id']}",
            headers={**own_origin(web_hub), "Content-Type": "application/x-www-form-urlencoded"},
        )
        not_json = await client.post(
            "/api/cancel",
            content=b"{",
            headers={**own_origin(web_hub), "Content-Type": "application/json"},
        )
        ok = await client.post("/api/cancel", json=body, headers=own_origin(web_hub))
    assert [r.status_code for r in (no_origin, other, alias)] == [403, 403, 403]
    assert "Origin" in no_origin.text
    assert (form.status_code, not_json.status_code) == (415, 400)
    assert ok.status_code == 200
    assert (ok.json()["status"], ok.json()["by"]) == ("cancelled", "dashboard")


async def test_respond_and_cancel_report_the_hubs_refusals(web_hub: HubService) -> None:
    first = await ask(web_hub, choices=["yes", "no"])
    second = await ask(web_hub)
    async with http(web_hub, **as_human(web_hub), **own_origin(web_hub)) as client:
        invalid = await client.post("/api/respond", json={"id": first["id"], "answer": "maybe"})
        answered = await client.post("/api/respond", json={"id": first["id"], "answer": "yes"})
        again = await client.post("/api/respond", json={"id": first["id"], "answer": "no"})
        cancel_answered = await client.post("/api/cancel", json={"id": first["id"]})
        declined = await client.post(
            "/api/respond", json={"id": second["id"], "answer": None, "action": "decline"}
        )
        unknown = await client.post("/api/respond", json={"id": "0123456789abcdef", "answer": 1})
        no_id = await client.post("/api/cancel", json={})
        bad_action = await client.post(
            "/api/respond", json={"id": first["id"], "answer": 1, "action": "shrug"}
        )
    assert (invalid.status_code, invalid.json()["error"]["code"]) == (400, -32004)
    assert answered.status_code == 200
    assert (answered.json()["answer"], answered.json()["by"]) == ("yes", "dashboard")
    assert (again.status_code, again.json()["error"]["code"]) == (409, -32002)
    assert "first answer wins" in again.json()["error"]["message"]
    assert again.json()["error"]["data"]["by"] == "dashboard"
    assert cancel_answered.status_code == 409
    assert (declined.status_code, declined.json()["action"]) == (200, "decline")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, -32001)
    assert (no_id.status_code, no_id.json()["error"]["code"]) == (400, -32602)
    assert bad_action.status_code == 400


async def test_typing_on_the_page_stops_the_countdown(web_hub: HubService) -> None:
    asked = await ask(web_hub, timeout_s=300)
    assert asked["deadline_at"] < asked["max_deadline_at"]
    async with http(web_hub, **as_human(web_hub), **own_origin(web_hub)) as client:
        typed = await client.post("/api/typing", json={"id": asked["id"]})
        unknown = await client.post("/api/typing", json={"id": "0123456789abcdef"})
    assert typed.status_code == 200
    assert typed.json()["typing_at"] is not None
    assert typed.json()["deadline_at"] == typed.json()["max_deadline_at"]
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, -32001)


async def test_state_is_one_page_when_the_pending_pass_the_reply_limit(
    web_hub: HubService,
) -> None:
    """140 long questions make ~9 MB of records, past the 8 MiB a reply may take: the
    snapshot still comes, with the oldest that fit and how many there are in all."""
    long = "x" * 60_000
    asked = [
        await web_hub.call("hive/ask", {"question": f"{i} {long}", "agent_id": "deployer"})
        for i in range(140)
    ]
    async with http(web_hub, **bearer(web_hub)) as client:
        reply = await client.get("/api/state")
    assert reply.status_code == 200, reply.text[:300]
    state = reply.json()
    assert state["pending_total"] == 140
    shown = [p["id"] for p in state["pending"]]
    assert 0 < len(shown) < 140
    assert shown == [a["id"] for a in asked[: len(shown)]]  # the oldest, in order


async def test_state_is_the_dashboards_snapshot(web_hub: HubService) -> None:
    asked = await ask(web_hub, "Which region?", choices=["eu", "us"])
    assert web_hub.agora is not None
    d = await web_hub.call(
        "agora/create", {"topic": "Cache?", "participants": ["main.a", "main.b"]}
    )
    await web_hub.call(
        "agora/dispatch",
        {"dialogue_id": d["id"], "from": "main.a", "to": "main.b", "signal": "propose",
         "message": "Redis"},
    )  # fmt: skip
    async with http(web_hub, **bearer(web_hub)) as client:
        state = (await client.get("/api/state")).json()
    assert [p["id"] for p in state["pending"]] == [asked["id"]]
    (dialogue,) = state["dialogues"]
    assert (dialogue["topic"], dialogue["participants"]) == ("Cache?", ["main.a", "main.b"])
    assert [t["message"] for t in dialogue["turns"]] == ["Redis"]
    assert state["last_id"] == web_hub.activity.last_id
    kinds = [e["kind"] for e in state["activity"]]
    assert kinds[-1] == "prompt"  # newest first: the ask came before the dialogue
    assert "dialogue" in kinds
    assert isinstance(state["now"], float)


# --- ids across restarts, and entries dropped by age -------------------------------------


class FakeClock:
    """The log's clock, moved by hand (the TTL counts in its seconds)."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


async def test_a_resume_across_a_hub_restart_gets_a_reset(hub_config: HubConfig) -> None:
    """The log lives in memory: a restarted hub must not give again the ids a client
    saw from the previous run, or the client skips the new run's first entries."""
    hub_config.http = "127.0.0.1:0"
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            before: HubService = await nursery.start(run_hub, hub_config)
            for i in range(3):
                await ask(before, f"before {i}")
            seen = before.activity.last_id
            nursery.cancel_scope.cancel()
        async with trio.open_nursery() as nursery:
            after: HubService = await nursery.start(run_hub, hub_config)
            for i in range(5):
                await ask(after, f"after {i}")
            logged = [e.id for e in after.activity.recent()]
            assert min(logged) > seen, (seen, logged)
            async with activity(after, **{"Last-Event-ID": str(seen)}) as stream:
                first = await stream.next()
            nursery.cancel_scope.cancel()
    assert (first.event, first.data) == ("reset", {"last_id": after.activity.last_id})


async def test_a_resume_from_before_entries_the_ttl_dropped_gets_a_reset(
    web_hub: HubService,
) -> None:
    """Unfinished entries outlive the TTL, finished ones do not: an id whose next
    entries were dropped by age (an older pending ``ask`` still held) resumes with a
    reset, not silently past the gap."""
    clock = FakeClock(web_hub.registry.now())
    web_hub.activity = ActivityLog(clock, ttl_s=60)
    pending = await ask(web_hub, "still pending")
    seen = web_hub.activity.last_id
    web_hub.activity.report_task(task_id="done-early", outcome="success")
    clock.t += 61
    web_hub.activity.report_task(task_id="done-later", outcome="success")
    assert [e.key for e in web_hub.activity.recent()] == [pending["id"], "done-later"]
    with trio.fail_after(10):
        async with activity(web_hub, f"?last_id={seen}") as stream:
            first = await stream.next()
    assert (first.event, first.data) == ("reset", {"last_id": web_hub.activity.last_id})
