"""How many desktop notifications a fleet of agents may raise: the pacing rule, pure.

A user running a dozen agent sessions must not get a dozen stacked notifications
and a dozen sounds when they all stop at once, nor a stream of them when an agent
asks and cancels in a loop.  So (docs/notifications.md, "How many"):

1. A question is shown **on its own** (its own notification, its own sound, its
   Deny button) when fewer than ``max_open`` are on screen and fewer than
   ``burst`` were raised in the last ``window_s`` seconds.
2. Otherwise it is **held** in one summary notification, "N more sessions wait
   on you", which lists them and is updated in place (``replaces_id``).  A held
   question stays held until it closes: nothing is promoted when a place frees up,
   so what a notification shows never moves under the human's pointer.
3. The summary is sent at most once per ``summary_interval_s`` (the latest state
   at the end of the interval), and sounds only when it grew; withdrawing it when
   the last held question closes is never delayed.

So a burst of any size costs ``burst`` notifications and one summary, and a loop
of asks and cancels at most ``burst`` Notify calls per ``window_s`` and one per
``summary_interval_s``.  Times are the caller's clock (trio's, in the hub), so the
tests drive it with numbers, never by waiting.  No I/O here: the desktop face
(desktop_notify.py) sends what this decides.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol

MAX_OPEN = 3
"""Questions shown on their own at once."""
BURST = 3
WINDOW_S = 10.0
"""At most ``BURST`` questions raised on their own per ``WINDOW_S`` seconds."""
SUMMARY_INTERVAL_S = 2.0
"""The summary notification is sent at most once per this many seconds."""


class Clock(Protocol):
    """The time the rule reads and the waits it asks for: trio's in the hub
    (``TRIO_CLOCK``), one a test moves by hand in the tests."""

    def now(self) -> float: ...

    def sleep_until(self, deadline: float) -> Awaitable[None]: ...


@dataclass
class Pacing:
    """Which questions are shown on their own and which the summary holds."""

    max_open: int = MAX_OPEN
    burst: int = BURST
    window_s: float = WINDOW_S
    summary_interval_s: float = SUMMARY_INTERVAL_S
    open: set[str] = field(default_factory=set)
    """Questions shown on their own, still on screen."""
    held: dict[str, None] = field(default_factory=dict)
    """Questions the summary holds, oldest first (a dict keeps the order)."""
    raised: deque[float] = field(default_factory=deque)
    """When each of the last questions shown on their own was raised."""
    summary_sent_at: float | None = None
    grew: bool = False
    """A question joined the summary since it was last sent: the next send sounds,
    and raises it again if the human dismissed it."""

    def arrive(self, prompt_id: str, now: float) -> bool:
        """Place a new question: True to show it on its own (counted as raised now),
        False when the summary holds it."""
        if prompt_id in self.open or prompt_id in self.held:
            return prompt_id in self.open
        while self.raised and self.raised[0] <= now - self.window_s:
            self.raised.popleft()
        if len(self.open) < self.max_open and len(self.raised) < self.burst:
            self.open.add(prompt_id)
            self.raised.append(now)
            return True
        self.held[prompt_id] = None
        self.grew = True
        return False

    def leave(self, prompt_id: str) -> str | None:
        """The question closed (or its notification did): ``"open"`` or ``"held"``,
        where it was, or None when it was neither."""
        if prompt_id in self.open:
            self.open.discard(prompt_id)
            return "open"
        if prompt_id in self.held:
            del self.held[prompt_id]
            return "held"
        return None

    def summary_due(self, now: float) -> float:
        """When the summary may next be sent: ``now`` or a later time."""
        if self.summary_sent_at is None:
            return now
        return max(now, self.summary_sent_at + self.summary_interval_s)

    def summary_sent(self, now: float) -> bool:
        """Record a send of the summary; whether it should sound (it grew)."""
        self.summary_sent_at = now
        sound, self.grew = self.grew, False
        return sound


__all__ = ["BURST", "MAX_OPEN", "SUMMARY_INTERVAL_S", "WINDOW_S", "Clock", "Pacing"]
