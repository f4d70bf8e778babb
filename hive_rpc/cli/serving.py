"""The commands that run a server: the hub (``serve``, and ``stop`` and ``restart``,
which end it and start it again), the per-session faces (``epc``, ``lsp``; ``mcp`` is
a relay, mcp_relay.py), and ``doctor``, which opens the store without a hub.

Each imports what it runs inside its function: the hub, pygls and the MCP SDK are
heavy, and the client commands (built into the same parser) must not pay for them.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

import trio

from hive_rpc.cli.exits import EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, CliError
from hive_rpc.cli.render import print_json
from hive_rpc.client import start_record
from hive_rpc.client.async_client import HubClient, start_and_connect
from hive_rpc.client.hub_start import as_last_started
from hive_rpc.core.errors import HubUnreachable
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.host.peercred import peer_pid


async def cmd_epc(args: argparse.Namespace) -> int:
    from hive_rpc.faces.epc_server import run_epc

    await run_epc(args.socket, args.data_dir, start=not args.no_start, port=args.port)
    return EXIT_OK


async def cmd_lsp(args: argparse.Namespace) -> int:
    from hive_rpc.faces.lsp_server import run_lsp

    return await run_lsp(args.socket, args.data_dir, start=not args.no_start)


def _serve_args(args: argparse.Namespace) -> list[str]:
    """The ``serve`` options to pass on to a detached hub (socket and data dir aside)."""
    extra = [
        # The file, not the URL it holds: the detached hub's command line and its
        # start record keep no password.
        *(("--store-file", str(args.store_file)) if args.store_file else ("--store", args.store)),
        *("--max-lifetime", repr(args.max_lifetime)),
        *("--activity-ttl", repr(args.activity_ttl)),
        *("--retain", repr(args.retain)),
        *("--log-level", args.log_level),
    ]
    if args.replicas is not None:
        extra += ["--replicas", str(args.replicas)]
    if args.nats_ping is not None:
        extra += ["--nats-ping", repr(args.nats_ping)]
    if args.nats_ping_misses is not None:
        extra += ["--nats-ping-misses", str(args.nats_ping_misses)]
    if args.http is not None:
        extra += ["--http", args.http]
    if args.no_notify:
        extra.append("--no-notify")
    if args.watch_prs is not None:
        extra.append("--watch-prs" if args.watch_prs else "--no-watch-prs")
    return extra


def _watch_prs(given: bool | None) -> bool:
    """``--watch-prs``/``--no-watch-prs`` as given, else whether gh is on PATH.  The
    log says which: the watch logs that it runs; a hub without gh says so only at
    DEBUG (who has no gh has no pull requests to hear of), one told not to at INFO."""
    gh = shutil.which("gh")
    watch = given if given is not None else gh is not None
    if not watch:
        logging.getLogger("hive_rpc.cli").log(
            logging.INFO if given is False else logging.DEBUG,
            "pull requests: not watched (%s)",
            "--no-watch-prs" if given is False else "gh is not on PATH",
        )
    elif gh is None:
        logging.getLogger("hive_rpc.cli").warning(
            "pull requests: --watch-prs, but gh is not on PATH: nothing is watched until it is"
        )
    return watch


def _own_serve_args(args: argparse.Namespace) -> list[str] | None:
    """The ``serve`` options given on the command line, None when there are none
    (every one at its default): then ``--autostart`` and ``--as-before`` start the hub
    with those it last ran with."""
    from hive_rpc.cli.parser import build_parser

    defaults = build_parser("serve").parse_args(["serve"])
    given = _serve_args(args)
    return None if given == _serve_args(defaults) else given


async def _serve_detached(args: argparse.Namespace) -> int:
    """``serve --detach``: a hub in its own session that outlives us (and our terminal,
    Emacs, or whatever ran us), as ``emacs --daemon`` does; we return once it listens.

    With ``--autostart`` (Emacs's reconnect loop): not a hub stopped on purpose
    (HubStopped, exit 4), and without options of its own the hub's last ones; with
    ``--as-before`` (``M-x hive-rpc-start-hub``), the hub's last options too, stopped
    on purpose or not."""
    try:
        async with await HubClient.connect(args.socket) as client:
            running = await client.call("hive/status")
    except HubUnreachable:
        pass
    else:
        print(f"hive-rpc: listening on {args.socket} (already running)")
        kept = running["data_dir"]
        if Path(kept) != args.data_dir:  # as given: it may be the same dir, said otherwise
            print(
                f"hive-rpc: note: it keeps its data dir {kept}, not {args.data_dir}",
                file=sys.stderr,
            )
        return EXIT_OK
    data_dir, extra = args.data_dir, _serve_args(args)
    if args.autostart or args.as_before:
        data_dir, own = as_last_started(
            args.socket, args.data_dir, _own_serve_args(args), autostart=args.autostart
        )
        extra = own if own is not None else []
    return await _start(args.socket, data_dir, extra)


async def _start(socket: Path, data_dir: Path, serve_args: list[str]) -> int:
    async with await start_and_connect(socket, data_dir, serve_args) as client:
        status = await client.call("hive/status")
    print(f"hive-rpc: listening on {socket} (pid {status['pid']})")
    return EXIT_OK


async def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the hub on the socket, marked stopped on purpose, and wait until it is gone."""
    pid = await _stop(args.socket, args.timeout)
    if pid is None:
        raise CliError(
            f"no hub answers on {args.socket}: nothing to stop (none will be started there "
            "by itself until `hive-rpc serve` or `hive-rpc restart`)",
            EXIT_UNREACHABLE,
        )
    print(f"hive-rpc: stopped the hub on {args.socket} (pid {pid})")
    return EXIT_OK


async def cmd_restart(args: argparse.Namespace) -> int:
    """Stop the hub if one runs, then start it again with the options it last ran
    with (its start record), detached, as ``serve --detach`` does."""
    pid = await _stop(args.socket, args.timeout)
    if pid is not None:
        print(f"hive-rpc: stopped the hub on {args.socket} (pid {pid})")
    data_dir, serve_args = as_last_started(args.socket, args.data_dir, None, autostart=False)
    return await _start(args.socket, data_dir, serve_args or [])


async def _stop(socket: Path, wait_s: float) -> int | None:
    """Stop the hub on ``socket`` as ``kill PID`` does (SIGTERM: it closes its store
    and listener, nothing is lost), having marked it stopped on purpose first, so that
    no autostart starts it again meanwhile; wait until its process is gone.  Its pid,
    or None when no hub answers (the mark is left all the same)."""
    try:
        client = await HubClient.connect(socket)
    except HubUnreachable:
        start_record.mark_stopped(socket, "hive-rpc stop")
        return None
    async with client:
        # The kernel's word (SO_PEERCRED) for the process listening there: no call,
        # so a hub too busy or too stuck to answer one is still found.
        sock = getattr(client.stream, "socket", None)
        pid = peer_pid(sock) if sock is not None else None
        if pid is None:
            pid = int((await client.call("hive/status"))["pid"])
    start_record.mark_stopped(socket, "hive-rpc stop")
    with _pid_handle(pid, socket) as gone:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return pid
        with trio.move_on_after(wait_s):
            await gone()
            return pid
    raise CliError(
        f"the hub on {socket} (pid {pid}) did not stop within {wait_s:g} s; it still runs, "
        f"marked stopped on purpose. `kill -9 {pid}` ends it at once (its SQLite store "
        "keeps every prompt)",
        EXIT_REFUSED,
    )


@contextlib.contextmanager
def _pid_handle(pid: int, socket: Path) -> Iterator[Callable[[], Awaitable[None]]]:
    """What waits until the hub, process ``pid``, is gone: its pidfd becoming readable
    (Linux; opened before the signal is sent, so the pid cannot be another's by then),
    else its socket's lock being free (the kernel frees it when the hub exits)."""
    if not hasattr(os, "pidfd_open"):
        lock = socket.with_name(socket.name + ".lock")
        yield partial(trio.to_thread.run_sync, _wait_lock_free, lock, abandon_on_cancel=True)
        return
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:  # already gone
        yield trio.lowlevel.checkpoint
        return
    try:
        yield partial(trio.lowlevel.wait_readable, fd)
    finally:
        os.close(fd)


def _wait_lock_free(lock: Path) -> None:
    """Block until nobody holds ``lock`` (a hub's flock), and leave it free."""
    import fcntl

    with contextlib.suppress(FileNotFoundError), lock.open("rb") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)


async def cmd_serve(args: argparse.Namespace) -> int:
    if (args.autostart or args.as_before) and not args.detach:
        raise CliError("--autostart and --as-before go with --detach", EXIT_USAGE)
    if args.detach:
        return await _serve_detached(args)
    from hive_rpc.hub import HubConfig, freeze_startup_objects, keep_start_record, run_hub

    if args.ready_fd is not None:
        # Started in the background (spawn_hub): like any daemon, keep no directory
        # busy (an unmount, a deleted checkout); spawn_hub passed absolute paths.
        args.socket, args.data_dir = args.socket.absolute(), args.data_dir.absolute()
        os.chdir("/")
    config = HubConfig(
        socket=args.socket,
        data_dir=args.data_dir,
        store=args.store_file.read_text().strip() if args.store_file else args.store,
        max_lifetime_s=args.max_lifetime,
        activity_ttl_s=args.activity_ttl,
        retain_s=args.retain,
        replicas=args.replicas,
        nats_ping_s=args.nats_ping,
        nats_ping_misses=args.nats_ping_misses,
        http=args.http,
        notify=not args.no_notify,
        watch_prs=_watch_prs(args.watch_prs),
    )
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            service = await nursery.start(run_hub, config)
            freeze_startup_objects()
            record = start_record.StartRecord(config.data_dir.absolute(), _serve_args(args))
            await nursery.start(keep_start_record, service.registry, config.socket, record)
            if args.ready_fd is not None:
                os.write(args.ready_fd, b"ready\n")
                os.close(args.ready_fd)
            with contextlib.suppress(OSError):  # stderr is the log: its disk may be full
                print(f"hive-rpc hub listening on {config.socket}", file=sys.stderr, flush=True)
            async for signum in signals:
                # Stopped on purpose: no autostart starts this hub again by itself
                # (start_record.py), before the socket goes, so none can race in.
                marked = start_record.mark_stopped(config.socket, signal.Signals(signum).name)
                # The command's logger, as the hub's log has always named it.
                logging.getLogger("hive_rpc.cli").info(
                    "signal %d: shutting down%s",
                    signum,
                    " (stopped on purpose: autostarts leave it stopped)" if marked else "",
                )
                nursery.cancel_scope.cancel()
                break
    return EXIT_OK


async def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the data dir and its store without a hub; ``--recover`` rebuilds a
    damaged store from what can still be read (docs/cli.md)."""
    from hive_rpc.store import doctor

    if args.recover:
        try:
            done = doctor.recover(args.data_dir)
        except doctor.RecoverRefused as e:
            raise CliError(str(e), EXIT_REFUSED) from None
        copied = ", ".join(f"{n} {table}" for table, n in done.copied.items())
        print(f"hive-rpc: recovered {done.new}: copied {copied}")
        if any(done.lost.values()):
            print("hive-rpc: some rows were on damaged pages and could not be read")
        print(f"hive-rpc: the damaged file is kept as {done.kept}")
        return EXIT_OK
    report = doctor.check(args.data_dir, args.socket)
    if args.json:
        print_json(report.to_json())
        return EXIT_OK if report.ok else EXIT_REFUSED
    for finding in report.findings:
        print(f"{finding.level:<4} {strip_controls(finding.text)}")
    for row in report.unreadable:
        print(f"     unreadable prompt {row['id']}: {strip_controls(row['reason'])}")
    for aside in report.quarantined:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(aside["quarantined_at"]))
        print(
            f"     quarantined {aside['source']} {strip_controls(aside['id'])} ({when}): "
            f"{strip_controls(aside['reason'])}"
        )
    return EXIT_OK if report.ok else EXIT_REFUSED
