"""A NATS user limited to the subjects docs/multi-machine.md lists is all the hubs need,
and a user missing one is named as the cause (issue 32 part 6's upgrade: large results
went to a new object store, ``$O.hive_results.>``, which an older user list lacks).

The server drops a publish the user may not make and says so only in an asynchronous
``-ERR``, so the hub's request waited out its timeout and was refused as "no answer
within 5 s", which sent users looking for a network fault.  Against a real
``nats-server -js`` with two users in its ``authorization`` block."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from nats_support import NATS_SERVER, NatsServer
from test_shared_completion import nats_hub

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.errors import StoreUnavailable

pytestmark = pytest.mark.skipif(NATS_SERVER is None, reason="needs nats-server")

DOCUMENTED = ["$KV.hive_prompts.>", "$KV.hive_documents.>", "$O.hive_results.>", "$JS.API.>",
              "_INBOX.>"]  # fmt: skip
"""The subjects docs/multi-machine.md ("Give the hubs' user only what they use") lists."""
BEFORE_RESULTS = [s for s in DOCUMENTED if not s.startswith("$O.")]
"""The list before large results had an object store of their own."""


def user(name: str, subjects: list[str]) -> str:
    allowed = ", ".join(f'"{s}"' for s in subjects)
    return (
        f"{{user: {name}, password: pw, permissions: "
        f"{{publish: {{allow: [{allowed}]}}, subscribe: {{allow: [{allowed}]}}}}}}"
    )


@pytest.fixture
def limited_server(short_tmp: Path) -> AsyncIterator[NatsServer]:
    config = short_tmp / "nats.conf"
    users = f"{user('hive', DOCUMENTED)}\n    {user('old', BEFORE_RESULTS)}"
    config.write_text(f"authorization {{\n  users = [\n    {users}\n  ]\n}}\n")
    server = NatsServer(short_tmp / "jetstream", extra=["-c", str(config)])
    server.start()
    try:
        yield server
    finally:
        server.kill()


def big_result() -> dict[str, str]:
    return {"log": "line of a build log\n" * 2000}  # 40 KB: the object store's


async def test_the_documented_subjects_are_all_a_hub_needs(
    limited_server: NatsServer, short_tmp: Path
) -> None:
    url = f"nats://hive:pw@127.0.0.1:{limited_server.port}"
    with trio.fail_after(60):
        async with nats_hub(short_tmp, "a", url) as a, nats_hub(short_tmp, "b", url) as b:
            async with await HubClient.connect(short_tmp / "b" / "hub.sock") as editor:
                await editor.call("hive/subscribe")
                asked = await a.call("hive/ask", {"question": "Ship it?", "agent_id": "ci"})
                shown = await editor.next_notification()  # b's watch carried a's ask
                assert (shown.method, shown.params["id"]) == ("hive/prompt", asked["id"])
            await b.call("hive/respond", {"id": asked["id"], "answer": "yes", "by": "alice"})
            done = await a.call("hive/await", {"id": asked["id"], "timeout_s": 20})
            assert (done["status"], done["answer"]) == ("responded", "yes")
            await a.call(
                "hive/reportResult",
                {"task_id": "t-1", "outcome": "failed", "result": big_result(), "agent_id": "ci"},
            )
            (read,) = await b.call("hive/activity", {"task_id": "t-1"})
            assert read["result"] == big_result()


async def test_a_user_without_a_subject_is_named_as_the_cause(
    limited_server: NatsServer, short_tmp: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"nats://old:pw@127.0.0.1:{limited_server.port}"
    caplog.set_level(logging.WARNING, logger="hive_rpc.store.nats.connect")
    with trio.fail_after(60):
        async with nats_hub(short_tmp, "old", url) as hub:
            asked = await hub.call("hive/ask", {"question": "Still fine?", "agent_id": "ci"})
            assert asked["status"] == "pending"  # what it may use still works
            with pytest.raises(StoreUnavailable) as refused:
                await hub.call(
                    "hive/reportResult",
                    {"task_id": "t-2", "outcome": "failed", "result": big_result(),
                     "agent_id": "ci"},
                )  # fmt: skip
    said = refused.value.message
    assert "the server refused this hub's NATS user: permissions violation for publish" in said
    assert '"$O.hive_results.' in said, said
    assert "$O.hive_results.>" in said  # what to allow
    warned = [r.getMessage() for r in caplog.records]
    assert any("refused this hub's user: permissions violation" in w for w in warned), warned
