"""What the MCP tools return: structured results (pydantic models, so that each
tool's output schema is listed) with a line of text for the agent to read, and after
it a second line, written by ``ok`` alone from the result (``Result.said``), saying
the status, the ask id and the next step, since some clients (Gemini CLI) hand their
model only the text and others (Claude Code) only the structured result; and, in
one place (``tool_error``), what they return for a failure: the hub's error in the
tool's own words, with its code and ``data.kind`` (protocol/tool_errors.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field, WithJsonSchema

from hive_rpc.protocol.tool_errors import error_result

if TYPE_CHECKING:
    from hive_rpc.core.errors import HiveError

EXPIRED_MARKER = ":timeout->what-would-rich-hickey-do"
"""What ``request_human_input`` returns when nobody answered: Calva Backseat Driver's
marker, which callers of a tool of that name test for."""

JSON_TYPES = ["string", "number", "boolean", "object", "array", "null"]
JsonValue = Annotated[Any, WithJsonSchema({"type": JSON_TYPES})]
"""Any JSON value, said so in the schema: ``Any`` alone lists no type at all, which
schema checkers (MCP Inspector ``--strict``) flag as an untyped property."""


NEXT_STEP = Field(
    None,
    description="what to do next, when there is something to do: the same advice as "
    "the text's status line, here because some clients (Claude Code) hand their "
    "model only the structured result",
)


class Result(BaseModel):
    """A tool's structured result; ``said`` is what of it the text must say besides
    the tool's own sentence, so that a client that shows its model only the text
    (Gemini CLI) loses nothing the structured result tells."""

    def said(self) -> str | None:
        return None


def status_line(
    status: str, ask_id: str | None, next_step: str | None, *, action: str | None = None
) -> str:
    """The words every result about an ask ends its text with, in one place: the
    status, the action of an answer that is not one, the ask id, and the next step
    ("none" once there is nothing to do: the answer is there).  A model that reads only
    text finds in it what to poll and when."""
    words = [f"status: {status}"]
    if action is not None and action != "accept":
        words.append(f"action: {action}")
    if ask_id is not None:
        words.append(f"ask_id: {ask_id}")
    words.append(f"next step: {next_step or 'none, the answer is above'}")
    return "; ".join(words)


class Asked(Result):
    ask_id: str
    status: str
    next_step: str | None = NEXT_STEP
    task_id: str | None = Field(None, description="the task this ask belongs to, as given")
    in_reply_to: str | None = Field(
        None, description="the ask or task this one follows up, as given"
    )

    def said(self) -> str:
        return status_line(self.status, self.ask_id, self.next_step)


class AskState(Result):
    ask_id: str
    status: str = Field(description="pending, responded, expired or cancelled")
    question: str
    decision: JsonValue = Field(
        None,
        description="the answer, once responded with accept: one of the options, free "
        "text, or an object matching the ask's schema",
    )
    by: str | None = None
    action: str | None = Field(None, description="accept, decline or cancel")
    responded_at: float | None = None
    expired: bool = Field(description="true only when nobody answered in time (never a no)")
    expiry_reason: str | None = None
    unseen: bool = Field(
        False,
        description="expired before any editor showed the question to the human: "
        "the human never saw it",
    )
    next_step: str | None = NEXT_STEP

    def said(self) -> str:
        return status_line(self.status, self.ask_id, self.next_step, action=self.action)


class PendingAsk(BaseModel):
    ask_id: str
    agent_id: str
    question: str
    options: list[str] | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    urgent: bool
    created_at: float
    deadline_at: float


class PendingList(Result):
    count: int
    prompts: list[PendingAsk]
    next_cursor: str | None = None
    """More pending asks follow: pass it as ``cursor`` for the next page."""

    def said(self) -> str:
        more = (
            f", or call hivemind_list_pending with cursor {self.next_cursor} for the next page"
            if self.next_cursor is not None
            else ""
        )
        if not self.prompts:
            return f"status: {self.count} pending; next step: none, nothing waits for an answer"
        return (
            f"status: {self.count} pending on this page; next step: answer one with "
            f"hivemind_respond and its ask_id (each line above starts with it){more}"
        )


class AwaitedAsk(Result):
    timed_out: bool
    ask: PendingAsk | None = None

    def said(self) -> str:
        if self.ask is None:
            return (
                "status: timed out, nobody asked; next step: call hivemind_await_ask "
                "again to keep waiting"
            )
        return status_line(
            "pending",
            self.ask.ask_id,
            "answer it with hivemind_respond and this ask_id, or pass the ask_id in "
            "exclude to hivemind_await_ask for the next ask",
        )


class AgoraResult(BaseModel):
    """What an Agora tool returns: the hub's record, whole (see docs/agora.md)."""

    model_config = {"extra": "allow"}


class AgoraList(BaseModel):
    count: int
    items: list[dict[str, Any]]


class HumanInput(Result):
    answer: str = Field(description=f"the human's answer, or {EXPIRED_MARKER!r}")
    timed_out: bool
    status: str
    ask_id: str
    unseen: bool = Field(False, description="it expired before any editor showed it to the human")
    action: str | None = Field(
        None,
        description="for status responded: accept, decline or cancel (the human "
        "dismissed it); null otherwise",
    )
    next_step: str | None = NEXT_STEP

    def said(self) -> str:
        return status_line(self.status, self.ask_id, self.next_step, action=self.action)


UNSEEN_TEXT = (
    "expired unseen: no editor showed this question to the human before its countdown "
    "ran out, so the human never saw it (not a no)"
)
"""What an agent is told of an unseen expiry, beside the usual result."""


def ok(model: BaseModel, text: str, *more: str) -> CallToolResult:
    """``model`` as the structured result; as text, ``text`` first (the whole of it:
    ``request_human_input``'s answer or marker, which clients compare), then what the
    model says of its status (``Result.said``), then ``more``."""
    said = model.said() if isinstance(model, Result) else None
    texts = (text, *([said] if said is not None else []), *more)
    return CallToolResult(
        content=[TextContent(type="text", text=t) for t in texts],
        structured_content=model.model_dump(mode="json", by_alias=True),
    )


Words = Mapping[str, str]
"""A tool's names for the hub's parameters it fills, hub's -> tool's
(``agora_dispatch``: ``{"from": "sender"}``), declared beside the tool
(``ToolTable.tool``'s ``words``)."""


def tool_error(error: HiveError, tool: str, words: Words) -> CallToolResult:
    """``error`` as ``tool``'s error result: the hub's sentence and data in the tool's
    words, its code and kind as they are.

    Going by the error's data, never by guessing from the sentence: ``data.method``
    (the hub's method, which check_params names) becomes the tool; ``data.param`` and
    the data's other keys name the hub's parameters the sentence is about, each
    renamed as ``words`` says, in the sentence and in the data; ``data.action``
    with ``param`` answer is a decline or cancel that carried one.  A traceback stays
    in the hub's log (the bug's sentence names the tool and the exception)."""
    data = dict(error.data)
    data.pop("traceback", None)
    method = data.pop("method", None)
    message = error.message
    if isinstance(method, str) and method != tool:
        message = message.replace(method, tool)
    param = data.get("param")
    action = data.get("action")
    if param == "answer" and isinstance(action, str) and action != "accept" and "answer" in words:
        message = f"a {action} carries no {words['answer']}; leave {words['answer']} out"
    else:
        named = {str(key) for key in data} | ({param} if isinstance(param, str) else set())
        for hub_name in sorted(named & set(words)):
            message = re.sub(rf"\b{re.escape(hub_name)}\b", words[hub_name], message)
    if isinstance(param, str):
        data["param"] = words.get(param, param)
    data = {words.get(key, key): value for key, value in data.items()}
    data["tool"] = tool
    return CallToolResult.model_validate(error_result(error.code, message, data))


def agora_ok(record: dict[str, Any], text: str) -> CallToolResult:
    return ok(AgoraResult(**record), text)


def delivery_text(delivery: dict[str, Any]) -> str:
    state = delivery.get("state", "unknown")
    reason = delivery.get("reason")
    return f"delivery to {delivery.get('ling', '?')}: {state}" + (f" ({reason})" if reason else "")


ASKED_NEXT = "keep working; collect the answer later with hivemind_poll or hivemind_await"
"""Said with every new ask: the model need not wait for the human."""

NEXT_BY_STATUS = {
    "pending": "nobody has answered yet, the question is kept: keep working and poll "
    "again later with hivemind_poll (or wait with hivemind_await)",
    "expired": "nobody answered in time, which is not a no: decide without the human or ask again",
    "cancelled": "the question was withdrawn, so no answer will come: decide without "
    "the human or ask again",
}
UNSEEN_NEXT = (
    "the human never saw it: ask again (urgent if it matters, with a longer timeout_s) "
    "or decide without the human"
)
NO_ANSWER_NEXT = {
    "decline": "the human declined to answer, which is not a no: decide without the human",
    "cancel": "the human dismissed the question, which is not a no: decide without the human",
}
BLANK_NEXT = "the answer was blank, which is not a no: decide without the human or ask again"


def next_step(record: dict[str, Any]) -> str | None:
    """What an ask's record tells the agent to do next, for every tool that returns
    one; None once the human answered (the answer is the news)."""
    status = record["status"]
    if status == "expired" and unseen(record):
        return UNSEEN_NEXT
    if status != "responded":
        return NEXT_BY_STATUS.get(status)
    action = record["action"]
    if action != "accept":
        return NO_ANSWER_NEXT.get(action, NO_ANSWER_NEXT["cancel"])
    answer = record["answer"]
    if isinstance(answer, str) and answer.strip() == "":
        return BLANK_NEXT
    return None


def ask_state(record: dict[str, Any]) -> AskState:
    never_seen = unseen(record)
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
        unseen=never_seen,
        next_step=next_step(record),
    )


def unseen(record: dict[str, Any]) -> bool:
    """Expired before any editor showed it (whether or not the human has cleared the
    trace since: the agent's news is that the human never saw it)."""
    return record["status"] == "expired" and record.get("shown_at") is None


def pending_ask(record: dict[str, Any]) -> PendingAsk:
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


def describe(state: AskState) -> str:
    if state.status == "pending":
        return f"ask {state.ask_id} is still pending; poll again later"
    if state.status == "responded":
        if state.action != "accept":
            return f"{state.by} chose to {state.action} (ask {state.ask_id})"
        decision = state.decision
        shown = decision if isinstance(decision, str) else json.dumps(decision)
        return f"answer from {state.by}: {shown}"
    if state.status == "expired" and state.unseen:
        return f"ask {state.ask_id} {UNSEEN_TEXT} ({state.expiry_reason})"
    if state.status == "expired":
        return (
            f"ask {state.ask_id} expired ({state.expiry_reason}): shown to the human, "
            "nobody answered, not a no"
        )
    return f"ask {state.ask_id} was cancelled by {state.by}"


def state_result(record: dict[str, Any]) -> CallToolResult:
    state = ask_state(record)
    return ok(state, describe(state))
