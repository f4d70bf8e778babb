"""What ``hive-rpc mcp`` imports (issue 18): every agent session starts one.  It
imported the MCP SDK and trio (0.7-1.4 s before ``initialize`` was answered,
bench/mcp_cold_start.py); it is now a thin stdio relay (mcp_relay.py) to an MCP
session served in the hub, and its process loads neither.

The probe runs ``main(["mcp", ...])`` in a fresh interpreter against a real hub, has
it answer an ``initialize``, closes stdin and prints, to stderr at exit (stdout is the
MCP stream), the heavy modules found in ``sys.modules``.  Before the relay it found
``trio`` and ``mcp`` (the probe test of commit 8caf46e), so it is no blind spot.
"""

from __future__ import annotations

import json
import subprocess
import sys

from cli_support import Shell
from mcp_support import initialize_request

HEAVY = (
    "trio", "mcp", "mcp_types", "pydantic", "jeepney", "hive_rpc.hub", "hive_rpc.faces",
    "hive_rpc.client.sync_client", "hive_rpc.client.hub_start", "socket",
)  # fmt: skip
"""Modules a relay never needs: the event loop, the SDK and its models, D-Bus, the hub;
and, with a hub answering, the blocking client and the ``socket`` module (the relay
opens its session with ``_socket``, mcp_relay.py ``_session``: about 2 MiB less)."""

PROBE = """
import atexit, json, sys
heavy = json.loads(sys.argv[1])
atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules if m in heavy)),
                              file=sys.stderr))
from hive_rpc.cli import main
sys.exit(main(sys.argv[2:]))
"""

INITIALIZE = initialize_request("probe")


def _mcp_session_imports(sh: Shell) -> tuple[dict[str, object], list[str]]:
    """The ``initialize`` answer and the heavy modules the process had loaded."""
    argv = [sys.executable, "-c", PROBE, json.dumps(HEAVY), "mcp", "--no-start"]
    argv += ["--socket", str(sh.socket), "--agent", "probe"]
    proc = subprocess.Popen(
        argv, env=sh.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(30)
    proc.stdout.close()
    proc.stderr.close()
    return answer, json.loads(err.decode().strip().splitlines()[-1])


def _session(sh: Shell) -> tuple[dict[str, object], list[str]]:
    assert sh.run("status").returncode == 0  # autostarts the hub the probe talks to
    return _mcp_session_imports(sh)


def test_mcp_answers_initialize_without_the_sdk_or_trio(sh: Shell) -> None:
    answer, loaded = _session(sh)
    assert answer["id"] == 1
    assert "result" in answer
    assert loaded == []


def test_the_relay_makes_agent_names_by_the_agents_rule() -> None:
    """The relay's suffix is core/agents.py's, copied so as not to load that module:
    6 hex digits (the first an x when all were decimal), never all decimal
    (claimed_process reads those as a pid)."""
    from hive_rpc.cli.mcp_relay import _name_suffix
    from hive_rpc.core.agents import claimed_process

    for _ in range(2000):
        suffix = _name_suffix()
        assert len(suffix) == 6
        assert all(c in "0123456789abcdef" for c in suffix.removeprefix("x"))
        assert not suffix.isdigit()
        assert claimed_process(f"codex-{suffix}") is None
