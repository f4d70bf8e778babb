"""Only an approver answers a permission prompt or changes the answer rules
(service/approver.py): a plain editor-socket client, which is what an agent's own
Bash can open, is refused with -32013; one that proved it read the hub's approver
token (``hive/proveApprover``) is not.  Over the real socket, and through the real
``hive-rpc answer`` command."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import NotAnApprover
from hive_rpc.host.paths import InsecurePath
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

AGENT = "claude-code-3f2a9c1d"


def permission(**extra: Any) -> dict[str, Any]:
    """What ``hive-rpc hook claude-code`` asks for a Bash request."""
    return {
        "question": "Claude Code in ~/src/app (session 3f2a) wants to run Bash: rm -rf build",
        "choices": ["allow", "deny"],
        "kind": "permission",
        "urgent": True,
        "agent_id": AGENT,
        **extra,
    }


async def test_a_plain_client_cannot_answer_a_permission_prompt_or_change_rules(
    hub: HubService, hub_config: HubConfig
) -> None:
    async with (
        await HubClient.connect(hub_config.socket) as agent,
        await HubClient.connect(hub_config.socket) as editor,
    ):
        asked = await agent.call("hive/ask", permission())
        status = await agent.call("hive/status", {})
        token_file = Path(status["approver_token_file"])
        # As a coordinator and as the asking agent itself: both refused.
        for params in ({}, {"agent_id": AGENT}):
            with pytest.raises(NotAnApprover) as refused:
                await agent.call("hive/respond", {"id": asked["id"], "answer": "allow", **params})
            assert refused.value.code == -32013
            assert refused.value.data == {
                "kind": "not_an_approver",
                "token_file": str(token_file),
                "lacks": "approver",
            }
            assert refused.value.message.startswith(
                "only an approver may answer a permission prompt: this connection has not "
                "proved it is one (it holds an agent's credential: the socket or the MCP "
                "token, not the human's). An editor proves it with hive/proveApprover and the "
                f"token in {token_file}"
            )
        rule = {"pattern": "Bash", "decision": "allow", "scope": "global"}
        with pytest.raises(NotAnApprover, match="only an approver may add an answer rule"):
            await agent.call("rule/add", rule)
        # What the hook needs stays open: check and list.
        use = {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
        assert await agent.call("rule/check", use) is None
        assert await agent.call("rule/list", {}) == []
        # A wrong token proves nothing, and says where the right one is.
        wrong = f"wrong approver token: send the contents of {token_file}"
        with pytest.raises(NotAnApprover, match=re.escape(wrong)):
            await agent.call("hive/proveApprover", {"token": "x" * 43})
        with pytest.raises(NotAnApprover):
            await agent.call("hive/respond", {"id": asked["id"], "answer": "allow"})
        assert (await agent.call("hive/poll", {"id": asked["id"]}))["status"] == "pending"

        # The editor reads the file: it answers, and adds and removes rules.
        assert await prove_approver(editor.call) is None
        added = await editor.call("rule/add", rule)
        with pytest.raises(NotAnApprover, match="only an approver may remove an answer rule"):
            await agent.call("rule/remove", {"id": added["id"]})
        assert (await editor.call("rule/remove", {"id": added["id"]}))["removed"] is True
        answered = await editor.call(
            "hive/respond", {"id": asked["id"], "answer": "deny", "by": "emacs"}
        )
        assert (answered["status"], answered["answer"], answered["by"]) == (
            "responded", "deny", "emacs",
        )  # fmt: skip


async def test_questions_stay_open_to_anyone_and_the_agent_may_withdraw_its_request(
    hub: HubService, hub_config: HubConfig
) -> None:
    async with await HubClient.connect(hub_config.socket) as agent:
        question = await agent.call("hive/ask", {"question": "Which DB?", "agent_id": AGENT})
        answered = await agent.call("hive/respond", {"id": question["id"], "answer": "sqlite"})
        assert answered["status"] == "responded"
        # Withdrawing is no answer: Claude Code then shows its own dialog.
        asked = await agent.call("hive/ask", permission())
        withdrawn = await agent.call("hive/cancel", {"id": asked["id"], "agent_id": AGENT})
        assert withdrawn["status"] == "cancelled"


async def test_the_token_file_is_private_and_status_names_it_never_the_token(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    status = await client.call("hive/status", {})
    token_file = Path(status["approver_token_file"])
    assert token_file == hub_config.data_dir / "approver-token"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    with open(token_file) as f:  # noqa: ASYNC230 (a test reading a small file)
        token = f.read().strip()
    assert len(token) >= 32
    assert token not in json.dumps(status)


def answer_command(config: HubConfig, prompt_id: str, value: str) -> list[str]:
    return [
        sys.executable, "-m", "hive_rpc", "answer", prompt_id, value,
        "--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start",
    ]  # fmt: skip


async def test_hive_rpc_answer_proves_it_when_it_can_read_the_token_file(
    hub: HubService, hub_config: HubConfig, client: HubClient
) -> None:
    asked = await client.call("hive/ask", permission())
    token_file = Path((await client.call("hive/status", {}))["approver_token_file"])
    # A file others could read is no proof: the command says so, the hub refuses.
    os.chmod(token_file, 0o644)
    with trio.fail_after(30):
        done = await trio.run_process(
            answer_command(hub_config, asked["id"], "allow"), capture_stdout=True,
            capture_stderr=True, check=False,
        )  # fmt: skip
    assert done.returncode == 1
    said = done.stderr.decode()
    assert "only an approver may answer a permission prompt" in said
    assert f"{token_file} must be a regular file of yours with mode 0600" in said
    assert (await client.call("hive/poll", {"id": asked["id"]}))["status"] == "pending"
    os.chmod(token_file, 0o600)
    with trio.fail_after(30):
        done = await trio.run_process(
            answer_command(hub_config, asked["id"], "allow"), capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr
    polled = await client.call("hive/poll", {"id": asked["id"]})
    assert (polled["status"], polled["answer"]) == ("responded", "allow")


def test_the_agent_side_cli_has_no_way_to_prove_without_the_file(tmp_path: Path) -> None:
    """The proof is the file's contents: nothing else the CLI offers stands in for it
    (no flag, no variable), so a sandbox that hides the file is enough."""
    out = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "answer", "--help"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "token" not in out.stdout.lower()


async def test_a_hub_that_names_another_file_is_sent_nothing(short_tmp: Path) -> None:
    """The token goes only from a file named approver-token: a hub naming another
    file of yours (0600, like an ssh key) gets no proof and not the file."""
    secret = short_tmp / "id_ed25519"
    secret.write_text("k" * 64 + "\n")
    secret.chmod(0o600)
    sent: list[str] = []

    async def call(method: str, params: dict[str, Any]) -> Any:
        sent.append(method)
        return {"approver_token_file": str(secret)}

    why = await prove_approver(call)
    assert why == f"the hub names {str(secret)!r} as its approver token file; not sending it"
    assert sent == ["hive/status"]


NOBODY = 65534


@pytest.mark.skipif(os.getuid() != 0, reason="runs a listener as another user")
async def test_a_socket_of_another_user_is_refused() -> None:
    """A process of another user answering on the socket (one it made open to all)
    is no hub of ours: the client refuses it before sending anything, so it never
    gets an answer nor, through prove_approver, the approver token."""
    open_dir = Path(tempfile.mkdtemp(prefix="hv-foreign-", dir="/tmp"))
    os.chmod(open_dir, 0o777)
    path = open_dir / "hub.sock"
    listener = (
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen()\n"
        "print('ready', flush=True)\n"
        "while True: s.accept()[0].recv(1 << 16)\n"
    )
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            sys.executable, "-c", listener, str(path)]  # fmt: skip
    foreign = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE)
    try:
        assert foreign.stdout is not None
        with trio.fail_after(10):
            assert (await foreign.stdout.receive_some(16)).startswith(b"ready")
        with pytest.raises(InsecurePath, match=f"runs as uid {NOBODY}, not as you"):
            await HubClient.connect(path)
        with trio.fail_after(30):
            done = await trio.run_process(
                [sys.executable, "-m", "hive_rpc", "answer", "0123456789abcdef", "allow",
                 "--socket", str(path), "--no-start"],
                capture_stderr=True, check=False,
            )  # fmt: skip
        assert done.returncode == 1
        assert f"runs as uid {NOBODY}, not as you; refusing to use it" in done.stderr.decode()
    finally:
        foreign.kill()
        await foreign.wait()
        shutil.rmtree(open_dir, ignore_errors=True)
