"""A client whose environment was stripped reaches the hub the user runs (issue 29, 4).

MCP hosts (the MCP Python and TypeScript SDKs, Codex) start their servers with little
more than HOME, PATH, SHELL and TERM.  When the user's hub listens under a runtime
dir other than ``/run/user/UID`` (``XDG_RUNTIME_DIR`` set elsewhere: no systemd, a
container, WSL), such a client computed another socket, in the temp dir, and started
a hub there that no editor watches.  The hub's data dir is found from HOME alone,
and its start record there names the hub's socket (start_record.py): a client with
neither HIVE_RPC_SOCKET nor XDG_RUNTIME_DIR, whose own default finds no hub, uses
that socket when it is safe (``paths.recorded_socket``).

Real processes: a hub started by ``hive-rpc status`` in a login shell, then
``hive-rpc status``, ``ask`` and ``hive-rpc mcp`` (through the MCP Python SDK's stdio
client) with only HOME, PATH, SHELL and TERM.  The user's systemd runtime root and the
temp dir are pointed into the test's own tree (test_cli_stripped_env's wrapper), so no
real ``/run/user`` or ``/tmp/hive-rpc-UID`` is touched.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters
from test_cli_stripped_env import WRAPPER

from hive_rpc import cli
from hive_rpc.client import start_record
from hive_rpc.host import paths

STRIPPED_KEEPS = ("HOME", "PATH", "SHELL", "TERM")
"""The least an environment-stripping host passes on."""

FOREIGN_UID = 65534
"""``nobody``: the owner of a directory that is not ours (root can make one)."""


class Login:
    """One user: a home, a runtime dir that is not ``/run/user/UID``, a temp dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.runtime = root / "rt"  # the login shell's XDG_RUNTIME_DIR
        self.run_user = root / "run-user"  # the systemd root: no UID dir of ours in it
        self.tmp = root / "tmp"
        for d in (self.home, self.runtime, self.run_user, self.tmp):
            d.mkdir(mode=0o700)
        self.hub_socket = self.runtime / "hive-rpc" / "hub.sock"
        self.data_dir = self.home / ".local" / "share" / "hive-rpc"

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-c", WRAPPER, str(self.run_user), str(self.tmp), *args]

    def shell_env(self) -> dict[str, str]:
        """A login shell's: everything, with the runtime dir set and the data dir's
        default (XDG_DATA_HOME unset)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HIVE_RPC_", "XDG_")) and k != "TMPDIR"
        }
        env.update(HOME=str(self.home), XDG_RUNTIME_DIR=str(self.runtime))
        return env

    def stripped_env(self) -> dict[str, str]:
        env = {k: os.environ.get(k, "") for k in STRIPPED_KEEPS}
        env["HOME"] = str(self.home)
        return env

    def run(self, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), env=env, capture_output=True, text=True, timeout=60, check=False
        )

    def shell(self, *args: str) -> Any:
        out = self.run(*args, "--json", env=self.shell_env())
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def sockets(self) -> list[Path]:
        return sorted(self.root.rglob("*.sock"))


def _stop_hubs(login: Login, sockets: list[Path]) -> None:
    for sock in sockets:
        out = login.run(
            "status", "--no-start", "--json", "--socket", str(sock), env=login.shell_env()
        )
        if out.returncode == 0:
            os.kill(int(json.loads(out.stdout)["pid"]), signal.SIGTERM)


@pytest.fixture
def login(short_tmp: Path) -> Iterator[Login]:
    user = Login(short_tmp)
    yield user
    _stop_hubs(user, user.sockets())


def test_a_stripped_cli_reaches_the_hub_under_another_runtime_dir(login: Login) -> None:
    hub = login.shell("status")  # the login shell's CLI starts the user's hub
    assert login.sockets() == [login.hub_socket]

    seen = login.run("status", "--json", env=login.stripped_env())
    assert seen.returncode == cli.EXIT_OK, seen.stderr
    assert json.loads(seen.stdout)["pid"] == hub["pid"]
    asked = login.run("ask", "Asked from a stripped shell?", "--json", env=login.stripped_env())
    assert asked.returncode == cli.EXIT_OK, asked.stderr

    pending = login.shell("list")
    assert [p["question"] for p in pending] == ["Asked from a stripped shell?"]
    assert login.sockets() == [login.hub_socket]  # no second hub in the temp dir
    assert login.shell("status")["pid"] == hub["pid"]


async def test_a_stripped_mcp_host_reaches_the_hub_under_another_runtime_dir(
    login: Login,
) -> None:
    hub = login.shell("status")
    server = StdioServerParameters(
        command=login.argv()[0],
        args=login.argv("mcp", "--agent", "stripped")[1:],
        env=login.stripped_env(),
    )
    with trio.fail_after(60):
        async with Client(server, mode="legacy") as c:
            asked = await c.call_tool("hivemind_ask_async", {"question": "Seen by the shell?"})
    assert not asked.is_error, asked.content
    assert asked.structured_content is not None
    pending = login.shell("list")
    assert [(p["id"], p["agent_id"]) for p in pending] == [
        (asked.structured_content["ask_id"], "stripped")
    ]
    assert login.sockets() == [login.hub_socket]
    assert login.shell("status")["pid"] == hub["pid"]


@pytest.fixture
def foreign_dir(short_tmp: Path) -> Iterator[Path]:
    """A directory owned by another user that we can still bind a socket in: made
    and given to ``nobody`` when we are root, else the system temp dir (root's)."""
    if os.getuid() == 0:
        where = short_tmp / "foreign"
        where.mkdir(mode=0o700)
        os.chown(where, FOREIGN_UID, FOREIGN_UID)
        yield where
        return
    where = Path(tempfile.gettempdir())
    if where.stat().st_uid == os.getuid():
        pytest.skip(f"no directory of another user to bind a socket in ({where} is ours)")
    yield where


def test_a_record_naming_a_socket_in_a_directory_not_ours_is_ignored(
    login: Login, foreign_dir: Path
) -> None:
    """A live hub of ours, but its socket in another user's directory (who could swap
    it for their own): a stripped client does not go there."""
    hub_socket = foreign_dir / f"hv-{uuid.uuid4().hex[:8]}.sock"
    try:
        out = login.run("serve", "--detach", "--socket", str(hub_socket), env=login.shell_env())
        assert out.returncode == cli.EXIT_OK, out.stderr
        record = json.loads((login.data_dir / start_record.DATA_DIR_NAME).read_text())
        assert record["socket"] == str(hub_socket)

        seen = login.run("status", "--no-start", "--json", env=login.stripped_env())
        assert seen.returncode == cli.EXIT_UNREACHABLE, seen.stdout
        assert str(hub_socket) not in seen.stderr
    finally:
        _stop_hubs(login, [hub_socket])
        for left in foreign_dir.glob(hub_socket.name + "*"):
            left.unlink(missing_ok=True)


# The checks one by one, in this process: what the record names, against a plain
# listening socket (a hub answers there as far as a connect can tell).


@pytest.fixture
def data_dir(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (paths.SOCKET_ENV, paths.DATA_DIR_ENV, "XDG_RUNTIME_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(short_tmp / "home"))
    monkeypatch.setattr(paths, "USER_RUNTIME_ROOT", short_tmp / "run-user")
    monkeypatch.setattr(tempfile, "tempdir", str(short_tmp / "tmp"))
    (short_tmp / "tmp").mkdir(mode=0o700)
    return paths.private_dir(paths.default_data_dir())


def _listen(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(os.fspath(path))
    sock.listen()
    return sock


def _record(data_dir: Path, sock: Path) -> None:
    start_record.write(sock, start_record.StartRecord(data_dir, []))


@pytest.fixture
def live(short_tmp: Path, data_dir: Path) -> Iterator[Path]:
    """A listening socket in a private directory of ours, named by the data dir's record."""
    where = paths.private_dir(short_tmp / "elsewhere" / "hive-rpc") / paths.SOCKET_NAME
    with _listen(where):
        _record(data_dir, where)
        yield where


def test_the_recorded_socket_is_the_default_when_the_computed_one_has_no_hub(
    live: Path, data_dir: Path
) -> None:
    assert paths.recorded_socket(data_dir) == live
    assert paths.default_socket() == live


def test_a_set_runtime_dir_or_socket_is_not_second_guessed(
    live: Path, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = short_tmp / "rt"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert paths.default_socket() == runtime / "hive-rpc" / paths.SOCKET_NAME
    monkeypatch.setenv(paths.SOCKET_ENV, str(short_tmp / "mine.sock"))
    assert paths.default_socket() == short_tmp / "mine.sock"


def test_a_hub_on_the_computed_socket_wins_over_the_record(live: Path, short_tmp: Path) -> None:
    computed = paths.runtime_dir() / paths.SOCKET_NAME
    with _listen(computed):
        assert paths.default_socket() == computed


def test_a_recorded_socket_in_a_directory_not_ours_is_ignored(
    data_dir: Path, foreign_dir: Path
) -> None:
    where = foreign_dir / f"hv-{uuid.uuid4().hex[:8]}.sock"
    try:
        with _listen(where):
            _record(data_dir, where)
            assert paths.recorded_socket(data_dir) is None
            assert paths.default_socket() == paths.runtime_dir() / paths.SOCKET_NAME
    finally:
        where.unlink(missing_ok=True)


def test_a_recorded_socket_in_an_open_or_linked_directory_is_ignored(
    data_dir: Path, short_tmp: Path
) -> None:
    open_dir = short_tmp / "open"
    open_dir.mkdir()
    open_dir.chmod(0o755)
    with _listen(open_dir / "hub.sock"):
        _record(data_dir, open_dir / "hub.sock")
        assert paths.recorded_socket(data_dir) is None
    private = paths.private_dir(short_tmp / "private")
    (short_tmp / "link").symlink_to(private)
    with _listen(private / "hub.sock"):
        _record(data_dir, short_tmp / "link" / "hub.sock")
        assert paths.recorded_socket(data_dir) is None


@pytest.mark.skipif(os.getuid() != 0, reason="giving a socket to another user needs root")
def test_a_recorded_socket_owned_by_another_user_is_ignored(live: Path, data_dir: Path) -> None:
    os.chown(live, FOREIGN_UID, FOREIGN_UID)
    assert paths.recorded_socket(data_dir) is None


def test_a_recorded_socket_nobody_answers_on_is_ignored(data_dir: Path, short_tmp: Path) -> None:
    where = paths.private_dir(short_tmp / "gone") / paths.SOCKET_NAME
    _listen(where).close()  # the socket file stays; nothing listens
    _record(data_dir, where)
    assert paths.recorded_socket(data_dir) is None


def test_a_record_others_could_have_written_is_ignored(live: Path, data_dir: Path) -> None:
    record = data_dir / start_record.DATA_DIR_NAME
    record.chmod(0o644)
    assert paths.recorded_socket(data_dir) is None
    record.chmod(0o600)
    data_dir.chmod(0o755)
    assert paths.recorded_socket(data_dir) is None
    data_dir.chmod(0o700)
    assert paths.recorded_socket(data_dir) == live
