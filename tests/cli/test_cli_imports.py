"""What a one-shot command imports (issue 18): ``hive-rpc status`` is one socket
round trip, so its process should load no event loop and none of the hub's modules.

Each case runs ``main([...])`` in a fresh interpreter against a real hub and prints the
heavy modules found in ``sys.modules`` afterwards (``status`` runs on sync_client.py;
before cli/oneshot.py it loaded trio).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import Shell
from hook_process import permission_event

from hive_rpc.client.sync_client import SyncHubClient, prove_approver

HEAVY = ("trio", "mcp", "jeepney", "hive_rpc.hub", "hive_rpc.runtime.registry", "hive_rpc.faces")
"""Modules a one-shot client never needs: the event loop, the SDK, D-Bus, the hub."""

PROBE = """
import json, sys
from hive_rpc.cli import main
code = main(sys.argv[2:])
heavy = json.loads(sys.argv[1])
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.modules if m in heavy)}))
"""


def _loaded_by(
    sh: Shell, *args: str, watching: tuple[str, ...] = HEAVY, stdin: str | None = None
) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(watching), *args],
        env=sh.env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    last = out.stdout.strip().splitlines()[-1]
    result: dict[str, object] = json.loads(last)
    return result


def test_status_imports_no_event_loop_and_no_hub(sh: Shell) -> None:
    assert sh.run("status").returncode == 0  # autostarts the hub the probe talks to
    result = _loaded_by(sh, "status", "--no-start", "--socket", str(sh.socket))
    assert result == {"code": 0, "loaded": []}


LIGHT = ("dataclasses", "inspect", "shutil", "signal")
"""Modules ``status`` does without, though no hub module: ``dataclasses`` and the
``inspect``, ``ast`` and ``dis`` it loads were 8 ms of its start (protocol/ builds its
messages on protocol/frozen.py instead; docs/benchmarks.md, CLI cold start); argparse
imported ``shutil`` (and its compressors) for the terminal's width (cli/parser.py);
``signal`` was only read for SIGPIPE's number (cli/exits.py)."""


def test_status_imports_no_dataclasses_nor_shutil(sh: Shell) -> None:
    assert sh.run("status").returncode == 0
    result = _loaded_by(sh, "status", "--no-start", watching=LIGHT)
    assert result == {"code": 0, "loaded": []}


def test_status_starting_a_hub_imports_no_event_loop(sh: Shell) -> None:
    """No hub runs: ``status`` starts one (hub_start.py) and still loads no trio."""
    result = _loaded_by(sh, "status", "--socket", str(sh.socket), "--data-dir", str(sh.data_dir))
    assert result == {"code": 0, "loaded": []}
    assert sh.hub_pid() > 0


def _probe(sh: Shell, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY), *args],
        env=sh.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _an_approver(sh: Shell) -> SyncHubClient:
    """An editor: an approver subscribed to the hub (it may answer permission prompts)."""
    editor = SyncHubClient.connect(sh.socket)
    editor.timeout_s = 30
    assert prove_approver(editor.call) is None
    editor.call("hive/subscribe", {})
    return editor


def _next_prompt(editor: SyncHubClient) -> dict[str, Any]:
    note = editor.next_notification(30)
    while note.method != "hive/prompt":
        note = editor.next_notification(30)
    prompt: dict[str, Any] = note.params
    return prompt


def _hook(sh: Shell) -> tuple[str, ...]:
    """``hook claude-code`` as Claude Code runs it, on this hub."""
    return ("hook", "claude-code", "--socket", str(sh.socket), "--timeout", "30")


def _hook_answered(
    sh: Shell, request: dict[str, Any], answer: object
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The probed hook on ``request``, an approver's editor giving ``answer`` to its
    prompt: the hook's decision, the probe's result, the hook's stderr."""
    with _an_approver(sh) as editor, _probe(sh, *_hook(sh)) as hook:
        assert hook.stdin is not None
        assert hook.stdout is not None
        assert hook.stderr is not None
        hook.stdin.write(json.dumps(request))
        hook.stdin.close()
        editor.call("hive/respond", {"id": _next_prompt(editor)["id"], "answer": answer})
        assert hook.wait(timeout=30) == 0
        out, err = hook.stdout.read(), hook.stderr.read()
    decision, result = (json.loads(line) for line in out.splitlines())
    return decision, result, err


def test_the_permission_hook_answered_by_an_editor_imports_no_event_loop(
    sh: Shell, short_tmp: Path
) -> None:
    """``hook claude-code`` with a PermissionRequest on stdin, an approver allowing it:
    the decision printed, and no trio, SDK or hub module loaded for it."""
    assert sh.run("status").returncode == 0
    request = permission_event(short_tmp, "Bash", {"command": "npm test"})
    decision, result, err = _hook_answered(sh, request, "allow")
    assert decision["hookSpecificOutput"]["decision"] == {"behavior": "allow"}, err
    assert result == {"code": 0, "loaded": []}


HOOK_LIGHT = ("secrets", "datetime", "shutil", "signal")
"""Modules the permission hook does without: ``secrets`` (with ``hmac``, ``hashlib``,
OpenSSL and ``random``, 5 ms) only drew the hub's prompt ids, which core/prompt.py
takes from ``os.urandom``; ``datetime`` only checks a schema's date formats (imported
there, core/schema.py); ``shutil`` and ``signal`` as for ``status`` (LIGHT)."""


def test_the_permission_hook_loads_no_token_or_date_modules(sh: Shell, short_tmp: Path) -> None:
    """The hook answered by an allow rule (``rule/check`` alone)."""
    assert sh.run("status").returncode == 0
    with _an_approver(sh) as approver:
        rule = {"pattern": "Bash(npm test)", "decision": "allow", "scope": "global"}
        approver.call("rule/add", rule)
    request = permission_event(short_tmp, "Bash", {"command": "npm test"})
    result = _loaded_by(sh, *_hook(sh), watching=HOOK_LIGHT, stdin=json.dumps(request))
    assert result == {"code": 0, "loaded": []}


def test_a_claude_code_question_answered_by_an_editor_imports_no_event_loop(
    sh: Shell, short_tmp: Path
) -> None:
    """``hook claude-code`` with Claude Code's AskUserQuestion: the one prompt answered,
    the answers printed, and no trio, SDK or hub module loaded for it."""
    assert sh.run("status").returncode == 0
    question = {"question": "Which?", "header": "Pick", "multiSelect": False,
                "options": [{"label": "A", "description": "a"}, {"label": "B"}]}  # fmt: skip
    request = permission_event(short_tmp, "AskUserQuestion", {"questions": [question]})
    decision, result, err = _hook_answered(sh, request, {"q1": "B"})
    assert decision["hookSpecificOutput"]["decision"]["updatedInput"]["answers"] == {
        "Which?": "B"
    }, err
    assert result == {"code": 0, "loaded": []}


def test_ask_imports_no_event_loop(sh: Shell) -> None:
    assert sh.run("status").returncode == 0
    result = _loaded_by(sh, "ask", "Deploy?", "--choices", "yes,no", "--no-start")
    assert result == {"code": 0, "loaded": []}
    (pending,) = sh.json("list", "--json")
    assert pending["question"] == "Deploy?"


def test_answering_a_permission_prompt_imports_no_event_loop(sh: Shell) -> None:
    """``answer`` proves itself an approver (the token file) to answer a permission
    prompt, without trio."""
    assert sh.run("status").returncode == 0
    with SyncHubClient.connect(sh.socket) as agent:
        agent.timeout_s = 30
        asked = agent.call(
            "hive/ask",
            {"question": "run npm test?", "choices": ["allow", "deny"], "kind": "permission"},
        )
    result = _loaded_by(sh, "answer", asked["id"], "allow", "--no-start")
    assert result == {"code": 0, "loaded": []}
    record = sh.json("poll", asked["id"], "--json")
    assert (record["status"], record["answer"], record["by"]) == ("responded", "allow", "human")


@pytest.mark.parametrize(
    "command",
    [("poll",), ("cancel",), ("list",), ("rules", "list"), ("audit",)],
    ids=lambda c: " ".join(c),
)
def test_the_other_one_shot_commands_import_no_event_loop(
    sh: Shell, command: tuple[str, ...]
) -> None:
    assert sh.run("status").returncode == 0
    prompt_id = sh.run("ask", "Deploy?").stdout.strip()
    args = (*command, prompt_id) if command[0] in ("poll", "cancel") else command
    result = _loaded_by(sh, *args, "--no-start")
    assert result["loaded"] == []
    assert result["code"] in (0, 8)  # poll: still pending (exit 8)


@pytest.mark.parametrize("command", ["poll", "cancel", "list", "answer"])
def test_the_commands_on_prompts_import_no_dataclasses(sh: Shell, command: str) -> None:
    """They need three names of the hub's conventions (core/conventions.py), not
    core/prompt.py, its dataclasses and its checks (12 ms by ``-X importtime``)."""
    assert sh.run("status").returncode == 0
    prompt_id = sh.run("ask", "Deploy?").stdout.strip()
    args = {"list": (), "answer": (prompt_id, "yes")}.get(command, (prompt_id,))
    result = _loaded_by(sh, command, *args, "--no-start", watching=LIGHT)
    assert result["loaded"] == []
    assert result["code"] in (0, 8)  # poll: still pending (exit 8)


@pytest.mark.parametrize("command", [("rules", "list"), ("audit",)], ids=" ".join)
def test_rules_and_audit_import_no_datetime(sh: Shell, command: tuple[str, ...]) -> None:
    """``datetime`` reads a ``--since`` time only (cli/decisions.py)."""
    assert sh.run("status").returncode == 0
    result = _loaded_by(sh, *command, "--no-start", watching=("datetime", *LIGHT))
    assert result == {"code": 0, "loaded": []}


def test_the_probe_sees_what_it_imports(sh: Shell) -> None:
    """The probe is no blind spot: ``serve``'s modules show up once imported."""
    out = subprocess.run(
        [sys.executable, "-c", "import sys, hive_rpc.hub; print('trio' in sys.modules)"],
        env=sh.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.stdout.strip() == "True"


def test_the_sync_client_imports_no_trio_and_calls_a_real_hub(sh: Shell) -> None:
    """sync_client.py: a call and a refusal against a running hub, without trio."""
    assert sh.run("status").returncode == 0
    probe = """
import json, sys
from pathlib import Path
from hive_rpc.core.errors import MethodNotFound
from hive_rpc.client.sync_client import connect_or_start
with connect_or_start(Path(sys.argv[1]), Path(sys.argv[2]), timeout_s=10) as c:
    pid = c.call("hive/status", {})["pid"]
    try:
        c.call("hive/noSuchMethod", {})
        refused = None
    except MethodNotFound as e:
        refused = type(e).__name__
print(json.dumps({"pid": pid, "refused": refused, "trio": "trio" in sys.modules}))
"""
    out = subprocess.run(
        [sys.executable, "-c", probe, str(sh.socket), str(sh.data_dir)],
        env=sh.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert out.stdout, out.stderr
    result = json.loads(out.stdout)
    assert result == {"pid": sh.hub_pid(), "refused": "MethodNotFound", "trio": False}


def test_the_sync_client_says_when_no_hub_answers(sh: Shell) -> None:
    from hive_rpc.client.sync_client import connect_or_start
    from hive_rpc.core.errors import HubUnreachable

    with pytest.raises(HubUnreachable, match="--no-start"):
        connect_or_start(sh.socket, sh.data_dir, start=False)


def test_the_sync_client_autostarts_a_hub(sh: Shell) -> None:
    from hive_rpc.client.sync_client import connect_or_start

    with connect_or_start(sh.socket, sh.data_dir, timeout_s=10) as client:
        assert client.call("hive/status", {})["pid"] == sh.hub_pid()
