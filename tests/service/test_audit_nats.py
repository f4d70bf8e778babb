"""The audit trail on the NATS store (a real nats-server), shared by two hubs: a
permission prompt answered on one hub is seen closing by both, and is still one entry
(its id is the prompt's); a rule's decision on one hub is listed by the other, and is
on both hubs' activity streams, once; both outlive the hubs (the store keeps them,
not a hub's memory)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from nats_support import NATS_SERVER, NatsServer
from test_audit import as_approver, hook_ask
from waiting import logged

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService
from hive_rpc.service.audit import AUDIT_DOC

pytestmark = pytest.mark.skipif(NATS_SERVER is None, reason="needs nats-server")


@asynccontextmanager
async def nats_hub(root: Path, name: str, url: str) -> AsyncIterator[tuple[HubService, HubClient]]:
    config = HubConfig(socket=root / name / "hub.sock", data_dir=root / name / "data", store=url)
    async with trio.open_nursery() as nursery:
        service: HubService = await nursery.start(run_hub, config)
        async with await HubClient.connect(config.socket) as c:
            await as_approver(c)
            yield service, c
        nursery.cancel_scope.cancel()


def audit_of(key: str) -> Callable[[Entry], bool]:
    return lambda e: e.kind == "audit" and e.key == key


def rule_audit_on(path: str) -> Callable[[Entry], bool]:
    return lambda e: e.kind == "audit" and e.data["source"] == "rule" and e.data["summary"] == path


async def test_two_hubs_share_one_trail_that_outlives_them(
    nats_server: NatsServer, short_tmp: Path
) -> None:
    async with (
        nats_hub(short_tmp, "a", nats_server.url) as (hub_a, a),
        nats_hub(short_tmp, "b", nats_server.url) as (hub_b, b),
    ):
        asked = await a.call("hive/ask", hook_ask().params())
        # b has it too, through the store
        await logged(hub_b.activity, lambda e: e.key == asked["id"], within_s=10)
        await b.call("hive/respond", {"id": asked["id"], "answer": "deny", "by": "vscode"})
        await a.call("rule/add", {"pattern": "Read", "decision": "allow", "scope": "global"})
        await a.call("rule/check", {"tool_name": "Read", "tool_input": {"file_path": "/etc/x"}})
        # Both decisions on both hubs' streams (recorded there, or read from the store).
        for service in (hub_a, hub_b):
            await logged(service.activity, audit_of(asked["id"]), within_s=10)
            await logged(service.activity, rule_audit_on("/etc/x"), within_s=10)
        # A third decision, made on b after them: once both hubs have logged it, they
        # have read the store past the first two, so a second log of either is no
        # longer to come.
        await b.call("rule/check", {"tool_name": "Read", "tool_input": {"file_path": "/etc/y"}})
        for service in (hub_a, hub_b):
            await logged(service.activity, rule_audit_on("/etc/y"), within_s=10)
        assert await a.call("audit/list", {}) == await b.call("audit/list", {})
        human, rule, later = await b.call("audit/list", {})
        assert (human["id"], human["decision"], human["by"]) == (asked["id"], "deny", "vscode")
        assert (rule["source"], rule["summary"]) == ("rule", "/etc/x")
        assert len(await hub_a.registry.store.documents(AUDIT_DOC)) == 3
        # each hub's activity stream logged each decision once, the rules' made on one
        # hub included (its dashboard shows it live)
        for service in (hub_a, hub_b):
            logged_ids = [e.key for e in service.activity.recent(1000) if e.kind == "audit"]
            assert sorted(logged_ids) == sorted([human["id"], rule["id"], later["id"]]), (
                service.info.socket
            )
    async with nats_hub(short_tmp, "c", nats_server.url) as (_, c):
        kept = [e["id"] for e in await c.call("audit/list", {})]
        assert kept == [human["id"], rule["id"], later["id"]]
