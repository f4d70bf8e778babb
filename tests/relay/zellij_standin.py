"""A stand-in for the ``zellij`` executable, because Zellij cannot be installed on
the machine these tests run on.

It is not Zellij: it prints what Zellij 0.44's CLI is documented to print (see
``hive_rpc/relay/zellij.py`` for the sources) and records what it was asked.  The
test puts a ``zellij`` wrapper that runs this file first on PATH.  It reads
``$ZELLIJ_STANDIN_DIR/scenario.json``:

- ``sessions``: the text ``list-sessions`` prints
- ``panes``: the JSON ``action list-panes --json`` prints
- ``screen``: the text ``action dump-screen`` prints
- ``fail``: ``{action: [status, stderr]}`` to make an action (or ``list-sessions``) fail

and appends ``{"argv": [...], "stdin": "..."}`` to ``$ZELLIJ_STANDIN_DIR/calls.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    here = Path(os.environ["ZELLIJ_STANDIN_DIR"])
    scenario = json.loads((here / "scenario.json").read_text())
    argv = sys.argv[1:]
    stdin = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    with (here / "calls.jsonl").open("a") as f:
        f.write(json.dumps({"argv": argv, "stdin": stdin}) + "\n")

    if argv[:1] == ["list-sessions"]:
        action = "list-sessions"
    elif argv[:1] == ["--session"] and len(argv) >= 4 and argv[2] == "action":
        action = argv[3]
    else:
        sys.stderr.write(f"stand-in zellij: unexpected arguments {argv}\n")
        return 2
    status, message = scenario.get("fail", {}).get(action, [0, ""])
    if status:
        sys.stderr.write(message)
        return int(status)
    if action == "list-sessions":
        sys.stdout.write(scenario.get("sessions", ""))
    elif action == "list-panes":
        sys.stdout.write(json.dumps(scenario.get("panes", [])))
    elif action == "dump-screen":
        sys.stdout.write(scenario.get("screen", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
