"""The hub's table of agent sessions (core/sessions.py): fed by the registry's changes
(pending questions and permission requests, by agent) and by agents' reports
(``agent/session``, ``agent/notify``), watched by editors (``hive/session``), the
activity stream and ``hive-rpc sessions``.

Trio-side state of one hub, like the activity log: rebuilt at start from the pending
prompts, and from the agents' next events; nothing of it is stored (a session is the
hub's reading of live agents, which a restart does not keep).

The process of a session whose id names one (``claude-code-4242`` while pid 4242 is a
``claude``) is watched through a pidfd: when it exits the session is gone at once, a
fact from the kernel, with no poll.  A gone session stays listed for ``GONE_KEEP_S``
(the human sees it ended), then leaves; a session known only by its prompts leaves
when they close.  At most ``MAX_SESSIONS`` are kept: past that, the one changed
longest ago that waits on nothing makes room (gone ones first).

Followers (editors, ``--watch``) each get a set of changed agent ids and an event, so
a burst of changes to one session is sent once, as its latest record, and a slow
follower costs memory bounded by the number of sessions, never a queue.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import trio

from hive_rpc.core.agents import claimed_process
from hive_rpc.core.conventions import DEFAULT_AGENT
from hive_rpc.core.prompt import Kind, Prompt
from hive_rpc.core.sessions import (
    MAX_PROMPT_IDS,
    STATES,
    Session,
    new_session,
    on_event,
    on_prompts,
    order_key,
)
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.host.agent_process import is_running
from hive_rpc.relay.proc import open_pidfd, stat, working_dir

log = logging.getLogger(__name__)

GONE_KEEP_S = 600.0
"""How long a gone session stays listed."""
MAX_SESSIONS = 2000
"""Sessions kept at most (an agent id is a session; the registry bounds prompts)."""

Publish = Callable[[str, Session | None, str], None]
"""Told of each change: (agent id, the session or None when it left, the event)."""


def living_agent_pid(agent_id: str) -> int | None:
    """The pid ``agent_id`` names when it names a living process of its agent
    (core/agents.py ``claimed_process``, the comm checked, no zombie), else None."""
    claim = claimed_process(agent_id)
    if claim is None:
        return None
    agent, pid = claim
    return pid if is_running(pid, agent.process_names) else None


class Follower:
    """One follower's changed agent ids, coalesced."""

    def __init__(self) -> None:
        self.changed: dict[str, None] = {}
        """Agent ids changed since the follower last looked, in order of change."""
        self.wake = trio.Event()

    def mark(self, agent_id: str) -> None:
        self.changed.pop(agent_id, None)
        self.changed[agent_id] = None
        self.wake.set()

    async def next_batch(self) -> list[str]:
        await self.wake.wait()
        self.wake = trio.Event()
        batch, self.changed = list(self.changed), {}
        return batch


class Pending:
    """One agent's pending prompts, each kind in the order asked."""

    def __init__(self) -> None:
        self.permissions: dict[str, None] = {}
        self.questions: dict[str, None] = {}

    def __bool__(self) -> bool:
        return bool(self.permissions or self.questions)

    def add(self, prompt_id: str, permission: bool) -> bool:
        """Keep ``prompt_id``; False if it was kept already."""
        kept = self.permissions if permission else self.questions
        if prompt_id in kept:
            return False
        kept[prompt_id] = None
        return True

    def discard(self, prompt_id: str) -> bool:
        """Forget ``prompt_id``; False if it was not kept."""
        for kept in (self.permissions, self.questions):
            if prompt_id in kept:
                del kept[prompt_id]
                return True
        return False

    def counts(self) -> tuple[int, int]:
        """(questions, permissions)."""
        return len(self.questions), len(self.permissions)

    def first(self, n: int) -> tuple[str, ...]:
        """The first ``n`` ids: permission requests first, each kind oldest first."""
        ids = list(itertools.islice(self.permissions, n))
        ids += itertools.islice(self.questions, n - len(ids))
        return tuple(ids)


class SessionTable:
    """Every agent session the hub knows, and the tasks watching their processes."""

    def __init__(
        self,
        now: Callable[[], float],
        *,
        gone_keep_s: float = GONE_KEEP_S,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self._now = now
        self._gone_keep_s = gone_keep_s
        self._max = max_sessions
        self._sessions: dict[str, Session] = {}
        self._pending: dict[str, Pending] = {}
        """Each agent's pending prompts (kept when its session is not: a full table)."""
        self._followers: set[Follower] = set()
        self._nursery: trio.Nursery | None = None
        self._pruned = trio.Event()
        """Set when a session goes: the pruner's next deadline may be sooner."""
        self.on_change: Publish | None = None
        """Told of every change (the hub logs it on the activity stream)."""

    # --- reading -----------------------------------------------------------------

    def get(self, agent_id: str) -> Session | None:
        return self._sessions.get(agent_id)

    def list(self) -> list[Session]:
        """Every session, waiting ones first (longest waiting first), then working,
        idle and gone ones (most recently changed first)."""
        return sorted(self._sessions.values(), key=order_key)

    def counts(self) -> dict[str, int]:
        """How many sessions are in each state (``hive/status``)."""
        counts = dict.fromkeys(STATES, 0)
        for session in self._sessions.values():
            counts[session.state] += 1
        return counts

    def __len__(self) -> int:
        return len(self._sessions)

    @asynccontextmanager
    async def follow(self) -> AsyncIterator[Follower]:
        """A follower of every change from now on; ``list()`` is its snapshot."""
        follower = Follower()
        self._followers.add(follower)
        try:
            yield follower
        finally:
            self._followers.discard(follower)

    # --- tasks -------------------------------------------------------------------

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Own the process watchers and the pruner of gone sessions until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for session in self._sessions.values():
                if session.pid is not None and not session.gone:
                    nursery.start_soon(self._watch_process, session.agent_id, session.pid)
            task_status.started()
            await self._prune_forever()

    async def _prune_forever(self) -> None:
        """Drop gone sessions ``GONE_KEEP_S`` after they went: sleep until the next
        one is due (a deadline, not a poll), or until another goes."""
        while True:
            now = self._now()
            due = [s.changed_at + self._gone_keep_s for s in self._sessions.values() if s.gone]
            for session in [s for s in self._sessions.values() if s.gone]:
                if session.changed_at + self._gone_keep_s <= now:
                    self._remove(session.agent_id, "pruned")
            later = [d for d in due if d > now]
            with trio.move_on_after(min(later) - now if later else float("inf")):
                await self._pruned.wait()
            self._pruned = trio.Event()

    async def _watch_process(self, agent_id: str, pid: int) -> None:
        """Make the session gone when its process exits (a pidfd becomes readable).
        The start time is checked after the pidfd is open: a recycled pid is not it."""
        found = stat(pid)
        fd = open_pidfd(pid, found.start) if found is not None else None
        try:
            if fd is not None:
                await trio.lowlevel.wait_readable(fd)
        finally:
            if fd is not None:
                os.close(fd)
        self.report(agent_id, "exit")

    # --- writing -----------------------------------------------------------------

    def report(
        self,
        agent_id: str,
        event: str,
        *,
        reason: str | None = None,
        notice_type: str | None = None,
        message: str | None = None,
        project_dir: str | None = None,
        terminal: str | None = None,
        ling: str | None = None,
    ) -> Session | None:
        """An agent's event (core/sessions.py ``on_event``); the session as it is
        now, or None when the table has no room for a new one."""
        session = self._sessions.get(agent_id)
        if session is None or (session.gone and event not in ("exit", "end")):
            if event in ("exit", "end"):
                return session  # nothing to end
            session = self._new(agent_id)
            if session is None:
                return None
        after = on_event(
            session, event, self._now(), reason=reason, notice_type=notice_type, message=message
        )
        after = replace(
            after,
            terminal=terminal or after.terminal,
            ling=ling or after.ling,
            # The kernel's working directory, when there is a process, else the report's.
            project_dir=after.project_dir
            if after.pid is not None
            else project_dir or after.project_dir,
        )
        self._put(after, event)
        if after.gone and not session.gone:
            self._pruned.set()
        return after

    def prompt_changed(self, prompt: Prompt) -> None:
        """A prompt was asked or closed: its agent's pending prompts follow it (kept
        in insertion-ordered dicts, so an agent's thousands of asks cost O(1) each)."""
        agent_id = prompt.agent_id
        if agent_id == DEFAULT_AGENT:
            return  # asked under no name: no session to speak of
        pending = self._pending.get(agent_id)
        if prompt.is_pending:
            if pending is None:
                pending = self._pending[agent_id] = Pending()
            if not pending.add(prompt.id, prompt.kind is Kind.PERMISSION):
                return  # an update of a prompt it knows (typing, shown)
        elif pending is None or not pending.discard(prompt.id):
            return
        if not pending:
            del self._pending[agent_id]
        session = self._sessions.get(agent_id)
        if session is None or session.gone:
            if not prompt.is_pending:
                return
            session = self._new(agent_id)
            if session is None:
                return
        counts = pending.counts() if pending else (0, 0)
        ids = pending.first(MAX_PROMPT_IDS) if pending else ()
        after = on_prompts(session, *counts, ids, self._now())
        if not after.reported and after.prompts == 0:
            self._remove(agent_id, "closed")  # known only by its prompts, now closed
            return
        self._put(after, "ask" if prompt.is_pending else "close")

    def load_pending(self, prompts: Iterable[Prompt]) -> None:
        """The pending prompts at the hub's start: each agent's waiting sessions."""
        for prompt in prompts:
            self.prompt_changed(prompt)

    def _new(self, agent_id: str) -> Session | None:
        pid = living_agent_pid(agent_id)
        if len(self._sessions) >= self._max and not self._make_room(verified=pid is not None):
            log.warning("sessions: %d kept; not tracking %s", self._max, agent_id[:80])
            return None
        now = self._now()
        session = new_session(agent_id, now)
        if pid is not None:
            cwd = working_dir(pid)  # a directory's name may hold escape sequences too
            session = replace(session, pid=pid, project_dir=strip_controls(cwd) if cwd else None)
            if self._nursery is not None:
                self._nursery.start_soon(self._watch_process, agent_id, pid)
        return session

    def _make_room(self, *, verified: bool) -> bool:
        """Drop the session changed longest ago that waits on nothing: gone ones first,
        then those under a name of their own.  A living agent process the hub checked
        (``pid``) makes room only for another: any client may report sessions under
        names it makes up, and those must not push the human's real agents out."""
        idle = [
            s
            for s in self._sessions.values()
            if s.state != "waiting" and (verified or s.gone or s.pid is None)
        ]
        if not idle:
            return False
        victim = min(idle, key=lambda s: (not s.gone, s.pid is not None, s.changed_at))
        self._remove(victim.agent_id, "room")
        return True

    def _put(self, session: Session, event: str) -> None:
        self._sessions[session.agent_id] = session
        self._tell(session.agent_id, session, event)

    def _remove(self, agent_id: str, event: str) -> None:
        if self._sessions.pop(agent_id, None) is not None:
            self._tell(agent_id, None, event)

    def _tell(self, agent_id: str, session: Session | None, event: str) -> None:
        for follower in self._followers:
            follower.mark(agent_id)
        if self.on_change is not None:
            self.on_change(agent_id, session, event)
