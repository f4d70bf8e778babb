"""A sidecar that keeps dying is restarted, then reported with how it ended.

A real VS Code (code-server) whose running ``hive-rpc lsp`` is SIGKILLed, again and
again: the first four times it is started again and subscribes (the Hive channel says
why), the fifth time the notification says how it ended and that it is not restarted,
and Hive: Restart Sidecar brings it back."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from vscode_session import CodeServer, Hub, Window


def sidecars(server: CodeServer) -> list[int]:
    """The ``hive_rpc lsp`` processes code-server (started by this test, in a process
    group of its own) runs."""
    assert server.proc is not None
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            pgid = os.getpgid(int(proc.name))
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue
        if pgid == server.proc.pid and b"hive_rpc" in argv and b"lsp" in argv:
            found.append(int(proc.name))
    return found


def one_sidecar(server: CodeServer) -> list[int] | None:
    found = sidecars(server)
    return found if len(found) == 1 else None


def test_a_sidecar_killed_five_times_is_reported_and_restart_brings_it_back(
    window: Window, code_server: CodeServer, vscode_hub: Hub
) -> None:
    for crash in range(1, 6):
        (pid,) = window.wait(lambda: one_sidecar(code_server), "one running sidecar")
        subscribed = window.log_text().count("subscribed;")
        os.kill(pid, signal.SIGKILL)
        if crash < 5:
            window.wait(
                lambda: window.log_text().count("subscribed;") > subscribed,  # noqa: B023 (called at once)
                f"the sidecar restarted and subscribed again after kill {crash}",
            )
            assert window.log_text().count("was killed by SIGKILL; restarting it") == crash
    text = window.wait_notification("and is not restarted")
    window.shot("killed-five-times")
    assert text.startswith(
        "Hive: the sidecar was killed by SIGKILL (5 times in 3 minutes) and is not restarted: "
    ), text
    assert f"-m hive_rpc lsp --socket {vscode_hub.socket}." in text, text
    assert sidecars(code_server) == []
    # By hand, it starts again and works.
    window.command("Hive: Restart Sidecar")
    window.wait(lambda: len(sidecars(code_server)) == 1, "the sidecar started by hand")
    ask_id = vscode_hub.ask("Back?", "--choices", "yes,no")
    window.wait_quick_input("Back?", "a question, once restarted")
    window.pick("Yes")
    window.wait_no_quick_input()
    assert vscode_hub.poll(ask_id).stdout.strip() == "yes"
