"""The guard: ends an ACP agent's process group if the proxy that started it dies
without ending it itself.

Clients end the agent they started with SIGKILL as often as not (Emacs's
``delete-process``, a Rust ``Child::kill``), and a proxy killed so can do nothing:
its agent, in a process group of its own, would live on with its children and MCP
servers.  So the proxy starts this small process beside it, in a session of its own
(a signal to the proxy's group does not reach it), with a pipe the proxy holds open.
The proxy that ends the agent itself writes ``done`` before closing the pipe, and
the guard exits; a bare end of the pipe means the proxy is gone, and the guard sends
the group SIGTERM, then SIGKILL once it is empty or ``GRACE_S`` has passed.

Run as ``python -m hive_rpc.acp.guard PGID``; imports nothing of hive_rpc.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

GRACE_S = 5.0
"""How long the group has between SIGTERM and SIGKILL (the proxy's STOP_GRACE_S)."""
POLL_S = 0.1
"""How often the guard looks whether the group is empty: it has no event to wait on
(the group's members are no children of its)."""
DONE = b"done"


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member that is not ours any more: not ours to end
        return False
    return True


def end_group(pgid: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM to the group, then SIGKILL once it is empty or ``grace_s`` passed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        os.killpg(pgid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    pgid = int(argv[0])
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    said = sys.stdin.buffer.read()  # until the proxy closes the pipe, or dies
    if said.strip() != DONE:
        end_group(pgid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
