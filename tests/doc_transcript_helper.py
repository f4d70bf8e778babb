"""The human on the other side of a docs transcript: answers a question once it is asked.

The docs show `hive-rpc ask ... --wait` blocking until someone answers from another
shell.  A transcript runs one shell, so a hidden setup line starts this script in the
background first:

    python tests/doc_transcript_helper.py answer QUESTION [--kill-hub] -- ANSWER-ARGS...
    python tests/doc_transcript_helper.py kill-when-awaited QUESTION
    python tests/doc_transcript_helper.py call METHOD JSON-PARAMS

It connects to the hub the session's CLI would use (starting one, as the CLI does),
subscribes as an editor does (the pending prompts are replayed first, so a question
asked before the subscription is not missed), waits for the first prompt whose text
is QUESTION, and runs `hive-rpc answer ID ANSWER-ARGS...`: the same command a person
would type.  With `--kill-hub` it first kills the hub with SIGKILL, as the docs'
"wait across a hub restart" example does, so the answer goes to the hub the waiting
command reconnects to.  It waits on notifications, without polling.

`kill-when-awaited` kills the hub (SIGKILL) once someone waits on QUESTION's prompt,
for the example of a wait that loses its hub.  The hub sends no notification when
a wait starts, so this one asks `hive/status` for the waiter count until it is 1
(a test helper, bounded by the transcript's deadline).

`call` makes one socket call the CLI has no command for (`hive/reportResult`, for
the activity stream's task entry) and prints its result as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

import trio

from hive_rpc.client.async_client import connect_or_start
from hive_rpc.host.paths import default_data_dir, default_socket


async def _wait_for(question: str) -> tuple[str, int]:
    """Return the id of the first prompt asking ``question`` and the hub's pid."""
    async with await connect_or_start(default_socket(), default_data_dir()) as client:
        status: dict[str, Any] = await client.call("hive/status")
        await client.call("hive/subscribe")
        while True:
            note = await client.next_notification()
            record = note.params
            is_prompt = note.method == "hive/prompt" and isinstance(record, dict)
            if is_prompt and record.get("question") == question:
                return str(record["id"]), int(status["pid"])


async def _kill_when_awaited(question: str) -> None:
    _, hub_pid = await _wait_for(question)
    async with await connect_or_start(default_socket(), default_data_dir()) as client:
        for _ in range(1200):  # a minute: the transcript gives up before
            if (await client.call("hive/status"))["live"]["waiters"] >= 1:
                os.kill(hub_pid, signal.SIGKILL)
                return
            await trio.sleep(0.05)


async def _call(method: str, params: dict[str, Any]) -> Any:
    async with await connect_or_start(default_socket(), default_data_dir()) as client:
        return await client.call(method, params)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "call":
        print(json.dumps(trio.run(_call, argv[1], json.loads(argv[2]))))
        return 0
    if len(argv) == 2 and argv[0] == "kill-when-awaited":
        trio.run(_kill_when_awaited, argv[1])
        return 0
    if len(argv) < 3 or argv[0] != "answer" or "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    split = argv.index("--")
    question, flags, answer_args = argv[1], argv[2:split], argv[split + 1 :]
    prompt_id, hub_pid = trio.run(_wait_for, question)
    if "--kill-hub" in flags:
        os.kill(hub_pid, signal.SIGKILL)
    return subprocess.run(["hive-rpc", "answer", prompt_id, *answer_args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
