"""Binding the hub's socket keeps it private without touching the process umask.

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

from hive_rpc.faces.editor_socket import SocketInUse, bind_socket


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
