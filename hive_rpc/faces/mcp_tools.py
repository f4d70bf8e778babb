"""The agents' face: an MCP server with the hivemind tool family and request_human_input.

The tools are written once, against a ``Backend`` with a single ``call(method,
params)``: ``LocalBackend`` calls the hub's service in-process (the hub's Streamable
HTTP endpoint), ``RemoteBackend`` calls it over the editor socket (``hive-rpc mcp``,
one stdio server per agent session).  Either way the hub holds the prompt, so an
answer outlives any client's tool-call timeout.

Two ways to wait, because MCP clients abort a tool that is silent for too long:

* non-blocking: ``hivemind_ask_async`` returns an id at once; ``hivemind_poll`` or
  ``hivemind_await`` (a long poll) collect the answer later;
* blocking (``hivemind_ask``, ``request_human_input``, ``hivemind_await``,
  ``hivemind_await_ask``): a heartbeat sends ``notifications/progress`` every
  ``PROGRESS_EVERY_S`` while waiting, and MCP cancellation of the call withdraws the
  prompt so the editors take it off the screen.

Identity: every request acts as the agent ``Identity`` names.  ``poll``, ``await``,
``cancel`` and the ``hive://asks/{ask_id}`` resource see only that agent's prompts;
the coordinator tools (``respond``, ``list_pending``, ``await_ask``) see all.

Groups: a session offers only the tool groups it was given (``faces/mcp_groups.py``;
``ask`` by default), so an agent that only asks is not handed the Agora's tools.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import trio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp_types import (
    CallToolResult,
    EmptyResult,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

from hive_rpc.backends import Backend
from hive_rpc.client import RemoteError
from hive_rpc.core.errors import HiveError
from hive_rpc.core.ling import HUB_AGENT
from hive_rpc.core.prompt import check_name
from hive_rpc.faces.mcp_groups import GROUP_OF, ToolGroups
from hive_rpc.hub_connection import HubUnreachable

EXPIRED_MARKER = ":timeout->what-would-rich-hickey-do"
"""What ``request_human_input`` returns when nobody answered (seed 002's contract)."""
HUMAN_INPUT_TIMEOUT_S = 60.0
DEFAULT_BLOCKING_TIMEOUT_S = 300.0
PROGRESS_EVERY_S = 10.0
AWAIT_CHUNK_S = 3600.0
ASK_URI = "hive://asks/{ask_id}"

INSTRUCTIONS = """\
hive-rpc lets you ask the human a question without blocking.
Recommended: hivemind_ask_async(question, options?) returns an ask_id at once; keep
working, then hivemind_poll(ask_id) (or hivemind_await(ask_id, timeout_s) to wait).
An answer is never lost: it is kept until you collect it.  status "expired" means
nobody answered in time; it is not a "no".
"""


# --- identity ----------------------------------------------------------------------


class Identity:
    """Names the agent behind a request.

    In order: a fixed name (``hive-rpc mcp --agent NAME``); on HTTP, the
    ``X-Hive-Agent`` header or ``?agent=NAME`` in the URL; the client's own name
    (``clientInfo.name``) plus a suffix that is per process on stdio (one process is
    one session) and the session id on stateful HTTP.
    """

    def __init__(self, fixed: str | None = None) -> None:
        self.fixed = check_name(fixed, "agent") if fixed is not None else None
        self.suffix = secrets.token_hex(3)

    def __call__(self, ctx: Context) -> str:
        if self.fixed is not None:
            return self.fixed
        request = getattr(ctx.request_context, "request", None)
        if request is not None:
            named = request.headers.get("x-hive-agent") or request.query_params.get("agent")
            if named:
                return check_name(named, "agent")
        params = ctx.session.client_params
        client = params.client_info.name if params is not None else "agent"
        if request is None:
            return f"{client}-{self.suffix}"
        session = request.headers.get("mcp-session-id")
        return f"{client}-{session[:8]}" if session else client


# --- results -----------------------------------------------------------------------


class Asked(BaseModel):
    ask_id: str
    status: str


class AskState(BaseModel):
    ask_id: str
    status: str = Field(description="pending, responded, expired or cancelled")
    question: str
    decision: Any = Field(None, description="the answer, once responded with accept")
    by: str | None = None
    action: str | None = Field(None, description="accept, decline or cancel")
    responded_at: float | None = None
    expired: bool = Field(description="true only when nobody answered in time (never a no)")
    expiry_reason: str | None = None


class PendingAsk(BaseModel):
    ask_id: str
    agent_id: str
    question: str
    options: list[str] | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    urgent: bool
    created_at: float
    deadline_at: float


class PendingList(BaseModel):
    count: int
    prompts: list[PendingAsk]
    next_cursor: str | None = None
    """More pending asks follow: pass it as ``cursor`` for the next page."""


class AwaitedAsk(BaseModel):
    timed_out: bool
    ask: PendingAsk | None = None


class AgoraResult(BaseModel):
    """What an Agora tool returns: the hub's record, whole (see docs/agora.md)."""

    model_config = {"extra": "allow"}


class AgoraList(BaseModel):
    count: int
    items: list[dict[str, Any]]


def _agora_ok(record: dict[str, Any], text: str) -> CallToolResult:
    return _ok(AgoraResult(**record), text)


def _delivery_text(delivery: dict[str, Any]) -> str:
    state = delivery.get("state", "unknown")
    reason = delivery.get("reason")
    return f"delivery to {delivery.get('ling', '?')}: {state}" + (f" ({reason})" if reason else "")


class HumanInput(BaseModel):
    answer: str = Field(description=f"the human's answer, or {EXPIRED_MARKER!r}")
    timed_out: bool
    status: str
    ask_id: str


def _state(record: dict[str, Any]) -> AskState:
    return AskState(
        ask_id=record["id"],
        status=record["status"],
        question=record["question"],
        decision=record["answer"],
        by=record["by"],
        action=record["action"],
        responded_at=record["answered_at"],
        expired=record["expired"],
        expiry_reason=record["expiry_reason"],
    )


def _pending(record: dict[str, Any]) -> PendingAsk:
    return PendingAsk.model_validate(
        {
            "ask_id": record["id"],
            "agent_id": record["agent_id"],
            "question": record["question"],
            "options": record["choices"],
            "schema": record["schema"],
            "urgent": record["urgent"],
            "created_at": record["created_at"],
            "deadline_at": record["deadline_at"],
        }
    )


def _describe(state: AskState) -> str:
    if state.status == "pending":
        return f"ask {state.ask_id} is still pending; poll again later"
    if state.status == "responded":
        if state.action != "accept":
            return f"{state.by} chose to {state.action} (ask {state.ask_id})"
        decision = state.decision
        shown = decision if isinstance(decision, str) else json.dumps(decision)
        return f"answer from {state.by}: {shown}"
    if state.status == "expired":
        return f"ask {state.ask_id} expired ({state.expiry_reason}): nobody answered, not a no"
    return f"ask {state.ask_id} was cancelled by {state.by}"


def _state_result(record: dict[str, Any]) -> CallToolResult:
    state = _state(record)
    return _ok(state, _describe(state))


def _ok(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json", by_alias=True),
    )


def _failed(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


async def _guarded(work: Awaitable[CallToolResult]) -> CallToolResult:
    """Turn the hub's refusals into tool errors the agent can act on, in the tools'
    own words (the hub's ``choices`` are the tools' ``options``)."""
    try:
        return await work
    except Exception as raised:
        error: BaseException = raised  # the heartbeat nursery wraps its body's errors
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        if isinstance(error, HiveError | RemoteError):
            message = error.message.replace("choices", "options")
            return _failed(message.replace("send answer null", "leave decision out"))
        if isinstance(error, HubUnreachable):
            return _failed(str(error))
        raise


@asynccontextmanager
async def _heartbeat(
    ctx: Context, every: float, total: float | None, message: str
) -> AsyncIterator[None]:
    """Send progress every ``every`` seconds while the block waits, so that clients
    which reset their timeout on progress keep the call alive."""

    async def beat() -> None:
        start = trio.current_time()
        while True:
            await trio.sleep(every)
            await ctx.report_progress(trio.current_time() - start, total, message)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(beat)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()


# --- the server --------------------------------------------------------------------


class HiveMcp:
    """The MCPServer for one backend, plus the task that tells subscribers when
    answers land (``run_updates``, to be started in the caller's nursery)."""

    def __init__(
        self,
        backend: Backend,
        identity: Identity | None = None,
        *,
        groups: ToolGroups | None = None,
        human_input_timeout_s: float = HUMAN_INPUT_TIMEOUT_S,
        progress_every_s: float = PROGRESS_EVERY_S,
    ) -> None:
        self.backend = backend
        self.identity = identity or Identity()
        self.human_input_timeout_s = human_input_timeout_s
        self.progress_every_s = progress_every_s
        self.bus = InMemorySubscriptionBus()
        self.groups = groups or ToolGroups()
        self.server = MCPServer(
            "hive-rpc",
            instructions=INSTRUCTIONS,
            subscriptions=self.bus,
            middleware=[self.groups],
        )
        self._subscribers: dict[str, set[Any]] = {}
        self._register_tools()
        self._register_agora_tools()
        self._register_task_tools()
        self._register_resources()
        ungrouped = {t.name for t in self.server._tool_manager.list_tools()} - set(GROUP_OF)
        assert not ungrouped, f"tools missing from mcp_groups.GROUPS: {sorted(ungrouped)}"

    async def _call(self, method: str, **params: Any) -> Any:
        return await self.backend.call(method, {k: v for k, v in params.items() if v is not None})

    async def _wait_closed(
        self, ctx: Context, ask_id: str, agent: str, message: str, total: float | None
    ) -> dict[str, Any]:
        """Wait until the prompt is closed, with a heartbeat; withdraw it if the wait
        ends any other way (the MCP client cancelled the call, say), so that no editor
        keeps showing a question nobody is waiting for."""
        closed = False
        try:
            async with _heartbeat(ctx, self.progress_every_s, total, message):
                while True:
                    record: dict[str, Any] = await self._call(
                        "hive/await", id=ask_id, timeout_s=AWAIT_CHUNK_S, agent_id=agent
                    )
                    if record["status"] != "pending":
                        closed = True
                        return record
        finally:
            if not closed:
                with (
                    trio.move_on_after(5) as cleanup,
                    contextlib.suppress(HiveError, RemoteError, HubUnreachable),
                ):
                    cleanup.shield = True  # answered or gone meanwhile: nothing to withdraw
                    await self._call("hive/cancel", id=ask_id, agent_id=agent, by=agent)

    def _register_tools(self) -> None:
        mcp, me = self.server, self.identity

        @mcp.tool(
            name="hivemind_ask_async",
            description="Ask the human a question without blocking. Returns an ask_id at once; "
            "keep working and collect the answer with hivemind_poll or hivemind_await. "
            "options: answers to pick from; schema: a flat elicitation schema for a "
            "structured answer; timeout_s: countdown, stopped when the human starts typing.",
        )
        async def hivemind_ask_async(
            ctx: Context,
            question: str,
            options: list[str] | None = None,
            schema: dict[str, Any] | None = None,
            urgent: bool = False,
            timeout_s: float | None = None,
            task_id: str | None = None,
        ) -> Annotated[CallToolResult, Asked]:
            async def work() -> CallToolResult:
                record = await self._call(
                    "hive/ask",
                    question=question,
                    choices=options,
                    schema=schema,
                    urgent=urgent,
                    timeout_s=timeout_s,
                    task_id=task_id,
                    agent_id=me(ctx),
                )
                asked = Asked(ask_id=record["id"], status=record["status"])
                return _ok(
                    asked,
                    f"Asked (ask_id {asked.ask_id}, pending). Keep working; collect the "
                    "answer with hivemind_poll or hivemind_await.",
                )

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_poll",
            description="The state of one of your asks: pending, responded (with decision, "
            "by, action), expired (nobody answered in time: not a no) or cancelled.",
        )
        async def hivemind_poll(ctx: Context, ask_id: str) -> Annotated[CallToolResult, AskState]:
            async def work() -> CallToolResult:
                return _state_result(await self._call("hive/poll", id=ask_id, agent_id=me(ctx)))

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_await",
            description="Wait up to timeout_s seconds for the answer to one of your asks; "
            "returns early when it comes. Sends progress notifications while waiting.",
        )
        async def hivemind_await(
            ctx: Context, ask_id: str, timeout_s: float = 60.0
        ) -> Annotated[CallToolResult, AskState]:
            async def work() -> CallToolResult:
                async with _heartbeat(
                    ctx, self.progress_every_s, timeout_s, "waiting for the human's answer"
                ):
                    record = await self._call(
                        "hive/await", id=ask_id, timeout_s=timeout_s, agent_id=me(ctx)
                    )
                return _state_result(record)

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_respond",
            description="Coordinators: answer any pending ask on the human's behalf. "
            "decision is one of the ask's options, an object matching its schema, or "
            "free text; action decline or cancel carries no decision.",
        )
        async def hivemind_respond(
            ctx: Context,
            ask_id: str,
            decision: str | dict[str, Any] | None = None,
            action: Literal["accept", "decline", "cancel"] = "accept",
        ) -> Annotated[CallToolResult, AskState]:
            async def work() -> CallToolResult:
                asked = await self._call("hive/poll", id=ask_id)
                if asked.get("agent_id") == HUB_AGENT:
                    return _failed(
                        f"ask {ask_id} is the hub's own question to the human (may a "
                        "terminal be typed into?); only the human answers it, in an "
                        "editor, the dashboard or the CLI"
                    )
                record = await self._call(
                    "hive/respond", id=ask_id, answer=decision, by=me(ctx), action=action
                )
                state = _state(record)
                return _ok(state, f"recorded: {_describe(state)}")

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_cancel",
            description="Withdraw one of your pending asks; editors take it off the screen.",
        )
        async def hivemind_cancel(ctx: Context, ask_id: str) -> Annotated[CallToolResult, AskState]:
            async def work() -> CallToolResult:
                agent = me(ctx)
                return _state_result(await self._call("hive/cancel", id=ask_id, agent_id=agent))

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_list_pending",
            description="Coordinators: pending asks from every agent, oldest first, one "
            "page of at most `limit` (default 100, at most 1000); when next_cursor is set, "
            "pass it as `cursor` for the next page.",
        )
        async def hivemind_list_pending(
            ctx: Context, limit: int = 100, cursor: str | None = None
        ) -> Annotated[CallToolResult, PendingList]:
            async def work() -> CallToolResult:
                page = await self._call("hive/list", limit=limit, cursor=cursor)
                prompts = [_pending(r) for r in page["prompts"]]
                listing = PendingList(
                    count=len(prompts), prompts=prompts, next_cursor=page["next_cursor"]
                )
                lines = [f"{p.ask_id} ({p.agent_id}): {p.question}" for p in prompts]
                if listing.next_cursor is not None:
                    lines.append(f"(more: cursor={listing.next_cursor})")
                return _ok(listing, "\n".join(lines) or "no pending asks")

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_await_ask",
            description="Coordinators: block until any agent asks (or timeout_s runs out) "
            "and return that ask; answer it with hivemind_respond. exclude: ask_ids "
            "already seen. Sends progress notifications while waiting.",
        )
        async def hivemind_await_ask(
            ctx: Context, timeout_s: float = 60.0, exclude: list[str] | None = None
        ) -> Annotated[CallToolResult, AwaitedAsk]:
            async def work() -> CallToolResult:
                async with _heartbeat(
                    ctx, self.progress_every_s, timeout_s, "waiting for an agent to ask"
                ):
                    record = await self._call("hive/awaitAsk", timeout_s=timeout_s, exclude=exclude)
                if record is None:
                    return _ok(AwaitedAsk(timed_out=True), f"no ask within {timeout_s:g} s")
                ask = _pending(record)
                return _ok(
                    AwaitedAsk(timed_out=False, ask=ask),
                    f"{ask.agent_id} asks ({ask.ask_id}): {ask.question}",
                )

            return await _guarded(work())

        @mcp.tool(
            name="hivemind_ask",
            description="deprecated: use hivemind_ask_async + hivemind_poll. Asks and blocks "
            "until the human answers or timeout_s runs out, sending progress notifications "
            "while it waits; cancelling the call withdraws the question.",
        )
        async def hivemind_ask(
            ctx: Context,
            question: str,
            options: list[str] | None = None,
            timeout_s: float = DEFAULT_BLOCKING_TIMEOUT_S,
        ) -> Annotated[CallToolResult, AskState]:
            async def work() -> CallToolResult:
                agent = me(ctx)
                record = await self._call(
                    "hive/ask",
                    question=question,
                    choices=options,
                    timeout_s=timeout_s,
                    agent_id=agent,
                )
                record = await self._wait_closed(
                    ctx, record["id"], agent, "waiting for the human's answer", timeout_s
                )
                return _state_result(record)

            return await _guarded(work())

        @mcp.tool(
            name="request_human_input",
            description="Ask the human developer for input or guidance and wait for the "
            "answer. First give the context in the chat; this prompt frames the question. "
            f"If nobody answers within {self.human_input_timeout_s:g} s (the countdown stops "
            f"as soon as the human starts typing) it returns {EXPIRED_MARKER}.",
        )
        async def request_human_input(
            ctx: Context, prompt: str
        ) -> Annotated[CallToolResult, HumanInput]:
            async def work() -> CallToolResult:
                agent = me(ctx)
                record = await self._call(
                    "hive/ask",
                    question=prompt,
                    timeout_s=self.human_input_timeout_s,
                    agent_id=agent,
                )
                record = await self._wait_closed(
                    ctx, record["id"], agent, "waiting for the human", None
                )
                answer = record["answer"]
                given = (
                    record["status"] == "responded"
                    and record["action"] == "accept"
                    and isinstance(answer, str)
                    and answer.strip() != ""
                )
                result = HumanInput(
                    answer=answer if given else EXPIRED_MARKER,
                    timed_out=not given,
                    status=record["status"],
                    ask_id=record["id"],
                )
                return _ok(result, result.answer)

            return await _guarded(work())

    def _register_agora_tools(self) -> None:
        """Dialogues between agents, their terminals, and parent/child events."""
        mcp, me = self.server, self.identity

        @mcp.tool(
            name="agora_create",
            description=(
                "Start an Agora dialogue: a topic and two or more participants (ling names "
                "such as main.feature.auth). Each turn you dispatch is typed into the "
                "receiver's terminal with instructions to answer with agora_dispatch."
            ),
        )
        async def agora_create(
            ctx: Context, topic: str, participants: list[str], max_turns: int | None = None
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                d = await self._call(
                    "agora/create", topic=topic, participants=participants, max_turns=max_turns
                )
                return _agora_ok(d, f"dialogue {d['id']} started: {', '.join(d['participants'])}")

            return await _guarded(work())

        @mcp.tool(
            name="agora_dispatch",
            description=(
                "Take your turn in a dialogue: signal is propose, counter, approve, no-change "
                "or defer. sender is your ling name (default: your agent id, as given to "
                "`hive-rpc mcp --agent`). The turn is relayed into the receiver's terminal "
                "unless it ends the dialogue (consensus or max turns); the result says "
                "whether it was delivered."
            ),
        )
        async def agora_dispatch(
            ctx: Context,
            dialogue_id: str,
            to: str,
            signal: Literal["propose", "counter", "approve", "no-change", "defer"],
            message: str,
            sender: str | None = None,
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                r = await self._call(
                    "agora/dispatch",
                    dialogue_id=dialogue_id,
                    to=to,
                    signal=signal,
                    message=message,
                    **{"from": sender or me(ctx)},
                )
                text = f"turn {r['turn']} of {r['dialogue_id']}: {r['outcome']}"
                if r["outcome"] == "relay":
                    text += "; " + _delivery_text(r["delivery"])
                if r.get("event"):
                    text += f"; event {r['event']['event']}"
                return _agora_ok(r, text)

            return await _guarded(work())

        @mcp.tool(name="agora_status", description="A dialogue with its turns, stances and events.")
        async def agora_status(
            ctx: Context, dialogue_id: str
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                d = await self._call("agora/status", dialogue_id=dialogue_id)
                stances = ", ".join(f"{k}: {v}" for k, v in d["stances"].items())
                return _agora_ok(
                    d, f"{d['id']} is {d['status']} after {d['turn_count']} turns ({stances})"
                )

            return await _guarded(work())

        @mcp.tool(name="agora_list", description="Dialogues, oldest first (filter by status).")
        async def agora_list(
            ctx: Context,
            status: Literal["active", "consensus", "timeout", "aborted"] | None = None,
        ) -> Annotated[CallToolResult, AgoraList]:
            async def work() -> CallToolResult:
                items = await self._call("agora/list", status=status)
                lines = [f"{d['id']} [{d['status']}] {d['topic']}" for d in items]
                return _ok(AgoraList(count=len(items), items=items), "\n".join(lines) or "none")

            return await _guarded(work())

        @mcp.tool(
            name="ling_register",
            description=(
                "Ask to register the terminal an agent runs in, so turns and events can be "
                "typed into it: kind tmux (address: pane such as %3), zellij (SESSION:PANE_ID) "
                "or emacs-buffer (buffer name). name is branch-like: main.feature.auth "
                "reports to main.feature. The ling is pending until the human approves "
                "(state: pending, prompt_id); nothing is typed into a shell."
            ),
        )
        async def ling_register(
            ctx: Context,
            name: str,
            kind: Literal["tmux", "zellij", "emacs-buffer"],
            address: str,
            label: str | None = None,
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                r = await self._call(
                    "ling/register",
                    name=name,
                    kind=kind,
                    address=address,
                    label=label,
                    agent_id=me(ctx),
                )
                if r.get("state") == "pending":
                    text = (
                        f"ling {r['name']} ({r['kind']} {r['address']}) is pending: the human "
                        f"must approve it (prompt {r['prompt_id']})"
                    )
                    return _agora_ok(r, text)
                return _agora_ok(r, f"ling {r['name']} is {r['kind']} {r['address']}")

            return await _guarded(work())

        @mcp.tool(name="ling_list", description="Registered lings; check=true tests each terminal.")
        async def ling_list(
            ctx: Context, check: bool = False
        ) -> Annotated[CallToolResult, AgoraList]:
            async def work() -> CallToolResult:
                items = await self._call("ling/list", check=check)
                lines = [
                    f"{x['name']}: {x['kind']} {x['address']}"
                    + (
                        ""
                        if "alive" not in x
                        else (" (alive)" if x["alive"] else f" ({x['reason']})")
                    )
                    for x in items
                ]
                return _ok(AgoraList(count=len(items), items=items), "\n".join(lines) or "none")

            return await _guarded(work())

        @mcp.tool(name="ling_remove", description="Forget a registered ling.")
        async def ling_remove(ctx: Context, name: str) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                r = await self._call("ling/remove", name=name)
                return _agora_ok(
                    r, f"{name}: {'removed' if r['removed'] else 'was not registered'}"
                )

            return await _guarded(work())

        @mcp.tool(
            name="report_to_parent",
            description=(
                "Children: tell your parent (your ling name minus its last part) something: "
                "kind child-complete, child-question, child-note, pr-status or ci-status. "
                "It is typed into the parent's terminal; a question tells the parent how "
                "to answer_question you."
            ),
        )
        async def report_to_parent(
            ctx: Context,
            kind: Literal[
                "child-complete", "child-question", "child-note", "pr-status", "ci-status"
            ],
            message: str | None = None,
            pr: int | None = None,
            ci: str | None = None,
            review: str | None = None,
            sender: str | None = None,
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                r = await self._call(
                    "event/post",
                    kind=kind,
                    message=message,
                    pr=pr,
                    ci=ci,
                    review=review,
                    **{"from": sender or me(ctx)},
                )
                return _agora_ok(r, f"{kind} to {r['to']}: " + _delivery_text(r["delivery"]))

            return await _guarded(work())

        @mcp.tool(
            name="answer_question",
            description=(
                "Parents: answer a child's [QUESTION ...]: the message is typed into the "
                "child's terminal (agent is the child's ling name, as the question says)."
            ),
        )
        async def answer_question(
            ctx: Context,
            agent: str,
            message: str,
            sender: str | None = None,
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                r = await self._call(
                    "agent/answer", agent=agent, message=message, **{"from": sender}
                )
                return _agora_ok(r, _delivery_text(r["delivery"]))

            return await _guarded(work())

    def _register_task_tools(self) -> None:
        mcp, me = self.server, self.identity

        @mcp.tool(
            name="task_report",
            description=(
                "Publish the outcome of your task under its task_id (success, failed or "
                "cancelled, with a result or an error), so whoever waits for that task "
                "(a dashboard, an editor, another agent watching the activity stream) "
                "gets it. Use the task_id you were given, or the one you asked under."
            ),
        )
        async def task_report(
            ctx: Context,
            task_id: str,
            outcome: Literal["success", "failed", "cancelled"],
            result: Any = None,
            error: str | None = None,
            in_reply_to: str | None = None,
        ) -> Annotated[CallToolResult, AgoraResult]:
            async def work() -> CallToolResult:
                r = await self._call(
                    "hive/reportResult",
                    task_id=task_id,
                    outcome=outcome,
                    result=result,
                    error=error,
                    in_reply_to=in_reply_to,
                    agent_id=me(ctx),
                )
                return _agora_ok(r, f"task {task_id}: {outcome} reported (activity #{r['id']})")

            return await _guarded(work())

    def _register_resources(self) -> None:
        me = self.identity

        @self.server.resource(
            ASK_URI,
            name="ask",
            description="One of your asks as a JSON record; subscribe to be told when it "
            "is answered, expires or is cancelled.",
            mime_type="application/json",
        )
        async def ask_resource(ask_id: str, ctx: Context) -> dict[str, Any]:
            try:
                record: dict[str, Any] = await self._call("hive/poll", id=ask_id, agent_id=me(ctx))
            except (HiveError, RemoteError) as e:
                raise ResourceError(e.message) from None
            return record

        # Legacy sessions (protocol 2025-11-25) subscribe with resources/subscribe;
        # MCPServer has no public hook for it, so it goes on the low-level server.
        low = self.server._lowlevel_server

        async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
            conn, uri = ctx.session._connection, str(params.uri)
            subscribers = self._subscribers.setdefault(uri, set())
            if conn not in subscribers:
                subscribers.add(conn)
                conn.exit_stack.callback(lambda: self._forget(uri, conn))
            return EmptyResult()

        async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
            self._forget(str(params.uri), ctx.session._connection)
            return EmptyResult()

        low.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)

    def _forget(self, uri: str, conn: Any) -> None:
        subscribers = self._subscribers.get(uri)
        if subscribers is not None:
            subscribers.discard(conn)
            if not subscribers:
                del self._subscribers[uri]

    async def run_updates(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Send notifications/resources/updated for ``hive://asks/ID`` whenever a prompt
        is closed: to legacy subscribers directly, and through the subscription bus
        to modern ``subscriptions/listen`` streams."""
        async with self.backend.closed_prompts() as closed:
            task_status.started()
            async for ask_id in closed:
                uri = ASK_URI.format(ask_id=ask_id)
                for conn in list(self._subscribers.get(uri, ())):
                    await conn.send_resource_updated(uri)
                await self.bus.publish(ResourceUpdated(uri=uri))
