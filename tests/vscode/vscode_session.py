"""A real VS Code for the extension's tests: code-server 4.100.3 (VS Code 1.100.3) with
the ``.vsix`` that ``npm test`` packaged, a real hub (``hive-rpc serve`` as a process of
its own, so it can be SIGKILLed and started again), and Debian's Chromium driven by
Playwright, looking at the workbench as a person does.

The pieces, each usable alone (tests/vscode/conftest.py puts them together):

- ``Hub``: the hub process on a private socket and data dir, and the ``hive-rpc`` CLI
  against it (``ask``, ``poll``, ``answer``, ``cancel``, ``list``).
- ``CodeServer``: code-server on a free loopback port with a private HOME, user data dir
  and extensions dir, the ``.vsix`` installed, User and Machine settings written.
  ``hive.pythonPath`` (machine-overridable) belongs in the Machine file: in code-server a
  User value of such a setting is dropped at the first configuration change.
- ``Window``: one VS Code window (a Playwright page): open it on a folder and wait for the
  extension's sidecar to subscribe, run a command from the palette, read the quick input,
  the status bar, the Hive: Pending view and the notifications, type at human pace,
  screenshot.

Playwright's sync API is used, so tests that use these are plain (non-async) functions.
Waits poll the page with a generous deadline; nothing asserts how long anything took.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from hive_rpc.host.paths import HubLock

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
EXT_DIR = ROOT / "vscode-ext"
VSIX = EXT_DIR / "hive-rpc-0.1.0.vsix"
INSTALL_SCRIPT = ROOT / "scripts" / "install-code-server.sh"
CODE_SERVER_VERSION = "4.100.3"
EXTENSION_ID = "hive-rpc.hive-rpc"
STATUS_ITEM = f"{EXTENSION_ID}.hive.pending"
"""The DOM id of the extension's status bar item (``PUBLISHER.NAME.ITEMID``)."""
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""A PATH with the machine's own tools (node, python3 without hive_rpc) and no venv."""
TIMEOUT_S = 60.0
"""Deadline of every wait: generous, this runs on a loaded 2-core machine."""
HUMAN_DELAY_MS = 70
"""Delay between keys when typing as a person does."""

T = TypeVar("T")


def wait_for(
    check: Callable[[], T | None],
    what: str,
    timeout: float = TIMEOUT_S,
    on_timeout: Callable[[], str] | None = None,
) -> T:
    """Poll ``check`` until it returns something truthy (returned); fail saying ``what``
    was awaited, with what ``on_timeout`` adds (e.g. what the screen shows)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            extra = on_timeout() if on_timeout else ""
            raise AssertionError(f"waited {timeout:g}s for {what}; last saw {last!r}{extra}")
        time.sleep(0.1)


def artifacts_dir(default: Path) -> Path:
    """Where screenshots and logs go: ``$HIVE_ARTIFACTS``, else ``default``."""
    path = Path(os.environ.get("HIVE_ARTIFACTS") or default)
    path.mkdir(parents=True, exist_ok=True)
    return path


def code_server_binary() -> Path:
    """code-server, installed (or found in its cache) by scripts/install-code-server.sh.

    Skips only when the npm registry is unreachable (then nothing can install it), with
    the reason; any other failure to install fails."""
    reason = os.environ.get("HIVE_CODE_SERVER_UNAVAILABLE")
    if reason:
        pytest.skip(f"no real VS Code: {reason}")
    done = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=1800, check=False
    )
    if done.returncode == 3:
        pytest.skip(f"no real VS Code: {done.stdout.strip()}")
    if done.returncode != 0:
        pytest.fail(f"scripts/install-code-server.sh failed ({done.returncode}):\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


def packaged_vsix() -> Path:
    """The ``.vsix`` ``npm test`` packaged, checked to hold the compiled extension as it
    is now in vscode-ext/out/src (by content: tsc rewrites files it did not change)."""
    if not VSIX.exists():
        pytest.fail(f"{VSIX} is missing: run `cd vscode-ext && npm test` (it packages it)")
    built = EXT_DIR / "out" / "src"
    with zipfile.ZipFile(VSIX) as vsix:
        packed = set(vsix.namelist())
        for js in sorted(built.rglob("*.js")):
            name = f"extension/out/src/{js.relative_to(built).as_posix()}"
            if name not in packed or vsix.read(name) != js.read_bytes():
                pytest.fail(
                    f"{VSIX.name} is older than vscode-ext/out/src/{js.relative_to(built)}: "
                    "it is not the build of these sources; run `cd vscode-ext && npm test` "
                    "(or `npm run package`)"
                )
    return VSIX


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def stop_group(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace: float = 15) -> None:
    """Signal the process group ``proc`` leads (started with ``start_new_session``),
    then SIGKILL it if it is still there after ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    # what the leader left behind in its group (code-server's extension hosts, sidecars)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@dataclass
class EditorSetup:
    """How a module's code-server is set up. ``default_socket``: the hub listens where
    ``hive-rpc`` looks by default (``$XDG_RUNTIME_DIR/hive-rpc/hub.sock``), so the
    extension needs no ``hive.socket``."""

    user: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    path: str = SYSTEM_PATH
    default_socket: bool = False
    socket_setting: bool = True
    """Put the hub's socket in ``hive.socket`` (Machine settings)."""
    home_files: dict[str, str] = field(default_factory=dict)
    """Files to write into the private HOME (relative path: text), e.g. ``.profile``:
    the extension host's PATH is the one the user's login shell sets up (VS Code's
    server resolves it), not code-server's own."""
    extra_vsix: list[Path] = field(default_factory=list)
    """More ``.vsix`` files installed beside the extension (a test's probe extension)."""


class Hub:
    """``hive-rpc serve`` on a private socket and data dir, in a process group of its
    own, and the CLI against it (always ``--no-start``: no other hub may start)."""

    def __init__(self, root: Path, socket_path: Path | None = None) -> None:
        self.root = root
        self.socket = socket_path or root / "run" / "hub.sock"
        self.data_dir = root / "data"
        self.log = root / "hub.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "the hub is running"
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        args = ["serve", "--socket", str(self.socket), "--data-dir", str(self.data_dir)]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "hive_rpc", *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                start_new_session=True,
            )

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the hub exited {self.proc.returncode}:\n{self.log_text()}")
            return self.cli("status").returncode == 0

        wait_for(up, "the hub to answer `hive-rpc status`")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: the hub dies as on a crash, with no chance to tell anyone."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """The hub SIGKILLed and kept down for the block: its socket's lock is held here,
        so nothing takes its place meanwhile (a sidecar starts a hub 0.5 s after losing
        one, on its own default data dir). Call ``start`` after the block."""
        self.kill()
        lock = HubLock(self.lock_path())
        wait_for(lock.acquire, "the killed hub's socket lock to be free")
        try:
            yield
        finally:
            lock.release()

    def lock_path(self) -> Path:
        return self.socket.with_name(self.socket.name + ".lock")

    def stop(self) -> None:
        """Stop the hub, and any other that serves its socket by now (one a sidecar
        started while this one was down runs detached, outside every process group)."""
        if self.proc is not None:
            stop_group(self.proc)
        status = self.cli("status", "--json", timeout=30)
        if status.returncode == 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(json.loads(status.stdout)["pid"]), signal.SIGTERM)
            lock = HubLock(self.lock_path())
            wait_for(lock.acquire, "the stray hub on this socket to exit")
            lock.release()

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``hive-rpc ARGS --socket S --no-start``, as a person types it in a shell."""
        return subprocess.run(
            [sys.executable, "-m", "hive_rpc", *args, "--socket", str(self.socket), "--no-start"],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
            check=False,
        )

    def json(self, *args: str) -> Any:
        done = self.cli(*args, "--json")
        assert done.returncode == 0, f"hive-rpc {' '.join(args)}: {done.stderr}"
        return json.loads(done.stdout)

    def ask(self, question: str, *options: str) -> str:
        """Ask as an agent would (``--choices a,b``, ``--timeout S``, ``--schema J`` ...);
        the prompt's id."""
        ask_id: str = self.json("ask", question, *options)["id"]
        return ask_id

    def record(self, ask_id: str) -> dict[str, Any]:
        """The prompt's record as ``hive-rpc poll --json`` prints it."""
        done = self.cli("poll", ask_id, "--json")
        assert done.stdout, f"hive-rpc poll {ask_id}: {done.stderr}"
        record: dict[str, Any] = json.loads(done.stdout)
        return record

    def poll(self, ask_id: str) -> subprocess.CompletedProcess[str]:
        return self.cli("poll", ask_id)

    def answer(self, ask_id: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.cli("answer", ask_id, *args)

    def pending(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.json("list")
        return records

    def cancel_all(self) -> None:
        """Withdraw every pending prompt (each editor is told to close it)."""
        for record in self.pending():
            self.cli("cancel", record["id"], "--agent", record["agent_id"])


@dataclass
class CodeServer:
    """code-server on a free loopback port with a private HOME, user data dir and
    extensions dir, the packaged ``.vsix`` installed and settings written before it
    starts. ``path`` is its PATH; ``env`` adds to its environment (XDG_RUNTIME_DIR is
    private unless given). The extension host's PATH is what the login shell
    (``/bin/bash -il``) makes of that with the private HOME's ``home_files``."""

    root: Path
    binary: Path
    vsix: Path
    user_settings: dict[str, Any] = field(default_factory=dict)
    machine_settings: dict[str, Any] = field(default_factory=dict)
    path: str = SYSTEM_PATH
    env: dict[str, str] = field(default_factory=dict)
    home_files: dict[str, str] = field(default_factory=dict)
    extra_vsix: list[Path] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.user_data = self.root / "ud"
        self.extensions = self.root / "ext"
        self.workspace = self.root / "ws"
        self.log = self.root / "code-server.log"
        self.runtime_dir = Path(self.env.get("XDG_RUNTIME_DIR") or self.root / "xdg-run")

    def environment(self) -> dict[str, str]:
        # Nothing of the test run's own hive-rpc environment leaks in.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HIVE_", "VSCODE_"))}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_RUNTIME_DIR=str(self.runtime_dir),
            PATH=self.path,
            SHELL="/bin/bash",
        )
        env.update(self.env)
        return env

    def write_settings(self) -> None:
        """User settings: quiet start-up (no welcome page, no telemetry prompts) plus
        ``user_settings``; Machine (code-server's Remote) settings: ``machine_settings``."""
        user = {
            "workbench.startupEditor": "none",
            "workbench.tips.enabled": False,
            "telemetry.telemetryLevel": "off",
            "extensions.ignoreRecommendations": True,
            "security.workspace.trust.enabled": False,
            "window.restoreWindows": "none",
            "git.enabled": False,
            # Most modules test what a question's box does, not when it opens: there
            # questions open by themselves (the opt-in hive.autoAsk), and the tests act
            # the instant one opens (no opening moment, which
            # test_vscode_keyboard_grace.py tests on its own). The default (nothing
            # opens by itself) is test_vscode_attention.py's: a module drops a key
            # from these by giving it None.
            "hive.autoAsk": True,
            "hive.openGraceSeconds": 0,
            **self.user_settings,
        }
        user = {k: v for k, v in user.items() if v is not None}
        for where, values in (("User", user), ("Machine", self.machine_settings)):
            path = self.user_data / where / "settings.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values, indent=2) + "\n")

    def set_settings(
        self, user: dict[str, Any] | None = None, machine: dict[str, Any] | None = None
    ) -> None:
        """Change settings while it runs (VS Code watches the files): keys mapped to
        None are removed."""
        for values, where in ((user, "User"), (machine, "Machine")):
            if values is None:
                continue
            path = self.user_data / where / "settings.json"
            current = json.loads(path.read_text()) if path.exists() else {}
            for key, value in values.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            path.write_text(json.dumps(current, indent=2) + "\n")

    def install_extension(self) -> None:
        """Install the packaged ``.vsix`` and check the installed code is what it holds
        (``packaged_vsix`` checked that against vscode-ext/out/src)."""
        self.extensions.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                str(self.binary),
                "--user-data-dir",
                str(self.user_data),
                "--extensions-dir",
                str(self.extensions),
                "--install-extension",
                str(self.vsix),
                *(a for v in self.extra_vsix for a in ("--install-extension", str(v))),
            ],
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert done.returncode == 0, f"--install-extension failed:\n{done.stdout}{done.stderr}"
        installed = [p for p in self.extensions.glob(f"{EXTENSION_ID}-*") if p.is_dir()]
        assert len(installed) == 1, f"installed extensions: {list(self.extensions.iterdir())}"
        with zipfile.ZipFile(self.vsix) as vsix:
            packed = [n for n in vsix.namelist() if n.startswith("extension/out/src/")]
            assert packed, f"{self.vsix.name} holds no out/src"
            for name in packed:
                copy = installed[0] / name.removeprefix("extension/")
                assert copy.is_file(), f"the installed extension lacks {name}"
                assert copy.read_bytes() == vsix.read(name), (
                    f"the installed extension's {name} is not the one in {self.vsix.name}"
                )

    def start(self) -> None:
        for d in (self.home, self.workspace, self.runtime_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.runtime_dir.chmod(0o700)
        (self.workspace / "notes.txt").write_text("Notes\n")
        for name, text in self.home_files.items():
            (self.home / name).parent.mkdir(parents=True, exist_ok=True)
            (self.home / name).write_text(text)
        self.write_settings()
        self.install_extension()
        self.port = free_port()
        args = [
            str(self.binary),
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{self.port}",
            "--user-data-dir",
            str(self.user_data),
            "--extensions-dir",
            str(self.extensions),
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            "--disable-getting-started-override",
            "--ignore-last-opened",
        ]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                env=self.environment(),
                start_new_session=True,
            )
        wait_for(self.healthy, f"code-server's /healthz on port {self.port}")

    def healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            log = self.log.read_text(errors="replace")
            raise AssertionError(f"code-server exited {self.proc.returncode}:\n{log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """Stop code-server and everything it started (extension hosts, sidecars): its
        whole process group. Do this before stopping the hub: a closed window's extension
        host lives on for code-server's reconnection grace period."""
        if self.proc is not None:
            stop_group(self.proc)

    def url(self, folder: Path | None = None) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={folder or self.workspace}"

    def hive_logs(self) -> list[Path]:
        """The "Hive" output channel of each extension host, as written to disk."""
        return sorted(self.user_data.glob(f"logs/*/exthost*/{EXTENSION_ID}/Hive.log"))

    def subscribed_logs(self) -> set[Path]:
        """The Hive logs of extension hosts whose sidecar has subscribed to the hub."""
        return {p for p in self.hive_logs() if "subscribed;" in p.read_text(errors="replace")}


@dataclass
class QuickInput:
    """What the open quick input (input box or quick pick) shows."""

    title: str
    message: str
    placeholder: str
    value: str
    rows: list[str]
    """The rows' aria-labels (a quick pick's items), in order."""
    active: str | None
    """The row the keyboard is on."""
    buttons: list[str]
    """The title bar's buttons, by tooltip."""

    def text(self) -> str:
        """Everything it says, on one line, for assertions that do not care where."""
        return " | ".join(s for s in (self.title, self.message, self.placeholder, *self.rows) if s)


_READ_QUICK_INPUT = """() => {
  const w = document.querySelector('.quick-input-widget');
  if (!w || getComputedStyle(w).display === 'none') return null;
  const text = (sel) => { const e = w.querySelector(sel); return e ? e.textContent.trim() : ''; };
  const input = w.querySelector('.quick-input-box input');
  const rows = Array.from(w.querySelectorAll('.quick-input-list .monaco-list-row'));
  const active = rows.find((r) => r.classList.contains('focused'));
  const buttons = Array.from(w.querySelectorAll('.quick-input-titlebar .action-label'))
    .map((b) => b.getAttribute('aria-label') || b.getAttribute('title') || '')
    .filter((s) => s);
  return {
    title: text('.quick-input-title'),
    message: text('.quick-input-message'),
    placeholder: input ? input.getAttribute('placeholder') || '' : '',
    value: input ? input.value : '',
    rows: rows.map((r) => r.getAttribute('aria-label') || r.textContent.trim()),
    active: active ? active.getAttribute('aria-label') || active.textContent.trim() : null,
    buttons,
  };
}"""


class Window:
    """One VS Code window: a Playwright page on code-server. ``shots`` is where
    screenshots go, named ``prefix + name``."""

    def __init__(self, page: Page, server: CodeServer, shots: Path, prefix: str = "") -> None:
        self.page = page
        self.server = server
        self.shots = shots
        self.prefix = prefix
        self.log: Path | None = None
        """This window's Hive output channel on disk (once ``open`` saw it subscribe)."""

    # -- opening -------------------------------------------------------------------

    def open(self, folder: Path | None = None, *, ready: bool = True) -> None:
        """Load the workbench on ``folder`` (default the workspace); with ``ready``, wait
        until this window's extension has started its sidecar and subscribed."""
        before = self.server.subscribed_logs()
        self.page.goto(self.server.url(folder))
        self.page.wait_for_selector(".monaco-workbench", timeout=TIMEOUT_S * 1000)
        if ready:

            def subscribed() -> Path | None:
                new = next(iter(self.server.subscribed_logs() - before), None)
                if new is None:  # say at once why it never will
                    failed = [n for n in self.notifications() if "sidecar" in n]
                    if failed:
                        shot = self.shot("sidecar-failed")
                        raise AssertionError(f"the sidecar did not start: {failed} ({shot})")
                return new

            self.log = self.wait(
                subscribed,
                "the extension's sidecar to subscribe (a new Hive log saying 'subscribed;')",
            )

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log else ""

    # -- waiting and looking ---------------------------------------------------------

    def wait(self, check: Callable[[], T | None], what: str, timeout: float = TIMEOUT_S) -> T:
        """``wait_for`` that screenshots the window (``timeout-N.png``) when it fails."""

        def describe() -> str:
            path = self.shot(f"timeout-{int(time.time() * 1000) % 100000}")
            return f"\nscreen: {self.describe()}\nscreenshot: {path}"

        return wait_for(check, what, timeout, describe)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{self.prefix}{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def describe(self) -> str:
        """What a person would see: quick input, status item, notifications."""
        return (
            f"quick input={self.quick_input()!r} status={self.status_text()!r} "
            f"notifications={self.notifications()!r}"
        )

    def quick_input(self) -> QuickInput | None:
        """The open quick input, or None."""
        got = self.page.evaluate(_READ_QUICK_INPUT)
        return QuickInput(**got) if got else None

    def wait_quick_input(
        self, contains: str = "", what: str = "", timeout: float = TIMEOUT_S
    ) -> QuickInput:
        """Wait for a quick input whose text (title, message, placeholder, rows)
        contains ``contains``."""

        def seen() -> QuickInput | None:
            box = self.quick_input()
            return box if box is not None and contains in box.text() else None

        return self.wait(seen, what or f"a quick input showing {contains!r}", timeout)

    def wait_no_quick_input(self, what: str = "the quick input to close") -> None:
        self.wait(lambda: self.quick_input() is None, what)

    def status_text(self) -> str | None:
        """The text of the extension's status bar item, or None while it is hidden."""
        got: str | None = self.page.evaluate(
            """(id) => {
              const e = document.getElementById(id);
              if (!e || getComputedStyle(e).display === 'none') return null;
              return e.textContent.trim();
            }""",
            STATUS_ITEM,
        )
        return got

    def status_tooltip(self) -> str:
        got: str = self.page.evaluate(
            """(id) => {
              const e = document.getElementById(id);
              const a = e && (e.querySelector('a') || e);
              return a ? (a.getAttribute('aria-label') || '') : '';
            }""",
            STATUS_ITEM,
        )
        return got

    def status_count(self) -> str | None:
        """The status item's count: its text before the countdown (``2 · 4m55s``) and
        the expired-unseen count, or None while it is hidden."""
        text = self.status_text()
        return None if text is None else text.split(" · ")[0]

    def wait_status(self, text: str | None, what: str = "") -> None:
        """Wait until the status item's count says ``text`` (None: hidden)."""
        self.wait(
            lambda: self.status_count() == text or None,
            what or f"the status bar item to count {text!r}",
        )

    def wait_status_message(self, contains: str) -> str:
        """Wait for a status bar message (``window.setStatusBarMessage``: what the
        extension says without a notification, e.g. that a question was deferred)."""

        def seen() -> str | None:
            text: str = self.page.evaluate(
                "() => document.querySelector('.part.statusbar')?.innerText || ''"
            )
            return text if contains in text else None

        return self.wait(seen, f"the status bar to say {contains!r}")

    def notifications(self) -> list[str]:
        """The messages of the notification toasts on screen."""
        got: list[str] = self.page.evaluate(
            """() => Array.from(document.querySelectorAll(
                   '.notifications-toasts .notification-list-item-message'))
                 .map((e) => e.textContent.trim())"""
        )
        return got

    def wait_notification(self, contains: str) -> str:
        return self.wait(
            lambda: next((n for n in self.notifications() if contains in n), None),
            f"a notification saying {contains!r}",
        )

    def click_notification_button(self, message: str, button: str) -> None:
        """Click ``button`` on the toast whose message contains ``message``."""
        toast = self.page.locator(".notifications-toasts .notification-toast").filter(
            has_text=message
        )
        toast.locator(".monaco-button", has_text=re.compile(rf"^{re.escape(button)}$")).click()

    # -- the Hive: Pending view --------------------------------------------------------

    def pending_view(self) -> list[str] | None:
        """The rows of the Hive: Pending view (label and description), or None while the
        view is collapsed or hidden; [] while it shows its welcome text."""
        got: list[str] | None = self.page.evaluate(
            """() => {
              const header = Array.from(document.querySelectorAll('.pane-header'))
                .find((h) => (h.getAttribute('aria-label') || h.textContent)
                  .toUpperCase().includes('HIVE: PENDING'));
              if (!header || !header.classList.contains('expanded')) return null;
              const body = header.parentElement.querySelector('.pane-body');
              if (!body) return null;
              return Array.from(body.querySelectorAll('.monaco-list-row'))
                .map((r) => r.textContent.trim().replace(/\\s+/g, ' '));
            }"""
        )
        return got

    def show_pending_view(self) -> list[str]:
        """Open the Hive: Pending view (the command VS Code makes for every view)."""
        self.command("Focus on Hive: Pending View")
        seen = self.wait(
            lambda: (lambda rows: (rows,) if rows is not None else None)(self.pending_view()),
            "the Hive: Pending view to open",
        )
        return seen[0]

    # -- acting ----------------------------------------------------------------------

    def command(self, title: str, match: str | None = None) -> None:
        """Run a command from the palette (F1) by its title: type it, wait until the row
        the keyboard is on is that command (``match``: what that row's label contains,
        default the title), press Enter."""
        self.page.keyboard.press("F1")
        self.wait(
            lambda: (box := self.quick_input()) is not None and box.value.startswith(">"),
            "the command palette to open",
        )
        self.page.keyboard.type(title, delay=10)
        want = (match or title).lower()
        self.wait(
            lambda: (
                (box := self.quick_input()) is not None
                and box.active is not None
                and want in box.active.lower()
            ),
            f"the palette to offer {title!r}",
        )
        self.page.keyboard.press("Enter")

    def type_human(self, text: str, delay_ms: int = HUMAN_DELAY_MS) -> None:
        """Type as a person does: one key at a time."""
        self.page.keyboard.type(text, delay=delay_ms)

    def press(self, key: str) -> None:
        self.page.keyboard.press(key)

    def click_quick_input_button(self, tooltip: str) -> None:
        """Click the quick input's title bar button whose tooltip starts with ``tooltip``."""
        self.page.locator(
            f'.quick-input-widget .quick-input-titlebar .action-label[aria-label^="{tooltip}"]'
        ).click()

    def pick(self, label: str) -> None:
        """Move the quick pick's keyboard focus to the row ``label`` (arrow keys, as a
        person does) and press Enter."""
        box = self.wait_quick_input(label)
        assert label in box.rows, f"{label!r} is not among {box.rows}"
        for _ in range(len(box.rows)):
            now = self.quick_input()
            if now is not None and now.active == label:
                break
            self.press("ArrowDown")
        self.press("Enter")

    def open_file(self, name: str) -> None:
        """Open a file of the workspace in an editor (Quick Open) and focus it.  A file
        made a moment ago may be missing from Quick Open's file list ("No matching
        results", kept while the box stays open: seen once under load, the Explorer
        already listing it); then, as a person would, Escape and Ctrl+P again."""
        for _ in range(5):
            self.page.keyboard.press("Control+P")
            self.wait(lambda: self.quick_input() is not None, "Quick Open to open")
            self.page.keyboard.type(name, delay=10)
            box = self.wait(
                lambda: (
                    (box := self.quick_input()) is not None
                    and box.active is not None
                    and (
                        name in box.active
                        or (box.value == name and box.active == "No matching results")
                    )
                    and box
                ),
                f"Quick Open to offer {name}",
            )
            if name in (box.active or ""):
                break
            self.press("Escape")
            self.wait(lambda: self.quick_input() is None, "Quick Open to close")
        else:
            raise AssertionError(f"Quick Open never offered {name}")
        self.press("Enter")
        self.wait(
            lambda: self.page.evaluate(
                "() => !!document.activeElement?.closest('.monaco-editor')"
                " && !document.activeElement.closest('.quick-input-widget')"
            ),
            f"the editor of {name} to have the keyboard",
        )

    def reset(self, hub: Hub) -> None:
        """Between tests: no prompt pending, no quick input, no notification toast."""
        hub.cancel_all()
        if "expired unseen" in (self.status_text() or ""):
            # An earlier test's question expired before anyone saw it: clear its trace.
            self.command("Hive: Dismiss Expired Unseen Questions")
        for _ in range(5):
            if self.quick_input() is None:
                break
            self.press("Escape")
            time.sleep(0.3)
        self.wait_status(None, "the status bar item to hide (no prompt pending)")
        self.wait_no_quick_input()
        with contextlib.suppress(AssertionError):
            self.command("Notifications: Clear All Notifications")


@contextlib.contextmanager
def open_window(
    browser: Browser, server: CodeServer, shots: Path, prefix: str = "", *, ready: bool = True
) -> Iterator[Window]:
    """A new window (its own browser context) opened on the server's workspace."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        window = Window(context.new_page(), server, shots, prefix)
        window.open(ready=ready)
        yield window
    finally:
        context.close()
