"""When the sidecar cannot start, VS Code says what failed.

A real VS Code (code-server) whose ``hive.command`` is a Python that prints two lines
on stderr and exits 3, then (changed while it runs) a program that does not exist.
Before: "Hive: could not start the sidecar (Pending response rejected since connection
got disposed). Check hive.pythonPath or hive.command." after five restarts. Now: the
command that was run, its exit code (or "was not found"), and its last stderr lines;
"Show Log" and "Hive: Show Sidecar Log" open the channel that has them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from vscode_session import CodeServer, EditorSetup, Hub, Window, open_window

if TYPE_CHECKING:
    from playwright.sync_api import Browser

FAILING = (
    "import sys; print('first line', file=sys.stderr); "
    "print('boom: no hub [today](command:workbench.action.files.newUntitledFile)', "
    "file=sys.stderr); sys.exit(3)"
)


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    return EditorSetup(machine={"hive.command": [sys.executable, "-c", FAILING]})


@pytest.fixture(scope="module")
def failing_window(
    browser: Browser, code_server: CodeServer, vscode_hub: Hub, artifacts: Path
) -> Iterator[Window]:
    """A window whose sidecar is not expected to start (the hub is there all along)."""
    with open_window(browser, code_server, artifacts, "failing-", ready=False) as window:
        yield window


def hive_errors(window: Window) -> list[str]:
    return [n for n in window.notifications() if n.startswith("Hive:")]


def output_panel(window: Window) -> str:
    """The lines the Output panel shows (rendered, joined without line breaks)."""
    text = window.page.evaluate(
        "() => { const v = document.querySelector('.panel .output-view .view-lines');"
        " return v ? v.textContent : ''; }"
    )
    return str(text).replace("\u00a0", " ")  # Monaco renders spaces as no-break spaces


def hive_log(server: CodeServer) -> str:
    """The whole "Hive" channel, from its file (this module has one window)."""
    (log,) = server.hive_logs()
    return log.read_text(errors="replace")


def test_a_sidecar_that_exits_3_is_reported_with_its_command_code_and_stderr(
    failing_window: Window, code_server: CodeServer, vscode_hub: Hub
) -> None:
    window = failing_window
    text = window.wait(lambda: next(iter(hive_errors(window)), None), "the error notification")
    window.shot("exit-3")
    assert text.startswith(f"Hive: the sidecar did not start: {sys.executable} -c "), text
    assert f"--socket {vscode_hub.socket} exited with code 3." in text, text
    # The stderr is quoted as plain text: a Markdown link in it is not made a link
    # that would run a command when clicked.
    plain_link = "[today]\u200b(command:workbench.action.files.newUntitledFile)"
    assert text.endswith(f'Its last output: "first line" · "boom: no hub {plain_link}".'), text
    assert window.page.locator(".notification-list-item-message a").count() == 0
    assert len(hive_errors(window)) == 1, window.notifications()
    assert not any("Pending response rejected" in n for n in window.notifications())
    window.click_notification_button("exited with code 3", "Show Log")
    window.wait(lambda: "exited with code 3" in output_panel(window), "the Hive channel to show")
    window.shot("exit-3-log")
    log = hive_log(code_server)
    # Started once: a sidecar that did not start is not started four more times.
    assert log.count("] starting ") == 1, log
    assert "[error] first line\n" in log, log
    assert "[error] boom: no hub [today](command:" in log, log


def test_a_program_that_does_not_exist_is_named_and_show_sidecar_log_opens_the_log(
    failing_window: Window, code_server: CodeServer, vscode_hub: Hub
) -> None:
    window = failing_window
    missing = code_server.root / "no-such-hive-rpc"
    window.command("Notifications: Clear All Notifications")
    code_server.set_settings(machine={"hive.command": [str(missing), "lsp"]})
    text = window.wait_notification("was not found")
    window.shot("not-found")
    assert text == (
        f"Hive: the sidecar did not start: {missing} lsp --socket {vscode_hub.socket} could "
        f"not be run (spawn {missing} ENOENT: {missing} was not found). It printed nothing "
        "on stderr. Set Hive: Python Path (hive.pythonPath) to a Python that has hive-rpc "
        "installed, or Hive: Command (hive.command) to the full command: Settings (Ctrl+,) > "
        "Extensions > Hive, on the Remote tab when VS Code runs on a server (code-server, "
        "Remote-SSH, WSL: the extension runs there), else on the User tab."
    )
    window.command("View: Hide Panel")
    window.command("Hive: Show Sidecar Log")
    window.wait(lambda: "was not found" in output_panel(window), "the Hive channel to show")
    assert f"] starting {missing} lsp --socket {vscode_hub.socket}\n" in hive_log(code_server)
