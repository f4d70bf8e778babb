"""A hub process and a real `emacs -nw -Q` under tmux, subscribed to it.

Shared by the tests that look at Emacs as a person does: they read the screen with
`tmux capture-pane` and type with `tmux send-keys`.  `settings` is Lisp evaluated
before `hive-rpc-mode` is turned on (``setq`` forms); leave it empty to test with
the package's default options."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from hive_rpc.core.claude_code import home_relative

ELISP = Path(__file__).resolve().parents[2] / "elisp"

FAST = (
    "(setq hive-rpc-auto-ask t hive-rpc-idle-delay 0.2 hive-rpc-idle-delay-after-typing 0.2"
    " hive-rpc-open-grace 0)"
)
"""Settings for tests about what happens inside a question, not about when it opens:
questions open by themselves (the opt-in ``hive-rpc-auto-ask``) at once."""


ORIGIN = home_relative(os.getcwd(), os.environ.get("HOME"))
"""Where the tests' CLI asks from, as the hub names it (the ``origin`` of each question:
the asking process's working directory, ~-relative)."""


def tag(agent: str, origin: str = ORIGIN) -> str:
    """How a hive prompt names its asker: ``[deployer · ~/src/app]``."""
    return f"[{agent} · {origin}]"


def wrapped_minibuffer(screen: str) -> str:
    """The minibuffer's text, however many screen lines it wraps over: the lines under
    the last mode line, their wrap marks removed."""
    lines = screen.rstrip("\n").split("\n")
    last_mode_line = max(i for i, line in enumerate(lines) if line.startswith("-U"))
    return "".join(
        line[:-1] if line.endswith("\\") else line for line in lines[last_mode_line + 1 :]
    )


def new_tmux_session(name: str, root: Path, cols: int, rows: int, argv: list[str]) -> None:
    """Run ``argv`` in a new detached tmux session of that size, working in ``root``
    (not in whatever directory the shared tmux server was started from)."""
    size = ["-x", str(cols), "-y", str(rows)]
    subprocess.run(
        ["tmux", "new-session", "-d", "-c", str(root), "-s", name, *size, *argv], check=True
    )


def log_calls(function: str, log: Path, value: str = "t") -> str:
    """Lisp for a session's settings: each time ``function`` returns, append ``value``
    (a form, evaluated then) as a line to ``log``.  Emacs is another process with no
    event a test can follow, so a test that something did *not* happen waits for
    this line (``logged_calls``): proof that Emacs went past the point where it would
    have happened, and what it saw there."""
    return (
        f"(advice-add '{function} :after (lambda (&rest _) (write-region"
        f' (format "%S\\n" {value}) nil {json.dumps(str(log))} t (quote silent))))'
    )


def logged_calls(log: Path) -> list[str]:
    """The lines ``log_calls`` wrote so far, oldest first."""
    return log.read_text().splitlines() if log.exists() else []


class TmuxEmacs:
    """An `emacs -nw` in a detached tmux session (``name``) and the hub socket it
    uses (``socket``): reading the screen, typing, waiting, and the CLI."""

    name: str
    socket: Path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hive_rpc", *args, "--socket", str(self.socket), "--no-start"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def minibuffer(self) -> str:
        """The last line of the screen: the minibuffer / echo area."""
        lines = self.screen().rstrip("\n").split("\n")
        return lines[-1] if lines else ""

    def wrapped_minibuffer(self) -> str:
        """The minibuffer's whole text, however many lines it wraps over."""
        return wrapped_minibuffer(self.screen())

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, done: Callable[[str], bool], timeout: float = 15) -> str:
        """Poll the screen until `done(screen)` holds; fail with the screen after timeout."""
        end = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if done(screen):
                return screen
            if time.monotonic() > end:
                pytest.fail(f"timed out; the screen was:\n{screen}")
            time.sleep(0.1)

    def wait_until(self, done: Callable[[], bool], what: str, timeout: float = 30) -> None:
        """Poll `done()` (the hub, a process) until it holds; fail with the screen."""
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                pytest.fail(f"timed out waiting until {what}; the screen was:\n{self.screen()}")
            time.sleep(0.1)

    def kill_tmux(self) -> None:
        if self.name:
            subprocess.run(
                ["tmux", "kill-session", "-t", f"={self.name}"], capture_output=True, check=False
            )


class EmacsSession(TmuxEmacs):
    """A hub, and an `emacs -nw` in a detached tmux session subscribed to it."""

    def __init__(self, root: Path, settings: str = "", load_path: list[str] | None = None) -> None:
        self.root = root
        self.settings = settings
        self.load_path = load_path or []
        self.socket = root / "hub.sock"
        self.name = f"hive-ert-{uuid.uuid4().hex[:8]}"
        self.hub: subprocess.Popen[bytes] | None = None

    def hub_command(self) -> list[str]:
        """How the hub is run: on the memory store, without desktop notifications."""
        return [
            sys.executable,
            "-m",
            "hive_rpc",
            "serve",
            "--socket",
            str(self.socket),
            "--data-dir",
            str(self.root / "data"),
            "--store",
            "memory",
            "--no-notify",
        ]

    def start(self) -> None:
        self.start_hub()
        self.start_emacs()

    def start_hub(self) -> None:
        """The hub (``hub_command``), once its socket answers ``status``."""
        self.hub = subprocess.Popen(
            self.hub_command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        end = time.monotonic() + 15
        while self.cli("status").returncode != 0:
            assert self.hub.poll() is None, "the hub exited"
            assert time.monotonic() < end, "the hub did not come up"
            time.sleep(0.1)

    def start_emacs(self) -> None:
        """``emacs -nw`` in its tmux session, in ``hive-rpc-mode`` on the hub's socket."""
        setup = (
            f"(progn (setq hive-rpc-socket {json.dumps(str(self.socket))}"
            " hive-rpc-program nil hive-rpc-notify-urgent nil)"
            ' (global-set-key (kbd "C-c h") hive-rpc-command-map)'
            f" {self.settings} (hive-rpc-mode 1))"
        )
        extra = [arg for d in self.load_path for arg in ("-L", d)]
        emacs = ["emacs", "-nw", "-Q", "-L", str(ELISP), *extra, "-l", "hive-rpc", "--eval", setup]
        new_tmux_session(self.name, self.root, 200, 50, emacs)
        self.wait_for(lambda screen: "*scratch*" in screen)

    def ask(self, *args: str) -> str:
        done = self.cli("ask", *args)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def record(self, prompt_id: str) -> Any:
        return json.loads(self.cli("poll", prompt_id, "--json").stdout)

    def type(self, text: str, pace: float = 0.12) -> None:
        """Type TEXT one key at a time, at about a person's pace."""
        for char in text:
            subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", char], check=True)
            time.sleep(pace)

    def wait_prompt(self, text: str, timeout: float = 15) -> str:
        """Wait until the minibuffer asks TEXT and takes keys (its opening moment is over)."""
        return self.wait_for(
            lambda _: text in self.minibuffer() and "(opening)" not in self.minibuffer(),
            timeout,
        )

    def answer_next(self) -> None:
        """The human's deliberate act: ``C-c h n`` (hive-rpc-answer-next, the command
        map on ``C-c h`` as docs/emacs.md suggests)."""
        self.keys("C-c", "h", "n")

    def save(self, path: Path) -> None:
        """``C-x C-s`` in the buffer visiting PATH, which has changes; returns once
        Emacs has written the file: the file changed on disk and the buffer's mode
        line no longer shows it modified (``**`` becomes ``--`` only once the write
        is done; the file alone changes as the write begins, truncated or renamed
        to its backup).  Not "Wrote" in the echo area: a hub message (``2 new
        questions``) may replace that at once (a clean-clone CI run timed out so,
        the file saved)."""
        before = _written(path)
        self.keys("C-x", "C-s")
        self.wait_until(
            lambda: _written(path) != before and _unmodified(self.screen(), path.name),
            f"Emacs to write {path.name}",
        )

    def eval(self, form: str) -> None:
        """Evaluate FORM with M-: (the human's own command), one step at a time: the
        prompt is seen to open and the form to be typed before Enter, so a loaded
        machine cannot have the keys land anywhere else."""
        self.keys("M-:")
        self.wait_for(lambda _: self.minibuffer().startswith("Eval:"))
        self.keys("-l", form)
        self.wait_for(lambda _: form[-40:] in self.minibuffer())
        self.keys("Enter")
        self.wait_for(lambda _: not self.minibuffer().startswith("Eval:"))

    def close(self) -> None:
        self.kill_tmux()
        if self.hub is None:
            return
        self.hub.terminate()
        try:
            self.hub.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.hub.kill()
            self.hub.wait()


S = TypeVar("S", bound=EmacsSession)


def running(session: S) -> Iterator[S]:
    """A fixture's body: ``session`` started, and closed after the test however the
    start or the test ends (``yield from running(EmacsSession(short_tmp, FAST))``)."""
    try:
        session.start()
        yield session
    finally:
        session.close()


def _written(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is written (Emacs writes to a new file and renames
    it over the old, or writes in place): inode, size, modification time."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _unmodified(screen: str, name: str) -> bool:
    """Whether the mode line of the buffer ``name`` says it has no unsaved changes
    (``-UUU:----F1  notes.txt``, where a modified one shows ``:**--``)."""
    line = re.compile(r":([-*%]{2})\S*\s+" + re.escape(name) + r"\s")
    return any(m.group(1) == "--" for m in line.finditer(screen))
