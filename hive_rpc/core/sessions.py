"""Agent sessions and their state, as a table: which of the human's agents is working,
which waits on the human (and on what), which finished its turn, which is gone.

A session is one agent id: the identity core/agents.py settles (``claude-code-PID``,
``codex-PID``, ``gemini-PID`` for an agent process; any other name an agent asks
under).  Its state is derived from what the hub sees, never from what a client says
about itself:

* **waiting**: it has pending prompts (questions, permission requests), which the
  registry holds, or its agent said it waits on the human in its own terminal (Claude
  Code's Notification ``permission_prompt`` / ``elicitation_dialog``: its own dialog,
  shown when no hook decided);
* otherwise its **activity**, moved by the agent's events (``ACTIVITY``): the human
  sent a prompt (``prompt``: working), its turn ended (``stop``, ``failure``: idle),
  it started and waits for a first prompt (``start``: idle);
* **gone**: its session ended (``end``) or the hub saw its process exit (``exit``), a
  fact from the kernel (a pidfd).  Gone is final for the record: a new process is a
  new session, a new pid.

Waiting wins over activity: a session that finished its turn but left a question
pending still needs the human.  Events may arrive out of order (Claude Code runs the
``prompt`` hook in the background), and the counts come from the registry, so the
state is recomputed from the whole record each time, never moved step by step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hive_rpc.core.agents import AGENTS, claimed_process
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.terminal_text import one_line, strip_controls

STATES = ("waiting", "working", "idle", "gone")
"""A session's states, in the order a list shows them: what needs the human first."""

ACTIVITY: dict[str, str | None] = {
    "start": "idle",
    "prompt": "working",
    "stop": "idle",
    "failure": "idle",
    "end": None,
    "exit": None,
    "notice": None,
}
"""Each event an agent reports (``agent/session``) and the activity it leaves: None
keeps the activity (``end`` and ``exit`` make the session gone instead; a notice
may say it waits in its terminal, see ``TERMINAL_WAITS``)."""

REPORTED_EVENTS = ("start", "prompt", "stop", "failure", "end")
"""The events a client may report; ``exit`` is the hub's own (the process ended) and
``notice`` comes with ``agent/notify``."""

TERMINAL_WAITS = frozenset({"permission_prompt", "elicitation_dialog"})
"""Notice types saying the agent waits on the human in its own terminal."""
TERMINAL_IDLE = frozenset({"idle_prompt"})
"""Notice types saying the agent waits for a prompt (its turn is over)."""

KEEPS_SESSION = frozenset({"clear"})
"""``end`` reasons that do not end the agent's session: Claude Code's ``/clear`` ends a
conversation and starts another in the same process, which keeps its agent id (its
``start``, source ``clear``, then leaves it idle)."""

MAX_TEXT = 300
"""A session's ``message`` (the last notice, the last failure) is one line of this."""
MAX_PROMPT_IDS = 20
"""Pending prompt ids a session record lists at most (it counts them all): a record
is sent on every change, so it must not grow with an agent's thousands of asks."""
MAX_FIELD = 4096
"""The longest project dir or terminal address a report may carry."""


@dataclass(frozen=True, slots=True)
class Session:
    """One agent session as the hub knows it."""

    agent_id: str
    started_at: float
    changed_at: float
    activity: str = "working"
    """``working`` or ``idle``: what the agent's last event says it does."""
    questions: int = 0
    """How many questions it has pending."""
    permissions: int = 0
    """How many permission requests it has pending."""
    prompt_ids: tuple[str, ...] = ()
    """The first ``MAX_PROMPT_IDS`` of its pending prompts' ids: permission requests
    first, each kind oldest first (what an editor opens when the human picks it)."""
    in_terminal: bool = False
    """It waits on the human in its own terminal (its own dialog)."""
    gone: bool = False
    reported: bool = False
    """An agent event made it (a hook, an MCP session), not only its prompts: a session
    known only by its prompts leaves the list when they close."""
    pid: int | None = None
    """The agent's process, when the hub checked it (core/agents.py ``claimed_process``
    and a living process of that agent): a client's editor may find its terminal by it."""
    project_dir: str | None = None
    terminal: str | None = None
    """Where the agent said it runs: ``tmux:%3@/tmp/tmux-1000/default``,
    ``zellij:SESSION:PANE``; not checked, so only a hint for finding it."""
    ling: str | None = None
    last_event: str | None = None
    message: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> str:
        if self.gone:
            return "gone"
        if self.questions or self.permissions or self.in_terminal:
            return "waiting"
        return self.activity

    @property
    def kind(self) -> str | None:
        """The agent's kind (``claude-code``, ``codex``, ``gemini``) from its id's
        prefix, or None for a name of the agent's own."""
        claim = claimed_process(self.agent_id)
        if claim is not None:
            return claim[0].name
        return next(
            (a.name for a in AGENTS.values() if self.agent_id.startswith(a.name + "-")), None
        )

    @property
    def prompts(self) -> int:
        return self.questions + self.permissions

    def record(self) -> dict[str, Any]:
        """The session record (protocol/methods.py ``SESSION_RECORD``)."""
        kind = self.kind
        return {
            "agent_id": self.agent_id,
            "agent": kind,
            "display": AGENTS[kind].display if kind else None,
            "state": self.state,
            "activity": self.activity,
            "questions": self.questions,
            "permissions": self.permissions,
            "prompt_ids": list(self.prompt_ids),
            "in_terminal": self.in_terminal,
            "pid": self.pid,
            "project_dir": self.project_dir,
            "terminal": self.terminal,
            "ling": self.ling,
            "last_event": self.last_event,
            "message": self.message,
            "started_at": self.started_at,
            "changed_at": self.changed_at,
        }


def new_session(agent_id: str, now: float) -> Session:
    return Session(agent_id, started_at=now, changed_at=now)


def on_event(
    session: Session,
    event: str,
    now: float,
    *,
    reason: str | None = None,
    notice_type: str | None = None,
    message: str | None = None,
) -> Session:
    """The session after the agent's ``event`` (``ACTIVITY``'s keys).  A gone session
    takes no event: its agent id may come back only as a new session."""
    if event not in ACTIVITY:
        raise InvalidParams(
            f"event must be one of {', '.join(REPORTED_EVENTS)}; got {event[:40]!r}",
            param="event",
        )
    if session.gone:
        return session
    changes: dict[str, Any] = {"changed_at": now, "last_event": event, "reported": True}
    activity = ACTIVITY[event]
    if event == "start" and reason == "compact":
        activity = None  # a compaction mid-turn: the turn goes on
    if activity is not None:
        changes["activity"] = activity
    if event in ("prompt", "stop", "failure", "start"):
        changes["in_terminal"] = False  # the human moved it on: no dialog is open
    if event == "notice":
        if notice_type in TERMINAL_WAITS:
            changes["in_terminal"] = True
        elif notice_type in TERMINAL_IDLE:
            changes["activity"] = "idle"
    if event in ("end", "exit") and reason not in KEEPS_SESSION:
        changes["gone"] = True
        changes["in_terminal"] = False
    if message is not None and event in ("notice", "failure"):
        changes["message"] = one_line(strip_controls(message))[:MAX_TEXT] or None
    return replace(session, **changes)


def on_prompts(
    session: Session, questions: int, permissions: int, prompt_ids: tuple[str, ...], now: float
) -> Session:
    """The session with its pending prompts as the registry holds them (counts, and the
    first ids).  A prompt closed while the agent waited in its terminal does not change
    that wait; one asked means the agent moved on from any dialog of its own (it asks
    through the hub)."""
    if session.gone:
        return session
    asked = questions + permissions > session.prompts
    return replace(
        session,
        questions=questions,
        permissions=permissions,
        prompt_ids=prompt_ids,
        in_terminal=session.in_terminal and not asked,
        changed_at=now,
    )


def check_text(value: object, name: str, limit: int = MAX_FIELD) -> str | None:
    """A reported string field: None, or a string within ``limit`` characters, control
    characters stripped (an agent's text reaches the human's screen)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"{name} must be a string", param=name)
    if len(value) > limit:
        raise InvalidParams(f"{name} is {len(value)} characters; at most {limit}", param=name)
    return strip_controls(value) or None


def order_key(session: Session) -> tuple[int, float]:
    """How a list orders sessions: by state (``STATES``), then the longest waiting or
    the most recently changed first within it."""
    rank = STATES.index(session.state)
    return (rank, session.changed_at if rank == 0 else -session.changed_at)
