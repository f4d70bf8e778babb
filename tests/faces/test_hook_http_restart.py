"""The http hook's question is not left behind by a hub that died under it (service/
askers.py): the real hub serving HTTP (``serve --detach --http``), a POST to
``/hook/claude-code`` waiting on the human, the hub SIGKILLed (the request fails:
Claude Code then asks in its own dialog), a hub started again on the same data dir:
the question is withdrawn, ``by`` GONE, before any editor shows it, and the human's
late ``allow`` records nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_support import Shell
from test_asker_gone import closed, pending, until

from hive_rpc.core.permission_hook import HOOK_PATH
from hive_rpc.host.paths import HOOK_TOKEN_NAME
from hive_rpc.service.askers import GONE

POST = """
import json, sys, urllib.request
request = urllib.request.Request(sys.argv[1], data=sys.argv[3].encode(), headers={
    "Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(request, timeout=60).read().decode())
except Exception as e:
    print("failed:", type(e).__name__)
"""


def test_the_http_hooks_question_is_withdrawn_when_the_hub_restarts(
    sh: Shell, tmp_path: Path
) -> None:
    started = sh.run("serve", "--detach", "--http", "127.0.0.1:0")
    assert started.returncode == 0, started.stderr
    status: dict[str, Any] = sh.json("status")
    url = str(status["http_url"]).removesuffix("/mcp") + HOOK_PATH
    token = (sh.data_dir / HOOK_TOKEN_NAME).read_text().strip()
    event = {
        "hook_event_name": "PermissionRequest",
        "session_id": "5e55i0n0-0000-4000-8000-000000000000",
        "cwd": str(tmp_path),
        "tool_name": "Bash",
        "tool_input": {"command": "make deploy"},
    }
    post = subprocess.Popen(
        [sys.executable, "-c", POST, url, token, json.dumps(event)],
        stdout=subprocess.PIPE,
    )
    try:
        (asked,) = until(sh, "the hook's question", lambda: pending(sh))
        sh.stop(signal.SIGKILL)
        printed, _ = post.communicate(timeout=60)
    finally:
        post.kill()
        post.wait()
    assert printed.startswith(b"failed:"), printed  # Claude Code would ask itself
    assert sh.run("status").returncode == 0  # a hub starts again (without HTTP)
    record = until(sh, "the question withdrawn", lambda: closed(sh, asked["id"]))
    assert (record["status"], record["by"], record["answer"]) == ("cancelled", GONE, None)
    assert pending(sh) == []
    refused = sh.run("answer", asked["id"], "allow")
    assert refused.returncode != 0
