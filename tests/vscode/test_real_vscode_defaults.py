"""The extension with no ``hive.*`` setting at all, on the machine of someone who
installed the wheel with pipx or into a venv of its own: ``hive-rpc`` is on PATH, the
system's ``python3`` has no ``hive_rpc``, and the hub listens where ``hive-rpc`` looks
by default ($XDG_RUNTIME_DIR/hive-rpc/hub.sock)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from vscode_session import EditorSetup, Hub, Window


@pytest.fixture(scope="module")
def editor_setup(vscode_root: Path) -> EditorSetup:
    # What pipx (or a venv linked into ~/.local/bin, as the README does) leaves: the
    # command alone in ~/.local/bin, put on PATH by the login shell's ~/.profile.
    local_bin = vscode_root / "home" / ".local" / "bin"
    local_bin.mkdir(parents=True)
    (local_bin / "hive-rpc").symlink_to(Path(sys.executable).parent / "hive-rpc")
    profile = 'if [ -d "$HOME/.local/bin" ]; then PATH="$HOME/.local/bin:$PATH"; fi\n'
    return EditorSetup(default_socket=True, home_files={".profile": profile})


def test_the_sidecar_starts_with_default_settings(window: Window, vscode_hub: Hub) -> None:
    # `window` waited for the sidecar to subscribe to this hub; it runs hive-rpc from PATH
    log = window.log_text()
    assert ".local/bin/hive-rpc lsp" in log, log
    ask_id = vscode_hub.ask("Which branch?", "--choices", "main,dev")
    window.wait_status("1", "the status bar to count it")
    box = window.wait_quick_input("Which branch?", "the question to open on its own")
    assert box.rows == ["main", "dev"]
    window.shot("quick-pick")
    # answered elsewhere (no keys: the box's first moment gives them back to the editor)
    assert vscode_hub.answer(ask_id, "dev").returncode == 0
    window.wait_no_quick_input()
    window.wait_status(None)
