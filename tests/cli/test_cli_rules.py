"""``hive-rpc rules`` and ``hive-rpc audit``: the real commands against a real hub,
with the real ``hive-rpc hook claude-code`` making the decisions and an editor-socket
client (an approver) playing the human.  "Allow for this session" makes a rule the
list shows as made from that prompt; the same request again is the rule's decision;
the audit prints both, as text and as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
from test_audit import as_approver
from test_cli_hook import SESSION, hook_with_human, permission_request, run_hook

from hive_rpc.cli.decisions import since_time
from hive_rpc.cli.exits import CliError
from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


async def cli(config: HubConfig, *args: str) -> subprocess.CompletedProcess[str]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start"]
    done = await trio.run_process(
        [sys.executable, "-m", "hive_rpc", *args, *where],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env={**os.environ, "TZ": "UTC"},
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))


async def test_rules_and_audit_from_the_command_line(
    hub: HubService, client: HubClient, hub_config: HubConfig, short_tmp: Path
) -> None:
    await as_approver(client)
    await client.call("hive/subscribe", {})
    # 1. The human allows for this session: a rule, recorded as made from that prompt.
    done, prompt = await hook_with_human(
        hub_config, short_tmp, client, {"answer": "allow for this session", "by": "emacs"}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout, done.stderr
    listed = await cli(hub_config, "rules", "list")
    assert listed.returncode == 0, listed.stderr
    (rule,) = json.loads((await cli(hub_config, "rules", "list", "--json")).stdout)
    assert rule["from_prompt"] == prompt["id"]
    assert listed.stdout.splitlines() == [
        line.rstrip()
        for line in [
            "ID            DECISION  SCOPE    "
            + "WHERE".ljust(len(SESSION))
            + "  PATTERN         MADE BY",
            f"{rule['id']}  allow     session  {SESSION}  Bash(npm test)  "
            f"from prompt {prompt['id']}",
        ]
    ]
    # 2. The same request again: the rule decides, nobody is asked.
    with trio.fail_after(20):
        again = await run_hook(
            hub_config, short_tmp, json.dumps(permission_request(short_tmp)).encode()
        )
    assert b'"allow"' in again.stdout, again.stderr
    # 3. The audit: both decisions, oldest first, as text and as JSON.
    entries = json.loads((await cli(hub_config, "audit", "--json")).stdout)
    assert entries == await client.call("audit/list", {})
    human, by_rule = entries
    text = await cli(hub_config, "audit")
    assert text.returncode == 0, text.stderr
    header, first, second = text.stdout.splitlines()
    assert header.split() == ["TIME", "DECISION", "BY", "WAITED", "TOOL", "WHAT", "HOW"]
    assert first.split(maxsplit=7) == [
        *utc(human["at"]).split(),
        "allow",
        "emacs",
        f"{human['latency_s']:.1f}s",
        "Bash",
        "npm",
        f"test  prompt {prompt['id']} (allow for this session)",
    ]
    assert second.split() == [
        *utc(by_rule["at"]).split(),
        "allow",
        "rule",
        f"{by_rule['latency_s']:.1f}s",
        "Bash",
        "npm",
        "test",
        "rule",
        rule["id"],
        "Bash(npm",
        "test)",
        "(session)",
    ]
    recent = await cli(hub_config, "audit", "--since", "1h", "--json")
    assert json.loads(recent.stdout) == entries
    later = await cli(hub_config, "audit", "--since", "2099-01-01")
    assert later.stdout.strip() == "no decisions"
    newest = await cli(hub_config, "audit", "--limit", "1", "--json")
    assert json.loads(newest.stdout) == [by_rule]
    # 4. Rules by hand: the scope words, the JSON, removing.
    added = await cli(hub_config, "rules", "add", "Bash(rm:*)", "--deny", "--global")
    assert added.returncode == 0, added.stderr
    assert added.stdout.endswith(": deny Bash(rm:*) (global)\n")
    here = json.loads((await cli(hub_config, "rules", "add", "Read", "--allow", "--json")).stdout)
    assert (here["scope"], here["where"], here["from_prompt"]) == ("project", os.getcwd(), None)
    there = json.loads(
        (await cli(hub_config, "rules", "add", "mcp__github", "--allow", "--project", "/src/a",
                   "--json")).stdout
    )  # fmt: skip
    assert (there["scope"], there["where"], there["made_by"]) == ("project", "/src/a", "human")
    gone = await cli(hub_config, "rules", "remove", here["id"])
    assert (gone.returncode, gone.stdout) == (0, f"{here['id']}: removed\n")
    again_gone = await cli(hub_config, "rules", "remove", here["id"])
    assert again_gone.returncode == 3
    assert "no rule" in again_gone.stderr
    bad = await cli(hub_config, "rules", "add", "rm -rf /", "--allow", "--global")
    assert bad.returncode != 0
    assert "tool name" in bad.stderr
    ids = [r["id"] for r in await client.call("rule/list", {})]
    assert here["id"] not in ids
    assert there["id"] in ids


def test_since_reads_durations_and_times() -> None:
    now = 1_800_000_000.0
    assert since_time("90s", now) == now - 90
    assert since_time("30m", now) == now - 1800
    assert since_time("2h", now) == now - 7200
    assert since_time("7d", now) == now - 7 * 86400
    assert since_time("45", now) == now - 45
    assert since_time("2026-11-24T10:00:00+00:00", now) == 1795514400.0
    with pytest.raises(CliError, match="neither a duration"):
        since_time("yesterday", now)
