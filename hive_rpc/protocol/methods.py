"""The hub's protocol as data: every method, notification, record shape and error code.

One table, which the hub and its clients follow (lsprotocol's model for LSP): a
method's row holds its name, its parameters with their JSON types, the words
``hive-rpc methods`` and protocol.md give it, and its flags (which faces offer it,
under which EPC name and MCP tools, whether a face may send it again after a
reconnect, which parameter says how long it waits on purpose); the notifications
and requests the hub sends, with their params; the prompt record's fields; the error
codes, each with the rule it names (``data.kind``) and its HTTP status.

Plain data, its records ``protocol/frozen.py``'s (no ``dataclasses``, no named tuples:
about 0.7 ms a class), importing nothing else: the one-shot CLI client
(sync_client.py, ``LONG_POLLS``) and ``hive-rpc methods`` read it without loading trio,
the registry or a handler.  The handlers are attached by name in the service
(service/table.py, ``@handles``); the parameter check is ``service.check_params``.
The copies other languages keep (vscode-ext/src/protocol.ts, elisp/*.el) are held
to this module by tests/service/test_protocol_copies.py, and core/errors.py's classes,
protocol/jsonrpc.py's codes and the dashboard's statuses by
tests/service/test_protocol_table.py.
"""

from __future__ import annotations

from typing import Literal

from hive_rpc.protocol.frozen import Frozen, init_field

JsonType = Literal["string", "number", "boolean", "object", "array", "any"]
Scope = Literal["hub", "connection"]
Face = Literal["socket", "lsp", "epc", "mcp"]

SOCKET_ONLY: tuple[Face, ...] = ("socket",)
LSP_NAMESPACE = "hive/"
"""The names ``hive-rpc lsp`` forwards to the hub (faces/lsp_server.py takes it from here)."""


class Param(Frozen):
    """One parameter of a method (or field of a record): its JSON type, and whether it
    must be there.  In a request, null is the same as absent; in a record or a
    notification, ``nullable`` says whether the value may be null."""

    __slots__ = __match_args__ = ("type", "required", "nullable")
    type: JsonType
    required: bool
    nullable: bool

    def __init__(self, type: JsonType, required: bool = False, nullable: bool = False) -> None:
        init_field(self, "type", type)
        init_field(self, "required", required)
        init_field(self, "nullable", nullable)


STR, NUM, BOOL = Param("string"), Param("number"), Param("boolean")
REQ_STR, REQ_NUM = Param("string", True), Param("number", True)


class Method(Frozen):
    """One row of the method table: a request (or notification) a client sends the hub."""

    __slots__ = __match_args__ = (
        "name",
        "params",
        "doc",
        "notification_ok",
        "retryable",
        "long_poll",
        "epc",
        "scope",
        "mcp",
        "connection_faces",
    )
    name: str
    params: dict[str, Param]
    doc: str
    notification_ok: bool
    """May also be sent as a notification (``hive/typing``)."""
    retryable: bool
    """Safe to send again on a new connection after the hub went away (it changes
    nothing): ``backends.RETRYABLE``."""
    long_poll: str | None
    """The parameter saying how long it waits on purpose (``timeout_s``, ``wait_s``), if
    it is a long poll: a client's deadline for the call adds that parameter's value
    (``sync_client.LONG_POLLS``)."""
    epc: str | None
    """Its name over EPC (``hive-rpc epc``), if that face offers it."""
    scope: Scope
    """``connection``: about the connection it arrives on (a subscription, a delivery
    offer), so each streaming transport runs it itself; ``HubService.call`` refuses it."""
    mcp: tuple[str, ...]
    """The MCP tools that offer it (faces/mcp/)."""
    connection_faces: tuple[Face, ...]
    """For a connection-scoped method: the faces that implement it themselves."""

    def __init__(
        self,
        name: str,
        *,
        params: dict[str, Param],
        doc: str,
        notification_ok: bool = False,
        retryable: bool = False,
        long_poll: str | None = None,
        epc: str | None = None,
        scope: Scope = "hub",
        mcp: tuple[str, ...] = (),
        connection_faces: tuple[Face, ...] = (),
    ) -> None:
        init_field(self, "name", name)
        init_field(self, "params", params)
        init_field(self, "doc", doc)
        init_field(self, "notification_ok", notification_ok)
        init_field(self, "retryable", retryable)
        if long_poll is not None and getattr(params.get(long_poll), "type", None) != "number":
            raise ValueError(f"{name}: long_poll {long_poll!r} is not one of its number params")
        init_field(self, "long_poll", long_poll)
        init_field(self, "epc", epc)
        init_field(self, "scope", scope)
        init_field(self, "mcp", mcp)
        init_field(self, "connection_faces", connection_faces)

    @property
    def faces(self) -> tuple[Face, ...]:
        """The faces that offer this method.  A hub-scoped method reaches every face
        that forwards it: the editor socket all of them, ``hive-rpc lsp`` the
        ``hive/`` namespace, EPC the rows with an EPC name, MCP the rows its tools
        name.  A connection-scoped one only the faces that implement it."""
        if self.scope == "connection":
            return self.connection_faces
        faces: list[Face] = ["socket"]
        if self.name.startswith(LSP_NAMESPACE):
            faces.append("lsp")
        if self.epc is not None:
            faces.append("epc")
        if self.mcp:
            faces.append("mcp")
        return tuple(faces)


_ROWS: tuple[Method, ...] = (
    # hive/*, prompts: service/prompts.py
    Method(
        "hive/ask",
        params={
            "question": REQ_STR,
            "choices": Param("array"),
            "schema": Param("object"),
            "urgent": BOOL,
            "timeout_s": NUM,
            "agent_id": STR,
            "task_id": STR,
            "in_reply_to": STR,
            "kind": STR,
            "detail": STR,
            "confirm": Param("array"),
            "decisions": Param("object"),
            "waits": BOOL,
            "idempotency_key": STR,
        },
        doc="Ask a question; returns the pending prompt record at once.  confirm: "
        '[{"choice", "text"}], choices every face asks the human to confirm, showing the '
        'text, before sending them.  decisions: {choice: "allow" | "deny"}, what '
        "each choice of a permission prompt decides, for the audit trail.  waits: the "
        "asking process waits on this call for the answer, and the question is withdrawn "
        "when that process ends.  idempotency_key: the asker's key for this question "
        "(at most 200 characters); a retry with the same key and agent returns the "
        "prompt the first try made, pending or closed, on any hub sharing the store.",
        epc="ask",
        mcp=("hivemind_ask_async", "hivemind_ask", "request_human_input"),
    ),
    Method(
        "hive/poll",
        params={"id": REQ_STR, "agent_id": STR},
        doc="The prompt record as it is now.",
        retryable=True,
        epc="poll",
        mcp=("hivemind_poll",),
    ),
    Method(
        "hive/await",
        params={"id": REQ_STR, "timeout_s": REQ_NUM, "agent_id": STR},
        doc="Long-poll: the record once closed, or as it is when timeout_s runs out.",
        retryable=True,
        long_poll="timeout_s",
        epc="await",
        mcp=("hivemind_await",),
    ),
    Method(
        "hive/respond",
        params={
            "id": REQ_STR,
            "answer": Param("any"),
            "by": STR,
            "action": STR,
            "agent_id": STR,
        },
        doc="Answer a prompt (first answer wins).",
        epc="respond",
        mcp=("hivemind_respond",),
    ),
    Method(
        "hive/cancel",
        params={"id": REQ_STR, "by": STR, "agent_id": STR},
        doc="Withdraw a pending prompt.",
        epc="cancel",
        mcp=("hivemind_cancel",),
    ),
    Method(
        "hive/list",
        params={"agent_id": STR, "limit": NUM, "cursor": STR, "expired_unseen": BOOL},
        doc="Pending prompt records, oldest first; with limit or cursor, one page "
        '{"prompts": [...], "next_cursor": ...}.  expired_unseen: instead, the prompts '
        "that expired before any editor showed them and whose trace the human has not "
        "cleared (hive/clearUnseen), oldest first.",
        retryable=True,
        epc="list",
        mcp=("hivemind_list_pending",),
    ),
    Method(
        "hive/lookup",
        params={"prefix": REQ_STR, "agent_id": STR},
        doc="Prompt records whose id starts with prefix (4 characters or more), any status, "
        "oldest first, at most 20: how a client takes an id prefix.",
    ),
    Method(
        "hive/awaitAsk",
        params={"timeout_s": REQ_NUM, "exclude": Param("array")},
        doc="Coordinators: wait for the oldest pending prompt not in exclude (null on timeout).",
        retryable=True,
        long_poll="timeout_s",
        mcp=("hivemind_await_ask",),
    ),
    Method(
        "hive/subscribe",
        params={"sessions": BOOL, "prompts": BOOL},
        doc="Receive hive/prompt, hive/update and hive/dismiss notifications; with sessions, "
        "also hive/session and hive/sessionRemoved for every agent session (each one first); "
        "with prompts false, no prompt notifications.",
        scope="connection",
        connection_faces=("socket", "lsp"),
    ),
    Method(
        "hive/unsubscribe",
        params={},
        doc="Stop receiving notifications.",
        scope="connection",
        connection_faces=("socket", "lsp"),
    ),
    Method(
        "hive/offerDelivery",
        params={},
        doc="Make this connection a delivery peer (it types into Emacs buffers: hive/deliver, "
        "hive/bufferState) until it closes.",
        scope="connection",
        connection_faces=SOCKET_ONLY,
    ),
    Method(
        "hive/bufferChanged",
        params={"buffer": REQ_STR},
        doc="A delivery peer's buffer that the hub watches (hive/watchBuffer) changed, or "
        "is being killed: the relay checks it again at once for the turn it holds there.",
        notification_ok=True,
        scope="connection",
        connection_faces=SOCKET_ONLY,
    ),
    Method(
        "hive/proveApprover",
        params={"token": REQ_STR},
        doc="Prove this connection is an approver (it may answer permission prompts and "
        "change answer rules) with the contents of the hub's approver token file "
        "(hive/status: approver_token_file).",
        scope="connection",
        connection_faces=SOCKET_ONLY,
    ),
    Method(
        "hive/openMcp",
        params={
            "agent": STR,
            "tools": Param("array"),
            "human_input_timeout_s": NUM,
            "progress_every_s": NUM,
            "claude_session": STR,
            "project_dir": STR,
            "tool_timeout_ms": STR,
            "suffix": STR,
        },
        doc="Turn this connection into one MCP session served by the hub (hive-rpc mcp, a "
        "relay, sends it first): after the reply it carries MCP's JSON-RPC messages, one per "
        "line, both ways. The params are the session's options: agent, tool groups, "
        "request_human_input's countdown, the progress interval, and what the agent's "
        "client set (Claude Code's session id, project dir, MCP_TOOL_TIMEOUT).",
        scope="connection",
        connection_faces=SOCKET_ONLY,
    ),
    Method(
        "hive/keep",
        params={"id": REQ_STR, "agent_id": STR},
        doc="The asker stops waiting on its call (asked with waits) but will collect the "
        "answer later: the question is kept when the asking process ends.",
    ),
    Method(
        "hive/typing",
        params={"id": REQ_STR},
        doc="The human started typing: stop the prompt's countdown.",
        notification_ok=True,
    ),
    Method(
        "hive/defer",
        params={"id": REQ_STR},
        doc="The human who had typed left the prompt unanswered (Escape, C-g, a closed form): "
        "its countdown starts again, the whole timeout_s; nothing changes if nobody typed.",
        notification_ok=True,
    ),
    Method(
        "hive/shown",
        params={"id": REQ_STR},
        doc="An editor put the question before the human (opened it): an expiry after this "
        "is 'shown, no answer', not unseen.  Only the human's credential says so "
        "(hive/proveApprover).",
        notification_ok=True,
        epc="shown",
    ),
    Method(
        "hive/clearUnseen",
        params={"id": STR, "all": BOOL},
        doc="The human saw that a question (id) or every question (all: true) expired "
        "unseen: the trace comes down on every screen (hive/unseenCleared).  Only the "
        "human's credential.",
        epc="clear-unseen",
    ),
    Method("hive/status", params={}, doc="The hub's paths, pid and counts.", retryable=True),
    # agora/*, ling/*, event/post, agent/answer: service/agora.py
    Method(
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
    ),
    Method(
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
    ),
    Method(
        "agora/status",
        params={"dialogue_id": REQ_STR},
        doc="A dialogue with its turns and events.",
        mcp=("agora_status",),
    ),
    Method(
        "agora/list",
        params={"status": STR},
        doc="Dialogues (without turns), oldest first.",
        mcp=("agora_list",),
    ),
    Method(
        "agora/abort",
        params={"dialogue_id": REQ_STR, "reason": STR},
        doc="End a dialogue by hand.",
        mcp=("agora_abort",),
    ),
    Method(
        "agora/news",
        params={"since": NUM, "coordinators": Param("array"), "wait_s": NUM},
        doc="What dialogues' coordinators should hear (consensus, timeout, absent or "
        "unavailable participants, paused dialogues, strangers' turns, aborts; each with "
        "its message in words) after since, waiting up to wait_s (at most 60) for some: "
        "{events, last}; ask again with since=last. coordinators also picks the events "
        "naming one of them as the sender of a turn that could not be delivered.",
        long_poll="wait_s",
        retryable=True,
    ),
    Method(
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
    ),
    Method(
        "ling/list",
        params={"check": BOOL},
        doc="Registered lings; check: also test each terminal.",
        mcp=("ling_list",),
    ),
    Method("ling/remove", params={"name": REQ_STR}, doc="Forget a ling.", mcp=("ling_remove",)),
    Method(
        "ling/spawn",
        params={
            "name": STR,
            "command": Param("array"),
            "worktree": STR,
            "label": STR,
            "children": Param("array"),
            "agent_id": STR,
        },
        doc="Ask the human to start a child agent (name, command, worktree, label) or "
        "several (children: a list of those) in new tmux windows, as children of the "
        "caller's ling: the ling whose approved agent runs the calling process. Returns "
        "at once, each child pending with its prompt_id; approved, its pane registers "
        "itself as PARENT.NAME and runs the command, and the parent's terminal is told.",
        mcp=("spawn_subtree", "spawn_workers"),
    ),
    Method(
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
        doc="A child's event (child-complete, child-question, ...), typed into its "
        "parent's terminal.",
        mcp=("report_to_parent",),
    ),
    Method(
        "agent/answer",
        params={"agent": REQ_STR, "message": REQ_STR, "from": STR},
        doc="A parent's answer to a child's question, typed into the child's terminal.",
        mcp=("answer_question",),
    ),
    # service/activity.py
    Method(
        "hive/reportResult",
        params={
            "task_id": REQ_STR,
            "outcome": REQ_STR,
            "result": Param("any"),
            "error": STR,
            "agent_id": STR,
            "in_reply_to": STR,
        },
        doc="An agent loop's outcome (success, failed, cancelled) under its task id.",
        mcp=("task_report",),
    ),
    Method(
        "hive/activity",
        params={"task_id": STR, "since": NUM, "limit": NUM},
        doc="Recent activity entries (or those of one task id), oldest first.",
    ),
    # service/audit.py
    Method(
        "audit/list",
        params={"since": NUM, "limit": NUM},
        doc="Permission decisions (by a human or a rule) at or after since (Unix seconds), "
        "the newest limit (default 100, at most 5000), oldest first.",
        retryable=True,
    ),
    # service/rules.py
    Method(
        "rule/add",
        params={
            "pattern": REQ_STR,
            "decision": REQ_STR,
            "scope": REQ_STR,
            "where": STR,
            "by": STR,
            "from_prompt": STR,
        },
        doc="Add an answer rule for permission requests, in Claude Code's syntax "
        "(Bash, Bash(npm test:*), mcp__server__tool): decision allow or deny, scope session "
        "(where: the session id), project (where: the directory) or global. from_prompt: "
        "the permission prompt whose lasting answer made it (the answer must agree).",
    ),
    Method("rule/list", params={}, doc="Every answer rule, oldest first.", retryable=True),
    Method("rule/remove", params={"id": REQ_STR}, doc="Remove the answer rule with this id."),
    Method(
        "rule/check",
        params={
            "tool_name": REQ_STR,
            "tool_input": Param("object"),
            "session_id": STR,
            "project": STR,
        },
        doc="The rule that answers this tool use ({decision, rule}), or null: ask the human. "
        "Deny wins over allow.  A rule found is a decision: recorded in the audit trail "
        "(audit/list) before it is returned.",
    ),
    # service/notices.py
    Method(
        "agent/notify",
        params={
            "agent_id": REQ_STR,
            "message": REQ_STR,
            "title": STR,
            "type": STR,
            "urgent": BOOL,
            "cwd": STR,
        },
        doc="An agent's notice for the human (e.g. Claude Code's Notification): an activity "
        "entry, and the state of the agent's session (a dialog in its own terminal waits).",
    ),
    # service/sessions.py
    Method(
        "agent/session",
        params={
            "agent_id": REQ_STR,
            "event": REQ_STR,
            "reason": STR,
            "message": STR,
            "project_dir": STR,
            "terminal": STR,
            "ling": STR,
        },
        doc="An agent's session event (its hook): start, prompt (the human sent one), stop "
        "(its turn ended), failure (ended by an error), end.  Returns the session record.",
    ),
    Method(
        "hive/sessions",
        params={"agent_id": STR},
        doc="Every agent session with its state (waiting, working, idle, gone), waiting "
        "ones first; with agent_id, that one session (null if unknown).",
        retryable=True,
        epc="sessions",
    ),
)

METHODS: dict[str, Method] = {row.name: row for row in _ROWS}
"""Every method by name, in the order above (``hive-rpc methods`` prints them so)."""


# --- what the hub sends ---------------------------------------------------------------


def _field(type: JsonType, nullable: bool = False) -> Param:
    """A field every record has (null only when ``nullable``)."""
    return Param(type, True, nullable)


PROMPT_RECORD: dict[str, Param] = {
    "id": _field("string"),
    "agent_id": _field("string"),
    "question": _field("string"),
    "created_at": _field("number"),
    "deadline_at": _field("number"),
    "max_deadline_at": _field("number"),
    "choices": _field("array", True),
    "schema": _field("object", True),
    "urgent": _field("boolean"),
    "timeout_s": _field("number", True),
    "task_id": _field("string", True),
    "in_reply_to": _field("string", True),
    "kind": _field("string"),
    "detail": _field("string", True),
    "confirm": _field("array", True),
    "decisions": _field("object", True),
    "status": _field("string"),
    "typing_at": _field("number", True),
    "answered_at": _field("number", True),
    "expired_at": _field("number", True),
    "cancelled_at": _field("number", True),
    "expiry_reason": _field("string", True),
    "answer": _field("any", True),
    "by": _field("string", True),
    "action": _field("string", True),
    "origin": _field("string", True),
    "shown_at": _field("number", True),
    "cleared_at": _field("number", True),
    "expired": _field("boolean"),
    "unseen": _field("boolean"),
}
"""The prompt record (``Prompt.to_record()``, docs/protocol.md "The prompt record"), in
its order; times are float Unix seconds.  What ``hive/ask``, ``hive/poll`` and the
other prompt methods return, and ``hive/prompt`` and ``hive/update`` carry.
core/prompt.py's ``Prompt`` is what makes it; tests/service/test_protocol_table.py holds the two
equal."""

RECORD_VALUES: dict[str, tuple[str, ...]] = {
    "status": ("pending", "responded", "expired", "cancelled"),
    "kind": ("question", "permission"),
    "action": ("accept", "decline", "cancel"),
    "expiry_reason": ("timeout", "max_lifetime"),
}
"""The values a prompt record's string enums take (core/prompt.py's enums)."""

SESSION_RECORD: dict[str, Param] = {
    "agent_id": _field("string"),
    "agent": _field("string", True),
    "display": _field("string", True),
    "state": _field("string"),
    "activity": _field("string"),
    "questions": _field("number"),
    "permissions": _field("number"),
    "prompt_ids": _field("array"),
    "in_terminal": _field("boolean"),
    "pid": _field("number", True),
    "project_dir": _field("string", True),
    "terminal": _field("string", True),
    "ling": _field("string", True),
    "last_event": _field("string", True),
    "message": _field("string", True),
    "started_at": _field("number"),
    "changed_at": _field("number"),
}
"""An agent session (core/sessions.py ``Session.record``, docs/protocol.md "Sessions"):
what ``hive/sessions`` lists and ``hive/session`` carries.  ``state`` is one of
``SESSION_STATES``; ``agent`` the agent's kind (``claude-code``, ``codex``, ``gemini``)
or null; ``prompt_ids`` its first 20 pending prompts, permission requests first; ``pid`` the
agent's process when the hub checked it."""

SESSION_STATES = ("waiting", "working", "idle", "gone")
"""A session's states, in the order a list shows them (core/sessions.py ``STATES``)."""

DISMISSAL: dict[str, Param] = {
    "id": _field("string"),
    "status": _field("string"),
    "by": _field("string", True),
    "action": _field("string", True),
    "unseen": _field("boolean"),
}
"""``hive/dismiss``'s params (service/hub.py ``dismissal``)."""


class HubMessage(Frozen):
    """A message the hub (or a face in front of it) sends a client unasked."""

    __slots__ = __match_args__ = ("name", "params", "doc", "sender")
    name: str
    params: dict[str, Param]
    doc: str
    sender: Literal["hub", "lsp"]
    """``lsp``: sent by ``hive-rpc lsp`` itself, about its link to the hub."""

    def __init__(
        self, name: str, params: dict[str, Param], doc: str, sender: Literal["hub", "lsp"] = "hub"
    ) -> None:
        init_field(self, "name", name)
        init_field(self, "params", params)
        init_field(self, "doc", doc)
        init_field(self, "sender", sender)


NOTIFICATIONS: dict[str, HubMessage] = {
    n.name: n
    for n in (
        HubMessage(
            "hive/prompt",
            PROMPT_RECORD,
            "A prompt to show: each pending one when a subscription starts, then each new one.",
        ),
        HubMessage(
            "hive/update",
            PROMPT_RECORD,
            "A prompt still pending has a new record (typing stopped its countdown, or a "
            "defer restarted it): replace it, do not show it as new.",
        ),
        HubMessage(
            "hive/dismiss",
            DISMISSAL,
            "A prompt left pending (answered, expired or cancelled): take it off the screen.",
        ),
        HubMessage(
            "hive/unseenCleared",
            {"id": _field("string")},
            "The human cleared the trace of a question that expired unseen.",
        ),
        HubMessage(
            "hive/session",
            SESSION_RECORD,
            "An agent session, new or changed (hive/subscribe with sessions): replace the "
            "one with its agent_id.",
        ),
        HubMessage(
            "hive/sessionRemoved",
            {"agent_id": _field("string")},
            "An agent session left the list (gone a while, or known only by prompts that "
            "closed): take it off.",
        ),
        HubMessage(
            "hive/health",
            {"degraded": _field("string", True)},
            "The hub's own store writes fail (the reason), or work again (null).",
        ),
        HubMessage(
            "hive/agora",
            {
                "event": _field("string"),
                "at": _field("number"),
                "level": _field("string"),
                "message": Param("string"),
                "buffers": _field("object"),
            },
            "What became of an Agora message or dialogue (docs/agora.md's events), with "
            "the Emacs buffers it concerns; more fields by event.",
        ),
        HubMessage(
            "hive/connection",
            {"connected": _field("boolean"), "message": _field("string")},
            "hive-rpc lsp lost the hub (and why), or has it back.",
            sender="lsp",
        ),
    )
}
"""What a subscribed connection is sent (service/hub.py ``notifications``, the editor
socket's ``hive/health`` and ``hive/agora``, ``hive-rpc lsp``'s ``hive/connection``)."""

HUB_REQUESTS: dict[str, HubMessage] = {
    n.name: n
    for n in (
        HubMessage(
            "hive/bufferState",
            {"buffer": REQ_STR},
            "To a delivery peer: is the buffer there, is its process running, what does "
            "it show (exists, alive, mode, tail, pid, draft).",
        ),
        HubMessage(
            "hive/deliver",
            {"buffer": REQ_STR, "text": REQ_STR},
            "To a delivery peer: type the text into the buffer and press Enter.",
        ),
        HubMessage(
            "hive/watchBuffer",
            {"buffer": REQ_STR},
            "To a delivery peer: send hive/bufferChanged when the buffer changes (a burst "
            "of changes, once), and when it is killed, until hive/unwatchBuffer; while the "
            "relay holds a turn for the buffer.  Each watch is undone by one unwatch.",
        ),
        HubMessage(
            "hive/unwatchBuffer",
            {"buffer": REQ_STR},
            "To a delivery peer: undo one hive/watchBuffer of the buffer.",
        ),
    )
}
"""Requests the hub sends a delivery peer (``hive/offerDelivery``): relay/emacs.py."""


# --- errors ------------------------------------------------------------------------------


ErrorSender = Literal["hub", "codec", "face", "editor"]


class ErrorCode(Frozen):
    """One error code: JSON-RPC's ``error.code``, the rule it names in ``data.kind``,
    the HTTP status the dashboard's API answers it with, and who sends it."""

    __slots__ = __match_args__ = ("code", "kind", "http", "doc", "sender")
    code: int
    kind: str | None
    """``data.kind``; None for an error about the message itself (framing, JSON)."""
    http: int
    doc: str
    sender: ErrorSender
    """``hub``: a ``HiveError`` of core/errors.py; ``codec``: protocol/jsonrpc.py, about
    a message it could not take; ``face``: a face in front of the hub (it lost it);
    ``editor``: an editor refusing the hub's request."""

    def __init__(
        self, code: int, kind: str | None, http: int, doc: str, sender: ErrorSender = "hub"
    ) -> None:
        init_field(self, "code", code)
        init_field(self, "kind", kind)
        init_field(self, "http", http)
        init_field(self, "doc", doc)
        init_field(self, "sender", sender)


ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode(-32700, None, 400, "parse error: not JSON, or broken framing", "codec"),
    ErrorCode(-32600, None, 400, "invalid request: a batch, not a JSON-RPC request", "codec"),
    ErrorCode(-32601, "method_not_found", 404, "unknown method; the message lists them"),
    ErrorCode(-32602, "invalid_params", 400, "unknown, missing or mistyped parameter"),
    ErrorCode(-32603, "internal", 500, "a bug in the hub, for that request only"),
    ErrorCode(-32010, None, 413, "message over 1 MiB, discarded", "codec"),
    ErrorCode(-32011, None, 503, "too many requests in flight, or no connection to spare"),
    ErrorCode(-32012, "limit_reached", 503, "a limit on what the hub holds was reached"),
    ErrorCode(-32013, "not_an_approver", 403, "only an approver (the human) may do this"),
    ErrorCode(-32001, "not_found", 404, "no prompt (or dialogue) with this id"),
    ErrorCode(-32002, "already_answered", 409, "answered before: the first answer wins"),
    ErrorCode(-32003, "closed", 409, "the prompt expired or was cancelled"),
    ErrorCode(-32003, "dialogue_closed", 409, "the dialogue is over: it takes no turn"),
    ErrorCode(-32004, "invalid_answer", 400, "the answer is outside choices or schema"),
    ErrorCode(-32005, "not_a_participant", 400, "not a participant of the dialogue"),
    ErrorCode(-32006, "ling_not_found", 404, "no ling registered under this name"),
    ErrorCode(-32007, "store_unavailable", 503, "the store could not save (or be reached)"),
    ErrorCode(-32008, "unreadable", 500, "the prompt is stored but cannot be read"),
    ErrorCode(
        -32014,
        "hub_unreachable",
        503,
        "the face could not reach the hub for this request; it reconnects",
        "face",
    ),
    ErrorCode(-32020, None, 400, "an editor refuses the hub's request", "editor"),
    ErrorCode(-32000, "hive_error", 500, "base of the hub's errors, not sent alone"),
)
"""Every code on the wire, as docs/protocol.md's Errors table lists them."""

CODES: dict[str, int] = {e.kind: e.code for e in ERRORS if e.kind is not None}
"""An error's code by its ``data.kind``."""
