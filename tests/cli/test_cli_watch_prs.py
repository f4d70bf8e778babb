"""``hive-rpc serve --watch-prs/--no-watch-prs``: the hub watches its lings' pull
requests when gh is on its PATH unless told not to, the log says whether it does, and
a detached or restarted hub keeps the choice given.

GitHub cannot be reached here: the ``gh`` on PATH is the stand-in of
tests/agora/gh_standin.py (no ling is registered, so it is never even run)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cli_support import Shell

from hive_rpc import cli
from hive_rpc.host.paths import LOG_NAME

STANDIN = Path(__file__).parents[1] / "agora" / "gh_standin.py"
WATCHING = "pull requests: watching the branches of lings that have a parent, with gh"


def with_gh(sh: Shell, root: Path) -> None:
    """Put the stand-in gh first on the hub's PATH."""
    (root / "bin").mkdir()
    gh = root / "bin" / "gh"
    gh.write_text(f'#!/bin/sh\nexec {sys.executable} {STANDIN} "$@"\n')
    gh.chmod(0o755)
    sh.env["PATH"] = f"{root / 'bin'}:{os.environ['PATH']}"
    sh.env["GH_STANDIN_DIR"] = str(root)


def without_gh(sh: Shell) -> None:
    """The hub's PATH without any gh (this machine has none; a developer's may)."""
    dirs = os.environ["PATH"].split(":")
    sh.env["PATH"] = ":".join(d for d in dirs if not (Path(d) / "gh").exists())


def start(sh: Shell, *args: str) -> str:
    """Start a hub detached with ``args``; the lines it logged."""
    log = sh.data_dir / LOG_NAME
    offset = log.stat().st_size if log.exists() else 0
    out = sh.run("serve", "--detach", "--store", "memory", "--no-notify", *args)
    assert out.returncode == cli.EXIT_OK, out.stderr
    logged = log.read_text()[offset:]
    sh.stop()
    return logged


def test_a_hub_watches_pull_requests_when_gh_is_on_path(sh: Shell, short_tmp: Path) -> None:
    with_gh(sh, short_tmp)
    assert WATCHING in start(sh)
    logged = start(sh, "--no-watch-prs")
    assert WATCHING not in logged
    assert "pull requests: not watched (--no-watch-prs)" in logged


def test_a_hub_without_gh_does_not_watch_unless_told(sh: Shell) -> None:
    without_gh(sh)
    assert WATCHING not in start(sh)
    logged = start(sh, "--watch-prs")
    assert WATCHING in logged
    assert "--watch-prs, but gh is not on PATH" in logged


def test_restart_keeps_the_choice(sh: Shell, short_tmp: Path) -> None:
    with_gh(sh, short_tmp)
    assert sh.run("serve", "--detach", "--store", "memory", "--no-watch-prs").returncode == 0
    record = json.loads(sh.socket.with_name(sh.socket.name + ".start.json").read_text())
    assert "--no-watch-prs" in record["serve_args"]
    log = sh.data_dir / LOG_NAME
    offset = log.stat().st_size
    assert sh.run("restart").returncode == cli.EXIT_OK
    logged = log.read_text()[offset:]
    assert "pull requests: not watched (--no-watch-prs)" in logged
    assert WATCHING not in logged


def test_status_says_how_the_watch_goes(sh: Shell, short_tmp: Path) -> None:
    """``hive-rpc status`` is where a person looks when an event did not come: it
    says what the watch watches, or nothing when the hub does not watch."""
    with_gh(sh, short_tmp)
    assert sh.run("serve", "--detach", "--store", "memory", "--no-notify").returncode == 0
    try:
        shown = sh.run("status")
        assert "\nprs      0 branches watched, 0 open PRs\n" in shown.stdout, shown.stdout
        as_json = json.loads(sh.run("status", "--json").stdout)
        assert as_json["pull_requests"] == {
            "watching": 0, "open": 0, "skipped": {}, "trouble": None
        }  # fmt: skip
    finally:
        sh.stop()
    assert sh.run("serve", "--detach", "--store", "memory", "--no-watch-prs").returncode == 0
    try:
        assert "prs " not in sh.run("status").stdout
        assert json.loads(sh.run("status", "--json").stdout)["pull_requests"] is None
    finally:
        sh.stop()
