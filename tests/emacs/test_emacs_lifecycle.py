"""The hub's life around a real interactive Emacs.

`emacs -nw -Q` under tmux, with `hive-rpc-mode` and the package's defaults (the
default `hive-rpc-program`, the default socket under `$XDG_RUNTIME_DIR`), starts a
hub when none answers.  That hub serves every agent, so it must outlive the Emacs
that started it, as `emacs --daemon` and `ssh-agent` do: whether Emacs exits with
`C-x C-c`, loses its terminal or is killed outright.  Also here: the mode turned
off says nothing of jsonrpc's, `hive-rpc-command-map` works once bound to a
prefix, and the package installs with `package-install-file` as docs/emacs.md
says (the Emacs 28 route)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import exited
from emacs_session import ELISP, TmuxEmacs, new_tmux_session, tag

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)


class LoneEmacs(TmuxEmacs):
    """An `emacs -nw` in a detached tmux session, with no hub started for it.

    Its environment points the hub's defaults into a private directory: the socket
    is `$XDG_RUNTIME_DIR/hive-rpc/hub.sock`, the data dir `$XDG_DATA_HOME/hive-rpc`,
    and `hive-rpc` on PATH is this checkout's (the venv running the tests)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runtime = root / "run"
        self.runtime.mkdir(mode=0o700)
        self.socket = self.runtime / "hive-rpc" / "hub.sock"
        self.env = {
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_DATA_HOME": str(root / "share"),
        }
        self.name = ""

    def start(self, settings: str = "") -> None:
        """Start Emacs and turn the mode on.  Questions do not open by themselves
        (`hive-rpc-auto-ask` nil): these tests type keys meant for other things."""
        self.name = f"hive-life-{uuid.uuid4().hex[:8]}"
        setup = f"(progn (setq hive-rpc-auto-ask nil) {settings} (hive-rpc-mode 1))"
        command = [
            "env",
            "-u",
            "HIVE_RPC_SOCKET",
            "-u",
            "HIVE_RPC_DATA_DIR",
            *(f"{k}={v}" for k, v in self.env.items()),
            "emacs",
            "-nw",
            "-Q",
            "-L",
            str(ELISP),
            "-l",
            "hive-rpc",
            "--eval",
            setup,
        ]
        new_tmux_session(self.name, self.root, 160, 40, command)
        self.wait_for(lambda screen: "*scratch*" in screen)

    def alive(self) -> bool:
        return (
            subprocess.run(
                ["tmux", "has-session", "-t", f"={self.name}"], capture_output=True, check=False
            ).returncode
            == 0
        )

    def pid(self) -> int:
        out = subprocess.run(
            ["tmux", "display-message", "-p", "-t", self.name, "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return int(out)

    def hub_pid(self) -> int | None:
        done = self.cli("status", "--json")
        return int(json.loads(done.stdout)["pid"]) if done.returncode == 0 else None

    def close(self) -> None:
        self.kill_tmux()

    def stop_hub(self, sig: int) -> None:
        """Send ``sig`` to the hub this Emacs started, if one runs, and wait until it
        has exited: the hub outlives Emacs by design, so a test must stop its own."""
        pid = self.hub_pid()
        if pid is not None:
            os.kill(pid, sig)
            self.wait_until(lambda: exited(pid), f"hub {pid} exits")


@pytest.fixture
def lone(short_tmp: Path) -> Iterator[LoneEmacs]:
    session = LoneEmacs(short_tmp)
    try:
        yield session
    finally:
        session.close()
        session.stop_hub(signal.SIGTERM)


def _started_hub(lone: LoneEmacs) -> int:
    """Start Emacs with the defaults; return the pid of the hub it started."""
    assert lone.hub_pid() is None  # nothing serves the default socket yet
    lone.start()
    lone.wait_until(lambda: lone.hub_pid() is not None, "Emacs started a hub")
    pid = lone.hub_pid()
    assert pid is not None
    # Emacs is connected to it: a question reaches Emacs (the mode line counts it).
    done = lone.cli("ask", "Still there?", "--agent", "life")
    assert done.returncode == 0, done.stderr
    lone.wait_for(lambda screen: re.search(r"hive:[1-9]", screen) is not None)
    return pid


def test_hub_outlives_emacs_quit_with_c_x_c_c(lone: LoneEmacs) -> None:
    hub = _started_hub(lone)
    lone.keys("C-x", "C-c")
    lone.wait_until(lambda: not lone.alive(), "Emacs exits")
    done = lone.cli("status")
    assert done.returncode == 0, done.stderr
    assert lone.hub_pid() == hub
    # The question asked before is still there for the next Emacs.
    assert "Still there?" in lone.cli("list").stdout
    # The next Emacs uses that hub rather than starting another.
    lone.start()
    lone.wait_for(lambda screen: re.search(r"hive:[1-9]", screen) is not None)
    assert lone.hub_pid() == hub


@pytest.mark.parametrize("end", ["SIGKILL", "terminal closed"])
def test_hub_outlives_emacs_killed(lone: LoneEmacs, end: str) -> None:
    hub = _started_hub(lone)
    emacs = lone.pid()
    if end == "SIGKILL":
        os.kill(emacs, signal.SIGKILL)
    else:
        # The terminal goes away (a closed window, a dropped ssh): Emacs gets
        # SIGHUP and exits, taking its child processes with it.
        lone.close()
    lone.wait_until(lambda: exited(emacs), "Emacs is gone")
    done = lone.cli("status")
    assert done.returncode == 0, done.stderr
    assert lone.hub_pid() == hub


def test_mode_off_says_nothing_of_jsonrpc(lone: LoneEmacs) -> None:
    _started_hub(lone)
    lone.keys("M-x", "hive-rpc-mode", "Enter")
    lone.wait_for(lambda screen: "Hive-Rpc mode disabled" in screen)
    lone.keys("C-h", "e")  # the *Messages* buffer
    screen = lone.wait_for(lambda screen: "*Messages*" in screen)
    assert "Hive-Rpc mode disabled" in screen
    assert "jsonrpc" not in screen
    assert "exited" not in screen


def test_command_map_on_a_prefix_key(lone: LoneEmacs) -> None:
    lone.start('(global-set-key (kbd "C-c h") hive-rpc-command-map)')
    lone.wait_until(lambda: lone.hub_pid() is not None, "Emacs started a hub")
    done = lone.cli("ask", "Which colour?", "--choices", "red,blue", "--agent", "painter")
    assert done.returncode == 0, done.stderr
    lone.wait_for(lambda screen: re.search(r"hive:[1-9]", screen) is not None)
    lone.keys("C-c", "h", "l")  # hive-rpc-list
    lone.wait_for(lambda screen: "Which colour?  [red / blue]" in screen)
    lone.keys("C-c", "h", "n")  # hive-rpc-answer-next
    lone.wait_for(lambda _: f"{tag('painter')} Which colour?" in lone.minibuffer())
    lone.keys("blue", "Enter")
    lone.wait_until(lambda: lone.cli("list").stdout.strip() == "no pending prompts", "answered")


def test_package_install_file_installs_the_package(short_tmp: Path) -> None:
    """docs/emacs.md's install route for Emacs 28: `package-install-file` on a
    directory holding the package's seven files; a fresh Emacs then has the mode and
    the command map autoloaded, with no `require`."""
    src = short_tmp / "hive-rpc-el"
    src.mkdir()
    for name in (
        "hive-rpc",
        "hive-rpc-core",
        "hive-rpc-hub",
        "hive-rpc-minibuffer",
        "hive-rpc-question",
        "hive-rpc-list",
        "hive-rpc-ling",
    ):
        shutil.copy(ELISP / f"{name}.el", src)
    elpa = json.dumps(str(short_tmp / "elpa"))
    install = (
        f"(progn (setq package-user-dir {elpa}) (package-initialize)"
        f" (package-install-file {json.dumps(str(src) + '/')}))"
    )
    done = subprocess.run(
        ["emacs", "--batch", "-Q", "-l", "package", "--eval", install],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    check = (
        f"(progn (setq package-user-dir {elpa}) (package-initialize)"
        ' (princ (format "%S %S " (featurep \'hive-rpc)'
        " (autoloadp (symbol-function 'hive-rpc-mode))))"
        ' (global-set-key (kbd "C-c h") \'hive-rpc-command-map)'
        ' (princ (format "%S %S" (key-binding (kbd "C-c h n") t)'
        " (package-desc-version (cadr (assq 'hive-rpc package-alist))))))"
    )
    done = subprocess.run(
        ["emacs", "--batch", "-Q", "-l", "package", "--eval", check],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "nil t hive-rpc-answer-next (0 1 0)"
