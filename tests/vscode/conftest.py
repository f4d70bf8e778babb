"""Fixtures for the tests in a real VS Code (see vscode_session.py).

Per session: code-server (installed or found in its cache) and the packaged ``.vsix``.
Per module: one headless Chromium, a hub process and one code-server with the extension
installed and one window open on it, reused by the module's tests (``window`` resets it
between tests: no prompt pending, no quick input). A module chooses its settings by
overriding the ``editor_setup`` fixture; the default sets ``hive.pythonPath`` (in the
Machine settings, where a machine-overridable setting belongs) and ``hive.socket``.

Teardown stops code-server (its whole process group: extension hosts and sidecars)
before the hub, and copies the hub's, code-server's and each window's Hive log next to
the screenshots (``$HIVE_ARTIFACTS``, default a tmp dir; printed)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from disk_support import short_tmp_dir
from vscode_session import (
    CHROMIUM,
    CHROMIUM_ARGS,
    CodeServer,
    EditorSetup,
    Hub,
    Window,
    artifacts_dir,
    code_server_binary,
    open_window,
    packaged_vsix,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser


@pytest.fixture(scope="session")
def code_server_bin() -> Path:
    return code_server_binary()


@pytest.fixture(scope="session")
def vsix() -> Path:
    return packaged_vsix()


@pytest.fixture(scope="module")
def browser(code_server_bin: Path) -> Iterator[Browser]:
    """Chromium, per module: Playwright's sync API allows one instance per thread at a
    time, so none may outlive the module that started it."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, "--headless"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def vscode_root() -> Iterator[Path]:
    """A short private directory (Unix socket paths are capped at 108 bytes)."""
    with short_tmp_dir("hvc-") as path:
        yield path


@pytest.fixture(scope="module")
def artifacts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Screenshots and logs of this module: ``$HIVE_ARTIFACTS/vscode/<module>``."""
    base = artifacts_dir(tmp_path_factory.mktemp("artifacts"))
    module: str = request.module.__name__
    path = base / "vscode" / module.rpartition(".")[2]
    path.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots and logs in {path}")
    return path


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    """The default: ``hive.pythonPath`` is this venv's Python, and no ``hive-rpc`` on
    PATH (the extension must use the setting). Override in a module to change it."""
    return EditorSetup(machine={"hive.pythonPath": sys.executable})


@pytest.fixture(scope="module")
def vscode_hub(vscode_root: Path, editor_setup: EditorSetup, artifacts: Path) -> Iterator[Hub]:
    """The hub process of this module's code-server."""
    socket_path = None
    if editor_setup.default_socket:
        socket_path = vscode_root / "xdg-run" / "hive-rpc" / "hub.sock"
        socket_path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    hub = Hub(vscode_root, socket_path)
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()
        if hub.log.exists():
            shutil.copy(hub.log, artifacts / "hub.log")


@pytest.fixture(scope="module")
def code_server(
    vscode_root: Path,
    code_server_bin: Path,
    vsix: Path,
    vscode_hub: Hub,
    editor_setup: EditorSetup,
    artifacts: Path,
) -> Iterator[CodeServer]:
    machine = dict(editor_setup.machine)
    if editor_setup.socket_setting and not editor_setup.default_socket:
        machine["hive.socket"] = str(vscode_hub.socket)
    server = CodeServer(
        vscode_root,
        code_server_bin,
        vsix,
        user_settings=editor_setup.user,
        machine_settings=machine,
        path=editor_setup.path,
        home_files=editor_setup.home_files,
        extra_vsix=editor_setup.extra_vsix,
    )
    try:
        server.start()
        yield server
    finally:
        server.stop()  # before the hub (vscode_hub's teardown runs after this one)
        if server.log.exists():
            shutil.copy(server.log, artifacts / "code-server.log")
        for i, log in enumerate(server.hive_logs()):
            shutil.copy(log, artifacts / f"Hive-{log.parent.parent.name}-{i}.log")


@pytest.fixture(scope="module")
def module_window(browser: Browser, code_server: CodeServer, artifacts: Path) -> Iterator[Window]:
    """The module's one window, opened once (its sidecar subscribed)."""
    with open_window(browser, code_server, artifacts) as window:
        yield window


@pytest.fixture
def window(
    module_window: Window, vscode_hub: Hub, request: pytest.FixtureRequest
) -> Iterator[Window]:
    """The module's window, with nothing pending and no quick input; its screenshots
    are named after the test."""
    module_window.reset(vscode_hub)
    module_window.prefix = f"{request.node.name}-"
    yield module_window
    module_window.prefix = ""


@pytest.fixture
def new_window(
    browser: Browser, code_server: CodeServer, artifacts: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Window]]:
    """Open more windows (each its own extension host and sidecar), closed after the
    test: ``new_window("second")``."""
    with ExitStack() as stack:

        def make(name: str) -> Window:
            prefix = f"{request.node.name}-{name}-"
            return stack.enter_context(open_window(browser, code_server, artifacts, prefix))

        yield make
