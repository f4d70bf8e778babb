"""``hive-rpc sessions`` (issue 30): which agent sessions wait on the human, as a table,
as JSON, and ``--watch``ed as they change, through the real command and hub."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_support import Shell


def read_line(proc: subprocess.Popen[str]) -> str:
    """The watch's next line (a blocking read: the command prints one per change)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else "no output"
    return line


def test_sessions_lists_waiting_first_and_watch_prints_each_change(
    sh: Shell, short_tmp: Path
) -> None:
    assert sh.run("sessions").stdout.strip() == "no agent sessions"
    asked = sh.json("ask", "Ship build 7?", "--agent", "deployer")
    # an agent known only by a question that was answered is not listed
    done = sh.run("ask", "Coffee?", "--agent", "barista")
    assert done.returncode == 0, done.stderr
    coffee = done.stdout.strip()
    sh.run("answer", coffee, "yes")
    sh.run("ask", "Tea?", "--agent", "reviewer")
    table = sh.run("sessions").stdout.splitlines()
    assert table[0].split() == ["STATE", "AGENT", "FOR", "PROJECT", "WAITS", "ON", "/", "MESSAGE"]
    assert [row.split()[:2] for row in table[1:]] == [
        ["waiting", "deployer"],
        ["waiting", "reviewer"],
    ]
    assert table[1].endswith("1 question")
    records = sh.json("sessions")
    assert (records[0]["agent_id"], records[0]["prompt_ids"]) == ("deployer", [asked["id"]])

    watch = subprocess.Popen(
        [sys.executable, "-m", "hive_rpc", "sessions", "--watch", "--json"],
        env=sh.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = {json.loads(read_line(watch))["agent_id"] for _ in range(2)}
        assert first == {"deployer", "reviewer"}  # every session first
        sh.run("answer", asked["id"], "no")
        # known only by its question, the deployer leaves the list once it closes
        assert json.loads(read_line(watch)) == {"removed": True, "agent_id": "deployer"}
    finally:
        watch.terminate()
        watch.communicate(timeout=30)
