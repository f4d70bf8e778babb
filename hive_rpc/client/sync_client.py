"""A blocking client of the hub for one-shot commands: no trio, so they start fast.

``hive-rpc status``, ``ask``, ``answer`` and the permission hook make a few requests
and exit; importing trio for them cost more than the requests (docs/benchmarks.md, CLI
cold start, permission round trip).  This client speaks the same wire, the sans-IO
JSON-RPC codec of protocol/jsonrpc.py over a plain ``socket``, with a deadline per call
(``timeout_s``, and ``give_up_at`` for a wait that must end at a given time), and
refuses a socket held by another uid as ``HubClient.connect`` does.  Notifications
that arrive while a call waits are kept (``notifications``).  ``prove_approver`` is
client.py's, blocking, reading the same token file.

``connect_or_start`` starts a hub when none answers with the trio client's helpers,
which live apart from it (hub_start.py): a one-shot command that starts a hub loads
no trio either.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import select
import socket as socket_module
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from hive_rpc.core.errors import HiveError, HubTimeout, HubUnreachable
from hive_rpc.host.paths import APPROVER_TOKEN_NAME, InsecurePath, read_token
from hive_rpc.host.peercred import peer_credentials
from hive_rpc.protocol.framing import FramingError
from hive_rpc.protocol.jsonrpc import (
    OVERLOADED,
    Endpoint,
    ErrorResponse,
    Notification,
    Response,
    RpcError,
)
from hive_rpc.protocol.methods import METHODS

REPLY_MAX_BYTES = 256 << 20
"""As client.py: replies may be far larger than requests."""

LONG_POLLS: Mapping[str, str] = {
    name: row.long_poll for name, row in METHODS.items() if row.long_poll is not None
}
"""Methods that wait on purpose -> the parameter saying how long (``timeout_s``,
``wait_s``): a call's deadline adds its value (the method table's ``long_poll``
column, read from protocol/methods.py, plain data)."""


class SyncHubClient:
    """One blocking connection to the hub; ``call`` reads until its own reply."""

    def __init__(self, sock: socket_module.socket, path: Path | None = None) -> None:
        self.path = path
        self.timeout_s: float | None = None
        """Give up on a call after this long (``HubTimeout``); None waits for ever."""
        self.give_up_at: float | None = None
        """A ``time.monotonic()`` past which no call waits, whatever ``timeout_s``
        allows (``HubTimeout``): a hook's whole budget, a wait that must end on time."""
        self.notifications: collections.deque[Notification] = collections.deque()
        self._sock = sock
        self._endpoint = Endpoint(max_body=REPLY_MAX_BYTES)
        self._replies: dict[object, Response | ErrorResponse] = {}
        self._proving = False

    @classmethod
    def connect(cls, path: Path, timeout_s: float | None = None) -> SyncHubClient:
        """A client of the hub on ``path``; InsecurePath if another user's process
        answers there (it must get neither our answers nor our approver token).
        ``timeout_s`` bounds the connect itself (a hub too busy to accept)."""
        sock = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(os.fspath(path))
        except TimeoutError:
            sock.close()
            raise HubTimeout(f"the hub at {path} did not accept in {timeout_s:g} s") from None
        except OSError as e:
            sock.close()
            if e.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
                raise HubUnreachable(f"no hub answers on {path}") from None
            raise
        sock.settimeout(None)
        owner = socket_peer_uid(sock)
        if owner is not None and owner != os.getuid():
            sock.close()
            raise InsecurePath(
                f"the process answering on {path} runs as uid {owner}, not as you; "
                "refusing to use it"
            )
        return cls(sock, path)

    def __enter__(self) -> SyncHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def detach(self) -> socket_module.socket:
        """The connection's socket, for a caller that speaks another protocol on it
        from now on (mcp_relay.py after ``hive/openMcp``): only when the peer sends
        nothing past the last reply, since bytes this client read beyond it stay
        in its decoder."""
        return self._sock

    @contextlib.contextmanager
    def giving_up_at(self, when: float) -> Iterator[None]:
        """Within it, no call waits past ``when`` (``time.monotonic()``)."""
        before, self.give_up_at = self.give_up_at, when
        try:
            yield
        finally:
            self.give_up_at = before

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send(self._endpoint.notify(method, params))

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The hub's result; HiveError as the hub refused, HubTimeout past the
        deadline, HubUnreachable if the connection ends first."""
        msg_id, frame = self._endpoint.request(method, params)
        deadline = self._deadline(method, params)
        self._send(frame)
        while msg_id not in self._replies:
            self._read(deadline)
        reply = self._replies.pop(msg_id)
        if isinstance(reply, ErrorResponse):
            if _approvers_only(reply) and not self._proving:
                # A full hub admitted this connection for an approver only
                # (faces/accept_loop.py): the human's tools can read the token.
                self._proving = True
                try:
                    if prove_approver(self.call) is None:
                        return self.call(method, params)
                finally:
                    self._proving = False
            raise HiveError.from_wire(reply.code, reply.message, reply.data)
        return reply.result

    def next_notification(self, timeout_s: float | None = None) -> Notification:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.notifications:
            self._read(deadline)
        return self.notifications.popleft()

    def _deadline(self, method: str, params: dict[str, Any] | None) -> float | None:
        deadline = self.give_up_at
        if self.timeout_s is None:
            return deadline
        own = time.monotonic() + call_limit(self.timeout_s, method, params)
        return own if deadline is None else min(own, deadline)

    def _send(self, frame: bytes) -> None:
        try:
            self._sock.sendall(frame)
        except OSError as e:
            raise HubUnreachable(f"lost the hub: {e}") from None

    def _read(self, deadline: float | None) -> None:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and (left <= 0 or not select.select([self._sock], [], [], left)[0]):
            where = f"the hub at {self.path}" if self.path is not None else "the hub"
            if self.give_up_at is not None and self.give_up_at <= time.monotonic():
                raise HubTimeout(f"{where} did not answer in the time there was")
            raise HubTimeout(f"{where} did not answer in {self.timeout_s:g} s")
        try:
            data = self._sock.recv(1 << 16)
        except OSError as e:
            raise HubUnreachable(f"lost the hub: {e}") from None
        if not data:
            raise HubUnreachable("the hub closed the connection")
        for msg in self._endpoint.receive_data(data):
            if isinstance(msg, FramingError):
                raise HubUnreachable(f"lost the hub: {msg}")
            if isinstance(msg, Notification):
                self.notifications.append(msg)
            elif isinstance(msg, Response | ErrorResponse):
                self._replies[msg.id] = msg
            elif isinstance(msg, RpcError):
                raise HubUnreachable(f"lost the hub: unreadable reply ({msg.message})")


def _approvers_only(reply: ErrorResponse) -> bool:
    """The hub is full and admits this connection only once it proves to be an
    approver (-32011 with ``data.admit``)."""
    return (
        reply.code == OVERLOADED
        and isinstance(reply.data, dict)
        and reply.data.get("admit") == "hive/proveApprover"
    )


def call_limit(timeout_s: float, method: str, params: dict[str, Any] | None) -> float:
    """How long a call may take: ``timeout_s``, plus what a long poll asks the hub to
    wait (its ``LONG_POLLS`` parameter: ``hive/await``'s ``timeout_s``,
    ``agora/news``'s ``wait_s``), so that the client does not give up on a call
    that is still waiting as asked (both clients)."""
    param = LONG_POLLS.get(method)
    waits = (params or {}).get(param) if param is not None else None
    if isinstance(waits, int | float) and not isinstance(waits, bool):
        return timeout_s + max(0.0, float(waits))
    return timeout_s


def socket_peer_uid(sock: socket_module.socket) -> int | None:
    """The uid at the other end of a Unix socket (``SO_PEERCRED``), None where the
    platform does not say."""
    found = peer_credentials(sock)
    return None if found is None else found.uid


class NoApproverToken(Exception):
    """Why the approver token cannot be sent: a sentence for the person."""


def approver_token(status: object) -> str:
    """The approver token from the file the hub names in its ``hive/status``, read
    only when the file has the token's own name (never send the hub any other file);
    NoApproverToken saying why not (an agent's sandbox that hides the file is the
    point of it, not an error).  Both clients' ``prove_approver`` use it."""
    where = status.get("approver_token_file") if isinstance(status, dict) else None
    if not isinstance(where, str):
        raise NoApproverToken("the hub names no approver token file (hive/status)")
    if Path(where).name != APPROVER_TOKEN_NAME:
        raise NoApproverToken(f"the hub names {where!r} as its approver token file; not sending it")
    try:
        return read_token(Path(where))
    except OSError as e:  # PermissionError included: not ours, not 0600, unreadable
        raise NoApproverToken(f"cannot read the approver token: {e}") from None


def prove_approver(call: Callable[[str, dict[str, Any]], Any]) -> str | None:
    """client.prove_approver, blocking: make the connection behind ``call`` an
    approver (it may then answer permission prompts and change answer rules) with
    the token the hub names.  None once proved, else the reason it could not be (the
    connection goes on as it was); HubUnreachable passes through."""
    try:
        token = approver_token(call("hive/status", {}))
        call("hive/proveApprover", {"token": token})
    except NoApproverToken as e:
        return str(e)
    except HiveError as e:
        return e.message
    return None


def connect_or_start(
    socket: Path,
    data_dir: Path,
    *,
    start: bool = True,
    extra_args: list[str] | None = None,
    timeout_s: float | None = None,
) -> SyncHubClient:
    """As client.connect_or_start, blocking: connect, or start a detached hub first."""
    try:
        client = SyncHubClient.connect(socket)
    except HubUnreachable:
        if not start:
            raise HubUnreachable(f"no hub answers on {socket} (and --no-start was given)") from None
        client = _start_and_connect(socket, data_dir, extra_args)
    client.timeout_s = timeout_s
    return client


def _start_and_connect(socket: Path, data_dir: Path, extra_args: list[str] | None) -> SyncHubClient:
    from hive_rpc.client.hub_start import (
        START_TIMEOUT_S,
        as_last_started,
        spawn_hub,
        why_not_started,
    )
    from hive_rpc.host.paths import LOG_NAME

    data_dir, extra_args = as_last_started(socket, data_dir, extra_args)
    read_fd, log_offset = spawn_hub(socket, data_dir, extra_args)
    deadline = time.monotonic() + START_TIMEOUT_S
    timed_out = False
    try:
        while True:  # until the child closes its end of the pipe: ready, or dead
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                timed_out = True
                break
            if not os.read(read_fd, 64):
                break
    finally:
        os.close(read_fd)
    if not timed_out:
        try:
            return SyncHubClient.connect(socket)
        except HubUnreachable:
            pass
    log = data_dir / LOG_NAME
    why = why_not_started(log, log_offset, gave_up_after=START_TIMEOUT_S if timed_out else None)
    raise HubUnreachable(f"could not start a hub on {socket}: {why}; log: {log}")
