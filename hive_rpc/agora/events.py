"""The Agora's events: every one is logged and kept (``agora/events``, the activity
stream); a dialogue's coordinator is told its dialogue's ending and trouble
(``news``); subscribed editors are sent what a ling's buffer should show
(``follow``, ``hive/agora``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any

import trio

from hive_rpc.agora.state import AgoraState, log
from hive_rpc.core import dialogue as dlg

WARN_EVENTS = frozenset(
    {
        "agora/not-a-participant",
        "agora/ling-unavailable",
        "agora/participant-absent",
        "agora/max-turns-reached",
        "agora/paused",
    }
)
"""Events the coordinator should act on: logged, and on the activity stream, at
``level: warn`` (every other event is ``info``)."""
NEWS_EVENTS = WARN_EVENTS | {"agora/consensus", "agora/aborted"}
"""What a dialogue's coordinator is told (``news``): how it ended, and trouble; an
event that names the ``sender`` of a turn (its delivery failed) is that sender's
news too."""
EDITOR_EVENTS = frozenset(
    {
        "relay/held",
        "relay/delivered",
        "relay/failed",
        "agora/ling-unavailable",
        "agora/participant-absent",
        "agora/participant-rejoined",
        "agora/paused",
        "agora/consensus",
        "agora/max-turns-reached",
        "agora/aborted",
    }
)
"""What subscribed editors are sent (``follow``, ``hive/agora``): what a ling's
buffer should show (held, and why; typed; failed) and what becomes of a dialogue."""
MAX_NEWS_WAIT_S = 60.0


class AgoraEvents(AgoraState):
    """The Agora's events (see the module doc)."""

    def _emit(self, event: str, **facts: Any) -> dict[str, Any]:
        """Record an event.  A dialogue's events name its coordinator, so whoever
        follows the activity stream for its own dialogues can pick them out."""
        level = "warn" if event in WARN_EVENTS else "info"
        d = self._dialogues.get(facts.get("dialogue_id") or "")
        if d is not None and d.coordinator is not None:
            facts.setdefault("coordinator", d.coordinator)
        entry = {"event": event, "at": self._now(), "level": level, **facts}
        self.events.append(entry)
        told = (facts.get("coordinator"), facts.get("sender"))
        if event in NEWS_EVENTS and told != (None, None):
            self._news_seq += 1
            self._news.append({**entry, "seq": self._news_seq})
            self._news_came.set()
            self._news_came = trio.Event()
        if event in EDITOR_EVENTS:
            self._told_seq += 1
            self._told.append((self._told_seq, self._for_editors(entry, d)))
            self._told_came.set()
            self._told_came = trio.Event()
        log.log(logging.WARNING if level == "warn" else logging.INFO, "%s %s", event, facts)
        if self.on_event is not None:
            self.on_event(entry, d)
        return entry

    def _for_editors(self, entry: dict[str, Any], d: dlg.Dialogue | None) -> dict[str, Any]:
        """``hive/agora``'s params: the event, with the Emacs buffer of each ling it
        concerns (``buffers``; ``buffer``: the one of its ``ling``), and, for a
        dialogue's event, the dialogue's ``topic``, ``status``, ``participants`` and
        ``absent``."""
        out = dict(entry)
        names = [str(entry["ling"])] if entry.get("ling") else []
        if d is not None:
            names += [p for p in d.participants if p not in names]
            out |= {"topic": d.topic, "status": d.status.value,
                    "participants": list(d.participants), "absent": list(d.absent)}  # fmt: skip
        buffers = {}
        for name in names:
            ling = self._lings.get(name)
            if ling is not None and ling.kind == "emacs-buffer":
                buffers[name] = ling.address
        out["buffers"] = buffers
        if entry.get("ling"):
            out["buffer"] = buffers.get(str(entry["ling"]))
        return out

    async def follow(self) -> AsyncGenerator[dict[str, Any]]:
        """What subscribed editors are sent (``EDITOR_EVENTS``, see ``_for_editors``),
        from now on, as it happens.  One that fell ``EVENT_LOG`` behind misses the
        oldest (each event says all it is about, so nothing else goes wrong)."""
        seen = self._told_seq
        while True:
            came = self._told_came
            fresh = [params for seq, params in self._told if seq > seen]
            if not fresh:
                await came.wait()
                continue
            seen = self._told_seq
            for params in fresh:
                yield params

    async def news(
        self, since: int, *, coordinators: list[str] | None = None, wait_s: float = 0.0
    ) -> dict[str, Any]:
        """What coordinators should hear (``NEWS_EVENTS``) after ``since``, waiting up to
        ``wait_s`` for some: ``{"events": [...], "last": N}``, each event with its
        ``seq``; ask again with ``since=last``.  A ``since`` this hub never reached
        (it restarted) starts again from the oldest kept.  ``coordinators`` picks the
        events of those coordinators' dialogues, and those naming one of them as the
        ``sender`` of a turn that could not be delivered."""
        if since > self._news_seq:
            since = 0
        wanted = None if coordinators is None else set(coordinators)
        with trio.move_on_after(min(max(wait_s, 0.0), MAX_NEWS_WAIT_S)):
            while True:
                found = [
                    e
                    for e in self._news
                    if e["seq"] > since
                    and (
                        wanted is None
                        or e.get("coordinator") in wanted
                        or e.get("sender") in wanted
                    )
                ]
                if found:
                    break
                since = self._news_seq
                await self._news_came.wait()
        return {"events": found, "last": max([since, *(e["seq"] for e in found)])}

    def recent_events(self, dialogue_id: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if dialogue_id in (None, e.get("dialogue_id"))]

    def _absent(
        self, d: dlg.Dialogue, turn: int | None, ling: Any, reason: Any, **facts: Any
    ) -> dict[str, Any]:
        """``agora/participant-absent``: ``ling`` is absent from ``d`` (``reason``)."""
        return self._emit(
            "agora/participant-absent", dialogue_id=d.id, turn=turn, ling=ling, **facts,
            reason=reason, message=f"{ling} is absent from {d.id} ({d.topic}): {reason}",
        )  # fmt: skip

    def _consensus(self, d: dlg.Dialogue, turn: int | None) -> dict[str, Any]:
        """``agora/consensus``: ``d`` ended in consensus at ``turn``, in words."""
        return self._emit(
            "agora/consensus", dialogue_id=d.id, turn=turn,
            summary=dlg.consensus_summary(d), message=dlg.consensus_line(d),
        )  # fmt: skip

    def _unavailable(
        self, d: dlg.Dialogue, turn: dlg.Turn, delivery: dict[str, Any]
    ) -> dict[str, Any]:
        """``agora/ling-unavailable``: turn ``turn`` could not be delivered; in words,
        with the state the dialogue is in now, for its coordinator and its sender."""
        return self._emit(
            "agora/ling-unavailable", dialogue_id=d.id, turn=turn.number, ling=turn.to,
            sender=turn.sender, reason=delivery.get("reason"), cause=delivery.get("cause"),
            state=d.status.value, message=dlg.undelivered_line(d, turn, delivery),
        )  # fmt: skip
