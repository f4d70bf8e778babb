"""Every hub method over a real Unix socket, with several real clients at once."""

from __future__ import annotations

import os
import socket
import stat

import pytest
import trio

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import HiveError
from hive_rpc.core.prompt import Ask
from hive_rpc.faces.editor_socket import SNAPSHOT_WRITE, SocketInUse
from hive_rpc.hub import HubAlreadyRunning, HubConfig, run_hub
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.protocol.jsonrpc import dumps
from hive_rpc.service import HubService


async def test_socket_is_private(hub: HubService, hub_config: HubConfig) -> None:
    assert stat.S_IMODE(hub_config.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(hub_config.socket.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(hub_config.data_dir.stat().st_mode) == 0o700


async def test_ask_poll_await_respond(client: HubClient, hub_config: HubConfig) -> None:
    with trio.fail_after(10):
        asked = await client.call(
            "hive/ask",
            {"question": "Deploy?", "choices": ["yes", "no"], "agent_id": "a1", "task_id": "t1"},
        )
        assert asked["status"] == "pending"
        assert asked["choices"] == ["yes", "no"]
        assert asked["task_id"] == "t1"
        async with await HubClient.connect(hub_config.socket) as human:
            done = await human.call(
                "hive/respond", {"id": asked["id"], "answer": "yes", "by": "me"}
            )
        assert (done["status"], done["answer"], done["by"], done["action"]) == (
            "responded",
            "yes",
            "me",
            "accept",
        )
        got = await client.call("hive/await", {"id": asked["id"], "timeout_s": 5, "agent_id": "a1"})
        assert got == done
        assert await client.call("hive/poll", {"id": asked["id"], "agent_id": "a1"}) == done


async def test_long_poll_does_not_block_other_requests_on_the_connection(
    hub: HubService, hub_config: HubConfig
) -> None:
    """An await in flight on one connection; the same connection keeps serving."""
    with trio.fail_after(10):
        async with await HubClient.connect(hub_config.socket) as c:
            p = await c.call("hive/ask", {"question": "q", "agent_id": "a"})
            # Send an await without reading its answer, then use the connection.
            body = {
                "jsonrpc": "2.0",
                "id": "w",
                "method": "hive/await",
                "params": {"id": p["id"], "timeout_s": 30},
            }
            await c.send_raw(encode_frame(dumps(body)))
            status = await c.call("hive/status")
            assert status["counts"]["pending"] == 1
            await c.call("hive/respond", {"id": p["id"], "answer": "ok"})
            awaited = await c.next_message()
            assert getattr(awaited, "id", None) == "w"
            assert getattr(awaited, "result", {})["answer"] == "ok"


async def test_cancel_and_agent_isolation(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q", "agent_id": "a1"})
    with pytest.raises(HiveError) as err:
        await client.call("hive/cancel", {"id": p["id"], "agent_id": "a2"})
    assert err.value.code == -32001
    assert err.value.kind == "not_found"
    with pytest.raises(HiveError):
        await client.call("hive/poll", {"id": p["id"], "agent_id": "a2"})
    done = await client.call("hive/cancel", {"id": p["id"], "agent_id": "a1"})
    assert (done["status"], done["by"]) == ("cancelled", "a1")
    with pytest.raises(HiveError) as err:
        await client.call("hive/respond", {"id": p["id"], "answer": "late"})
    assert err.value.code == -32003
    assert "cancelled" in err.value.message


async def test_list_per_agent_and_for_coordinators(client: HubClient) -> None:
    a = await client.call("hive/ask", {"question": "qa", "agent_id": "a"})
    b = await client.call("hive/ask", {"question": "qb", "agent_id": "b"})
    assert [r["id"] for r in await client.call("hive/list", {"agent_id": "a"})] == [a["id"]]
    assert [r["id"] for r in await client.call("hive/list")] == [a["id"], b["id"]]


async def test_await_ask_for_a_coordinator(client: HubClient, hub_config: HubConfig) -> None:
    with trio.fail_after(10):
        async with await HubClient.connect(hub_config.socket) as agent:
            old = await agent.call("hive/ask", {"question": "old", "agent_id": "x"})
            got = await client.call("hive/awaitAsk", {"timeout_s": 5})
            assert got["id"] == old["id"]
            assert (
                await client.call("hive/awaitAsk", {"timeout_s": 0, "exclude": [old["id"]]}) is None
            )
            with pytest.raises(HiveError, match="exclude must be a list of prompt ids"):
                await client.call("hive/awaitAsk", {"timeout_s": 0, "exclude": [1]})


async def test_second_answer_error_names_first_answerer(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q", "choices": ["a", "b"]})
    with pytest.raises(HiveError) as err:
        await client.call("hive/respond", {"id": p["id"], "answer": "c"})
    assert err.value.code == -32004
    assert err.value.data["choices"] == ["a", "b"]
    await client.call("hive/respond", {"id": p["id"], "answer": "a", "by": "emacs"})
    with pytest.raises(HiveError) as err:
        await client.call("hive/respond", {"id": p["id"], "answer": "b", "by": "vscode"})
    assert err.value.code == -32002
    assert err.value.data["by"] == "emacs"
    assert isinstance(err.value.data["answered_at"], float)


async def test_bad_action_is_refused(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q"})
    with pytest.raises(HiveError, match="action must be one of accept, decline, cancel"):
        await client.call("hive/respond", {"id": p["id"], "answer": "x", "action": "maybe"})
    done = await client.call("hive/respond", {"id": p["id"], "action": "decline"})
    assert (done["action"], done["answer"]) == ("decline", None)


async def test_subscribe_gets_pending_first_then_live(
    client: HubClient, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        first = await client.call("hive/ask", {"question": "before", "agent_id": "a"})
        async with await HubClient.connect(hub_config.socket) as editor:
            sub = await editor.call("hive/subscribe")
            assert sub == {"subscribed": True, "pending": 1}
            note = await editor.next_notification()
            assert (note.method, note.params["id"]) == ("hive/prompt", first["id"])
            assert note.params["question"] == "before"
            second = await client.call("hive/ask", {"question": "after", "agent_id": "a"})
            note = await editor.next_notification()
            assert (note.method, note.params["id"]) == ("hive/prompt", second["id"])
            await client.call("hive/cancel", {"id": second["id"], "agent_id": "a"})
            note = await editor.next_notification()
            assert note.method == "hive/dismiss"
            assert note.params == {
                "id": second["id"],
                "status": "cancelled",
                "by": "a",
                "action": None,
                "unseen": False,
            }
            assert (await editor.call("hive/subscribe"))["subscribed"] is True  # idempotent
            assert await editor.call("hive/unsubscribe") == {
                "subscribed": False,
                "was_subscribed": True,
            }
            await client.call("hive/ask", {"question": "unseen"})
            await editor.call("hive/status")
            assert not editor.notifications


async def test_a_snapshot_of_many_writes_gives_each_prompt_once_in_order_then_the_changes(
    hub: HubService, client: HubClient, hub_config: HubConfig
) -> None:
    """The snapshot's frames go out joined, several writes' worth here
    (``SNAPSHOT_WRITE``); each pending prompt comes once, oldest first, whole, and
    what changed while it was being sent comes after it, in order.  The records are
    the store's encoding (non-ASCII escaped): the same JSON values as ``to_record``."""
    count = 600  # about 500 bytes a frame: 300 KB, five writes and more
    asked = [
        await hub.registry.ask(
            Ask(question=f"question {i} déjà ✓ " + "x" * 200, agent_id=f"a{i % 3}")
        )
        for i in range(count)
    ]
    assert count * 450 > 4 * SNAPSHOT_WRITE
    with trio.fail_after(30):
        async with await HubClient.connect(hub_config.socket) as editor:
            assert await editor.call("hive/subscribe") == {"subscribed": True, "pending": count}
            # Changes made before the editor read a byte of the snapshot.
            late = await client.call("hive/ask", {"question": "late", "agent_id": "b"})
            await client.call("hive/cancel", {"id": asked[0].id})
            seen = [await editor.next_notification() for _ in range(count + 2)]
    assert [n.method for n in seen] == ["hive/prompt"] * (count + 1) + ["hive/dismiss"]
    assert [n.params["id"] for n in seen[:count]] == [p.id for p in asked]
    assert [n.params for n in seen[:count]] == [p.to_record() for p in asked]
    assert seen[count].params["id"] == late["id"]
    assert seen[count + 1].params["id"] == asked[0].id


async def test_two_subscribers_race_first_answer_dismisses_everywhere(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await HubClient.connect(hub_config.socket) as emacs,
            await HubClient.connect(hub_config.socket) as vscode,
        ):
            await emacs.call("hive/subscribe")
            await vscode.call("hive/subscribe")
            p = await agent.call("hive/ask", {"question": "Merge?", "choices": ["yes", "no"]})
            for editor in (emacs, vscode):
                note = await editor.next_notification()
                assert (note.method, note.params["id"]) == ("hive/prompt", p["id"])
            results: dict[str, object] = {}

            async def answer(name: str, c: HubClient, value: str) -> None:
                try:
                    results[name] = await c.call(
                        "hive/respond", {"id": p["id"], "answer": value, "by": name}
                    )
                except HiveError as e:
                    results[name] = e

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer, "emacs", emacs, "yes")
                nursery.start_soon(answer, "vscode", vscode, "no")
            winners = [n for n, r in results.items() if isinstance(r, dict)]
            losers = [r for r in results.values() if isinstance(r, HiveError)]
            assert len(winners) == 1
            assert len(losers) == 1
            assert losers[0].code == -32002
            assert losers[0].data["by"] == winners[0]
            for editor in (emacs, vscode):
                note = await editor.next_notification()
                assert note.method == "hive/dismiss"
                assert (note.params["id"], note.params["by"]) == (p["id"], winners[0])
            final = await agent.call("hive/poll", {"id": p["id"]})
            assert final["by"] == winners[0]


async def test_typing_notification_stops_the_countdown(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q", "timeout_s": 60})
    await client.notify("hive/typing", {"id": p["id"]})
    await client.notify("hive/typing", {"id": "no-such-prompt"})  # ignored, never answered
    with trio.fail_after(10):
        while (await client.call("hive/poll", {"id": p["id"]}))["typing_at"] is None:
            await trio.testing.wait_all_tasks_blocked()
    rec = await client.call("hive/typing", {"id": p["id"]})
    assert rec["deadline_at"] == rec["max_deadline_at"]


async def test_typing_on_one_connection_updates_every_subscriber(
    hub: HubService, hub_config: HubConfig
) -> None:
    """Typing in one editor stops the countdown shown in the others: each subscriber,
    the typist's too, gets ``hive/update`` with the moved deadline, not a new
    ``hive/prompt``; a second ``hive/typing`` changes nothing and sends nothing."""
    with trio.fail_after(10):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await HubClient.connect(hub_config.socket) as window1,
            await HubClient.connect(hub_config.socket) as window2,
        ):
            for window in (window1, window2):
                await window.call("hive/subscribe")
            p = await agent.call("hive/ask", {"question": "Name?", "timeout_s": 300})
            for window in (window1, window2):
                note = await window.next_notification()
                assert (note.method, note.params["id"]) == ("hive/prompt", p["id"])
                assert note.params["typing_at"] is None
            await window2.notify("hive/typing", {"id": p["id"]})
            for window in (window1, window2):
                note = await window.next_notification()
                assert (note.method, note.params["id"]) == ("hive/update", p["id"])
                assert note.params["status"] == "pending"
                assert note.params["typing_at"] is not None
                assert note.params["deadline_at"] == note.params["max_deadline_at"]
            await window2.call("hive/typing", {"id": p["id"]})
            await agent.call("hive/cancel", {"id": p["id"]})
            for window in (window1, window2):
                note = await window.next_notification()
                assert (note.method, note.params["status"]) == ("hive/dismiss", "cancelled")


async def test_status_reports_paths_pid_and_counts(
    client: HubClient, hub_config: HubConfig
) -> None:
    await client.call("hive/ask", {"question": "q"})
    status = await client.call("hive/status")
    assert status["socket"] == os.fspath(hub_config.socket)
    assert status["data_dir"] == os.fspath(hub_config.data_dir)
    assert status["pid"] == os.getpid()
    assert status["store"] == "sqlite"
    assert status["counts"] == {"pending": 1, "responded": 0, "expired": 0, "cancelled": 0}
    assert {"http_url", "token_file", "version", "started_at"} <= set(status)


async def test_second_hub_on_the_same_socket_refuses(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(5), pytest.raises(HubAlreadyRunning, match="already serves this socket"):
        await run_hub(hub_config)
    assert (await hub.call("hive/status", {}))["pid"] == os.getpid()


async def test_second_hub_on_the_same_data_dir_refuses(
    hub: HubService, hub_config: HubConfig
) -> None:
    other = HubConfig(
        socket=hub_config.socket.with_name("other.sock"), data_dir=hub_config.data_dir
    )
    with trio.fail_after(5), pytest.raises(HubAlreadyRunning, match="already serves this data dir"):
        await run_hub(other)


async def test_stale_socket_file_is_taken_over(
    hub_config: HubConfig, nursery: trio.Nursery
) -> None:
    hub_config.socket.parent.mkdir(mode=0o700, parents=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.fspath(hub_config.socket))
    stale.close()  # the file stays, nobody listens: what a crashed hub leaves
    await nursery.start(run_hub, hub_config)
    async with await HubClient.connect(hub_config.socket) as c:
        assert (await c.call("hive/status"))["pid"] == os.getpid()


async def test_hub_removes_its_socket_on_shutdown(hub_config: HubConfig) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(run_hub, hub_config)
        assert hub_config.socket.exists()
        nursery.cancel_scope.cancel()
    assert not hub_config.socket.exists()


async def test_refuses_a_socket_someone_else_listens_on(hub_config: HubConfig) -> None:
    hub_config.socket.parent.mkdir(mode=0o700, parents=True)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(os.fspath(hub_config.socket))
    squatter.listen(1)
    try:
        with trio.fail_after(5), pytest.raises(SocketInUse, match="already answering"):
            await run_hub(hub_config)
        assert hub_config.socket.exists()  # not unlinked from under its owner
    finally:
        squatter.close()


async def test_an_agent_answers_only_its_own_prompts(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q", "agent_id": "a1"})
    with pytest.raises(HiveError) as err:
        await client.call("hive/respond", {"id": p["id"], "answer": "x", "agent_id": "a2"})
    assert err.value.kind == "not_found"
    coordinator = await client.call("hive/respond", {"id": p["id"], "answer": "x", "by": "boss"})
    assert coordinator["by"] == "boss"


async def test_blank_agent_id_is_refused_not_read_as_everyone(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q", "agent_id": "a1"})
    for method, params in [
        ("hive/poll", {"id": p["id"]}),
        ("hive/list", {}),
        ("hive/ask", {"question": "q"}),
    ]:
        with pytest.raises(HiveError, match="agent_id must be a non-empty string"):
            await client.call(method, {**params, "agent_id": " "})


async def test_null_urgent_means_not_urgent(client: HubClient) -> None:
    p = await client.call("hive/ask", {"question": "q", "urgent": None})
    assert p["urgent"] is False


async def test_two_subscribes_in_flight_give_one_stream(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        async with await HubClient.connect(hub_config.socket) as editor:
            frames = [
                encode_frame(dumps({"jsonrpc": "2.0", "id": i, "method": "hive/subscribe"}))
                for i in (1, 2)
            ]
            await editor.send_raw(b"".join(frames))
            replies = [await editor.next_message(), await editor.next_message()]
            assert sorted(getattr(r, "id", None) for r in replies) == [1, 2]
            await hub.call("hive/ask", {"question": "once"})
            await hub.call("hive/ask", {"question": "twice?"})
            first = await editor.next_notification()
            second = await editor.next_notification()
            assert [first.params["question"], second.params["question"]] == ["once", "twice?"]
            await editor.call("hive/status")  # anything duplicated would have arrived by now
            assert not editor.notifications


async def test_requests_sent_before_a_half_close_are_answered(
    hub: HubService, hub_config: HubConfig
) -> None:
    """``printf REQUEST | nc -U hub.sock``: the client shuts its write side at once."""
    with trio.fail_after(10):
        stream = await trio.open_unix_socket(os.fspath(hub_config.socket))
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "hive/ask",
            "params": {"question": "from nc"},
        }
        await stream.send_all(encode_frame(dumps(request)))
        await stream.send_eof()
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
        await stream.aclose()
    assert b'"question":"from nc"' in data
    assert b'"status":"pending"' in data
    assert len(hub.registry.list_pending()) == 1


async def test_a_client_hanging_up_is_not_logged_as_an_error(
    hub: HubService, hub_config: HubConfig, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(10):
        for _ in range(3):
            c = await HubClient.connect(hub_config.socket)
            await c.call("hive/subscribe")
            await c.aclose()
        await hub.call("hive/ask", {"question": "to nobody"})
        await hub.call("hive/status", {})
        await trio.testing.wait_all_tasks_blocked()
    assert [r for r in caplog.records if r.levelname == "ERROR"] == []


async def test_unsubscribe_overtaking_subscribe_still_answers_both(
    hub: HubService, hub_config: HubConfig
) -> None:
    with trio.fail_after(10):
        async with await HubClient.connect(hub_config.socket) as editor:
            await hub.call("hive/ask", {"question": "pending"})
            frames = [
                encode_frame(dumps({"jsonrpc": "2.0", "id": 1, "method": "hive/subscribe"})),
                encode_frame(dumps({"jsonrpc": "2.0", "id": 2, "method": "hive/unsubscribe"})),
            ]
            for _ in range(20):  # the race went the wrong way about half the time
                await editor.send_raw(b"".join(frames))
                replies = {getattr(await editor.next_message(), "id", None) for _ in range(2)}
                assert replies == {1, 2}


async def test_defer_after_typing_restarts_every_subscribers_countdown(
    hub: HubService, hub_config: HubConfig
) -> None:
    """Typed then left (issue 14): ``hive/defer``, sent as a notification like
    ``hive/typing``, gives the prompt its countdown back and every subscriber gets
    ``hive/update`` with it; a defer of a prompt nobody typed into sends nothing."""
    with trio.fail_after(10):
        async with (
            await HubClient.connect(hub_config.socket) as agent,
            await HubClient.connect(hub_config.socket) as window1,
            await HubClient.connect(hub_config.socket) as window2,
        ):
            for window in (window1, window2):
                await window.call("hive/subscribe")
            p = await agent.call("hive/ask", {"question": "Name?", "timeout_s": 300})
            blank = await window1.call("hive/defer", {"id": p["id"]})  # hidden blank
            assert blank == p
            await window2.notify("hive/typing", {"id": p["id"]})
            for window in (window1, window2):
                assert (await window.next_notification()).method == "hive/prompt"
                assert (await window.next_notification()).params["typing_at"] is not None
            await window2.notify("hive/defer", {"id": p["id"]})
            await window2.notify("hive/defer", {"id": "no-such-prompt"})  # dropped
            for window in (window1, window2):
                note = await window.next_notification()
                assert (note.method, note.params["id"]) == ("hive/update", p["id"])
                assert note.params["typing_at"] is None
                assert note.params["deadline_at"] < note.params["max_deadline_at"]
                assert note.params["deadline_at"] >= p["deadline_at"]
            await agent.call("hive/cancel", {"id": p["id"]})
            for window in (window1, window2):
                assert (await window.next_notification()).method == "hive/dismiss"
