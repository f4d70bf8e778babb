"""The commands that run a server: the hub (``serve``), the per-session faces
(``epc``, ``lsp``; ``mcp`` is a relay, mcp_relay.py), and ``doctor``, which opens the
store without a hub.

Each imports what it runs inside its function: the hub, pygls and the MCP SDK are
heavy, and the client commands (built into the same parser) must not pay for them.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

import trio

from hive_rpc import start_record
from hive_rpc.cli.exits import EXIT_OK, EXIT_REFUSED, CliError
from hive_rpc.cli.render import print_json
from hive_rpc.client import HubClient, HubUnreachable, start_and_connect
from hive_rpc.core.terminal_text import strip_controls


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
        *("--store", args.store),
        *("--max-lifetime", repr(args.max_lifetime)),
        *("--activity-ttl", repr(args.activity_ttl)),
        *("--retain", repr(args.retain)),
        *("--log-level", args.log_level),
    ]
    if args.http is not None:
        extra += ["--http", args.http]
    if args.no_notify:
        extra.append("--no-notify")
    return extra


async def _serve_detached(args: argparse.Namespace) -> int:
    """``serve --detach``: a hub in its own session that outlives us (and our terminal,
    Emacs, or whatever ran us), as ``emacs --daemon`` does; we return once it listens."""
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
    async with await start_and_connect(args.socket, args.data_dir, _serve_args(args)) as client:
        status = await client.call("hive/status")
    print(f"hive-rpc: listening on {args.socket} (pid {status['pid']})")
    return EXIT_OK


async def cmd_serve(args: argparse.Namespace) -> int:
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
        store=args.store,
        max_lifetime_s=args.max_lifetime,
        activity_ttl_s=args.activity_ttl,
        retain_s=args.retain,
        http=args.http,
        notify=not args.no_notify,
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
                # The command's logger, as the hub's log has always named it.
                logging.getLogger("hive_rpc.cli").info("signal %d: shutting down", signum)
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
