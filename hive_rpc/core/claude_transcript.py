"""Claude Code's session transcript, pure and sans-IO: whether a tool call the hook
is asking the human about was settled in the terminal meanwhile.

Claude Code (measured on 2.1.328) shows its own menu while a PermissionRequest hook
waits, and takes the first answer; when the human answers in the terminal, it neither
signals nor kills the hook, nor closes its pipes: the hook would wait out its whole
``--timeout`` and the editors keep showing a question already answered.  What does
change is the session's transcript (the event's ``transcript_path``, JSON lines):
the assistant's ``tool_use`` block of the call, then, once answered, a user message
with the ``tool_result`` of that ``tool_use_id`` (about 0.5 s after the answer).

``SettledWatch`` is fed the transcript's bytes as they are appended and says when
the call it watches (the latest ``tool_use`` of that tool with that very input) has
its result, written since the hook started (each line's ``timestamp``): an older
result is an earlier call's with the same input (the same question asked twice),
whose ``tool_use`` may still be the latest read, this call's being written a moment
after the hook starts (measured).
"""

from __future__ import annotations

import json
from typing import Any

SLACK_S = 1.0
"""How much earlier than the hook's start a result may be stamped and still count:
clocks and stamps differ by milliseconds, and no model asks the same question again
within a second of its answer."""


def stamp(value: object) -> float | None:
    """A transcript line's ``timestamp`` (``2026-11-24T20:15:20.614Z``) in Unix
    seconds, or None."""
    if not isinstance(value, str):
        return None
    from datetime import datetime  # the watcher's thread only, never the hook's start

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class SettledWatch:
    """Watches the transcript for the result of one tool call, written at ``since``
    (Unix seconds: the hook's start) or later."""

    def __init__(self, tool_name: str, tool_input: object, since: float) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input
        self.since = since - SLACK_S
        self._partial = b""
        self._call_id: str | None = None
        self._results: set[str] = set()

    @property
    def settled(self) -> bool:
        return self._call_id is not None and self._call_id in self._results

    def feed(self, data: bytes) -> bool:
        """Take the next bytes of the transcript; whether the call is settled now."""
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line)
        return self.settled

    def _line(self, line: bytes) -> None:
        try:
            entry = json.loads(line)
        except ValueError:
            return  # a line cut by where reading started, or not JSON
        message = entry.get("message") if isinstance(entry, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict):
                self._block(block, entry.get("timestamp"))

    def _block(self, block: dict[str, Any], timestamp: object) -> None:
        kind = block.get("type")
        if kind == "tool_use" and block.get("name") == self.tool_name:
            call_id = block.get("id")
            if isinstance(call_id, str) and block.get("input") == self.tool_input:
                self._call_id = call_id
        elif kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            at = stamp(timestamp)
            if at is not None and at >= self.since:
                self._results.add(block["tool_use_id"])
