"""The README's first command, run verbatim as a new user runs it: from a copy of the
source tree, with a HOME of its own, it makes the virtualenv, installs the package
and its dependencies with pip (so it needs the package index, or the machine's pip
configuration, as any user's install does), links ``hive-rpc`` into ``~/.local/bin``
and runs the hub in the foreground on its default SQLite store.

It runs once with the ``python3`` first on PATH (on this kind of machine, pyenv's)
and once with Debian's own ``/usr/bin/python3``, whose pip refuses to install into
the system (``externally-managed-environment``): the virtualenv is what makes the one
line work on a stock Debian or Ubuntu Python as well.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from disk_support import short_tmp_dir

ROOT = Path(__file__).resolve().parents[2]
SOURCE_FILES = ["pyproject.toml", "README.md", "LICENSE"]
DEBIAN_PYTHON = Path("/usr/bin/python3")


def first_command() -> str:
    """The one line of the README's first ``sh`` block."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    lines = blocks[0].strip().splitlines()
    assert len(lines) == 1, f"the README's first command is not one line: {lines}"
    return lines[0]


def test_the_first_command_is_one_line_that_installs_then_serves() -> None:
    command = first_command()
    assert "pip install ." in command
    assert command.endswith("hive-rpc serve")


def _interpreters() -> list[str]:
    found = ["python3 on PATH"]
    which = shutil.which("python3")
    if DEBIAN_PYTHON.exists() and which and Path(which).resolve() != DEBIAN_PYTHON.resolve():
        found.append("Debian's /usr/bin/python3")
    return found


@pytest.fixture
def home() -> Iterator[Path]:
    with short_tmp_dir("hv-readme-") as path:
        yield path


@pytest.mark.slow
@pytest.mark.parametrize("interpreter", _interpreters())
def test_the_first_command_installs_and_runs_the_hub(home: Path, interpreter: str) -> None:
    source = home / "hive_rpc-src"
    source.mkdir()
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "hive_rpc", source / "hive_rpc", ignore=shutil.ignore_patterns("__pycache__")
    )
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVE_RPC_", "VIRTUAL_ENV"))}
    env.pop("PYTHONPATH", None)
    env |= {
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        # No session bus: the hub would otherwise notify this machine's desktop.
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={home}/no-bus",
    }
    if interpreter.startswith("Debian"):
        env["PATH"] = f"/usr/bin:/bin{os.pathsep}{env['PATH']}"
    log = (home / "install.log").open("w")
    user = subprocess.Popen(
        ["bash", "-c", first_command()],
        cwd=source,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    hive_rpc = home / ".local" / "bin" / "hive-rpc"
    try:
        status = None
        end = time.monotonic() + 600  # a cold pip install downloads every dependency
        while user.poll() is None and time.monotonic() < end:
            if hive_rpc.exists():
                status = subprocess.run(
                    [hive_rpc, "status", "--no-start"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=False,
                )
                if status.returncode == 0:
                    break
            time.sleep(0.5)
        assert user.poll() is None, (home / "install.log").read_text()[-3000:]
        assert status is not None
        assert status.returncode == 0, (home / "install.log").read_text()[-3000:]
        venv = home / ".local" / "share" / "hive-rpc" / "venv"
        assert hive_rpc.resolve() == (venv / "bin" / "hive-rpc").resolve()
        assert f"socket   {runtime / 'hive-rpc' / 'hub.sock'}" in status.stdout
        assert f"data dir {home / '.local' / 'share' / 'hive-rpc'} (sqlite store)" in status.stdout
        # The installed copy runs, not this checkout's.
        where = subprocess.run(
            [venv / "bin" / "python", "-c", "import hive_rpc; print(hive_rpc.__file__)"],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert where.startswith(str(venv)), where
        asked = subprocess.run(
            [hive_rpc, "ask", "Installed?", "--no-start"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        listed = subprocess.run(
            [hive_rpc, "list", "--no-start"], env=env, capture_output=True, text=True, check=True
        ).stdout
        assert asked in listed
    finally:
        os.killpg(user.pid, signal.SIGTERM)
        try:
            user.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(user.pid, signal.SIGKILL)
            user.wait()
        log.close()
