"""Prompt ids on the command line: a unique prefix (4 characters or more) stands for the
whole id, as people copy ids in part; an ambiguous one lists the matches."""

from __future__ import annotations

import json
import sqlite3

from cli_support import Shell

from hive_rpc import cli
from hive_rpc.host.paths import DB_NAME


def _rename(sh: Shell, renames: dict[str, str]) -> None:
    """Give stored prompts ids of our choosing (ids are random), with the hub stopped;
    then start it again (``restart``: a hub stopped on purpose is not autostarted)."""
    sh.stop()
    with sqlite3.connect(sh.data_dir / DB_NAME) as db:
        for old, new in renames.items():
            (text,) = db.execute("SELECT record FROM prompts WHERE id = ?", (old,)).fetchone()
            record = {**json.loads(text), "id": new}
            db.execute(
                "UPDATE prompts SET id = ?, record = ? WHERE id = ?",
                (new, json.dumps(record), old),
            )
    db.close()
    restarted = sh.run("restart")
    assert restarted.returncode == cli.EXIT_OK, restarted.stderr


def test_a_unique_prefix_works_for_poll_answer_and_cancel(sh: Shell) -> None:
    deploy = sh.run("ask", "Deploy now?", "--choices", "yes,no", "--agent", "a1").stdout.strip()
    rebase = sh.run("ask", "Rebase?", "--agent", "a1").stdout.strip()
    assert deploy[:8] != rebase[:8]

    assert sh.run("poll", deploy[:8]).returncode == cli.EXIT_PENDING
    answered = sh.run("answer", deploy[:8], "yes")
    assert answered.returncode == cli.EXIT_OK, answered.stderr
    polled = sh.run("poll", deploy[:8], "--json")  # answered: found in the store
    assert polled.returncode == cli.EXIT_OK, polled.stderr
    assert json.loads(polled.stdout)["id"] == deploy
    assert sh.run("poll", deploy[:4]).stdout == "yes\n"

    assert sh.run("cancel", rebase[:6], "--agent", "a1").returncode == cli.EXIT_OK
    assert sh.run("poll", rebase[:4], "--agent", "a1").returncode == cli.EXIT_CANCELLED
    other = sh.run("poll", rebase[:8], "--agent", "a2")  # another agent's prompt stays unseen
    assert other.returncode == cli.EXIT_NOT_FOUND
    assert f"no prompt '{rebase[:8]}' asked by agent 'a2'" in other.stderr

    declined = sh.run("ask", "Decline me").stdout.strip()
    assert sh.run("answer", declined[:5], "--decline").returncode == cli.EXIT_OK
    assert sh.run("poll", declined).returncode == cli.EXIT_DECLINED


def test_an_ambiguous_prefix_lists_the_matches(sh: Shell) -> None:
    first = sh.run("ask", "Ship it?").stdout.strip()
    second = sh.run("ask", "Which branch?").stdout.strip()
    sh.run("answer", second, "main")
    _rename(sh, {first: "14d3b00b00000001", second: "14d3b00b00000002"})

    for command in (["poll", "14d3b00b"], ["answer", "14d3", "yes"], ["cancel", "14d3b"]):
        out = sh.run(*command)
        assert out.returncode == cli.EXIT_USAGE, (command, out.stderr)
        assert f"the id prefix '{command[1]}' matches 2 prompts; give more of the id:" in (
            out.stderr
        )
        lines = out.stderr.splitlines()[1:]
        assert [line.split()[:2] for line in lines] == [
            ["14d3b00b00000001", "pending"],
            ["14d3b00b00000002", "responded"],
        ]
        assert "Ship it?" in lines[0]
        assert "Which branch?" in lines[1]
    assert sh.run("poll", "14d3b00b00000001").returncode == cli.EXIT_PENDING  # nothing changed
    assert sh.run("answer", "14d3b00b0000000", "yes").returncode == cli.EXIT_USAGE
    assert sh.run("answer", "14d3b00b00000001", "yes").returncode == cli.EXIT_OK


def test_an_unknown_id_says_so_and_points_at_list(sh: Shell) -> None:
    sh.run("ask", "Anything?")
    for command in (["poll", "0000dead"], ["answer", "0000dead", "x"], ["cancel", "0000dead"]):
        out = sh.run(*command)
        assert out.returncode == cli.EXIT_NOT_FOUND, (command, out.stderr)
        assert out.stderr == (
            "hive-rpc: no prompt '0000dead'; `hive-rpc list` shows the pending prompts' ids\n"
        )
    short = sh.run("poll", "abc")
    assert short.returncode == cli.EXIT_NOT_FOUND
    assert "give at least 4 characters of its id" in short.stderr
