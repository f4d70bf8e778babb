"""What a pane started for a spawned child runs first (``python -m
hive_rpc.client.spawned_pane NAME SOCKET DATA_DIR LABEL CHANNEL COMMAND...``; the
hub's ``ling/spawn``, and ``hive-rpc spawn`` through cli/spawned_pane.py): register
the pane from inside it as ling NAME, tell whoever opened it on its ``tmux wait-for``
channel, then ``exec`` COMMAND in its place, so the process the ling approves is the
child agent itself (cli/spawn.py says why).

In the client layer, not the CLI's, because the hub (agora/spawning.py) names it in
the panes it opens and imports only downward (docs/design.md, "Layers").  A module
of its own: ``python -m`` of a module its package imported warns in the new pane
(runpy's RuntimeWarning, the first thing the human would see there).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import trio

from hive_rpc.client.async_client import connect_or_start
from hive_rpc.core.errors import HiveError

PANE_MODULE = "hive_rpc.client.spawned_pane"
REFUSED = 1
"""The exit status when the pane could not register or run the command: the CLI's
``EXIT_REFUSED``, which this layer does not import."""


def pane_argv(
    name: str,
    hub_socket: str,
    data_dir: str,
    label: str,
    channel: str,
    command: list[str],
    *,
    module: str = PANE_MODULE,
) -> list[str]:
    """What the new pane runs first: ``module`` (this one, or the CLI's entry to it)."""
    return [
        sys.executable, "-m", module, name, hub_socket, data_dir, label, channel, *command,
    ]  # fmt: skip


def tmux_address_here() -> str | None:
    """This pane as a ling address: ``$TMUX_PANE``, plus the tmux server's socket from
    ``$TMUX`` after an ``@`` so a hub started outside tmux finds it; None outside tmux."""
    pane = os.environ.get("TMUX_PANE")
    if not pane:
        return None
    server = os.environ.get("TMUX", "").split(",")[0]
    return f"{pane}@{server}" if server else pane


async def register_here(name: str, socket: Path, data_dir: Path, label: str) -> str | None:
    """Register this pane as ling ``name``; None when done, else why not."""
    address = tmux_address_here()
    if address is None:
        return "this is not a tmux pane ($TMUX_PANE is not set)"
    params: dict[str, Any] = {
        "name": name,
        "kind": "tmux",
        "address": address,
        "then_exec": True,  # this process execs the agent next: the hub binds it then
    }
    if label:
        params["label"] = label
    try:
        async with await connect_or_start(socket, data_dir, start=False, timeout_s=30) as c:
            result = await c.call("ling/register", params)
    except (HiveError, OSError) as e:
        return str(e)
    if result.get("state") != "registered":
        return f"the hub did not take it as registered from inside: {result.get('state')}"
    return None


def pane_main(argv: list[str]) -> int:
    """What the new pane runs: register it, tell whoever opened it (its wait-for
    channel), then become the command.  On failure it says why and waits for Enter,
    so the human can read it before the pane closes."""
    name, socket, data_dir, label, channel, *command = argv
    try:
        failed = trio.run(register_here, name, Path(socket), Path(data_dir), label)
    except BaseException as e:  # anything: the waiting opener must hear back
        failed = f"{type(e).__name__}: {e}"
    os.spawnvp(os.P_WAIT, "tmux", ["tmux", "wait-for", "-S", channel])
    if failed is not None:
        print(f"hive-rpc spawn: could not register this pane as {name}: {failed}")
        print("Press Enter to close it.")
        sys.stdin.readline()
        return REFUSED
    try:
        os.execvp(command[0], command)
    except OSError as e:
        print(f"hive-rpc spawn: cannot run {command[0]}: {e.strerror or e}")
        print("Press Enter to close this pane.")
        sys.stdin.readline()
        return REFUSED


if __name__ == "__main__":
    raise SystemExit(pane_main(sys.argv[1:]))
