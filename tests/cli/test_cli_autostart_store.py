"""Autostart brings back the hub the user configured, not a default one.

A hub on a real nats-server is killed -9; the next CLI command starts a hub again.
It must be a NATS hub on the same store (it used to come back as a SQLite hub,
silently leaving the shared store) whether the client names the data dir by hand
or the socket's start record is gone (the runtime dir is emptied at logout and
reboot); and with nats-server down it must refuse, saying why, not fall back.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from cli_support import Shell
from nats_support import NatsServer

from hive_rpc.client.start_record import DATA_DIR_NAME, record_path


def killed(sh: Shell) -> None:
    """kill -9 the hub: no clean shutdown, its socket and records stay behind."""
    sh.stop(signal.SIGKILL)


def status(sh: Shell, *args: str) -> dict[str, object]:
    out = sh.run("status", "--json", *args)
    assert out.returncode == 0, out.stderr
    record: dict[str, object] = json.loads(out.stdout)
    return record


def test_a_crashed_nats_hub_comes_back_on_nats(
    sh: Shell, nats_server: NatsServer, short_tmp: Path
) -> None:
    home = short_tmp / "home"
    home.mkdir(mode=0o700)
    started = sh.run("serve", "--detach", "--store", nats_server.url)
    assert started.returncode == 0, started.stderr
    assert status(sh, "--no-start")["store"] == "nats"
    killed(sh)

    # the data dir given by hand (the same as the hub's; the default is another)
    login_env = sh.env
    sh.env = {k: v for k, v in login_env.items() if k != "HIVE_RPC_DATA_DIR"}
    sh.env["HOME"] = str(home)
    again = status(sh, "--data-dir", str(sh.data_dir))
    assert (again["store"], again["data_dir"]) == ("nats", str(sh.data_dir))
    killed(sh)
    sh.env = login_env

    # the socket's record gone with the runtime dir: the data dir's own tells
    record_path(sh.socket).unlink()
    assert status(sh)["store"] == "nats"
    assert (sh.data_dir / DATA_DIR_NAME).exists()
    killed(sh)

    # nats-server down: no hub rather than a SQLite one, and the reason
    nats_server.kill()
    refused = sh.run("status", "--json")
    assert refused.returncode == 4, refused.stdout
    assert f"could not start a hub on {sh.socket}" in refused.stderr
    assert "nats" in refused.stderr.lower()
    assert not (sh.data_dir / "prompts.sqlite3").exists()
    assert sh.run("status", "--no-start").returncode == 4


def test_a_data_dir_given_on_purpose_keeps_its_own_store(sh: Shell, short_tmp: Path) -> None:
    """One data dir's record does not decide for another."""
    started = sh.run("serve", "--detach", "--store", "memory")
    assert started.returncode == 0, started.stderr
    killed(sh)
    other = short_tmp / "other"
    os.mkdir(other, 0o700)
    assert status(sh, "--data-dir", str(other))["store"] == "sqlite"
