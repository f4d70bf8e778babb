"""One-shot commands on the blocking client (sync_client.py): no trio in the process.

Why: ``hive-rpc status`` is one socket round trip, and importing trio cost more
than the trip (docs/benchmarks.md, CLI cold start).  Here are ``status`` and
``client_for``, the connection every one-shot command (commands.py, decisions.py)
opens; the dispatcher in cli/__init__.py runs a plain function as it is, a coroutine
function (``spawn``, ``serve``...) under ``trio.run``.
"""

from __future__ import annotations

import argparse
import sys

from hive_rpc.cli.exits import EXIT_OK
from hive_rpc.cli.parser import HUB_TIMEOUT_S
from hive_rpc.cli.render import print_json, status_text
from hive_rpc.client.sync_client import SyncHubClient, connect_or_start
from hive_rpc.core.errors import HubUnreachable


def hub_timeout(args: argparse.Namespace) -> float:
    seconds: float = getattr(args, "hub_timeout", HUB_TIMEOUT_S)
    return seconds


def client_for(args: argparse.Namespace) -> SyncHubClient:
    """A connection to the hub, starting one unless ``--no-start``."""
    return connect_or_start(
        args.socket, args.data_dir, start=not args.no_start, timeout_s=hub_timeout(args)
    )


def cmd_status(args: argparse.Namespace) -> int:
    try:
        hub, started = SyncHubClient.connect(args.socket), False
        hub.timeout_s = hub_timeout(args)
    except HubUnreachable:  # start one (or say why not): but say so, one asked for a status
        hub, started = client_for(args), True
    with hub as client:
        status = client.call("hive/status")
    if started:
        print(
            f"hive-rpc: no hub was running; started one (stop it with `kill {status['pid']}`; "
            "`hive-rpc status --no-start` checks without starting one)",
            file=sys.stderr,
        )
    if args.json:
        print_json(status)
    else:
        print(status_text(status))
    return EXIT_OK
