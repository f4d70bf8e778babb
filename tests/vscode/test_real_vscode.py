"""The extension in a real VS Code (code-server 4.100.3 + headless Chromium), against a
real hub, looked at and typed into as a person does; the agent's side is the
``hive-rpc`` CLI. Settings: ``hive.pythonPath`` (Machine settings) and ``hive.socket``,
no ``hive-rpc`` on PATH (see conftest.editor_setup). Screenshots: $HIVE_ARTIFACTS."""

from __future__ import annotations

from vscode_session import Hub, Window


def test_the_sidecar_starts_with_hive_python_path(window: Window, vscode_hub: Hub) -> None:
    # `window` waited for the sidecar to subscribe: the command it ran is the setting's
    log = window.log_text()
    assert "-m hive_rpc lsp --socket" in log, log
    assert "subscribed; 0 pending" in log, log
    ask_id = vscode_hub.ask("Deploy to production?", "--choices", "yes,no", "--timeout", "300")
    window.wait_status("1", "the status bar to count the question")
    assert ask_id
