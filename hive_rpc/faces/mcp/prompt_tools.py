"""The ``hivemind_*`` tools and ``request_human_input``: an agent asks the human, waits
or polls, withdraws; a coordinator lists, awaits and answers asks (see server.py for
the two ways to wait).  Each tool reads its session (the agent, how long to wait) from
its request: ``session_of(ctx)``."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import trio
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from hive_rpc.client.hub_connection import HubUnreachable
from hive_rpc.core.conventions import HUB_AGENT
from hive_rpc.core.errors import HiveError, NotAnApprover
from hive_rpc.core.prompt import Ask
from hive_rpc.faces.mcp.hints import ADDS, READS, WITHDRAWS
from hive_rpc.faces.mcp.results import (
    ASKED_NEXT,
    EXPIRED_MARKER,
    UNSEEN_TEXT,
    Asked,
    AskState,
    AwaitedAsk,
    HumanInput,
    PendingList,
    ask_state,
    describe,
    next_step,
    ok,
    pending_ask,
    state_result,
    unseen,
)
from hive_rpc.faces.mcp.session import HUMAN_INPUT_TIMEOUT_S, AgentSession, session_of
from hive_rpc.faces.mcp.tool_table import ToolTable

log = logging.getLogger(__name__)

DEFAULT_BLOCKING_TIMEOUT_S = 300.0
AWAIT_CHUNK_S = 3600.0


@asynccontextmanager
async def heartbeat(
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


async def wait_closed(
    session: AgentSession,
    ctx: Context,
    ask_id: str,
    agent: str,
    message: str,
    total: float | None,
) -> dict[str, Any]:
    """Wait until the prompt is closed, with a heartbeat; withdraw it if the wait
    ends any other way (the MCP client cancelled the call, say), so that no editor
    keeps showing a question nobody is waiting for.

    Except when the client's own tool timeout is near (``AgentSession.within_client``):
    then the record comes back still pending, the question kept, so the agent gets
    its ask id in a result and can poll, rather than an error from its client and
    a question withdrawn (progress does not extend Claude Code's timeout)."""
    closed = False
    record: dict[str, Any] = {}
    try:
        async with heartbeat(ctx, session.progress_every_s, total, message):
            with trio.move_on_after(session.within_client(math.inf)) as near_timeout:
                while True:
                    record = await session.call(
                        "hive/await", id=ask_id, timeout_s=AWAIT_CHUNK_S, agent_id=agent
                    )
                    if record["status"] != "pending":
                        closed = True
                        return record
            closed = near_timeout.cancelled_caught
            # Kept for the agent to collect: no longer withdrawn when this call's
            # process ends (service/askers.py).
            kept: dict[str, Any] = await session.call("hive/keep", id=ask_id, agent_id=agent)
            return kept
    finally:
        if not closed:
            with (
                trio.move_on_after(5) as cleanup,
                contextlib.suppress(HiveError, HubUnreachable),
            ):
                cleanup.shield = True  # answered or gone meanwhile: nothing to withdraw
                await session.call("hive/cancel", id=ask_id, agent_id=agent, by=agent)


RESUMED_META = "hive-rpc/resumed"
"""Set in ``_meta`` by ``hive-rpc mcp`` on a blocking ask it sends again to a new hub,
the hub it had called having gone away before answering (mcp_relay.py)."""


async def ask_once(session: AgentSession, ctx: Context, ask: Ask) -> dict[str, Any]:
    """The record of ``ask``: asked now, or, on a call a relay resumed, the newest
    pending prompt of this agent asking the same (question, choices, schema).  A
    match by content, since nothing else of the lost call is known; an agent that
    marks a call itself only joins its own identical question."""
    meta = ctx.request_context.meta
    if meta and meta.get(RESUMED_META) is True:
        page = await session.call("hive/list", agent_id=ask.agent_id, limit=1000)
        choices = list(ask.choices) if ask.choices is not None else None
        same: list[dict[str, Any]] = [
            r
            for r in page["prompts"]
            if (r["question"], r["choices"], r["schema"]) == (ask.question, choices, ask.schema)
        ]
        if same:
            log.info(
                "%s: a resumed call waits for its pending ask %s", ask.agent_id, same[-1]["id"]
            )
            return same[-1]
    # waits: this call waits for the answer; the hub withdraws the question if the
    # process serving it (the hive-rpc mcp relay) ends (service/askers.py).
    record: dict[str, Any] = await session.call("hive/ask", **ask.params(), waits=True)
    return record


TOOLS = ToolTable()


@TOOLS.tool(
    group="ask",
    description="Ask the human a question without blocking. Returns an ask_id at once; "
    "keep working and collect the answer with hivemind_poll or hivemind_await. "
    "options: answers to pick from; schema: a flat elicitation schema for a "
    "structured answer; timeout_s: countdown, stopped when the human starts typing; "
    "task_id: the task this ask belongs to; in_reply_to: the ask or task it follows "
    "up (both returned, and carried by the ask's activity entries); idempotency_key: "
    "your key for this question, so that asking again after an error or a lost reply "
    "(the same question, the same key) returns the same ask_id instead of asking twice.",
    hints=ADDS,
    words={"choices": "options"},
)
async def hivemind_ask_async(
    ctx: Context,
    question: str,
    options: list[str] | None = None,
    schema: dict[str, Any] | None = None,
    urgent: bool = False,
    timeout_s: float | None = None,
    task_id: str | None = None,
    in_reply_to: str | None = None,
    idempotency_key: str | None = None,
) -> Annotated[CallToolResult, Asked]:
    session = session_of(ctx)
    ask = Ask(
        question=question,
        choices=options,
        schema=schema,
        urgent=urgent,
        timeout_s=timeout_s,
        task_id=task_id,
        in_reply_to=in_reply_to,
        agent_id=session.agent(ctx),
    )
    keyed = {"idempotency_key": idempotency_key} if idempotency_key is not None else {}
    record = await session.call("hive/ask", **ask.params(), **keyed)
    # The correlation ids come back with the id, so a caller can match
    # the stream's entries by task without a table of its own.
    asked = Asked(
        ask_id=record["id"],
        status=record["status"],
        next_step=ASKED_NEXT,
        task_id=record.get("task_id"),
        in_reply_to=record.get("in_reply_to"),
    )
    return ok(
        asked,
        f"Asked (ask_id {asked.ask_id}, {asked.status}). Keep working; collect the "
        "answer with hivemind_poll or hivemind_await.",
    )


async def _own_ask(ctx: Context, method: str, ask_id: str) -> CallToolResult:
    """``method`` on one of the caller's own asks, as its state (given the agent, the
    hub acts on that agent's asks only)."""
    session = session_of(ctx)
    return state_result(await session.call(method, id=ask_id, agent_id=session.agent(ctx)))


@TOOLS.tool(
    group="ask",
    description="The state of one of your asks: pending, responded (with decision, "
    "by, action), expired (nobody answered in time: not a no) or cancelled.",
    hints=READS,
    words={"id": "ask_id"},
)
async def hivemind_poll(ctx: Context, ask_id: str) -> Annotated[CallToolResult, AskState]:
    return await _own_ask(ctx, "hive/poll", ask_id)


@TOOLS.tool(
    group="ask",
    description="Wait up to timeout_s seconds for the answer to one of your asks; "
    "returns early when it comes. Sends progress notifications while waiting.",
    hints=READS,
    words={"id": "ask_id"},
)
async def hivemind_await(
    ctx: Context, ask_id: str, timeout_s: float = 60.0
) -> Annotated[CallToolResult, AskState]:
    session = session_of(ctx)
    timeout_s = session.within_client(timeout_s)
    async with heartbeat(
        ctx, session.progress_every_s, timeout_s, "waiting for the human's answer"
    ):
        record = await session.call(
            "hive/await", id=ask_id, timeout_s=timeout_s, agent_id=session.agent(ctx)
        )
    return state_result(record)


@TOOLS.tool(
    group="coordinator",
    description="Coordinators: answer any pending ask on the human's behalf. "
    "decision is one of the ask's options, an object matching its schema, or "
    "free text; action decline or cancel carries no decision.",
    hints=ADDS,
    words={"id": "ask_id", "answer": "decision", "choices": "options"},
)
async def hivemind_respond(
    ctx: Context,
    ask_id: str,
    decision: str | dict[str, Any] | None = None,
    action: Literal["accept", "decline", "cancel"] = "accept",
) -> Annotated[CallToolResult, AskState]:
    session = session_of(ctx)
    asked = await session.call("hive/poll", id=ask_id)
    if asked.get("agent_id") == HUB_AGENT:
        raise NotAnApprover(
            f"ask {ask_id} is the hub's own question to the human (may a "
            "terminal be typed into?); only the human answers it, in an "
            "editor, the dashboard or the CLI",
            id=ask_id,
        )
    record = await session.call(
        "hive/respond", id=ask_id, answer=decision, by=session.agent(ctx), action=action
    )
    state = ask_state(record)
    return ok(state, f"recorded: {describe(state)}")


@TOOLS.tool(
    group="ask",
    description="Withdraw one of your pending asks; editors take it off the screen.",
    hints=WITHDRAWS,
    words={"id": "ask_id"},
)
async def hivemind_cancel(ctx: Context, ask_id: str) -> Annotated[CallToolResult, AskState]:
    return await _own_ask(ctx, "hive/cancel", ask_id)


@TOOLS.tool(
    group="coordinator",
    description="Coordinators: pending asks from every agent, oldest first, one "
    "page of at most `limit` (default 100, at most 1000); when next_cursor is set, "
    "pass it as `cursor` for the next page.",
    hints=READS,
)
async def hivemind_list_pending(
    ctx: Context, limit: int = 100, cursor: str | None = None
) -> Annotated[CallToolResult, PendingList]:
    page = await session_of(ctx).call("hive/list", limit=limit, cursor=cursor)
    prompts = [pending_ask(r) for r in page["prompts"]]
    listing = PendingList(count=len(prompts), prompts=prompts, next_cursor=page["next_cursor"])
    lines = [f"{p.ask_id} ({p.agent_id}): {p.question}" for p in prompts]
    if listing.next_cursor is not None:
        lines.append(f"(more: cursor={listing.next_cursor})")
    return ok(listing, "\n".join(lines) or "no pending asks")


@TOOLS.tool(
    group="coordinator",
    description="Coordinators: block until any agent asks (or timeout_s runs out) "
    "and return that ask; answer it with hivemind_respond. exclude: ask_ids "
    "already seen. timeout_ms: the same wait in milliseconds (the seed's name), "
    "used when timeout_s is not given. Sends progress notifications while waiting.",
    hints=READS,
)
async def hivemind_await_ask(
    ctx: Context,
    timeout_s: float | None = None,
    exclude: list[str] | None = None,
    timeout_ms: int | None = None,
) -> Annotated[CallToolResult, AwaitedAsk]:
    session = session_of(ctx)
    if timeout_s is None:
        timeout_s = 60.0 if timeout_ms is None else timeout_ms / 1000
    timeout_s = session.within_client(timeout_s)
    async with heartbeat(ctx, session.progress_every_s, timeout_s, "waiting for an agent to ask"):
        record = await session.call("hive/awaitAsk", timeout_s=timeout_s, exclude=exclude)
    if record is None:
        return ok(AwaitedAsk(timed_out=True), f"no ask within {timeout_s:g} s")
    ask = pending_ask(record)
    return ok(
        AwaitedAsk(timed_out=False, ask=ask),
        f"{ask.agent_id} asks ({ask.ask_id}): {ask.question}",
    )


@TOOLS.tool(
    group="ask",
    description="deprecated: use hivemind_ask_async + hivemind_poll. Asks and blocks "
    "until the human answers or timeout_s runs out, sending progress notifications "
    "while it waits; cancelling the call withdraws the question.",
    hints=ADDS,
    resumable=True,
    words={"choices": "options"},
)
async def hivemind_ask(
    ctx: Context,
    question: str,
    options: list[str] | None = None,
    timeout_s: float = DEFAULT_BLOCKING_TIMEOUT_S,
) -> Annotated[CallToolResult, AskState]:
    session = session_of(ctx)
    agent = session.agent(ctx)
    log.warning(
        "%s called the deprecated hivemind_ask (it blocks the agent until answered); "
        "use hivemind_ask_async + hivemind_poll",
        agent,
    )
    ask = Ask(question=question, choices=options, timeout_s=timeout_s, agent_id=agent)
    record = await ask_once(session, ctx, ask)
    record = await wait_closed(
        session, ctx, record["id"], agent, "waiting for the human's answer", timeout_s
    )
    return state_result(record)


def human_input_description(timeout_s: float) -> str:
    """``request_human_input``'s description, which says its session's countdown (a
    session with another than the default is shown its own: ``AgentSession.descriptions``)."""
    return (
        "Ask the human developer for input or guidance and wait for the "
        "answer. First give the context in the chat; this prompt frames the question. "
        "options: answers the human may pick from (omit for a free-text answer). "
        f"If nobody answers within {timeout_s:g} s (the countdown stops "
        f"as soon as the human starts typing) it returns {EXPIRED_MARKER}."
    )


@TOOLS.tool(
    group="ask",
    description=human_input_description(HUMAN_INPUT_TIMEOUT_S),
    hints=ADDS,
    resumable=True,
    words={"question": "prompt", "choices": "options"},
)
async def request_human_input(
    ctx: Context, prompt: str, options: list[str] | None = None
) -> Annotated[CallToolResult, HumanInput]:
    """``options`` as the VS Code extension's tool of the same name takes them (a
    pick list instead of free text); an empty list is free text there, so here."""
    session = session_of(ctx)
    agent = session.agent(ctx)
    ask = Ask(
        question=prompt,
        choices=options or None,
        timeout_s=session.human_input_timeout_s,
        agent_id=agent,
    )
    record = await ask_once(session, ctx, ask)
    record = await wait_closed(session, ctx, record["id"], agent, "waiting for the human", None)
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
        unseen=unseen(record),
        action=record["action"],
        next_step=next_step(record),
    )
    # The answer or the marker stays the whole first text (clients compare it); the
    # status line follows it (ok), then what an unseen expiry means.
    return ok(result, result.answer, *([UNSEEN_TEXT] if result.unseen else []))


RESUMABLE = frozenset(spec.name for spec in TOOLS.specs if spec.resumable)
"""The blocking asks a relay sends again, marked ``RESUMED_META``, when their hub went
away: the question was saved before the wait began, so the new hub most likely holds
it still, pending; the call then waits for that one instead of asking the human the
same thing twice (and is answered what the human answers there)."""
