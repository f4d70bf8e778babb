"""The wheel is what users get: build it, install it into a fresh virtualenv outside the
source tree, and run the hub and ``hive-rpc mcp`` from there.

Every other test runs against the editable install, which reads the package's files
straight from the source tree and so cannot see a file the wheel leaves out (the
dashboard's page and script once were).

How the fresh venv gets its dependencies, honestly: it is a plain ``venv`` (no system
site-packages) holding only the wheel, installed with ``--no-deps --no-index``; a
``.pth`` file then *appends* the test venv's site-packages directory to its path, so
trio, mcp, hypercorn ... come from there without downloading anything.  A directory
named in a ``.pth`` is only appended: the ``.pth`` files inside it (among them the
editable install's finder, which points at the source tree) are not run, and the
wheel's own ``hive_rpc`` comes first on the path.  Each test checks that the code it
runs is the wheel's copy (``hive_rpc.__file__`` inside the new venv), and runs with
its working directory outside the tree and no ``PYTHONPATH``.

The wheel is built from a copy of the package's files (``pip wheel --no-deps
--no-build-isolation``, with the setuptools the test extras pin), so the build leaves
nothing in the tree and needs no network.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hive_rpc"
SOURCE_FILES = ["pyproject.toml", "README.md", "LICENSE"]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    outside: Path
    """A scratch directory outside the source tree, the cwd of every command."""

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVE_RPC_")}
        env.pop("PYTHONPATH", None)
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        return env

    def run(self, *argv: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [os.fspath(a) for a in argv],
            cwd=self.outside,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _package_files() -> set[str]:
    """Every file of the package directory as a wheel path (hive_rpc/...), bytecode aside."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    scratch = Path(tempfile.mkdtemp(prefix="hv-wheel-", dir="/tmp"))
    try:
        source = scratch / "src"
        source.mkdir()
        for name in SOURCE_FILES:
            shutil.copy2(ROOT / name, source / name)
        shutil.copytree(
            PACKAGE, source / "hive_rpc", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        wheels = scratch / "wheels"
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        built = subprocess.run(
            [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, source],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert built.returncode == 0, built.stderr
        (wheel,) = wheels.glob("hive_rpc-*.whl")

        venv = scratch / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
        python = venv / "bin" / "python"
        put = subprocess.run(
            [*pip, "--python", python, "install", "--no-deps", "--no-index", wheel],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert put.returncode == 0, put.stderr
        site = Path(
            subprocess.run(
                [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        # The dependencies, from the test venv (see the module docstring).
        (site / "zz-test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        outside = scratch / "elsewhere"
        outside.mkdir()
        yield Installed(wheel, venv, site, outside)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_the_wheel_holds_every_file_of_the_package(installed: Installed) -> None:
    """What the code opens at run time (the dashboard's files through
    importlib.resources, py.typed for type checkers) is package data: every file under
    hive_rpc/ must be in the wheel's RECORD."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        (record_name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")]
        record = {line.split(",", 1)[0] for line in wheel.read(record_name).decode().splitlines()}
    missing = sorted(_package_files() - record)
    assert not missing, f"files of hive_rpc/ missing from the wheel: {missing}"
    assert "hive_rpc/faces/dashboard/index.html" in record


def test_the_installed_package_is_the_wheels_copy(installed: Installed) -> None:
    shown = installed.run(
        installed.bin / "python", "-c", "import hive_rpc, mcp; print(hive_rpc.__file__)"
    )
    assert shown.returncode == 0, shown.stderr
    assert Path(shown.stdout.strip()).is_relative_to(installed.site_packages)
    version = installed.run(installed.bin / "hive-rpc", "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("hive-rpc ")


@pytest.fixture
def hub(installed: Installed) -> Iterator[tuple[Path, Path, dict[str, object]]]:
    """``hive-rpc serve --http 127.0.0.1:0`` from the installed wheel; yields its socket,
    data dir and ``hive-rpc status --json``."""
    home = Path(tempfile.mkdtemp(prefix="hv-", dir="/tmp"))
    socket, data = home / "run" / "hub.sock", home / "data"
    read_fd, write_fd = os.pipe()
    log = (home / "hub.log").open("wb")
    proc = subprocess.Popen(
        [
            installed.bin / "hive-rpc",
            "serve",
            "--socket",
            socket,
            "--data-dir",
            data,
            "--http",
            "127.0.0.1:0",
            "--no-notify",
            "--ready-fd",
            str(write_fd),
        ],
        cwd=installed.outside,
        env=installed.env(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        pass_fds=[write_fd],
    )
    os.close(write_fd)
    try:
        # The hub writes "ready" once it serves, or closes the pipe by dying.
        with os.fdopen(read_fd, "rb") as ready:
            said = ready.read()
        assert said == b"ready\n", (home / "hub.log").read_text()
        status = installed.run(
            installed.bin / "hive-rpc", "status", "--json", "--no-start", "--socket", socket
        )
        assert status.returncode == 0, status.stderr
        yield socket, data, json.loads(status.stdout)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def _get(url: str, path: str, headers: dict[str, str]) -> tuple[int, str, bytes]:
    """GET ``path``: the status, the Set-Cookie header and the body."""
    conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("set-cookie", ""), response.read()
    finally:
        conn.close()


def test_the_installed_hub_serves_the_dashboard(
    installed: Installed, hub: tuple[Path, Path, dict[str, object]]
) -> None:
    """As docs/dashboard.md says: open /dashboard?token=TOKEN with the human's token
    (the approver token file), get a cookie and a redirect, then the page and its
    script and style sheet with the cookie; the agents' MCP token signs in to nothing."""
    _, _, status = hub
    url = str(status["http_url"])
    agents = Path(str(status["token_file"])).read_text().strip()
    code, set_cookie, body = _get(url, f"/dashboard?token={agents}", {})
    assert (code, set_cookie) == (403, ""), body
    token = Path(str(status["approver_token_file"])).read_text().strip()

    code, set_cookie, body = _get(url, f"/dashboard?token={token}", {})
    assert code == 303, body
    cookie = set_cookie.split(";", 1)[0]
    assert cookie.startswith("hive_human=")

    code, _, body = _get(url, "/dashboard", {"Cookie": cookie})
    assert code == 200, body
    assert b"app.js" in body
    assert b"style.css" in body
    # Every file the page needs (app.js imports the other modules) came with the wheel.
    assets = sorted(p.name for p in (PACKAGE / "faces" / "dashboard").iterdir())
    assert {"app.js", "dom.js", "sessions.js", "style.css"} <= set(assets)
    for name in (n for n in assets if n != "index.html"):
        code, _, body = _get(url, f"/dashboard/{name}", {"Cookie": cookie})
        assert code == 200, name
        assert body == (PACKAGE / "faces" / "dashboard" / name).read_bytes()


async def test_the_installed_mcp_server_answers_initialize(
    installed: Installed, hub: tuple[Path, Path, dict[str, object]]
) -> None:
    socket, data, _ = hub
    params = StdioServerParameters(
        command=os.fspath(installed.bin / "hive-rpc"),
        args=["mcp", "--socket", os.fspath(socket), "--data-dir", os.fspath(data), "--no-start"],
        env=installed.env(),
        cwd=installed.outside,
    )
    with trio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            assert client.server_info is not None
            assert client.server_info.name == "hive-rpc"
            assert client.protocol_version == "2025-11-25"
            listed = await client.list_tools()
            assert "hivemind_ask_async" in {t.name for t in listed.tools}
            asked = await client.call_tool("hivemind_ask_async", {"question": "Wheel?"})
            assert not asked.is_error, asked.content
