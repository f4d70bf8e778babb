"""The Agora's methods: dialogues between agents (``agora/*``), the terminals turns
are typed into (``ling/*``), and parent/child events (``event/post``,
``agent/answer``); see docs/agora.md.  Each handler is attached to its row by name
(``@handles``; the rows are data in protocol/methods.py) and refused on a hub that runs
without the Agora.
"""

from __future__ import annotations

from typing import Any

from hive_rpc.agora.spawning import spawner_of
from hive_rpc.core.dialogue import DEFAULT_MAX_TURNS
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.limits import check_name
from hive_rpc.relay.consent import CALLER
from hive_rpc.service.hub import HubService
from hive_rpc.service.table import handles


@handles("agora/create")
async def create(hub: HubService, p: dict[str, Any]) -> Any:
    max_turns = p.get("max_turns", DEFAULT_MAX_TURNS)
    if not isinstance(max_turns, int) or isinstance(max_turns, bool):
        raise InvalidParams("max_turns must be an integer", param="max_turns")
    coordinator = p.get("coordinator")
    if coordinator is not None:
        check_name(coordinator, "coordinator")
    return await hub.require_agora().create(
        p["topic"], p["participants"], max_turns=max_turns, coordinator=coordinator
    )


@handles("agora/dispatch")
async def dispatch(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().dispatch(
        p["dialogue_id"], sender=_speaker(hub, p) or p["from"], to=p["to"], signal=p["signal"],
        message=p["message"],
    )  # fmt: skip


@handles("agora/status")
async def status(hub: HubService, p: dict[str, Any]) -> Any:
    return hub.require_agora().status(p["dialogue_id"])


@handles("agora/list")
async def list_(hub: HubService, p: dict[str, Any]) -> Any:
    return hub.require_agora().dialogues(p.get("status"))


@handles("agora/abort")
async def abort(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().abort(p["dialogue_id"], p.get("reason") or "")


@handles("agora/news")
async def news(hub: HubService, p: dict[str, Any]) -> Any:
    coordinators = p.get("coordinators")
    if coordinators is not None and not all(isinstance(c, str) for c in coordinators):
        raise InvalidParams("coordinators must be a list of agent ids", param="coordinators")
    return await hub.require_agora().news(
        int(p.get("since") or 0), coordinators=coordinators, wait_s=float(p.get("wait_s") or 0)
    )


@handles("ling/register")
async def ling_register(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().register(
        p["name"],
        p["kind"],
        p["address"],
        label=p.get("label"),
        allow_shell=p.get("allow_shell") or False,
        caller=CALLER.get(),
        asked_by=p.get("agent_id"),
        then_exec=p.get("then_exec") or False,
    )


@handles("ling/list")
async def ling_list(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().lings(check=bool(p.get("check")))


@handles("ling/remove")
async def ling_remove(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().remove(p["name"])


@handles("ling/spawn")
async def ling_spawn(hub: HubService, p: dict[str, Any]) -> Any:
    one = {k: p[k] for k in ("name", "command", "worktree", "label") if p.get(k) is not None}
    if one and p.get("children") is not None:
        raise InvalidParams("give name and command, or children, not both", param="children")
    spawner = spawner_of(hub.require_agora(), hub.info.socket, hub.info.data_dir)
    children = one if one else p.get("children")
    return await spawner.spawn(children, CALLER.get(), p.get("agent_id"))


EVENT_FIELDS = ("message", "pr", "ci", "review", "url", "comments")
"""What an event carries besides its kind and sender, as ``event/post`` takes them."""


@handles("event/post")
async def event_post(hub: HubService, p: dict[str, Any]) -> Any:
    fields: dict[str, Any] = {k: p[k] for k in EVENT_FIELDS if k in p}
    return await hub.require_agora().post_event(p["kind"], _speaker(hub, p) or p["from"], fields)


@handles("agent/answer")
async def agent_answer(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().answer(p["agent"], p["message"], _speaker(hub, p))


def _speaker(hub: HubService, p: dict[str, Any]) -> str | None:
    """Who a turn, an event or an answer comes from: the ling whose agent runs the
    caller, else the ``from`` it gave (agora/lings.py ``speaker``); None only when it
    gave none, which agent/answer alone allows."""
    return hub.require_agora().speaker(CALLER.get(), p.get("from"), param="from")
