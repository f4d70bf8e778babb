"""Binding the hub's socket keeps it private without touching the process umask;
and a connection that ends badly never takes the socket's server down with it.

The umask is one per process, and the hub is a threaded process (trio runs
``Popen`` and the Unix-socket ``bind`` itself in worker threads): a umask changed for
the bind leaks into every file created and every child spawned meanwhile.  That is
how a ``dbus-daemon`` started next to a hub made its cookie keyring 0600 instead of
0700, so libnotify's ``notify-send`` refused the keyring and hung until the bus gave
up on it (the flaky ``test_notify_send_shows_urgent_prompts...``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import trio
import trio.testing

from hive_rpc.faces.editor_socket import Session, SocketInUse, bind_socket
from hive_rpc.protocol.framing import encode_frame
from hive_rpc.service import HubService


def _umask() -> int:
    """The process umask, read without setting it (Linux's /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise AssertionError("no Umask line in /proc/self/status")


async def test_other_tasks_never_see_a_changed_umask_while_the_socket_binds(
    short_tmp: Path,
) -> None:
    before = _umask()
    seen: set[int] = set()
    done = trio.Event()

    async def observe() -> None:
        while not done.is_set():
            seen.add(_umask())
            await trio.lowlevel.checkpoint()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(observe)
            await trio.lowlevel.checkpoint()  # the observer runs before and during each bind
            for n in range(5):
                listener = await bind_socket(short_tmp / f"hub{n}.sock")
                await listener.aclose()
            done.set()
    assert seen == {before}
    assert _umask() == before


async def test_the_socket_file_is_0600_and_takes_the_exact_path(short_tmp: Path) -> None:
    os.chmod(short_tmp, 0o755)  # even in a directory others may enter
    path = short_tmp / "hub.sock"
    listener = await bind_socket(path)
    try:
        assert stat.S_ISSOCK(path.stat().st_mode)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert sorted(os.listdir(short_tmp)) == ["hub.sock"]  # no leftovers
        with trio.fail_after(10):
            stream = await trio.open_unix_socket(os.fspath(path))
            await stream.aclose()
    finally:
        await listener.aclose()


async def test_a_live_socket_is_not_taken_over(short_tmp: Path) -> None:
    path = short_tmp / "hub.sock"
    listener = await bind_socket(path)
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                # _probe connects; someone must accept for it to count as live.
                nursery.start_soon(trio.serve_listeners, _drop, [listener])
                try:
                    await bind_socket(path)
                except SocketInUse:
                    pass
                else:
                    raise AssertionError("a second bind took over a live socket")
                nursery.cancel_scope.cancel()
    finally:
        await listener.aclose()


async def _drop(stream: trio.SocketStream) -> None:
    await stream.aclose()


class _ResetOnCancel(trio.abc.Stream):
    """A client whose connection resets just as the hub is being cancelled: the read
    in progress ends with BrokenResourceError instead of Cancelled."""

    def __init__(self, request: bytes) -> None:
        self._pending = request
        self.sent = bytearray()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            raise trio.BrokenResourceError("connection reset by peer") from None
        raise AssertionError("unreachable")

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sent += data
        await trio.lowlevel.checkpoint()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def test_a_reset_while_the_hub_is_cancelled_is_not_an_error(hub: HubService) -> None:
    """The session's nursery then holds Cancelled (its subscription) and the reset
    together; only the cancellation may leave it, or the reset crashes the hub."""
    subscribe = encode_frame(b'{"jsonrpc":"2.0","id":1,"method":"hive/subscribe"}')
    stream = _ResetOnCancel(subscribe)
    with trio.fail_after(10):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(Session(stream, hub).run)
                await trio.testing.wait_all_tasks_blocked()
                assert b'"subscribed":true' in bytes(stream.sent)
                scope.cancel()
        assert scope.cancelled_caught
