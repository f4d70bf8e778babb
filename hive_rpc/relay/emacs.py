"""Emacs buffers as relay targets, through the Emacs connected to the hub.

An Emacs running ``hive-rpc-mode`` calls ``hive/offerDelivery`` on the editor socket;
its connection then joins the hub's ``DeliveryPeers``.  An ``emacs-buffer`` ling
(vterm, eat, term or comint, which covers Claude Code inside Emacs) is reached by
asking the peers, in turn, for its buffer: the hub sends the peer a request, Emacs
answers it.  Four requests travel from hub to Emacs, and one notification back:

    hive/bufferState  {"buffer": NAME}
        -> {"exists": bool, "alive": bool, "mode": str | null, "tail": str,
            "pid": int | null, "draft": str | null}
    hive/deliver      {"buffer": NAME, "text": TEXT}
        -> {"delivered": true}            (or an error whose message says why)
    hive/watchBuffer  {"buffer": NAME}    -> {"watching": true}
    hive/unwatchBuffer {"buffer": NAME}   -> {"watching": bool}
    hive/bufferChanged {"buffer": NAME}   (Emacs to hub, while watched)

Rules: ``check`` never raises; the peer that has the buffer is remembered and asked
first next time, alone; the others are asked all at once, each with a short timeout,
so a slow or silent Emacs holds up no other (a peer that lets ``STRIKES`` requests in
a row time out is dropped from delivery until it offers again); the buffer's process
``pid`` gives the process the buffer runs and the leader of its terminal's
foreground process group (relay/proc.py), so the relay types only while the ling's
approved agent holds it; ``draft`` is what the human typed and has not sent
in a comint buffer (the text after its process mark), where the screen cannot tell it
(vterm, eat and term draw their input line, which the relay reads in ``tail``), and
null from an Emacs package older than this; ``type_text`` is sent once and never retried (a
timeout may mean the text was typed, and typing it twice is worse than reporting a
doubt).  The text is data: Emacs types it, strips control characters again, and
evaluates nothing.

While the relay holds a turn for a buffer (a dialog shows, the human has a draft),
``watch`` asks the Emacs that has it to follow it: a buffer-local change hook there
sends ``hive/bufferChanged`` a moment after the buffer changes (a burst of output
sends one) or as it is killed, and the editor socket hands that to ``DeliveryPeers
.changed``, which wakes the held turn, so it is checked again at once, not on the
relay's schedule.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

import trio

from hive_rpc.relay.proc import foreground, foreground_command, process
from hive_rpc.relay.target import ChangeCount, DeliveryError, TargetState

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 2.0
"""How long one peer may take to answer ``hive/bufferState``: a local Emacs answers
in milliseconds, and every check waits for the slowest peer it asks."""
STRIKES = 2
"""Requests in a row a peer may leave unanswered before it is dropped from delivery."""
DELIVER_TIMEOUT_S = 10.0
"""How long Emacs may take to confirm ``hive/deliver``."""

TERMINAL_MODES = frozenset({"vterm", "eat", "term", "comint"})
NO_EMACS = "no Emacs with hive-rpc-mode is connected to the hub"


class PeerError(Exception):
    """A request to a peer got no result; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PeerClosed(PeerError):
    """The peer's connection closed before it answered (or was already closed)."""


class PeerTimeout(PeerError):
    """The peer did not answer in time; the request may or may not have taken effect."""


class PeerRefused(PeerError):
    """The peer answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class DeliveryPeer(Protocol):
    """A connection the hub can send requests to (``editor_socket.Session``)."""

    async def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        """The result of ``method``; PeerRefused, PeerTimeout or PeerClosed otherwise."""
        ...


class DeliveryPeers:
    """The editor connections that offered to type into their Emacs buffers.

    Ordered by when they offered; iterating gives a snapshot, so peers may come and
    go while a caller walks it.
    """

    def __init__(self) -> None:
        self._peers: dict[DeliveryPeer, None] = {}
        self._offers = 0
        self._strikes: dict[DeliveryPeer, int] = {}
        self._watches: dict[tuple[DeliveryPeer, str], set[BufferChanges]] = {}
        """Who follows each buffer of each peer (``following``)."""

    def add(self, peer: DeliveryPeer) -> None:
        if peer not in self._peers:
            self._offers += 1
        self._peers[peer] = None

    def remove(self, peer: DeliveryPeer) -> None:
        """Forget ``peer``; no error if it was not there.  Whoever follows one of its
        buffers is woken: the next check finds the buffer gone with it."""
        self._peers.pop(peer, None)
        self._strikes.pop(peer, None)
        for (owner, _buffer), watchers in list(self._watches.items()):
            if owner is peer:
                for changes in watchers:
                    changes.note()

    @contextlib.contextmanager
    def following(self, peer: DeliveryPeer, buffer: str, changes: BufferChanges) -> Iterator[None]:
        """While the block runs, what ``peer`` says of ``buffer`` (``changed``) is
        noted in ``changes``."""
        key = (peer, buffer)
        self._watches.setdefault(key, set()).add(changes)
        try:
            yield
        finally:
            watchers = self._watches.get(key)
            if watchers is not None:
                watchers.discard(changes)
                if not watchers:
                    del self._watches[key]

    def changed(self, peer: DeliveryPeer, buffer: str) -> None:
        """``peer`` says its ``buffer`` changed (``hive/bufferChanged``): wake whoever
        follows it.  Nothing, from a peer or of a buffer nobody follows."""
        for changes in self._watches.get((peer, buffer), ()):
            changes.note()

    def answered(self, peer: DeliveryPeer) -> None:
        """``peer`` answered a request: its strikes start again."""
        self._strikes.pop(peer, None)

    def missed(self, peer: DeliveryPeer) -> None:
        """``peer`` let a request time out; at ``STRIKES`` in a row it is dropped."""
        if peer not in self._peers:
            return
        strikes = self._strikes[peer] = self._strikes.get(peer, 0) + 1
        if strikes >= STRIKES:
            self.remove(peer)
            log.warning("an Emacs left %d requests unanswered; dropped from delivery", strikes)

    def __contains__(self, peer: object) -> bool:
        return peer in self._peers

    def __iter__(self) -> Iterator[DeliveryPeer]:
        return iter(list(self._peers))

    def __len__(self) -> int:
        return len(self._peers)

    def statistics(self) -> dict[str, int]:
        return {"peers": len(self._peers), "offers": self._offers}


class BufferChanges(ChangeCount):
    """What an Emacs has said of one buffer's changes (``EmacsBufferTarget.watch``):
    a change noted for each ``hive/bufferChanged``, or the peer gone."""

    def __init__(self, buffer: str) -> None:
        super().__init__()
        self.buffer = buffer


def _state_of(reply: Any) -> dict[str, Any] | None:
    """A ``hive/bufferState`` result that has the buffer, else None."""
    if not isinstance(reply, dict) or reply.get("exists") is False:
        return None
    if not isinstance(reply.get("alive"), bool):
        return None
    return reply


class EmacsBufferTarget:
    """A terminal buffer in one of the connected Emacsen, by its buffer name."""

    kind = "emacs-buffer"

    def __init__(
        self,
        peers: DeliveryPeers,
        buffer_name: str,
        *,
        check_timeout: float = CHECK_TIMEOUT_S,
        deliver_timeout: float = DELIVER_TIMEOUT_S,
    ) -> None:
        self.address = buffer_name
        self._peers = peers
        self._check_timeout = check_timeout
        self._deliver_timeout = deliver_timeout
        self._peer: DeliveryPeer | None = None
        self.mode: str | None = None
        """The buffer's kind of terminal as Emacs last reported it (``vterm`` ...)."""

    def _candidates(self) -> list[DeliveryPeer]:
        peers = list(self._peers)
        if self._peer in peers:
            assert self._peer is not None
            peers.remove(self._peer)
            peers.insert(0, self._peer)
        return peers

    async def check(self) -> TargetState:
        name = self.address
        peers = self._candidates()
        if not peers:
            self._peer = None
            return TargetState(alive=False, reason=NO_EMACS)
        failures: list[str] = []
        replies: dict[DeliveryPeer, dict[str, Any]] = {}

        async def ask(peer: DeliveryPeer) -> None:
            try:
                reply = await peer.request(
                    "hive/bufferState", {"buffer": name}, self._check_timeout
                )
            except PeerTimeout as e:
                self._peers.missed(peer)
                failures.append(e.message)
                return
            except PeerError as e:
                failures.append(e.message)
                return
            self._peers.answered(peer)
            state = _state_of(reply)
            if state is not None:
                replies[peer] = state

        # The peer that had the buffer last time, alone: usually it still has it.
        first, rest = (peers[:1], peers[1:]) if self._peer in peers else ([], peers)
        for group in (first, rest):
            async with trio.open_nursery() as nursery:
                for peer in group:
                    nursery.start_soon(ask, peer)
            found = [peer for peer in group if peer in replies]
            if found:
                return self._state(found[0], replies[found[0]])
        self._peer = None
        reason = f"no connected Emacs has a buffer named {name}"
        if failures:
            reason += f" ({len(failures)} of {len(peers)} did not answer: {failures[0]})"
        return TargetState(alive=False, reason=reason)

    def _state(self, peer: DeliveryPeer, state: dict[str, Any]) -> TargetState:
        name = self.address
        self._peer = peer
        mode = state.get("mode")
        self.mode = mode if isinstance(mode, str) else None
        tail = state.get("tail")
        tail = tail if isinstance(tail, str) else ""
        if state["alive"]:
            pid = state.get("pid")
            command = None
            no_command = (
                "this Emacs's hive-rpc package does not report the buffer's process; update it"
            )
            root = front = None
            if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
                command = foreground_command(pid)
                no_command = f"process {pid} of buffer {name} is not visible in /proc here"
                root = process(pid)
                front = foreground(pid)
            draft = state.get("draft")
            return TargetState(
                alive=True,
                tail=tail,
                command=command,
                no_command=no_command,
                draft=draft if isinstance(draft, str) else None,
                foreground=front,
                root=root,
                no_foreground=no_command if root is None else "its foreground has no leader",
            )
        if self.mode not in TERMINAL_MODES:
            reason = (
                f"buffer {name} in Emacs is not a terminal (vterm, eat, term or comint); "
                f"its mode is {self.mode or 'unknown'}"
            )
        else:
            reason = f"the process in Emacs buffer {name} ({self.mode}) has exited"
        return TargetState(alive=False, tail=tail, reason=reason)

    async def type_text(self, text: str) -> None:
        name = self.address
        if self._peer is None or self._peer not in self._peers:
            state = await self.check()
            if not state.alive:
                raise DeliveryError(state.reason)
        peer = self._peer
        if peer is None:  # pragma: no cover - check() set it when alive
            raise DeliveryError(f"no connected Emacs has a buffer named {name}")
        try:
            reply = await peer.request(
                "hive/deliver", {"buffer": name, "text": text}, self._deliver_timeout
            )
        except PeerRefused as e:
            raise DeliveryError(e.message) from None
        except PeerTimeout:
            raise DeliveryError(
                f"Emacs did not confirm typing into buffer {name} within "
                f"{self._deliver_timeout:g}s; the text may or may not have been typed"
            ) from None
        except PeerClosed:
            self._peer = None
            raise DeliveryError(
                f"the Emacs with buffer {name} disconnected before confirming; "
                "the text may or may not have been typed"
            ) from None
        if not (isinstance(reply, dict) and reply.get("delivered") is True):
            raise DeliveryError(f"Emacs gave an unexpected reply to hive/deliver: {reply!r:.200}")

    @contextlib.asynccontextmanager
    async def watch(self) -> AsyncIterator[BufferChanges]:
        """Follow the buffer in the Emacs the last ``check`` found it in while the
        block runs: ``changed()`` of what it yields returns once that Emacs has said
        the buffer changed (or was killed, or the Emacs went away).  The relay holds
        a message in this block (a dialog, the human's draft) and checks again as
        soon as the buffer changes.

        The block begins once Emacs has answered ``hive/watchBuffer``, so no change
        after it is missed, and ends with ``hive/unwatchBuffer`` (bounded, shielded:
        a silent Emacs holds the relay up for ``check_timeout`` at most).  Where the
        watch cannot be had (no Emacs found yet, an Emacs package older than this
        refuses the method, or the buffer is gone) ``changed()`` returns only if
        that Emacs goes away, and the relay's own schedule checks again.
        """
        name, peer = self.address, self._peer
        changes = BufferChanges(name)
        if peer is None or peer not in self._peers:
            yield changes
            return
        with self._peers.following(peer, name, changes):
            watching = True
            try:
                await peer.request("hive/watchBuffer", {"buffer": name}, self._check_timeout)
            except PeerRefused:
                watching = False
            except PeerError:  # a timeout may have set the watch: undone below
                pass
            try:
                yield changes
            finally:
                if watching:
                    with trio.CancelScope(shield=True), contextlib.suppress(PeerError):
                        await peer.request(
                            "hive/unwatchBuffer", {"buffer": name}, self._check_timeout
                        )


__all__ = [
    "CHECK_TIMEOUT_S",
    "DELIVER_TIMEOUT_S",
    "NO_EMACS",
    "STRIKES",
    "BufferChanges",
    "DeliveryPeer",
    "DeliveryPeers",
    "EmacsBufferTarget",
    "PeerClosed",
    "PeerError",
    "PeerRefused",
    "PeerTimeout",
]
