"""scripts/install-code-server.sh: once installed it answers at once with the same path
(the marker), and an unreachable npm registry is exit 3 with the reason on stdout (what
the real-editor tests skip with), leaving nothing behind."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from vscode_session import CODE_SERVER_VERSION, INSTALL_SCRIPT


def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(INSTALL_SCRIPT)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_installed_it_answers_with_the_same_path(code_server_bin: Path, tmp_path: Path) -> None:
    home = code_server_bin.parent.parent
    assert (home / ".hive-rpc-installed").is_file()
    again = run({"HIVE_CODE_SERVER_HOME": str(home)})
    assert (again.returncode, again.stdout.strip()) == (0, str(code_server_bin)), again.stderr
    assert again.stderr == ""  # nothing done: no progress to report
    version = subprocess.run(
        [str(code_server_bin), "--version"],
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)},  # it writes a config there
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert f"{CODE_SERVER_VERSION} " in version.stdout, version


def test_an_unreachable_registry_is_exit_3_with_the_reason(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "code-server"
    done = run({"HIVE_CODE_SERVER_HOME": str(target), "npm_config_registry": "http://127.0.0.1:9/"})
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith("the npm registry is unreachable"), done.stdout
    assert "127.0.0.1:9" in done.stdout
    assert not target.exists()
    assert [p.name for p in target.parent.iterdir()] == [".code-server.lock"]  # no temp dir
