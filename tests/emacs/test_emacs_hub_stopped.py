"""The hub the human stopped stays stopped; the hub that crashed comes back as it was
(issue 27, section 9).

A real `emacs -nw -Q` under tmux with `hive-rpc-mode` and the package's default
`hive-rpc-program`, and a real hub started by the human with `--http` (the
dashboard).  It used to be that Emacs's reconnect loop restarted any hub within 2 s of
its going away, Ctrl-C and `kill PID` included, on the default options: `--http`
was dropped (the dashboard said "Reconnecting..." for ever) and the human's own
`serve --http` then found "another hub".  Now a hub stopped on purpose (SIGINT,
SIGTERM, `hive-rpc stop`) is not started again until someone asks for it (`hive-rpc
serve`, `hive-rpc restart`, `M-x hive-rpc-start-hub`), and a hub that crashed
(SIGKILL) is brought back by Emacs with the options it last ran with."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import exited
from emacs_session import log_calls, logged_calls, new_tmux_session
from test_emacs_lifecycle import LoneEmacs

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

PENDING = re.compile(r"hive:[1-9]")
"""The mode line once Emacs is connected and counts the question asked."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class HumanAndEmacs(LoneEmacs):
    """A LoneEmacs, and the human's shell beside it: the same environment (the
    default socket under `$XDG_RUNTIME_DIR`, the default data dir), commands that
    may start a hub, and a terminal (tmux) for a hub run in the foreground."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.shell_env = {
            **{
                k: v
                for k, v in os.environ.items()
                if k not in ("HIVE_RPC_SOCKET", "HIVE_RPC_DATA_DIR", "TMUX", "TMUX_PANE")
            },
            **self.env,
        }
        self.terminal = ""

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``hive-rpc ARGS`` in the human's shell (no ``--no-start``)."""
        return subprocess.run(
            [sys.executable, "-m", "hive_rpc", *args],
            env=self.shell_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def status(self) -> dict[str, object] | None:
        done = self.cli("status", "--json")
        return json.loads(done.stdout) if done.returncode == 0 else None

    def serve_in_terminal(self, *args: str) -> None:
        """``hive-rpc serve ARGS`` in the foreground of a terminal, as a person runs it."""
        # Its own name: two runs of these tests share the tmux server.
        self.terminal = f"hive-stop-{uuid.uuid4().hex[:8]}-term"
        env = [f"{k}={v}" for k, v in self.shell_env.items() if k in ("PATH", *self.env)]
        command = ["env", "-u", "HIVE_RPC_SOCKET", "-u", "HIVE_RPC_DATA_DIR", *env]
        command += [sys.executable, "-m", "hive_rpc", "serve", *args]
        new_tmux_session(self.terminal, self.root, 160, 20, command)

    def keys_to(self, target: str, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", target, *keys], check=True)

    def close(self) -> None:
        super().close()
        if self.terminal:
            subprocess.run(
                ["tmux", "kill-session", "-t", f"={self.terminal}"],
                capture_output=True,
                check=False,
            )


@pytest.fixture
def human(short_tmp: Path) -> Iterator[HumanAndEmacs]:
    session = HumanAndEmacs(short_tmp)
    try:
        yield session
    finally:
        session.close()
        session.stop_hub(signal.SIGKILL)


def _serve_with_http(human: HumanAndEmacs, port: int) -> int:
    """The human starts the hub with the dashboard (``serve --detach --http``)."""
    done = human.run("serve", "--detach", "--http", f"127.0.0.1:{port}")
    assert done.returncode == 0, done.stderr
    assert "already running" not in done.stdout, done.stdout
    pid = human.hub_pid()
    assert pid is not None
    return pid


def _emacs_connected(human: HumanAndEmacs) -> None:
    """Emacs counts a question asked through the hub: it is connected to it."""
    human.wait_for(lambda screen: PENDING.search(screen) is not None, timeout=30)


def _dashboard_answers(human: HumanAndEmacs, port: int) -> None:
    """The hub's dashboard answers on PORT, to the human's token, and status names it."""
    status = human.status()
    assert status is not None
    assert status["http_url"] == f"http://127.0.0.1:{port}/mcp", status
    token = Path(str(status["approver_token_file"])).read_text().strip()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/dashboard", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200
        assert b"<html" in reply.read().lower()


@pytest.mark.parametrize("how", ["Ctrl-C", "kill PID"])
def test_a_hub_the_human_stopped_stays_stopped(human: HumanAndEmacs, how: str) -> None:
    port = free_port()
    if how == "Ctrl-C":
        human.serve_in_terminal("--http", f"127.0.0.1:{port}")
        human.wait_until(lambda: human.hub_pid() is not None, "the human's hub listens")
        hub = human.hub_pid()
        assert hub is not None
    else:
        hub = _serve_with_http(human, port)
    asked = human.run("ask", "Still there?", "--agent", "stopper")
    assert asked.returncode == 0, asked.stderr
    # Each reconnect try writes whether Emacs runs a hub of its own after it.
    tries = human.root / "reconnects.log"
    human.start(log_calls("hive-rpc--reconnect", tries, "(process-live-p hive-rpc--hub-process)"))
    _emacs_connected(human)

    if how == "Ctrl-C":
        human.keys_to(human.terminal, "C-c")
    else:
        os.kill(hub, signal.SIGTERM)
    human.wait_until(lambda: exited(hub), "the stopped hub exits")
    # Emacs says it leaves the hub stopped, and how to start it; and it started none.
    human.wait_for(lambda screen: "stopped on purpose" in screen, timeout=20)
    assert "M-x hive-rpc-start-hub" in human.screen()
    assert human.hub_pid() is None

    # The human goes to a shell to start it again, which takes a few seconds: two of
    # Emacs's reconnect tries (2 s apart; each used to start a hub on the defaults)
    # go by, and neither starts a hub.  Then `serve --http` starts a hub (not
    # "already running"), and the dashboard is there.
    before = len(logged_calls(tries))
    human.wait_until(lambda: len(logged_calls(tries)) >= before + 2, "two reconnect tries")
    assert set(logged_calls(tries)[before:]) == {"nil"}, logged_calls(tries)
    assert human.hub_pid() is None
    again = _serve_with_http(human, port)
    assert again != hub
    _dashboard_answers(human, port)
    # Emacs, which kept trying the socket, connects to it: the question is still there.
    _emacs_connected(human)


def test_a_crashed_hub_comes_back_with_its_options(human: HumanAndEmacs) -> None:
    port = free_port()
    hub = _serve_with_http(human, port)
    asked = human.run("ask", "Still there?", "--agent", "crasher")
    assert asked.returncode == 0, asked.stderr
    human.start()
    _emacs_connected(human)

    os.kill(hub, signal.SIGKILL)  # a crash: no clean shutdown, no mark
    human.wait_until(lambda: exited(hub), "the killed hub is gone")
    human.wait_until(
        lambda: human.hub_pid() not in (None, hub), "Emacs starts the hub again", timeout=60
    )
    _dashboard_answers(human, port)
    _emacs_connected(human)


def test_hive_rpc_stop_then_start_hub_from_emacs(human: HumanAndEmacs) -> None:
    """`hive-rpc stop` before Emacs starts: turning the mode on starts no hub and says
    why; `M-x hive-rpc-start-hub` starts it again as it last ran (`--http`)."""
    port = free_port()
    hub = _serve_with_http(human, port)
    asked = human.run("ask", "Still there?", "--agent", "restarter")
    assert asked.returncode == 0, asked.stderr
    stopped = human.run("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert exited(hub)

    human.start()
    human.wait_for(lambda screen: "stopped on purpose" in screen, timeout=20)
    assert human.hub_pid() is None
    assert "hive:down" in human.screen()

    human.keys("M-x", "hive-rpc-start-hub", "Enter")
    human.wait_until(lambda: human.hub_pid() is not None, "M-x hive-rpc-start-hub starts it")
    _dashboard_answers(human, port)
    _emacs_connected(human)
