"""One process cannot lock everyone out of the hub's socket (issue 26, section 4).

Seen: 1,000 idle connections on the socket, and every new client (the CLI, an MCP
session, the hook, an editor reconnecting) failed with Broken pipe / Connection
reset.  Here a real hub process, real sockets from another process (in a session of
its own, as an agent in another terminal), and the real ``hive-rpc`` CLI:

- a peer (its uid and session, from SO_PEERCRED and /proc) holds at most
  ``connections_per_peer``; past it, its own oldest connection that never sent a
  request is closed, and when it has none the new one is admitted for an approver
  only: its request is answered -32011 naming ``connections_per_peer``, with its
  id, not reset, while an approver from the same session gets in;
- a full hub closes the oldest connection that never sent a request (anyone's) to
  admit a new one;
- a hub full of connections that all spoke still admits an approver (an editor, the
  hook, the human's CLI: they prove themselves with the approver token, which an
  agent cannot read) in a reserve beyond the cap; anyone else gets -32011 naming
  ``connections``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_support import Shell
from flood_support import flood
from hook_process import permission_event, start_hook, stopped_at_exit

from hive_rpc.client.sync_client import SyncHubClient, prove_approver
from hive_rpc.core import limits
from hive_rpc.faces.accept_loop import split_descriptors

PER_PEER = 64
"""core/limits.py's connections_per_peer."""


def refusal(limit: str, msg_id: int | None = None) -> dict[str, Any]:
    return {"id": msg_id, "code": -32011, "limit": limit}


def without_message(got: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if got is None else {k: v for k, v in got.items() if k != "message"}


def test_one_process_with_1000_idle_connections_locks_nobody_out(sh: Shell) -> None:
    started = sh.run("serve", "--detach")
    assert started.returncode == 0, started.stderr
    with flood(sh.socket, 1000) as agent:
        # The probe: hive-rpc status failed 25 of 26 times.
        for _ in range(26):
            out = sh.run("status", "--no-start")
            assert out.returncode == 0, out.stderr
        # The flood's oldest connections were closed as it opened more, each told why.
        closed = agent.ask(f"refused {1000 - PER_PEER}")
        assert {json.dumps(without_message(c)) for c in closed} == {
            json.dumps(refusal("connections_per_peer"))
        }
        assert "connections_per_peer" in closed[0]["message"]
        # The ones it kept work; once they all spoke, one more is refused, with its id.
        assert agent.ask("speak") == {"answered": PER_PEER, "refused": []}
        over = agent.ask("one hive/list")
        assert without_message(over) == refusal("connections_per_peer", 7)
        assert f"{PER_PEER}" in over["message"]
        # An approver in the same session (the hook runs in Claude Code's) gets in.
        proved, listed = agent.ask(f"approver {sh.data_dir / 'approver-token'}")
        assert (proved, listed) == ({"id": 8, "result": True}, {"id": 9, "result": True})
        out = sh.run("status", "--no-start")
        assert out.returncode == 0, out.stderr
    assert limits.LIMITS["connections_per_peer"].value == PER_PEER


CAP = 40
FD_LIMIT = next(n for n in range(65, 1000) if split_descriptors(n)[0] == CAP)
"""The hub's descriptors in the next test: so few that its connection cap is 40
(accept_loop.split_descriptors), which a few floods fill."""


def test_a_full_hub_closes_idle_connections_first_and_admits_approvers(
    sh: Shell, short_tmp: Path
) -> None:
    def low_fd_limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, hard))

    started = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "serve", "--detach"],
        env=sh.env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=low_fd_limit,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    with flood(sh.socket, 30) as a, flood(sh.socket, 30) as b, flood(sh.socket, 0) as c:
        # 60 idle connections from two sessions on a hub of 40: the oldest (a's) were
        # closed to make room for b's, and one more for the CLI.
        out = sh.run("status", "--no-start")
        assert out.returncode == 0, out.stderr
        closed = a.ask("refused 21")
        assert [without_message(x) for x in closed] == [refusal("connections")] * 21
        # Connections that speak take the rest, closing idle ones, up to the cap.
        answered = 0
        while (got := c.ask("one hive/list")).get("result"):
            answered += 1
        assert answered == CAP
        assert without_message(got) == refusal("connections", 7)
        assert a.ask("speak")["answered"] == 0
        assert b.ask("speak")["answered"] == 0
        # Full of connections that spoke: an approver is still admitted (the editors'
        # and the CLI's way: hive/status, then hive/proveApprover) ...
        with SyncHubClient.connect(sh.socket) as editor:
            assert prove_approver(editor.call) is None
            assert editor.call("hive/list", {}) == []
            # ... and so is the human's CLI, which proves itself when the hub is full ...
            out = sh.run("list", "--no-start")
            assert out.returncode == 0, out.stderr
            out = sh.run("status", "--no-start")
            assert out.returncode == 0, out.stderr
            # ... and the permission hook, whose question the editor answers.
            editor.call("hive/subscribe", {})
            home = short_tmp / "home"
            (home / "app").mkdir(parents=True)
            event = permission_event(home, "Bash", {"command": "npm test"})
            hook = start_hook(event, socket=sh.socket, data_dir=sh.data_dir, home=home)
            with stopped_at_exit(hook):
                note = editor.next_notification(timeout_s=60)
                while note.method != "hive/prompt":
                    note = editor.next_notification(timeout_s=60)
                editor.call("hive/respond", {"id": note.params["id"], "answer": "allow"})
                decided, said = hook.communicate(timeout=60)
            assert json.loads(decided)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
            assert b"limit" not in said, said
