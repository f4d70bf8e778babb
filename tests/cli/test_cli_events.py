"""Children's events reach their parent's terminal without an agent in the loop
(seed 004): ``hive-rpc event`` from a hook or CI script, and ``POST /api/event`` on
the hub's HTTP server for those that would rather not run the CLI (curl here, under
the token and Origin rules of every POST).  A real hub, a real tmux pane running the
scripted ling of tests/relay/ as the parent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
    # httpx2 leaves its streaming generators to the garbage collector (as in test_mcp.py).
    pytest.mark.filterwarnings(r"ignore:Async generator 'http(x|core)2\.:ResourceWarning"),
]

LING = Path(__file__).parents[1] / "relay" / "scripted_ling.py"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"


@dataclass
class Parent:
    """The parent ling's pane: what it received, one entry a submission."""

    record: Path

    def received(self) -> list[str]:
        if not self.record.exists():
            return []
        entries = [json.loads(line) for line in self.record.read_text().splitlines()]
        raws = [bytes.fromhex(e["raw"]) for e in entries if "raw" in e]
        assert all(r.startswith(PASTE_START) and r.endswith(PASTE_END) for r in raws)
        return [r[len(PASTE_START) : -len(PASTE_END)].decode() for r in raws]

    async def wait_for(self, count: int) -> list[str]:
        with trio.fail_after(20):
            while len(got := self.received()) < count:  # noqa: ASYNC110 (another process's file)
                await trio.sleep(0.05)
        return got


@pytest.fixture
async def parent(http_hub: HubService, short_tmp: Path) -> AsyncIterator[Parent]:
    """Ling ``main.feature``: a pane of a private tmux server, registered by the hub's
    owner (as the human would from inside it)."""
    socket, record = short_tmp / "tmux.sock", short_tmp / "parent.jsonl"
    command = f"{sys.executable} {LING} {record}"
    done = await trio.run_process(
        ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-P", "-F",
         "#{pane_id}", "-x", "200", "-y", "50", command],
        capture_stdout=True,
    )  # fmt: skip
    pane = done.stdout.decode().strip()
    try:
        with trio.fail_after(20):
            while not record.exists():  # noqa: ASYNC110 (the ling writes it when ready)
                await trio.sleep(0.05)
        agora = http_hub.require_agora()
        await agora.register("main.feature", "tmux", f"{pane}@{socket}", owner=True)
        await agora.register("main.feature.auth", "tmux", "%999", label="auth-module", owner=True)
        yield Parent(record)
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await trio.run_process(
                ["tmux", "-S", str(socket), "kill-server"], check=False, capture_stderr=True
            )


async def hive_rpc(config: HubConfig, *args: str) -> subprocess.CompletedProcess[bytes]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start"]
    return await trio.run_process(
        [sys.executable, "-m", "hive_rpc", *args, *where],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )


async def curl(service: HubService, body: dict[str, Any], *headers: str) -> tuple[int, str]:
    """POST ``body`` to /api/event with curl; (HTTP status, response body)."""
    base = str(service.info.http_url).removesuffix("/mcp")
    done = await trio.run_process(
        ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-X", "POST",
         "-H", "Content-Type: application/json", *[a for h in headers for a in ("-H", h)],
         "--data-binary", json.dumps(body), f"{base}/api/event"],
        capture_stdout=True,
    )  # fmt: skip
    text, _, status = done.stdout.decode().rpartition("\n")
    return int(status), text


def credentials(service: HubService) -> tuple[str, str]:
    token = Path(str(service.info.token_file)).read_text().strip()
    origin = str(service.info.http_url).removesuffix("/mcp")
    return f"Authorization: Bearer {token}", f"Origin: {origin}"


async def test_a_copilot_review_in_the_seeds_words_from_the_cli(
    http_hub: HubService, hub_config: HubConfig, parent: Parent
) -> None:
    done = await hive_rpc(
        hub_config, "event", "pr-status", "--from", "main.feature.auth", "--pr", "42",
        "--review", "changes_requested", "--comments", "3",
        "--url", "https://github.com/owner/repo/pull/42",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "pr-status to main.feature: delivered"
    assert await parent.wait_for(1) == [
        "[COPILOT REVIEW] PR #42 (auth-module) received new Copilot review.\n"
        "Status: changes_requested. 3 comments.\n"
        "View: https://github.com/owner/repo/pull/42"
    ]


async def test_a_pr_ready_event_from_the_cli(
    http_hub: HubService, hub_config: HubConfig, parent: Parent
) -> None:
    done = await hive_rpc(
        hub_config, "event", "pr-ready", "--from", "main.feature.auth", "--pr", "42",
        "--review", "approved", "--ci", "passing",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert await parent.wait_for(1) == [
        "[PR READY] PR #42 (auth-module) on branch main.feature.auth is ready to merge.\n"
        "Copilot status: approved. CI: passing.\n"
        "Review with: gh pr view 42"
    ]


async def test_post_api_event_types_the_event_into_the_parents_pane(
    http_hub: HubService, parent: Parent
) -> None:
    token, origin = credentials(http_hub)
    body = {"kind": "child-complete", "from": "main.feature.auth", "pr": 42, "ci": "passing"}
    status, text = await curl(http_hub, body, token, origin)
    assert status == 200, text
    answer = json.loads(text)
    assert (answer["to"], answer["delivery"]["state"]) == ("main.feature", "delivered")
    assert await parent.wait_for(1) == [
        "[CHILD COMPLETE] Agent 'auth-module' on branch main.feature.auth has completed.\n"
        "PR #42 filed against your branch. CI: passing.\n"
        "Review with: gh pr view 42"
    ]


async def test_post_api_event_keeps_the_token_and_origin_rules(
    http_hub: HubService, parent: Parent
) -> None:
    token, origin = credentials(http_hub)
    body = {"kind": "child-note", "from": "main.feature.auth", "message": "hi"}
    assert (await curl(http_hub, body, origin))[0] == 401
    assert (await curl(http_hub, body, token))[0] == 403  # a POST needs this server's Origin
    assert (await curl(http_hub, body, token, "Origin: http://evil.example"))[0] == 403
    status, text = await curl(http_hub, {"kind": "child-note", "from": "main"}, token, origin)
    assert status == 400
    error = json.loads(text)["error"]
    assert error["code"] == -32602
    assert "has no parent" in error["message"]
    status, text = await curl(http_hub, {"kind": "nonsense", "from": "a.b"}, token, origin)
    assert (status, json.loads(text)["error"]["data"]["param"]) == (400, "kind")
    assert parent.received() == []


async def test_report_to_parent_over_mcp_takes_pr_ready_comments_and_url(
    http_hub: HubService, parent: Parent
) -> None:
    token, _ = credentials(http_hub)
    headers = {"Authorization": token.partition(": ")[2], "X-Hive-Tools": "events"}
    headers["X-Hive-Agent"] = "main.feature.auth"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http,
        Client(streamable_http_client(str(http_hub.info.http_url), http_client=http)) as client,
    ):
        review = await client.call_tool(
            "report_to_parent",
            {"kind": "pr-status", "pr": 7, "review": "approved", "comments": 1, "url": "U"},
        )
        ready = await client.call_tool("report_to_parent", {"kind": "pr-ready", "pr": 7})
    assert not review.is_error, review.content
    assert not ready.is_error, ready.content
    assert await parent.wait_for(2) == [
        "[COPILOT REVIEW] PR #7 (auth-module) received new Copilot review.\n"
        "Status: approved. 1 comment.\nView: U",
        "[PR READY] PR #7 (auth-module) on branch main.feature.auth is ready to merge.\n"
        "Review with: gh pr view 7",
    ]
