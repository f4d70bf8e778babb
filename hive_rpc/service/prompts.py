"""The ``hive/*`` methods about prompts: ask, poll, await, answer, cancel, list, look
up, wait for an ask, typing, defer, status; and the connection-scoped ``hive/subscribe``,
``hive/unsubscribe`` and ``hive/offerDelivery``, which streaming transports run.

Each handler is attached to its row by name (``@handles``; the rows are data in
protocol/methods.py) and takes the hub's service and the params its row has already
checked.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from hive_rpc import __version__
from hive_rpc.core import limits
from hive_rpc.core.claude_code import home_relative
from hive_rpc.core.conventions import (
    HUMAN,
    MIN_ID_PREFIX,
    RESERVED_AGENTS,
    human_only,
    reserved_agent,
)
from hive_rpc.core.errors import InvalidParams, LimitReached, StoreUnavailable
from hive_rpc.core.limits import check_name
from hive_rpc.core.prompt import Action, Ask, Kind, Prompt
from hive_rpc.relay.consent import CALLER, Caller, peer_of
from hive_rpc.relay.proc import working_dir
from hive_rpc.runtime.registry import MAX_UNSEEN, held_chars
from hive_rpc.service.approver import APPROVER, require_approver
from hive_rpc.service.hub import HubService, acting_agent
from hive_rpc.service.table import handles

RECORD_OVERHEAD = 6 * (5 * limits.MAX_NAME_CHARS + 64) + 1024
"""Bytes a record's other fields (names, ids, times, answer-less status) can take
at most once encoded; the answer of a pending prompt is null."""


def _action(value: str | None) -> Action:
    try:
        return Action(value or "accept")
    except ValueError:
        raise InvalidParams(
            f"action must be one of {', '.join(a.value for a in Action)}, got {value!r}"
        ) from None


@handles("hive/ask")
async def ask(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    agent = acting_agent(p)
    if agent is not None and reserved_agent(agent):
        # The hub's own prompts are asked by the hub itself (registry.ask), never here.
        raise InvalidParams(
            f"agent_id {agent[:80]!r} is reserved for the hub and the human ("
            f"{', '.join(sorted(RESERVED_AGENTS))}, or any name with hive-rpc in it); "
            "ask under your own name",
            param="agent_id",
        )
    key = p.get("idempotency_key")
    if key is not None:
        check_name(key, "idempotency_key")  # linear in its length, at most name_chars
    caller = CALLER.get()
    prompt = await hub.registry.ask(
        Ask.from_params(p),
        peer=peer_of(caller),
        human=APPROVER.get(),
        origin=_origin(caller),
        key=key,
    )
    if p.get("waits") and hub.askers is not None and prompt.is_pending:
        await hub.askers.bind(prompt.id, caller.pid if caller is not None else None)
    return prompt.to_record()


def _origin(caller: Caller | None) -> str | None:
    """Where the asking process runs (its working directory, ``~/src/app``), read from
    /proc: shown beside the agent's name so the human knows which project asks, and
    not a name the asker could choose.  None for a caller the hub cannot see (MCP
    over HTTP, an in-process call)."""
    if caller is None or caller.pid is None:
        return None
    cwd = working_dir(caller.pid)
    if cwd is None:
        return None
    return home_relative(cwd, os.environ.get("HOME"))[: limits.MAX_NAME_CHARS]


@handles("hive/poll")
async def poll(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    return (await hub.registry.poll(p["id"], agent_id=acting_agent(p))).to_record()


@handles("hive/await")
async def await_(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    prompt = await hub.registry.wait(p["id"], timeout_s=p["timeout_s"], agent_id=acting_agent(p))
    return prompt.to_record()


@handles("hive/respond")
async def respond(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    agent = acting_agent(p)
    if not APPROVER.get():
        # Read first (as the same agent, so nothing leaks): kind and asker never change.
        asked = await hub.registry.poll(p["id"], agent_id=agent)
        if human_only(asked.kind.value, asked.agent_id):
            require_approver(
                hub,
                "answer a permission prompt"
                if asked.kind is Kind.PERMISSION
                else "answer the hub's own question (consent to type into a terminal)",
            )
    prompt = await hub.registry.respond(
        p["id"],
        answer=p.get("answer"),
        by=p.get("by") or agent or HUMAN,
        action=_action(p.get("action")),
        agent_id=agent,
    )
    return prompt.to_record()


@handles("hive/cancel")
async def cancel(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    agent = acting_agent(p)
    prompt = await hub.registry.cancel(p["id"], by=p.get("by") or agent or HUMAN, agent_id=agent)
    return prompt.to_record()


def _fill(prompts: list[Prompt]) -> tuple[list[dict[str, Any]], bool]:
    """Records of ``prompts`` in order while they fit the reply limit; True if all did.
    At least one record is always taken, so a page always moves on."""
    records: list[dict[str, Any]] = []
    # A bound on the encoded size (every character escaped as \uXXXX, plus the
    # fixed fields) spares measuring pages that cannot reach the limit.
    bound = sum(6 * held_chars(p) + RECORD_OVERHEAD for p in prompts)
    if bound <= limits.MAX_REPLY_BYTES:
        return [p.to_record() for p in prompts], True
    size = 0
    for prompt in prompts:
        record = prompt.to_record()
        size += len(json.dumps(record, ensure_ascii=False, default=str)) + 1
        if size > limits.MAX_REPLY_BYTES and records:
            return records, False
        records.append(record)
    return records, True


def _page_size(value: Any) -> int:
    if value is None:
        return limits.LIST_PAGE_DEFAULT
    if not isinstance(value, int) or not 1 <= value <= limits.LIST_PAGE_MAX:
        raise InvalidParams(
            f"limit must be an integer from 1 to {limits.LIST_PAGE_MAX} (limit list_page)",
            param="limit",
            limit="list_page",
            max=limits.LIST_PAGE_MAX,
        )
    return value


def _encode_cursor(prompt: Prompt) -> str:
    """Opaque to clients: where the page ended, as (created_at, id)."""
    return f"{prompt.created_at!r}/{prompt.id}"


def _decode_cursor(value: str | None) -> tuple[float, str] | None:
    if value is None:
        return None
    stamp, slash, prompt_id = value.partition("/")
    try:
        created = float(stamp)
    except ValueError:
        created = math.nan
    if not slash or not prompt_id or not math.isfinite(created):
        raise InvalidParams(
            f"cursor {value[:80]!r} is not a next_cursor from hive/list", param="cursor"
        )
    return created, prompt_id


@handles("hive/list")
async def list_(hub: HubService, p: dict[str, Any]) -> list[dict[str, Any]] | dict[str, Any]:
    """Without ``limit`` or ``cursor``: every pending record, as before paging
    existed, refused (LimitReached ``reply_bytes``) rather than built past the
    reply limit.  With either: one page, cut short at the reply limit too."""
    agent = acting_agent(p)
    if p.get("expired_unseen"):
        if p.get("limit") is not None or p.get("cursor") is not None:
            raise InvalidParams(
                "hive/list: expired_unseen takes no limit or cursor (there are at most "
                f"{MAX_UNSEEN})",
                param="expired_unseen",
            )
        unseen = hub.registry.list_unseen()
        return [q.to_record() for q in unseen if agent is None or q.agent_id == agent]
    if p.get("limit") is None and p.get("cursor") is None:
        records, complete = _fill(hub.registry.list_pending(agent_id=agent))
        if not complete:
            raise LimitReached(
                f"hive/list: the pending prompts take more than "
                f"{limits.MAX_REPLY_BYTES:,} bytes (limit reply_bytes); ask for pages "
                'with "limit" and "cursor"',
                limit="reply_bytes",
                max=limits.MAX_REPLY_BYTES,
            )
        return records
    size = _page_size(p.get("limit"))
    after = _decode_cursor(p.get("cursor"))
    page = hub.registry.pending_page(after=after, limit=size + 1, agent_id=agent)
    records, _ = _fill(page[:size])
    more = len(records) < len(page)
    last = page[len(records) - 1] if records else None
    return {
        "prompts": records,
        "next_cursor": _encode_cursor(last) if more and last is not None else None,
    }


@handles("hive/lookup")
async def lookup(hub: HubService, p: dict[str, Any]) -> list[dict[str, Any]]:
    prefix = p["prefix"]
    if len(prefix) < MIN_ID_PREFIX:
        raise InvalidParams(
            f"an id prefix needs at least {MIN_ID_PREFIX} characters, got {prefix!r}",
            param="prefix",
        )
    return [x.to_record() for x in await hub.registry.find(prefix, agent_id=acting_agent(p))]


@handles("hive/awaitAsk")
async def await_ask(hub: HubService, p: dict[str, Any]) -> dict[str, Any] | None:
    exclude = p.get("exclude") or []
    if not all(isinstance(x, str) for x in exclude):
        raise InvalidParams("hive/awaitAsk: exclude must be a list of prompt ids")
    prompt = await hub.registry.await_ask(timeout_s=p["timeout_s"], exclude=set(exclude))
    return prompt.to_record() if prompt else None


@handles("hive/keep")
async def keep(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    prompt = await hub.registry.poll(p["id"], agent_id=acting_agent(p))  # its own only
    if hub.askers is not None:
        await hub.askers.release(prompt.id)
    return prompt.to_record()


@handles("hive/typing")
async def typing(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    return (await hub.registry.typing(p["id"])).to_record()


@handles("hive/defer")
async def defer(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    return (await hub.registry.defer(p["id"])).to_record()


@handles("hive/shown")
async def shown(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    require_approver(hub, "say that the human saw a question")
    return (await hub.registry.shown(p["id"])).to_record()


@handles("hive/clearUnseen")
async def clear_unseen(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    require_approver(hub, "clear what expired unseen")
    if (p.get("id") is None) == (not p.get("all")):
        raise InvalidParams('hive/clearUnseen: give either "id" or "all": true', param="id")
    cleared = await hub.registry.clear_unseen(p.get("id"))
    return {"cleared": len(cleared)}


@handles("hive/status")
async def status(hub: HubService, p: dict[str, Any]) -> dict[str, Any]:
    info, registry = hub.info, hub.registry
    degraded = registry.degraded_reason()
    live = registry.statistics()
    try:
        counts = await registry.counts()
    except StoreUnavailable as e:
        # The shared store (NATS) is down: the hub still answers, degraded, with what it
        # holds in memory (its pending prompts) instead of failing outright.
        counts = {"pending": live["pending"]}
        degraded = degraded or f"store: {e.message}"
    return {
        "version": __version__,
        "pid": info.pid,
        "socket": info.socket,
        "data_dir": info.data_dir,
        "store": info.store,
        "http_url": info.http_url,
        "token_file": info.token_file,
        "approver_token_file": info.approver_token_file,
        "notifications": info.notifications,
        "started_at": registry.started_at,
        "max_lifetime_s": registry.max_lifetime_s,
        "counts": counts,
        "expired_unseen": len(registry.list_unseen()),
        "sessions": hub.sessions.counts(),
        "live": live,
        "degraded": degraded,
        "pull_requests": hub.pull_requests.summary() if hub.pull_requests else None,
    }
