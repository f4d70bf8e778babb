"""What a pane started by ``hive-rpc spawn`` or by the hub's ``ling/spawn`` (MCP
``spawn_subtree``, once the human approved it) runs first (``python -m
hive_rpc.cli.spawned_pane NAME SOCKET DATA_DIR LABEL CHANNEL COMMAND...``,
host/spawn_pane.py's ``pane_argv``): register the pane from inside it as ling NAME,
tell whoever opened it on its ``tmux wait-for`` channel, then ``exec`` COMMAND in its
place (cli/spawn.py says why).

A module of its own, not ``spawn``'s ``__main__``: the CLI's parser imports ``spawn``,
and ``python -m`` of a module already imported by its package warns in the new pane
(runpy's RuntimeWarning, the first thing the human saw there).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import trio

from hive_rpc.cli.exits import EXIT_REFUSED, CliError
from hive_rpc.client.async_client import connect_or_start
from hive_rpc.core.errors import HiveError


async def _register_here(name: str, socket: Path, data_dir: Path, label: str) -> str | None:
    """Register this pane as ling ``name``; None when done, else why not."""
    from hive_rpc.cli.commands import _tmux_address

    params: dict[str, Any] = {
        "name": name,
        "kind": "tmux",
        "address": _tmux_address(None),
        "then_exec": True,  # this process execs the agent next: the hub binds it then
    }
    if label:
        params["label"] = label
    try:
        async with await connect_or_start(socket, data_dir, start=False, timeout_s=30) as c:
            result = await c.call("ling/register", params)
    except (HiveError, OSError, CliError) as e:
        return str(e)
    if result.get("state") != "registered":
        return f"the hub did not take it as registered from inside: {result.get('state')}"
    return None


def pane_main(argv: list[str]) -> int:
    """What the new pane runs: register it, tell ``spawn`` (its wait-for channel),
    then become the command.  On failure it says why and waits for Enter, so the
    human can read it before the pane closes."""
    name, socket, data_dir, label, channel, *command = argv
    try:
        failed = trio.run(_register_here, name, Path(socket), Path(data_dir), label)
    except BaseException as e:  # anything: the waiting spawn must hear back
        failed = f"{type(e).__name__}: {e}"
    os.spawnvp(os.P_WAIT, "tmux", ["tmux", "wait-for", "-S", channel])
    if failed is not None:
        print(f"hive-rpc spawn: could not register this pane as {name}: {failed}")
        print("Press Enter to close it.")
        sys.stdin.readline()
        return EXIT_REFUSED
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"hive-rpc spawn: cannot run {command[0]}: {e.strerror or e}")
        print("Press Enter to close this pane.")
        sys.stdin.readline()
        return EXIT_REFUSED


if __name__ == "__main__":
    raise SystemExit(pane_main(sys.argv[1:]))
