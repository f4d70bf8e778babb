"""``hive/agora`` (docs/protocol.md) reaches a VS Code window through ``hive-rpc lsp``
as the hub sent it, like ``hive/health``: here a turn to a ling nobody registered,
which leaves its dialogue ``paused`` (issue 27, item 10)."""

from __future__ import annotations

from test_lsp import lsp

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


async def test_what_becomes_of_a_dialogue_reaches_the_window(
    hub: HubService, hub_config: HubConfig
) -> None:
    async with lsp(hub_config, "--no-start") as window:
        await window.initialize()
        await window.request("hive/subscribe", {})
        d = await hub.call(
            "agora/create", {"topic": "Cache?", "participants": ["main.a", "main.b"]}
        )
        await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main.a", "to": "main.b", "signal": "propose",
             "message": "Redis"},
        )  # fmt: skip
        events = []
        while "agora/paused" not in events:
            note = await window.next("hive/agora")
            events.append(note.params["event"])
            if note.params["event"] == "agora/paused":
                assert note.params["status"] == "paused"
                assert note.params["message"].startswith(
                    f"the dialogue {d['id']} (Cache?) is paused"
                )
        assert events == ["agora/participant-absent", "agora/paused"]
