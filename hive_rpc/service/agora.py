"""The Agora's methods: dialogues between agents (``agora/*``), the terminals turns
are typed into (``ling/*``), and parent/child events (``event/post``,
``agent/answer``); see docs/agora.md.  Each handler is declared with its row
(``@method``, table.py) and refused on a hub that runs without the Agora.
"""

from __future__ import annotations

from typing import Any

from hive_rpc.core.dialogue import DEFAULT_MAX_TURNS
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.prompt import check_name
from hive_rpc.relay.consent import CALLER
from hive_rpc.service.hub import HubService
from hive_rpc.service.table import BOOL, NUM, REQ_STR, STR, Param, method


@method(
    "agora/create",
    params={
        "topic": REQ_STR,
        "participants": Param("array", True),
        "max_turns": NUM,
        "coordinator": STR,
    },
    doc="Start a dialogue between two or more lings; returns the dialogue record. "
    "coordinator: who asks (an agent id; over MCP, the agent's own), named in the "
    "dialogue's events so it hears of consensus, timeout and absences.",
    mcp=("agora_create",),
)
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


@method(
    "agora/dispatch",
    params={
        "dialogue_id": REQ_STR,
        "to": REQ_STR,
        "signal": REQ_STR,
        "message": REQ_STR,
        "from": REQ_STR,
    },
    doc="Take a turn: record it and relay it into the receiver's terminal; the result's "
    "report says what happened, in words (consensus: typed into the others' terminals).",
    mcp=("agora_dispatch",),
)
async def dispatch(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().dispatch(
        p["dialogue_id"], sender=p["from"], to=p["to"], signal=p["signal"], message=p["message"]
    )


@method(
    "agora/status",
    params={"dialogue_id": REQ_STR},
    doc="A dialogue with its turns and events.",
    mcp=("agora_status",),
)
async def status(hub: HubService, p: dict[str, Any]) -> Any:
    return hub.require_agora().status(p["dialogue_id"])


@method(
    "agora/list",
    params={"status": STR},
    doc="Dialogues (without turns), oldest first.",
    mcp=("agora_list",),
)
async def list_(hub: HubService, p: dict[str, Any]) -> Any:
    return hub.require_agora().dialogues(p.get("status"))


@method(
    "agora/abort",
    params={"dialogue_id": REQ_STR, "reason": STR},
    doc="End a dialogue by hand.",
    mcp=("agora_abort",),
)
async def abort(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().abort(p["dialogue_id"], p.get("reason") or "")


@method(
    "agora/news",
    params={"since": NUM, "coordinators": Param("array"), "wait_s": NUM},
    doc="What dialogues' coordinators should hear (consensus, timeout, absent or "
    "unavailable participants, paused dialogues, strangers' turns, aborts; each with "
    "its message in words) after since, waiting up to wait_s (at most 60) for some: "
    "{events, last}; ask again with since=last. coordinators also picks the events "
    "naming one of them as the sender of a turn that could not be delivered.",
)
async def news(hub: HubService, p: dict[str, Any]) -> Any:
    coordinators = p.get("coordinators")
    if coordinators is not None and not all(isinstance(c, str) for c in coordinators):
        raise InvalidParams("coordinators must be a list of agent ids", param="coordinators")
    return await hub.require_agora().news(
        int(p.get("since") or 0), coordinators=coordinators, wait_s=float(p.get("wait_s") or 0)
    )


@method(
    "ling/register",
    params={
        "name": REQ_STR,
        "kind": REQ_STR,
        "address": REQ_STR,
        "label": STR,
        "allow_shell": BOOL,
        "agent_id": STR,
        "then_exec": BOOL,
    },
    doc="Register (or move) an agent's terminal: tmux pane, zellij pane or Emacs buffer. "
    "From inside that terminal it is registered at once; otherwise (or with agent_id) "
    "it is pending until the human approves the hub's prompt (docs/security.md). The "
    "ling records its agent, the process in the terminal's foreground (then_exec: the "
    "caller, which then execs the agent), and is typed into only while it holds it.",
    mcp=("ling_register",),
)
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


@method(
    "ling/list",
    params={"check": BOOL},
    doc="Registered lings; check: also test each terminal.",
    mcp=("ling_list",),
)
async def ling_list(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().lings(check=bool(p.get("check")))


@method("ling/remove", params={"name": REQ_STR}, doc="Forget a ling.", mcp=("ling_remove",))
async def ling_remove(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().remove(p["name"])


EVENT_FIELDS = ("message", "pr", "ci", "review", "url", "comments")
"""What an event carries besides its kind and sender, as ``event/post`` takes them."""


@method(
    "event/post",
    params={
        "kind": REQ_STR,
        "message": STR,
        "pr": Param("any"),
        "ci": STR,
        "review": STR,
        "url": STR,
        "comments": NUM,
        "from": REQ_STR,
    },
    doc="A child's event (child-complete, child-question, ...), typed into its parent's terminal.",
    mcp=("report_to_parent",),
)
async def event_post(hub: HubService, p: dict[str, Any]) -> Any:
    fields: dict[str, Any] = {k: p[k] for k in EVENT_FIELDS if k in p}
    return await hub.require_agora().post_event(p["kind"], p["from"], fields)


@method(
    "agent/answer",
    params={"agent": REQ_STR, "message": REQ_STR, "from": STR},
    doc="A parent's answer to a child's question, typed into the child's terminal.",
    mcp=("answer_question",),
)
async def agent_answer(hub: HubService, p: dict[str, Any]) -> Any:
    return await hub.require_agora().answer(p["agent"], p["message"], p.get("from"))
