"""Permission round trip: Claude Code's ``PermissionRequest`` hook, start to decision.

Every tool use Claude Code is not sure of waits on one ``hive-rpc hook claude-code``
process: it starts, reads the hook's JSON on stdin, asks the hub (``rule/check``, then
an urgent prompt), waits for the human, and prints the decision.  This times that whole
process, from ``fork`` to exit with the decision on stdout, with an editor that answers
at once: an approver (``hive/proveApprover``) subscribed to the hub that allows every
permission prompt the moment its ``hive/prompt`` notification arrives.  So what is left
is the cost of the process and of the hub, not of a human.

Four processes are timed, one after another within a round, rounds interleaved so that
a slow moment of the machine falls on all alike (medians):

* floor 1: a Python process that does nothing but read the hook's JSON from stdin
  (``sys.stdin.buffer.read()``), the least any hook written in Python costs;
* floor 2: a bare Python script (``socket`` and ``json`` only) sending one framed
  ``hive/status`` to the same hub, the least a hook that asks the hub can do;
* the hook, answered by the human (no rule matches: ``rule/check``, ``hive/ask``,
  ``hive/await``, the editor's ``hive/respond``);
* the hook, answered by an allow rule (``rule/check`` alone), a second hub;
* the hook on Claude Code's own question (``AskUserQuestion``, one question of two
  options: ``hive/ask`` of the one prompt with its schema, ``hive/await``), the editor
  picking the first option at once; no rule is checked.

With ``--before DIR`` (another checkout: ``git archive REV | tar -x -C DIR``) the
hook of that tree, answered by the editor, is timed in the same rounds as a fifth
process (and on the question, a sixth): it runs in DIR with DIR on ``PYTHONPATH``,
so its ``hive_rpc`` is that tree's; the hubs are this tree's either way.

Printed as ratios to both floors.  Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import trio
from _common import hub_process, print_machine, ratio, short_tmp, table
from cli_cold_start import FLOOR, writing_bytecode

from hive_rpc.client.async_client import HubClient, prove_approver

READ_STDIN = "import sys; sys.stdin.buffer.read()"


def event(cwd: str, command: str) -> bytes:
    """A PermissionRequest as Claude Code 2.1.328 sends it (docs/claude-code.md)."""
    return json.dumps(
        {
            "session_id": "3f2a9c1e-0000-4000-8000-000000000000",
            "transcript_path": "/dev/null",
            "cwd": cwd,
            "permission_mode": "default",
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "bench"},
        }
    ).encode()


def question_event(cwd: str) -> bytes:
    """Claude Code's AskUserQuestion as 2.1.328 sends it to the hook (docs/claude-code.md)."""
    question = {
        "question": "Which database should the cache use?",
        "header": "Database",
        "options": [
            {"label": "SQLite", "description": "embedded"},
            {"label": "Postgres", "description": "a server"},
        ],
        "multiSelect": False,
    }
    body = json.loads(event(cwd, ""))
    body.update(tool_name="AskUserQuestion", tool_input={"questions": [question]})
    return json.dumps(body).encode()


def first_pick(record: dict[str, Any]) -> Any:
    """The editor's answer: allow a permission; the first option of each field of a
    question's schema (a list of it for a multi-select); a choices prompt's first."""
    schema = record.get("schema")
    if isinstance(schema, dict):
        answer: dict[str, Any] = {}
        for name, prop in schema["properties"].items():
            options = prop.get("items", prop).get("anyOf") or prop.get("oneOf") or []
            first = next(o["const"] for o in options if "const" in o)
            answer[name] = [first] if prop.get("type") == "array" else first
        return answer
    choices = record.get("choices") or []
    return "allow" if "allow" in choices else choices[0]


async def approve_everything(socket: Path, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """The editor: allow each permission prompt as soon as it is announced, and pick
    the first option of each of Claude Code's questions."""
    async with await HubClient.connect(socket) as editor:
        if (why := await prove_approver(editor.call)) is not None:
            raise RuntimeError(f"the editor is no approver: {why}")
        await editor.call("hive/subscribe")
        task_status.started()
        while True:
            note = await editor.next_notification()
            if note.method != "hive/prompt" or not isinstance(note.params, dict):
                continue
            record = note.params
            if record.get("status") == "pending" and record.get("kind") == "permission":
                answer = first_pick(record)
                await editor.call("hive/respond", {"id": record["id"], "answer": answer})


Run = tuple[list[str], bytes, dict[str, str], bytes, Path | None]
"""argv, stdin, environment, what stdout must hold, working directory."""


async def timed(
    argv: list[str], stdin: bytes, env: dict[str, str], expect: bytes, cwd: Path | None = None
) -> float:
    start = time.perf_counter()
    done = await trio.run_process(
        argv, stdin=stdin, capture_stdout=True, env=env, cwd=cwd, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or expect not in done.stdout:
        raise RuntimeError(f"{argv[:4]} exited {done.returncode}, printed {done.stdout[:200]!r}")
    return elapsed


async def measure(
    rounds: int, sockets: tuple[Path, Path], tmp: Path, before: Path | None = None
) -> dict[str, list[float]]:
    asked, ruled = sockets
    env = dict(os.environ)
    hook = [sys.executable, "-m", "hive_rpc", "hook", "claude-code", "--timeout", "30"]
    request = event(os.fspath(tmp), "npm test")
    question = question_event(os.fspath(tmp))
    async with await HubClient.connect(ruled) as rules:
        if (why := await prove_approver(rules.call)) is not None:
            raise RuntimeError(f"cannot add the rule: {why}")
        await rules.call(
            "rule/add", {"pattern": "Bash(npm test)", "decision": "allow", "scope": "global"}
        )
    runs: dict[str, Run] = {
        "read stdin only (floor 1)": ([sys.executable, "-c", READ_STDIN], request, env, b"", None),
        "bare socket request (floor 2)": (
            [sys.executable, "-c", FLOOR, os.fspath(asked)], b"", env, b"", None),
        "hook, the editor answers": (
            hook, request, {**env, "HIVE_RPC_SOCKET": os.fspath(asked)}, b'"allow"', None),
        "hook, an allow rule answers": (
            hook, request, {**env, "HIVE_RPC_SOCKET": os.fspath(ruled)}, b'"allow"', None),
        "hook, a question the editor answers": (
            hook, question, {**env, "HIVE_RPC_SOCKET": os.fspath(asked)}, b'"answers"', None),
    }  # fmt: skip
    if before is not None:
        there = {**env, "HIVE_RPC_SOCKET": os.fspath(asked), "PYTHONPATH": os.fspath(before)}
        runs[f"hook ({before.name}), the editor answers"] = (
            hook, request, there, b'"allow"', before)  # fmt: skip
        runs[f"hook ({before.name}), a question the editor answers"] = (
            hook, question, there, b'"answers"', before)  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in runs}
    async with trio.open_nursery() as nursery:
        await nursery.start(approve_everything, asked)
        for argv, stdin, run_env, expect, cwd in runs.values():  # warm the caches
            await timed(argv, stdin, writing_bytecode(run_env), expect, cwd)
        for _ in range(rounds):
            for name, run in runs.items():
                samples[name].append(await timed(*run))
        nursery.cancel_scope.cancel()
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--before", type=Path, default=None,
        help="another checkout whose hook is timed in the same rounds",
    )  # fmt: skip
    args = ap.parse_args()
    before = None if args.before is None else args.before.resolve()
    print_machine()
    with short_tmp() as tmp:
        asked, ruled = tmp / "asked.sock", tmp / "ruled.sock"
        with (
            hub_process("memory", asked, tmp / "data-asked"),
            hub_process("memory", ruled, tmp / "data-ruled"),
        ):
            samples = trio.run(measure, args.rounds, (asked, ruled), tmp, before)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor1, floor2 = (medians[name] for name in list(medians)[:2])
    rows = [
        (name, f"{m * 1000:.1f}", ratio(m, floor1), ratio(m, floor2)) for name, m in medians.items()
    ]
    print(f"\n{args.rounds} interleaved rounds, median wall time per process (fork to exit)\n")
    print(table(["process", "median ms", "vs floor 1 (read stdin)", "vs floor 2 (socket)"], rows))


if __name__ == "__main__":
    main()
