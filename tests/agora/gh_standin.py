"""A stand-in for the GitHub CLI ``gh``: GitHub cannot be reached from the test
machines, so the hub's watch of pull requests runs this in its place, found on PATH
as ``gh`` exactly as the real one would be.

It replays what the test put in the directory ``$GH_STANDIN_DIR``, which the test
changes between the hub's looks, and records every run:

- ``gh pr list ...`` prints ``pr-list.json`` (what ``gh pr list --json`` printed on
  a real repository); while ``pr-list.fail`` exists (``{"stderr": ..., "code": N}``)
  it prints that to stderr and exits N instead, as gh does on an error;
- ``gh api rate_limit`` prints ``rate_limit.json``;
- each run appends ``{"argv", "cwd", "env"}`` to ``calls.jsonl`` (``env``: the
  ``GH_*`` variables it was given), so the test sees where and how it was run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    here = Path(os.environ["GH_STANDIN_DIR"])
    args = sys.argv[1:]
    with (here / "calls.jsonl").open("a") as f:
        env = {k: v for k, v in os.environ.items() if k.startswith("GH_") and k != "GH_STANDIN_DIR"}
        f.write(json.dumps({"argv": args, "cwd": os.getcwd(), "env": env}) + "\n")
    if args[:2] == ["pr", "list"]:
        fail = here / "pr-list.fail"
        if fail.exists():
            failure = json.loads(fail.read_text())
            sys.stderr.write(failure["stderr"] + "\n")
            return int(failure["code"])
        sys.stdout.write((here / "pr-list.json").read_text())
        return 0
    if args[:2] == ["api", "rate_limit"]:
        sys.stdout.write((here / "rate_limit.json").read_text())
        return 0
    sys.stderr.write(f"unknown command {args!r} for the gh stand-in\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
