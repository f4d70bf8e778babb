"""Settings in a real VS Code (code-server + headless Chromium) against a real hub.

- A live setting (``hive.by``, ``hive.trace.server``) applies without a new sidecar: its
  pid stays the same, the next answer carries the new ``by``, and with
  ``hive.trace.server`` alone (the Hive channel at its default level) the messages show
  in the Hive output channel.
- A sidecar setting (``hive.pythonPath``, Machine settings as docs/vscode.md says)
  starts a new sidecar that works: the question waiting is still answerable, and a
  question deferred before the restart stays deferred (it does not pop up again).

The sidecar's pid is read from the process table: the one ``hive_rpc lsp`` process
whose command line names this module's hub socket.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from vscode_session import CodeServer, EditorSetup, Hub, Window


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    """The default settings; keys answer as soon as a box is open (no opening grace)."""
    return EditorSetup(
        machine={"hive.pythonPath": sys.executable}, user={"hive.openGraceSeconds": 0}
    )


def sidecars(hub: Hub) -> dict[int, str]:
    """The running ``hive_rpc lsp`` processes for this hub: pid -> command line."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        line = " ".join(a.decode(errors="replace") for a in argv if a)
        if "hive_rpc lsp" in line and str(hub.socket) in line:
            found[int(entry.name)] = line
    return found


def one_sidecar(window: Window, hub: Hub, what: str) -> tuple[int, str]:
    got = window.wait(lambda: len(s := sidecars(hub)) == 1 and s, what)
    return next(iter(got.items()))


def test_a_live_setting_keeps_the_sidecar_and_trace_server_alone_shows_the_messages(
    window: Window, vscode_hub: Hub, code_server: CodeServer
) -> None:
    pid, line = one_sidecar(window, vscode_hub, "this window's sidecar")
    assert line.startswith(f"{sys.executable} -m hive_rpc lsp"), line
    before = vscode_hub.ask("Before?", "--choices", "one,two", "--agent", "release")
    window.wait_quick_input("Before?", "the question to open")
    window.pick("one")
    window.wait_no_quick_input()
    assert vscode_hub.record(before)["by"] != "carol"
    assert "Received notification" not in window.log_text()  # the trace is off

    # Remote (Machine) settings: code-server did not notice a change to the User
    # settings file (hive.by stayed as it was); it does notice this one
    code_server.set_settings(machine={"hive.by": "carol", "hive.trace.server": "verbose"})
    window.wait(
        lambda: "Sending notification '$/setTrace'" in window.log_text() or None,
        "the client to turn its trace on (and say so in the Hive channel)",
    )
    ask_id = vscode_hub.ask("Ship it?", "--choices", "ship,hold", "--agent", "release")
    window.wait(
        lambda: "Received notification 'hive/prompt'" in window.log_text() or None,
        "the Hive channel to trace hive/prompt (hive.trace.server: verbose)",
    )
    log = window.log_text()
    assert '"question": "Ship it?"' in log, log[-3000:]  # verbose: with its params
    assert log.count("Received notification 'hive/prompt'") == 1, log[-3000:]
    window.wait_quick_input("Ship it?", "the question to open")
    window.pick("hold")
    window.wait_no_quick_input()
    record = vscode_hub.record(ask_id)
    assert (record["answer"], record["by"]) == ("hold", "carol"), record  # hive.by, live
    assert sidecars(vscode_hub) == {pid: line}, "a live setting must not restart the sidecar"
    assert "restarting" not in window.log_text()
    window.shot("trace")


def test_a_sidecar_setting_restarts_it_deferred_stays_deferred(
    window: Window, vscode_hub: Hub, code_server: CodeServer
) -> None:
    code_server.set_settings(machine={"hive.trace.server": "messages", "hive.by": None})
    old_pid, old_line = one_sidecar(window, vscode_hub, "this window's sidecar")
    deferred = vscode_hub.ask("Put aside?", "--choices", "yes,no", "--agent", "planner")
    window.wait_quick_input("Put aside?", "the question to open")
    window.press("Escape")
    window.wait_no_quick_input()
    window.wait_status_message("Hive: deferred")
    window.wait_status("1")

    # the same interpreter by another path: a new command line, so a new sidecar
    here = Path(sys.executable)
    other_python = str(here.with_name("python" if here.name != "python" else "python3"))
    assert os.path.exists(other_python), other_python
    subscribed_before = window.log_text().count("subscribed;")
    code_server.set_settings(machine={"hive.pythonPath": other_python})
    _, new_line = window.wait(
        lambda: len(s := sidecars(vscode_hub)) == 1 and old_pid not in s and next(iter(s.items())),
        "a new sidecar with the new hive.pythonPath",
    )
    assert new_line.startswith(f"{other_python} -m hive_rpc lsp"), new_line
    window.wait(
        lambda: window.log_text().count("subscribed;") > subscribed_before or None,
        "the new sidecar to subscribe",
    )
    log = window.log_text()
    assert "Sending request 'hive/subscribe" in log.split("restarting", 1)[-1], log[-2000:]

    # a new question opens on its own; the deferred one (older) did not come back first
    fresh = vscode_hub.ask("Still there?", "--agent", "planner")
    box = window.wait_quick_input("Still there?", "the new sidecar's question to open")
    assert "Put aside?" not in box.text(), box
    window.type_human("yes")
    window.press("Enter")
    window.wait_no_quick_input()
    assert vscode_hub.poll(fresh).stdout.strip() == "yes"
    assert vscode_hub.record(deferred)["status"] == "pending"
    assert window.status_count() == "1"  # the deferred one still waits
    # ... until asked for
    window.command("Hive: Answer Next Question")
    window.wait_quick_input("Put aside?", "Answer Next to bring the deferred question back")
    window.pick("Yes")
    window.wait_no_quick_input()
    assert vscode_hub.poll(deferred).stdout.strip() == "yes"
    assert old_line != new_line
    code_server.set_settings(machine={"hive.trace.server": None, "hive.pythonPath": sys.executable})
