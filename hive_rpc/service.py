"""The hub's methods, independent of any transport.

Every face (the editor socket's JSON-RPC, EPC for epc.el, MCP for agents) calls
``HubService.call(method, params)`` and gets a JSON-ready result or a ``HiveError``
with the code and words to send back.  Parameter checking lives here, once, as a
table: each method names its parameters, their JSON types, and which are required.
Unknown parameters are refused so that a typo (``quesiton``) is caught, not ignored.

Identity: a request that carries ``agent_id`` acts for that agent and sees, answers
and cancels only its own prompts; a request without it acts as a coordinator (the
editors, the CLI, an agent explicitly coordinating, which names itself in ``by``) and
reaches every prompt.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hive_rpc import __version__
from hive_rpc.activity import ActivityLog
from hive_rpc.core import limits
from hive_rpc.core.dialogue import DEFAULT_MAX_TURNS
from hive_rpc.core.errors import InvalidParams, LimitReached, MethodNotFound
from hive_rpc.core.prompt import Action, Prompt, check_name
from hive_rpc.registry import Registry, Watch, held_chars
from hive_rpc.relay.consent import CALLER
from hive_rpc.relay.emacs import DeliveryPeers

if TYPE_CHECKING:
    from hive_rpc.agora import Agora

HUMAN = "human"
"""The ``by`` recorded when an answer comes from an editor or the CLI without a name."""
DEFAULT_AGENT = "anonymous"
MIN_ID_PREFIX = 4
"""``hive/lookup`` wants this much of an id: fewer would match too much to be useful."""


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "any": (object,),
}


@dataclass(frozen=True)
class Param:
    type: str
    required: bool = False


@dataclass(frozen=True)
class Method:
    """One row of the method table: everything about a method that more than one
    face needs, so a face derives what it exposes instead of listing names again."""

    params: dict[str, Param]
    doc: str
    notification_ok: bool = False
    """May also be sent as a notification (``hive/typing``)."""
    retryable: bool = False
    """Safe to send again on a new connection after the hub went away (it changes
    nothing): ``backends.RETRYABLE``."""
    epc: str | None = None
    """Its name over EPC (``hive-rpc epc``), if that face offers it."""


def _spec(**params: Param) -> dict[str, Param]:
    return params


STR, NUM, BOOL = Param("string"), Param("number"), Param("boolean")
REQ_STR, REQ_NUM = Param("string", True), Param("number", True)

METHODS: dict[str, Method] = {
    "hive/ask": Method(
        _spec(
            question=REQ_STR,
            choices=Param("array"),
            schema=Param("object"),
            urgent=BOOL,
            timeout_s=NUM,
            agent_id=STR,
            task_id=STR,
            in_reply_to=STR,
        ),
        "Ask a question; returns the pending prompt record at once.",
        epc="ask",
    ),
    "hive/poll": Method(
        _spec(id=REQ_STR, agent_id=STR),
        "The prompt record as it is now.",
        retryable=True,
        epc="poll",
    ),
    "hive/await": Method(
        _spec(id=REQ_STR, timeout_s=REQ_NUM, agent_id=STR),
        "Long-poll: the record once closed, or as it is when timeout_s runs out.",
        retryable=True,
        epc="await",
    ),
    "hive/respond": Method(
        _spec(id=REQ_STR, answer=Param("any"), by=STR, action=STR, agent_id=STR),
        "Answer a prompt (first answer wins).",
        epc="respond",
    ),
    "hive/cancel": Method(
        _spec(id=REQ_STR, by=STR, agent_id=STR), "Withdraw a pending prompt.", epc="cancel"
    ),
    "hive/list": Method(
        _spec(agent_id=STR, limit=NUM, cursor=STR),
        "Pending prompt records, oldest first; with limit or cursor, one page "
        '{"prompts": [...], "next_cursor": ...}.',
        retryable=True,
        epc="list",
    ),
    "hive/lookup": Method(
        _spec(prefix=REQ_STR, agent_id=STR),
        "Prompt records whose id starts with prefix (4 characters or more), any status, "
        "oldest first, at most 20: how a client takes an id prefix.",
    ),
    "hive/awaitAsk": Method(
        _spec(timeout_s=REQ_NUM, exclude=Param("array")),
        "Coordinators: wait for the oldest pending prompt not in exclude (null on timeout).",
        retryable=True,
    ),
    "hive/subscribe": Method(
        _spec(), "Receive hive/prompt, hive/update and hive/dismiss notifications."
    ),
    "hive/unsubscribe": Method(_spec(), "Stop receiving notifications."),
    "hive/typing": Method(
        _spec(id=REQ_STR),
        "The human started typing: stop the prompt's countdown.",
        notification_ok=True,
    ),
    "hive/status": Method(_spec(), "The hub's paths, pid and counts.", retryable=True),
    # --- Agora: dialogues, lings, parent/child events (docs/agora.md) -----------------
    "agora/create": Method(
        _spec(topic=REQ_STR, participants=Param("array", True), max_turns=NUM),
        "Start a dialogue between two or more lings; returns the dialogue record.",
    ),
    "agora/dispatch": Method(
        _spec(
            dialogue_id=REQ_STR,
            to=REQ_STR,
            signal=REQ_STR,
            message=REQ_STR,
            **{"from": REQ_STR},
        ),
        "Take a turn: record it and relay it into the receiver's terminal.",
    ),
    "agora/status": Method(_spec(dialogue_id=REQ_STR), "A dialogue with its turns and events."),
    "agora/list": Method(_spec(status=STR), "Dialogues (without turns), oldest first."),
    "agora/abort": Method(_spec(dialogue_id=REQ_STR, reason=STR), "End a dialogue by hand."),
    "ling/register": Method(
        _spec(
            name=REQ_STR, kind=REQ_STR, address=REQ_STR, label=STR, allow_shell=BOOL, agent_id=STR
        ),
        "Register (or move) an agent's terminal: tmux pane, zellij pane or Emacs buffer. "
        "From inside that terminal it is registered at once; otherwise (or with agent_id) "
        "it is pending until the human approves the hub's prompt (docs/security.md).",
    ),
    "ling/list": Method(_spec(check=BOOL), "Registered lings; check: also test each terminal."),
    "ling/remove": Method(_spec(name=REQ_STR), "Forget a ling."),
    "event/post": Method(
        _spec(
            kind=REQ_STR,
            message=STR,
            pr=Param("any"),
            ci=STR,
            review=STR,
            url=STR,
            comments=NUM,
            **{"from": REQ_STR},
        ),
        "A child's event (child-complete, child-question, ...), typed into its parent's terminal.",
    ),
    "hive/reportResult": Method(
        _spec(
            task_id=REQ_STR,
            outcome=REQ_STR,
            result=Param("any"),
            error=STR,
            agent_id=STR,
            in_reply_to=STR,
        ),
        "An agent loop's outcome (success, failed, cancelled) under its task id.",
    ),
    "hive/activity": Method(
        _spec(task_id=STR, since=NUM, limit=NUM),
        "Recent activity entries (or those of one task id), oldest first.",
    ),
    "agent/answer": Method(
        _spec(agent=REQ_STR, message=REQ_STR, **{"from": STR}),
        "A parent's answer to a child's question, typed into the child's terminal.",
    ),
}


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float: 10**400
        return False


def check_params(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Return ``params`` if they fit ``method``'s table, else raise an actionable error."""
    spec = METHODS.get(method)
    if spec is None:
        raise MethodNotFound(
            f"unknown method {method!r}; the hub offers {', '.join(sorted(METHODS))}",
            method=method,
        )
    unknown = sorted(set(params) - set(spec.params))
    if unknown:
        raise InvalidParams(
            f"{method}: unknown parameter {', '.join(map(repr, unknown))}; accepted: "
            f"{', '.join(spec.params) or 'none'}",
            method=method,
        )
    for name, param in spec.params.items():
        value = params.get(name)
        if value is None:
            if param.required:
                raise InvalidParams(
                    f"{method}: missing required parameter {name!r}", method=method, param=name
                )
            continue
        try:
            limits.check_value(value, f"{method}: parameter {name!r}")
        except limits.LimitError as e:
            e.data.update(method=method, param=name)
            raise
        ok = isinstance(value, _TYPES[param.type])
        if param.type == "number":
            ok = ok and not isinstance(value, bool) and _finite(value)
        if not ok:
            raise InvalidParams(
                f"{method}: parameter {name!r} must be a {param.type}, got {type(value).__name__}",
                method=method,
                param=name,
            )
    return params


RECORD_OVERHEAD = 6 * (5 * limits.MAX_NAME_CHARS + 64) + 1024
"""Bytes a record's other fields (names, ids, times, answer-less status) can take
at most once encoded; the answer of a pending prompt is null."""


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


def _agent(p: dict[str, Any]) -> str | None:
    """The agent a request acts for, or None for a coordinator.  Blank is refused, not
    read as "everyone": an agent that lost its name must not see others' prompts."""
    value = p.get("agent_id")
    return None if value is None else check_name(value, "agent_id")


def _action(value: str | None) -> Action:
    try:
        return Action(value or "accept")
    except ValueError:
        raise InvalidParams(
            f"action must be one of {', '.join(a.value for a in Action)}, got {value!r}"
        ) from None


@dataclass
class HubInfo:
    """Facts about the running hub that ``hive/status`` reports."""

    socket: str | None = None
    data_dir: str | None = None
    store: str = "memory"
    pid: int = field(default_factory=os.getpid)
    http_url: str | None = None
    token_file: str | None = None
    notifications: str = "off"
    """How the hub raises desktop notifications itself: ``dbus``, ``notify-send`` or
    ``off`` (editors that notify on their own skip it when the hub does)."""


def dismissal(prompt: Prompt) -> dict[str, Any]:
    """Params of ``hive/dismiss``: which prompt to take off the screen, and why."""
    return {
        "id": prompt.id,
        "status": prompt.status.value,
        "by": prompt.by,
        "action": prompt.action.value if prompt.action else None,
    }


class HubService:
    """Transport-neutral method table over one registry."""

    def __init__(
        self,
        registry: Registry,
        info: HubInfo | None = None,
        *,
        activity: ActivityLog | None = None,
    ) -> None:
        self.registry = registry
        self.info = info or HubInfo(store=registry.store.kind)
        self.delivery_peers = DeliveryPeers()
        """Editor connections that type into Emacs buffers for the relay."""
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "hive/ask": self._ask,
            "hive/poll": self._poll,
            "hive/await": self._await,
            "hive/respond": self._respond,
            "hive/cancel": self._cancel,
            "hive/list": self._list,
            "hive/lookup": self._lookup,
            "hive/awaitAsk": self._await_ask,
            "hive/typing": self._typing,
            "hive/status": self._status,
            "agora/create": self._agora_create,
            "agora/dispatch": self._agora_dispatch,
            "agora/status": self._agora_status,
            "agora/list": self._agora_list,
            "agora/abort": self._agora_abort,
            "ling/register": self._ling_register,
            "ling/list": self._ling_list,
            "ling/remove": self._ling_remove,
            "event/post": self._event_post,
            "agent/answer": self._agent_answer,
            "hive/reportResult": self._report_result,
            "hive/activity": self._activity,
        }
        self.activity = activity or ActivityLog(registry.now)
        """Every change, for GET /activity and the dashboard (fed by hub.py)."""
        self.agora: Agora | None = None
        """Set by the hub once its nursery runs (hub._serve)."""

    def _agora(self) -> Agora:
        if self.agora is None:
            raise MethodNotFound("this hub runs without the Agora (dialogues and lings)")
        return self.agora

    async def _agora_create(self, p: dict[str, Any]) -> Any:
        max_turns = p.get("max_turns", DEFAULT_MAX_TURNS)
        if not isinstance(max_turns, int) or isinstance(max_turns, bool):
            raise InvalidParams("max_turns must be an integer", param="max_turns")
        return await self._agora().create(p["topic"], p["participants"], max_turns=max_turns)

    async def _agora_dispatch(self, p: dict[str, Any]) -> Any:
        return await self._agora().dispatch(
            p["dialogue_id"], sender=p["from"], to=p["to"], signal=p["signal"], message=p["message"]
        )

    async def _agora_status(self, p: dict[str, Any]) -> Any:
        return self._agora().status(p["dialogue_id"])

    async def _agora_list(self, p: dict[str, Any]) -> Any:
        return self._agora().dialogues(p.get("status"))

    async def _agora_abort(self, p: dict[str, Any]) -> Any:
        return await self._agora().abort(p["dialogue_id"], p.get("reason") or "")

    async def _ling_register(self, p: dict[str, Any]) -> Any:
        return await self._agora().register(
            p["name"],
            p["kind"],
            p["address"],
            label=p.get("label"),
            allow_shell=p.get("allow_shell") or False,
            caller=CALLER.get(),
            asked_by=p.get("agent_id"),
        )

    async def _ling_list(self, p: dict[str, Any]) -> Any:
        return await self._agora().lings(check=bool(p.get("check")))

    async def _ling_remove(self, p: dict[str, Any]) -> Any:
        return await self._agora().remove(p["name"])

    async def _event_post(self, p: dict[str, Any]) -> Any:
        keys = ("message", "pr", "ci", "review", "url", "comments")
        fields: dict[str, Any] = {k: p[k] for k in keys if k in p}
        return await self._agora().post_event(p["kind"], p["from"], fields)

    async def _report_result(self, p: dict[str, Any]) -> Any:
        entry = self.activity.report_task(
            task_id=p["task_id"],
            outcome=p["outcome"],
            result=p.get("result"),
            error=p.get("error"),
            agent_id=_agent(p),
            in_reply_to=p.get("in_reply_to"),
        )
        return entry.record()

    async def _activity(self, p: dict[str, Any]) -> Any:
        if p.get("task_id") is not None:
            entries = self.activity.task(p["task_id"])
        elif p.get("since") is not None:
            found = self.activity.since(int(p["since"]))
            if found is None:
                raise InvalidParams(
                    f"entries after {p['since']} are gone; start again without since",
                    param="since",
                )
            entries = found
        else:
            entries = self.activity.recent(int(p.get("limit") or 100))
        return [e.record() for e in entries]

    async def _agent_answer(self, p: dict[str, Any]) -> Any:
        return await self._agora().answer(p["agent"], p["message"], p.get("from"))

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """Check ``params`` and run ``method``.  Subscriptions belong to the transport."""
        check_params(method, params)
        handler = self._handlers.get(method)
        if handler is None:
            raise MethodNotFound(f"{method} needs a streaming transport", method=method)
        return await handler(params)

    async def _ask(self, p: dict[str, Any]) -> dict[str, Any]:
        prompt = await self.registry.ask(
            agent_id=_agent(p) or DEFAULT_AGENT,
            question=p["question"],
            choices=p.get("choices"),
            schema=p.get("schema"),
            urgent=p.get("urgent") or False,
            timeout_s=p.get("timeout_s"),
            task_id=p.get("task_id"),
            in_reply_to=p.get("in_reply_to"),
        )
        return prompt.to_record()

    async def _poll(self, p: dict[str, Any]) -> dict[str, Any]:
        return (await self.registry.poll(p["id"], agent_id=_agent(p))).to_record()

    async def _await(self, p: dict[str, Any]) -> dict[str, Any]:
        prompt = await self.registry.wait(p["id"], timeout_s=p["timeout_s"], agent_id=_agent(p))
        return prompt.to_record()

    async def _respond(self, p: dict[str, Any]) -> dict[str, Any]:
        agent = _agent(p)
        prompt = await self.registry.respond(
            p["id"],
            answer=p.get("answer"),
            by=p.get("by") or agent or HUMAN,
            action=_action(p.get("action")),
            agent_id=agent,
        )
        return prompt.to_record()

    async def _cancel(self, p: dict[str, Any]) -> dict[str, Any]:
        agent = _agent(p)
        prompt = await self.registry.cancel(
            p["id"], by=p.get("by") or agent or HUMAN, agent_id=agent
        )
        return prompt.to_record()

    async def _list(self, p: dict[str, Any]) -> list[dict[str, Any]] | dict[str, Any]:
        """Without ``limit`` or ``cursor``: every pending record, as before paging
        existed, refused (LimitReached ``reply_bytes``) rather than built past the
        reply limit.  With either: one page, cut short at the reply limit too."""
        agent = _agent(p)
        if p.get("limit") is None and p.get("cursor") is None:
            records, complete = _fill(self.registry.list_pending(agent_id=agent))
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
        page = self.registry.pending_page(after=after, limit=size + 1, agent_id=agent)
        records, _ = _fill(page[:size])
        more = len(records) < len(page)
        last = page[len(records) - 1] if records else None
        return {
            "prompts": records,
            "next_cursor": _encode_cursor(last) if more and last is not None else None,
        }

    async def _lookup(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        prefix = p["prefix"]
        if len(prefix) < MIN_ID_PREFIX:
            raise InvalidParams(
                f"an id prefix needs at least {MIN_ID_PREFIX} characters, got {prefix!r}",
                param="prefix",
            )
        return [x.to_record() for x in await self.registry.find(prefix, agent_id=_agent(p))]

    async def _await_ask(self, p: dict[str, Any]) -> dict[str, Any] | None:
        exclude = p.get("exclude") or []
        if not all(isinstance(x, str) for x in exclude):
            raise InvalidParams("hive/awaitAsk: exclude must be a list of prompt ids")
        prompt = await self.registry.await_ask(timeout_s=p["timeout_s"], exclude=set(exclude))
        return prompt.to_record() if prompt else None

    async def _typing(self, p: dict[str, Any]) -> dict[str, Any]:
        return (await self.registry.typing(p["id"])).to_record()

    async def _status(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": self.info.pid,
            "socket": self.info.socket,
            "data_dir": self.info.data_dir,
            "store": self.info.store,
            "http_url": self.info.http_url,
            "token_file": self.info.token_file,
            "notifications": self.info.notifications,
            "started_at": self.registry.started_at,
            "max_lifetime_s": self.registry.max_lifetime_s,
            "counts": await self.registry.counts(),
            "live": self.registry.statistics(),
            "degraded": self.registry.degraded_reason(),
        }

    @staticmethod
    async def notifications(watch: Watch) -> AsyncGenerator[tuple[str, dict[str, Any]]]:
        """What a subscriber is sent: every pending prompt first, then each new prompt
        (``hive/prompt``), each change of a prompt still pending (``hive/update``, the
        new record: typing moved its deadline, so every editor's countdown stops, not
        only the typist's) and each closed one (``hive/dismiss``).  The update has its
        own name because clients take a second ``hive/prompt`` for a new question
        (Emacs notifies an urgent one again)."""
        for prompt in watch.pending:
            yield "hive/prompt", prompt.to_record()
        async for change in watch:
            if change.event == "ask":
                yield "hive/prompt", change.record
            elif change.prompt.is_pending:
                yield "hive/update", change.record
            else:
                yield "hive/dismiss", dismissal(change.prompt)
