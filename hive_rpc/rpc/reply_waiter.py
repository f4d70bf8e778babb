"""One outgoing request waiting for its reply: the hub's requests to an editor
(faces/editor_socket.py) and a face's calls to the hub (hub_connection.py) both
keep a table of these by request id, which the connection's reader settles."""

from __future__ import annotations

from typing import Any

import trio


class ReplyWaiter:
    """Settled once, by the reader (a result or an error) or by the connection's end
    (an error); later settles are ignored, so a late reply cannot overwrite either."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Any = None
        self.error: Exception | None = None

    def settle(self, result: Any = None, error: Exception | None = None) -> None:
        if not self.done.is_set():
            self.result, self.error = result, error
            self.done.set()

    def outcome(self) -> Any:
        """The result once settled; raises the error it was settled with."""
        if self.error is not None:
            raise self.error
        return self.result


__all__ = ["ReplyWaiter"]
