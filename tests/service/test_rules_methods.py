"""The answer rules' methods (service/rules.py) over the real editor socket: a rule
added is listed, answers rule/check for its scope and tool use, survives a hub
restart (it is a document of the store), and is removed; bad rules get -32602."""

from __future__ import annotations

import pytest
import trio

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import InvalidParams
from hive_rpc.hub import HubConfig, run_hub


async def test_add_check_list_survive_a_restart_and_remove(hub_config: HubConfig) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(run_hub, hub_config)
        async with await HubClient.connect(hub_config.socket) as c:
            assert await prove_approver(c.call) is None  # rule/add and remove want one
            allow = await c.call(
                "rule/add",
                {"pattern": "Bash(npm test:*)", "decision": "allow", "scope": "project",
                 "where": "/src/app"},
            )  # fmt: skip
            deny = await c.call(
                "rule/add", {"pattern": "Bash(npm test --update:*)", "decision": "deny",
                             "scope": "global"},
            )  # fmt: skip
            assert (allow["made_by"], deny["decision"]) == ("human", "deny")
            use = {"tool_name": "Bash", "project": "/src/app/web"}
            checked = await c.call("rule/check", {**use, "tool_input": {"command": "npm test"}})
            assert checked == {"decision": "allow", "rule": allow}
            updating = {**use, "tool_input": {"command": "npm test --update -u"}}
            assert (await c.call("rule/check", updating))["rule"]["id"] == deny["id"]
            elsewhere = {"tool_name": "Bash", "project": "/src/other",
                         "tool_input": {"command": "npm test"}}  # fmt: skip
            assert await c.call("rule/check", elsewhere) is None  # ask the human
            with pytest.raises(InvalidParams, match="tool name"):
                await c.call("rule/add", {"pattern": "rm -rf", "decision": "allow",
                                          "scope": "global"})  # fmt: skip
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:  # the store kept them
        await nursery.start(run_hub, hub_config)
        async with await HubClient.connect(hub_config.socket) as c:
            assert await prove_approver(c.call) is None  # rule/add and remove want one
            assert [r["id"] for r in await c.call("rule/list")] == [allow["id"], deny["id"]]
            assert await c.call("rule/remove", {"id": allow["id"]}) == {
                "id": allow["id"], "removed": True,
            }  # fmt: skip
            assert [r["id"] for r in await c.call("rule/list")] == [deny["id"]]
        nursery.cancel_scope.cancel()
