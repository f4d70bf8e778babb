"""An MCP host that strips the environment reaches the hub the shell's CLI uses.

The TypeScript MCP SDK's stdio transport gives the servers it spawns only HOME,
LOGNAME, PATH, SHELL, TERM and USER.  Without XDG_RUNTIME_DIR, ``hive-rpc mcp``
used to compute another default socket (in the temp dir) than the CLI run from a
login shell (in the runtime dir), start a second hub there, and leave the agent's
questions where no editor looked.

The user's systemd runtime dir (``/run/user/UID``, what XDG_RUNTIME_DIR names in a
login session) is played by a private directory: ``paths.USER_RUNTIME_ROOT`` and the
temp dir are pointed into the test's own tree by a ``python -c`` wrapper, so no real
runtime dir or /tmp is touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters

HOST_KEEPS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""What the TypeScript SDK's stdio transport passes on (getDefaultEnvironment)."""

WRAPPER = """\
import sys, tempfile
from pathlib import Path
import hive_rpc.host.paths
hive_rpc.host.paths.USER_RUNTIME_ROOT = Path(sys.argv[1])
tempfile.tempdir = sys.argv[2]
from hive_rpc.cli import main
sys.exit(main(sys.argv[3:]))
"""


class Machine:
    """One user's login: a home, a systemd-style runtime root, a temp dir."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.run_user = root / "run-user"
        self.runtime = self.run_user / str(os.getuid())
        self.tmp = root / "tmp"
        for d in (self.home, self.runtime, self.tmp):
            d.mkdir(parents=True, mode=0o700)
        self.runtime.chmod(0o700)

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-c", WRAPPER, str(self.run_user), str(self.tmp), *args]

    def login_env(self) -> dict[str, str]:
        """A login shell's environment: everything, with the XDG dirs set."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVE_RPC_")}
        env.update(
            HOME=str(self.home),
            XDG_RUNTIME_DIR=str(self.runtime),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
        )
        return env

    def host_env(self) -> dict[str, str]:
        """What an environment-stripping MCP host gives its servers."""
        env = {k: os.environ.get(k, "x") for k in HOST_KEEPS}
        env["HOME"] = str(self.home)
        return env

    def cli(self, *args: str) -> Any:
        out = subprocess.run(
            self.argv(*args, "--json"),
            env=self.login_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def hub_sockets(self) -> list[Path]:
        return sorted(p for p in (self.runtime, self.tmp) for p in p.rglob("*.sock"))


@pytest.fixture
def machine(short_tmp: Path) -> Any:
    m = Machine(short_tmp)
    yield m
    for sock in m.hub_sockets():  # the hubs this test started, on either socket
        out = subprocess.run(
            m.argv("status", "--no-start", "--json", "--socket", str(sock)),
            env=m.login_env(),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if out.returncode == 0:
            os.kill(int(json.loads(out.stdout)["pid"]), signal.SIGTERM)


async def test_a_stripped_mcp_host_reaches_the_shells_hub(machine: Machine) -> None:
    shell_hub = machine.cli("status")  # the CLI in a login shell starts the hub
    server = StdioServerParameters(
        command=machine.argv()[0],
        args=[*machine.argv("mcp", "--agent", "stripped")[1:]],
        env=machine.host_env(),
    )
    with trio.fail_after(60):
        async with Client(server, mode="legacy") as c:
            asked = await c.call_tool("hivemind_ask_async", {"question": "Seen by the shell?"})
    assert not asked.is_error, asked.content
    assert asked.structured_content is not None
    pending = machine.cli("list")
    assert [(p["id"], p["agent_id"]) for p in pending] == [
        (asked.structured_content["ask_id"], "stripped")
    ]
    assert machine.cli("status")["pid"] == shell_hub["pid"]  # one hub, not two
    assert machine.hub_sockets() == [machine.runtime / "hive-rpc" / "hub.sock"]
