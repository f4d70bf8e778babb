"""A small trio client for the editor socket, used by the CLI, the tests and the benchmarks.

It is deliberately sequential: ``call`` writes one request and reads until its
response, keeping any notifications that arrive meanwhile for ``next_notification``.
Use one client per concurrent caller.

``connect_or_start`` is the emacsclient/gpg-agent behaviour: if no hub answers on
the socket, start one in the background (hub_start.py, shared with the blocking
client of the one-shot commands) and wait for it to say it is ready (on a pipe: no
polling), then connect.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from hive_rpc.client.hub_start import (
    START_TIMEOUT_S,
    as_last_started,
    spawn_hub,  # re-exported for the trio callers
    why_not_started,
)
from hive_rpc.client.sync_client import (
    REPLY_MAX_BYTES,  # re-exported
    NoApproverToken,
    approver_token,
    call_limit,
    socket_peer_uid,
)
from hive_rpc.core.errors import (
    HiveError,
    HubTimeout,  # re-exported: callers catch them here
    HubUnreachable,
)
from hive_rpc.core.prompt import Ask
from hive_rpc.host.paths import LOG_NAME, InsecurePath
from hive_rpc.protocol.jsonrpc import ErrorResponse, Notification, Response, RpcError
from hive_rpc.rpc.connection import RpcConnection


class HubClient:
    """A sequential client over the shared connection layer (rpc_connection.py): no
    reader task, so ``call`` reads inline until its reply comes.  Replies nobody
    waits for (to frames a test wrote with ``send_raw``) are kept for
    ``next_message``; notifications for ``next_notification``."""

    def __init__(self, stream: trio.abc.Stream, path: Path | None = None) -> None:
        self.path = path
        self.timeout_s: float | None = None
        """Give up on a call after this long (``HubTimeout``); None waits for ever.
        The CLI sets it (``--timeout``): a stopped hub must not hang a shell."""
        self._inbox: collections.deque[Response | ErrorResponse | RpcError] = collections.deque()
        self.notifications: collections.deque[Notification] = collections.deque()
        self._conn = RpcConnection(
            stream,
            max_body=REPLY_MAX_BYTES,
            closed=hub_closed,
            on_notification=self.notifications.append,
            on_unmatched=self._inbox.append,
        )

    @classmethod
    async def connect(cls, path: Path) -> HubClient:
        """A client of the hub on ``path``; InsecurePath if a process of another user
        answers there (it is no hub of ours: it must get neither our answers nor,
        through ``prove_approver``, our approver token)."""
        try:
            stream = await trio.open_unix_socket(os.fspath(path))
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
                raise HubUnreachable(f"no hub answers on {path}") from None
            raise
        owner = peer_uid(stream)
        if owner is not None and owner != os.getuid():
            await stream.aclose()
            raise InsecurePath(
                f"the process answering on {path} runs as uid {owner}, not as you; "
                "refusing to use it"
            )
        return cls(stream, path)

    @property
    def stream(self) -> trio.abc.Stream:
        """The underlying stream (``hub_connection`` takes it over)."""
        return self._conn.stream

    async def __aenter__(self) -> HubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._conn.stream.aclose()

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests use this to send malformed frames)."""
        await self._conn.stream.send_all(data)

    async def _read(self) -> None:
        if not await self._conn.pump():
            raise self._conn.ended or hub_closed("the connection closed")

    async def next_message(self) -> Response | ErrorResponse | RpcError:
        """The next reply from the hub that no call of ours took, in order."""
        while not self._inbox:
            await self._read()
        return self._inbox.popleft()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        if self.timeout_s is None:
            return await self._conn.request(method, params)
        limit = call_limit(self.timeout_s, method, params)
        with trio.move_on_after(limit):
            return await self._conn.request(method, params)
        where = f"the hub at {self.path}" if self.path is not None else "the hub"
        raise HubTimeout(f"{where} did not answer in {limit:g} s")

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self._conn.notify(method, params)

    async def next_notification(self) -> Notification:
        while not self.notifications:
            await self._read()
        return self.notifications.popleft()


def peer_uid(stream: trio.abc.Stream) -> int | None:
    """The uid of the process at the other end of a Unix socket stream (``SO_PEERCRED``,
    set by the kernel at connect), None where the platform does not say."""
    sock = getattr(stream, "socket", None)
    return None if sock is None else socket_peer_uid(sock)


async def prove_approver(call: Callable[[str, dict[str, Any]], Awaitable[Any]]) -> str | None:
    """Make the connection behind ``call`` an approver (it may then answer permission
    prompts and change answer rules: service/approver.py) by reading the token file
    the hub names in ``hive/status`` and sending it with ``hive/proveApprover``.

    None once proved; else the reason it could not be, a sentence for the person (an
    agent's sandbox that hides the file is the point of it, not an error): the
    connection then goes on as it was, and only an approver's methods are refused.
    HubUnreachable passes through."""
    try:
        token = approver_token(await call("hive/status", {}))
        await call("hive/proveApprover", {"token": token})
    except NoApproverToken as e:
        return str(e)
    except HiveError as e:
        return e.message
    return None


WITHDRAW_S = 5.0
"""How long withdrawing an unanswered question may take once the wait is over."""


async def ask_until_closed(
    call: Callable[[str, dict[str, Any]], Awaitable[Any]],
    ask: Ask,
    wait_s: float,
    *,
    by: str | None = None,
) -> dict[str, Any]:
    """Ask ``ask`` and wait up to ``wait_s`` for it to close; the prompt's record,
    still ``pending`` when the time ran out.  A question still pending when the wait
    ends, however it ends (time is up, the caller was cancelled or is ending), is
    withdrawn (``by``, when given, says who withdrew it), so no editor keeps showing
    it; and it ``waits``, so the hub withdraws it too if the connection is lost.  A
    withdrawal that fails (the hub went away meanwhile) is left at that: the record
    is the answer.  What the approve tool and the ACP proxy both do."""
    record: dict[str, Any] = await call("hive/ask", {**ask.params(), "waits": True})
    try:
        with trio.move_on_after(wait_s):
            while record["status"] == "pending":
                params = {"id": record["id"], "timeout_s": wait_s, "agent_id": ask.agent_id}
                record = await call("hive/await", params)
    finally:
        if record["status"] == "pending":
            withdraw = {"id": record["id"], "agent_id": ask.agent_id}
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(WITHDRAW_S),
                contextlib.suppress(HiveError, OSError, trio.BrokenResourceError),
            ):
                await call("hive/cancel", withdraw if by is None else {**withdraw, "by": by})
    return record


def hub_closed(why: str) -> HubUnreachable:
    """What a lost connection to the hub raises (the ``closed`` of rpc_connection)."""
    if why == "the connection closed":
        return HubUnreachable("the hub closed the connection")
    return HubUnreachable(f"lost the hub: {why}")


async def start_and_connect(
    socket: Path, data_dir: Path, extra_args: list[str] | None = None
) -> HubClient:
    """Start a hub, wait until it listens, and connect to it.

    If the child exits first (say, another hub won a start race) we still connect,
    to whoever won.  If nobody answers, HubUnreachable quotes the cause from the
    hub's log.  The whole start is bounded by START_TIMEOUT_S: it never hangs.
    """
    log = data_dir / LOG_NAME
    read_fd, log_offset = spawn_hub(socket, data_dir, extra_args)
    with trio.move_on_after(START_TIMEOUT_S) as scope:
        async with trio.lowlevel.FdStream(read_fd) as ready:
            while await ready.receive_some(64):
                pass  # read until the child closes its end: ready, or dead
        try:
            return await HubClient.connect(socket)
        except HubUnreachable:
            pass
    why = why_not_started(
        log, log_offset, gave_up_after=START_TIMEOUT_S if scope.cancelled_caught else None
    )
    raise HubUnreachable(f"could not start a hub on {socket}: {why}; log: {log}")


async def connect_or_start(
    socket: Path,
    data_dir: Path,
    *,
    start: bool = True,
    extra_args: list[str] | None = None,
    timeout_s: float | None = None,
) -> HubClient:
    """Connect to the hub on ``socket``, starting one first if none answers; its
    calls give up after ``timeout_s`` (None: never)."""
    client = await _connect_or_start(socket, data_dir, start=start, extra_args=extra_args)
    client.timeout_s = timeout_s
    return client


async def _connect_or_start(
    socket: Path, data_dir: Path, *, start: bool, extra_args: list[str] | None
) -> HubClient:
    try:
        return await HubClient.connect(socket)
    except HubUnreachable:
        if not start:
            raise HubUnreachable(f"no hub answers on {socket} (and --no-start was given)") from None
    return await start_and_connect(socket, *as_last_started(socket, data_dir, extra_args))
