"""End to end in a real interactive Emacs: `emacs -nw -Q` under tmux loads
elisp/hive-rpc.el, turns on `hive-rpc-mode` against a hub started here, and an agent
asks through the CLI.  The tests read the screen with `tmux capture-pane` and type
with `tmux send-keys`, as a person would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ELISP = Path(__file__).resolve().parents[2] / "elisp"

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)


class EmacsSession:
    """A hub, and an `emacs -nw` in a detached tmux session subscribed to it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "hub.sock"
        self.name = f"hive-ert-{uuid.uuid4().hex[:8]}"
        self.hub: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        root = self.root
        self.hub = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hive_rpc",
                "serve",
                "--socket",
                str(self.socket),
                "--data-dir",
                str(root / "data"),
                "--store",
                "memory",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        end = time.monotonic() + 15
        while self.cli("status").returncode != 0:
            assert self.hub.poll() is None, "the hub exited"
            assert time.monotonic() < end, "the hub did not come up"
            time.sleep(0.1)
        setup = (
            f"(progn (setq hive-rpc-socket {json.dumps(str(self.socket))}"
            " hive-rpc-program nil hive-rpc-idle-delay 0.2)"
            " (hive-rpc-mode 1))"
        )
        emacs = ["emacs", "-nw", "-Q", "-L", str(ELISP), "-l", "hive-rpc", "--eval", setup]
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", "200", "-y", "50", *emacs],
            check=True,
        )
        self.wait_for(lambda screen: "*scratch*" in screen)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hive_rpc", *args, "--socket", str(self.socket), "--no-start"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def ask(self, *args: str) -> str:
        done = self.cli("ask", *args)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def record(self, prompt_id: str) -> Any:
        return json.loads(self.cli("poll", prompt_id, "--json").stdout)

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

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True, check=False)
        if self.hub is None:
            return
        self.hub.terminate()
        try:
            self.hub.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.hub.kill()
            self.hub.wait()


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[EmacsSession]:
    session = EmacsSession(short_tmp)
    try:
        session.start()
        yield session
    finally:
        session.close()


def test_answer_typed_in_the_minibuffer_reaches_the_agent(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Deploy build 412?", "--choices", "yes,no", "--agent", "deployer")
    emacs.wait_for(lambda _: "[deployer] Deploy build 412?:" in emacs.minibuffer())
    assert "hive:1" in emacs.screen()
    emacs.keys("yes", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes"
    emacs.wait_for(lambda screen: "hive:" not in screen)


def test_prompt_waits_for_the_users_own_read_string(emacs: EmacsSession) -> None:
    emacs.keys("M-:", '(setq hive-test-other (read-string "Other: "))', "Enter")
    emacs.wait_for(lambda _: emacs.minibuffer().startswith("Other:"))
    prompt_id = emacs.ask("Rebase onto main?", "--agent", "claude-1")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    time.sleep(1)  # several idle periods: the hive prompt must still wait its turn
    assert emacs.minibuffer().startswith("Other:")
    assert "Rebase" not in emacs.minibuffer()
    emacs.keys("mine", "Enter")
    emacs.wait_for(lambda _: "[claude-1] Rebase onto main?:" in emacs.minibuffer())
    emacs.keys("yes, rebase", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes, rebase"
    # The user's own read got the user's own text.
    emacs.keys("M-:", '(message "other=%s" hive-test-other)', "Enter")
    emacs.wait_for(lambda _: "other=mine" in emacs.minibuffer())


def test_prompt_answered_from_the_cli_leaves_the_minibuffer(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Ship it?", "--agent", "shipper")
    emacs.wait_for(lambda _: "[shipper] Ship it?:" in emacs.minibuffer())
    assert emacs.cli("answer", prompt_id, "done elsewhere", "--by", "bob").returncode == 0
    emacs.wait_for(lambda _: "that question was answered by bob" in emacs.minibuffer())
    emacs.wait_for(lambda screen: "hive:" not in screen)


def test_typing_stops_the_countdown(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Merge PR 91?", "--timeout", "300", "--agent", "merger")
    emacs.wait_for(lambda _: "[merger] Merge PR 91?:" in emacs.minibuffer())
    assert emacs.minibuffer().startswith("(4m5")  # the countdown shows
    before = emacs.record(prompt_id)
    assert before["deadline_at"] < before["max_deadline_at"]
    emacs.keys("y")
    emacs.wait_for(lambda _: emacs.record(prompt_id)["typing_at"] is not None)
    after = emacs.record(prompt_id)
    assert after["deadline_at"] == after["max_deadline_at"]
    emacs.wait_for(lambda _: emacs.minibuffer().startswith("[merger]"))  # countdown gone
    emacs.keys("es", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "yes"


def test_m_d_declines_and_c_g_defers(emacs: EmacsSession) -> None:
    prompt_id = emacs.ask("Delete the cache?", "--agent", "cleaner")
    emacs.wait_for(lambda _: "[cleaner] Delete the cache?:" in emacs.minibuffer())
    emacs.keys("C-g")
    emacs.wait_for(lambda _: "deferred" in emacs.minibuffer())
    assert emacs.cli("poll", prompt_id).returncode == 8  # still pending
    assert "hive:1" in emacs.screen()
    emacs.keys("M-x", "hive-rpc-answer-next", "Enter")
    emacs.wait_for(lambda _: "[cleaner] Delete the cache?:" in emacs.minibuffer())
    emacs.keys("M-d")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 7)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "declined by human"


def test_schema_fields_are_asked_one_after_another(emacs: EmacsSession) -> None:
    schema = {
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["staging", "prod"]},
            "replicas": {"type": "integer", "minimum": 1},
            "notify": {"type": "boolean"},
            "size": {"type": "integer", "enum": [1, 2, 3]},
            "note": {"type": "string"},
        },
        "required": ["env", "replicas", "notify", "size"],
    }
    prompt_id = emacs.ask("Deploy where?", "--schema", json.dumps(schema), "--agent", "d")
    emacs.wait_for(lambda _: "[d] Deploy where? (env):" in emacs.minibuffer())
    emacs.keys("prod", "Enter")
    emacs.wait_for(lambda _: "[d] Deploy where? (replicas):" in emacs.minibuffer())
    emacs.keys("3", "Enter")
    emacs.wait_for(lambda _: "[d] Deploy where? (notify):" in emacs.minibuffer())
    emacs.keys("y")
    emacs.wait_for(lambda _: "[d] Deploy where? (size):" in emacs.minibuffer())
    emacs.keys("2", "Enter")
    emacs.wait_for(lambda _: "[d] Deploy where? (note):" in emacs.minibuffer())
    emacs.keys("Enter")  # optional: left out
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    answer = {"env": "prod", "replicas": 3, "notify": True, "size": 2}
    assert emacs.record(prompt_id)["answer"] == answer


def test_list_buffer_answers_with_ret(emacs: EmacsSession) -> None:
    emacs.keys("M-:", "(setq hive-rpc-auto-ask nil)", "Enter")
    prompt_id = emacs.ask("Pick a colour", "--agent", "painter", "--timeout", "600")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    emacs.keys("M-x", "hive-rpc-list", "Enter")
    emacs.wait_for(lambda screen: "painter" in screen and "Pick a colour" in screen)
    emacs.keys("M-:", '(pop-to-buffer "*hive-rpc*")', "Enter", "M-<")
    emacs.keys("Enter")
    emacs.wait_for(lambda _: "[painter] Pick a colour:" in emacs.minibuffer())
    emacs.keys("teal", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", prompt_id).returncode == 0)
    assert emacs.cli("poll", prompt_id).stdout.strip() == "teal"
    emacs.wait_for(lambda screen: "painter" not in screen)


def test_next_question_follows_without_another_key(emacs: EmacsSession) -> None:
    first = emacs.ask("First?", "--agent", "one")
    emacs.wait_for(lambda _: "[one] First?:" in emacs.minibuffer())
    second = emacs.ask("Second?", "--choices", "a,b", "--agent", "two")
    emacs.keys("done", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", first).returncode == 0)
    # No key pressed since: the queued question must take the minibuffer by itself.
    emacs.wait_for(lambda _: "[two] Second?:" in emacs.minibuffer())
    emacs.keys("b", "Enter")
    emacs.wait_for(lambda _: emacs.cli("poll", second).returncode == 0)
    assert emacs.cli("poll", second).stdout.strip() == "b"
