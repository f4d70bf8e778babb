"""The Agora's tools: dialogues between agents (``agora_*``), the terminals turns and
events are typed into (``ling_*``), parent/child events, and task outcomes on the
activity stream (``task_report``).  See docs/agora.md and docs/activity.md."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from hive_rpc.faces.mcp.hints import ADDS, ENDS, READS
from hive_rpc.faces.mcp.results import (
    AgoraList,
    AgoraResult,
    JsonValue,
    agora_ok,
    delivery_text,
    ok,
)
from hive_rpc.faces.mcp.session import session_of
from hive_rpc.faces.mcp.tool_table import ToolTable

TOOLS = ToolTable()


@TOOLS.tool(
    group="agora",
    description=(
        "Start an Agora dialogue: a topic and two or more participants (ling names "
        "such as main.feature.auth). Each turn you dispatch is typed into the "
        "receiver's terminal with instructions to answer with agora_dispatch. "
        "You are its coordinator: its consensus, timeout, participants found "
        "absent and other trouble are sent to this session as log messages "
        "(notifications/message, logger hive-rpc.agora) and name you on the "
        "hub's activity stream."
    ),
    hints=ADDS,
)
async def agora_create(
    ctx: Context, topic: str, participants: list[str], max_turns: int | None = None
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    await session.hive.news.remember(ctx, session.agent(ctx))
    d = await session.call(
        "agora/create",
        topic=topic,
        participants=participants,
        max_turns=max_turns,
        coordinator=session.agent(ctx),
    )
    return agora_ok(d, f"dialogue {d['id']} started: {', '.join(d['participants'])}")


@TOOLS.tool(
    group="agora",
    description=(
        "Take your turn in a dialogue: signal is propose, counter, approve, no-change "
        "or defer. sender: your ling name, needed only when the hub cannot tell it "
        "from your process (MCP over HTTP). The turn is relayed into the receiver's terminal "
        "unless it ends the dialogue (consensus or max turns); the result says "
        "whether it was delivered, and what the dialogue is now. A turn still "
        "queued that fails later is told to you (in your terminal, and to this "
        "session as a log message)."
    ),
    hints=ADDS,
    words={"from": "sender"},
)
async def agora_dispatch(
    ctx: Context,
    dialogue_id: str,
    to: str,
    signal: Literal["propose", "counter", "approve", "no-change", "defer"],
    message: str,
    sender: str | None = None,
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    await session.hive.news.remember(ctx, sender or session.agent(ctx))
    r = await session.call(
        "agora/dispatch",
        dialogue_id=dialogue_id,
        to=to,
        signal=signal,
        message=message,
        **{"from": sender or session.agent(ctx)},
    )
    if r.get("from") not in (None, sender or session.agent(ctx)):
        # The hub took this agent's ling from its process: that name is the one
        # its turn's news (a delivery that failed later) is told under.
        await session.hive.news.remember(ctx, r["from"])
    text = r.get("report") or f"turn {r['turn']} of {r['dialogue_id']}: {r['outcome']}"
    if r.get("absent") and r["status"] == "active":
        text += f"; absent (not counted toward consensus): {', '.join(r['absent'])}"
    return agora_ok(r, text)


@TOOLS.tool(
    group="agora", description="A dialogue with its turns, stances and events.", hints=READS
)
async def agora_status(ctx: Context, dialogue_id: str) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    d = await session.call("agora/status", dialogue_id=dialogue_id)
    stances = ", ".join(f"{k}: {v}" for k, v in d["stances"].items())
    text = f"{d['id']} is {d['status']} after {d['turn_count']} turns ({stances})"
    if d.get("situation"):
        text += f": {d['situation']}"
    last = d["turns"][-1] if d["turns"] else None
    if last is not None and last["delivery"].get("state") in ("failed", "queued"):
        text += f"; turn {last['number']}: " + delivery_text(last["delivery"])
    return agora_ok(d, text)


@TOOLS.tool(
    group="agora",
    description="End a dialogue by hand (status aborted); it takes no more turns.",
    hints=ENDS,
)
async def agora_abort(
    ctx: Context, dialogue_id: str, reason: str | None = None
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    d = await session.call("agora/abort", dialogue_id=dialogue_id, reason=reason)
    return agora_ok(d, f"{d['id']} aborted after {d['turn_count']} turns: {d['end_reason']}")


@TOOLS.tool(group="agora", description="Dialogues, oldest first (filter by status).", hints=READS)
async def agora_list(
    ctx: Context,
    status: Literal["active", "paused", "consensus", "timeout", "aborted"] | None = None,
) -> Annotated[CallToolResult, AgoraList]:
    session = session_of(ctx)
    items = await session.call("agora/list", status=status)
    lines = [f"{d['id']} [{d['status']}] {d['topic']}" for d in items]
    return ok(AgoraList(count=len(items), items=items), "\n".join(lines) or "none")


@TOOLS.tool(
    group="lings",
    description=(
        "Ask to register the terminal an agent runs in, so turns and events can be "
        "typed into it: kind tmux (address: pane such as %3), zellij (SESSION:PANE_ID) "
        "or emacs-buffer (buffer name). name is branch-like: main.feature.auth "
        "reports to main.feature. The ling is pending until the human approves "
        "(state: pending, prompt_id); nothing is typed into a shell."
    ),
    hints=ADDS,
)
async def ling_register(
    ctx: Context,
    name: str,
    kind: Literal["tmux", "zellij", "emacs-buffer"],
    address: str,
    label: str | None = None,
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call(
        "ling/register",
        name=name,
        kind=kind,
        address=address,
        label=label,
        agent_id=session.agent(ctx),
    )
    if r.get("state") == "pending":
        text = (
            f"ling {r['name']} ({r['kind']} {r['address']}) is pending: the human "
            f"must approve it (prompt {r['prompt_id']})"
        )
        return agora_ok(r, text)
    return agora_ok(r, f"ling {r['name']} is {r['kind']} {r['address']}")


@TOOLS.tool(
    group="lings", description="Registered lings; check=true tests each terminal.", hints=READS
)
async def ling_list(ctx: Context, check: bool = False) -> Annotated[CallToolResult, AgoraList]:
    session = session_of(ctx)
    items = await session.call("ling/list", check=check)
    lines = [
        f"{x['name']}: {x['kind']} {x['address']}"
        + ("" if "alive" not in x else (" (alive)" if x["alive"] else f" ({x['reason']})"))
        for x in items
    ]
    return ok(AgoraList(count=len(items), items=items), "\n".join(lines) or "none")


@TOOLS.tool(group="lings", description="Forget a registered ling.", hints=ENDS)
async def ling_remove(ctx: Context, name: str) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call("ling/remove", name=name)
    return agora_ok(r, f"{name}: {'removed' if r['removed'] else 'was not registered'}")


@TOOLS.tool(
    group="events",
    description=(
        "Children: tell your parent (your ling name minus its last part) something: "
        "kind child-complete, child-question, child-note, pr-status (with review: "
        "a review posted on your PR), pr-ready (your PR is approved and ready to "
        "merge) or ci-status. It is typed into the parent's terminal; a question "
        "tells the parent how to answer_question you."
    ),
    hints=ADDS,
    words={"from": "sender"},
)
async def report_to_parent(
    ctx: Context,
    kind: Literal[
        "child-complete", "child-question", "child-note", "pr-status", "pr-ready", "ci-status"
    ],
    message: str | None = None,
    pr: int | None = None,
    ci: str | None = None,
    review: str | None = None,
    comments: int | None = None,
    url: str | None = None,
    sender: str | None = None,
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call(
        "event/post",
        kind=kind,
        message=message,
        pr=pr,
        ci=ci,
        review=review,
        comments=comments,
        url=url,
        **{"from": sender or session.agent(ctx)},
    )
    return agora_ok(r, f"{kind} to {r['to']}: " + delivery_text(r["delivery"]))


@TOOLS.tool(
    group="events",
    description=(
        "Parents: answer a child's [QUESTION ...]: the message is typed into the "
        "child's terminal (agent is the child's ling name, as the question says)."
    ),
    hints=ADDS,
    words={"from": "sender"},
)
async def answer_question(
    ctx: Context,
    agent: str,
    message: str,
    sender: str | None = None,
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call("agent/answer", agent=agent, message=message, **{"from": sender})
    return agora_ok(r, delivery_text(r["delivery"]))


@TOOLS.tool(
    group="tasks",
    description=(
        "Publish the outcome of your task under its task_id (success, failed or "
        "cancelled, with a result or an error), so whoever waits for that task "
        "(a dashboard, an editor, another agent watching the activity stream) "
        "gets it. Use the task_id you were given, or the one you asked under."
    ),
    hints=ADDS,
)
async def task_report(
    ctx: Context,
    task_id: str,
    outcome: Literal["success", "failed", "cancelled"],
    result: JsonValue = None,
    error: str | None = None,
    in_reply_to: str | None = None,
) -> Annotated[CallToolResult, AgoraResult]:
    session = session_of(ctx)
    r = await session.call(
        "hive/reportResult",
        task_id=task_id,
        outcome=outcome,
        result=result,
        error=error,
        in_reply_to=in_reply_to,
        agent_id=session.agent(ctx),
    )
    return agora_ok(r, f"task {task_id}: {outcome} reported (activity #{r['id']})")
