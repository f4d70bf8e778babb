"""The audit trail with the real Claude Code (2.1.328) and the real hook: ``claude -p``
asks twice to touch a file, the human answers the first request "allow for this
session" from an editor, the saved rule answers the second.  ``hive-rpc audit
--json`` then holds exactly two entries, the human's and the rule's, both for that
Bash command and that session; ``hive-rpc rules list`` shows the rule as made from
the human's prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio
from test_claude_permission_hook import permission_round

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


async def cli(config: HubConfig, *args: str) -> str:
    """The command as a shell runs it (the hub runs in this test's trio loop)."""
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "hive_rpc", *args, "--socket", str(config.socket),
             "--no-start"],
            capture_stdout=True,
        )  # fmt: skip
    return done.stdout.decode()


async def test_a_session_of_claude_code_leaves_one_entry_per_decision(
    hub: HubService, hub_config: HubConfig, claude_bin: Path, claude_root: Path
) -> None:
    done, _, prompt, target = await permission_round(
        hub_config, claude_bin, claude_root, {"answer": "allow for this session", "by": "emacs"},
        times=2,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert target.exists()
    human, by_rule = json.loads(await cli(hub_config, "audit", "--json"))
    command = f"touch {target}"
    assert (human["source"], human["id"], human["decision"], human["by"]) == (
        "human", prompt["id"], "allow", "emacs",
    )  # fmt: skip
    assert (human["tool"], human["summary"], human["answer"]) == (
        "Bash", command, "allow for this session",
    )  # fmt: skip
    assert human["agent_id"] == prompt["agent_id"]
    (rule,) = json.loads(await cli(hub_config, "rules", "list", "--json"))
    assert rule["from_prompt"] == prompt["id"]
    assert (by_rule["source"], by_rule["decision"], by_rule["rule_id"]) == (
        "rule", "allow", rule["id"],
    )  # fmt: skip
    assert (by_rule["tool"], by_rule["summary"]) == ("Bash", command)
    assert by_rule["session_id"] == rule["where"]
    assert f"(session {by_rule['session_id'][:4]})" in prompt["question"]
    assert by_rule["project"] == str(claude_root / "project")
    assert f"from prompt {prompt['id']}" in await cli(hub_config, "rules", "list")
