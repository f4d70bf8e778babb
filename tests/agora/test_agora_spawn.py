"""Spawning children from the parent agent over MCP (``spawn_subtree``,
``spawn_workers``; agora/spawning.py): issue 32 part 2, exomonad's "Event
Registration: Implicit from spawn".

Real parts: a real hub, a private tmux server, and the parent agent a real process in
a tmux pane (tests/agora/spawning_agent.py) registered there as ling ``main`` through
``hive-rpc ling register main --tmux -- AGENT`` (the pane's process, then the agent in
its place), which runs the MCP SDK's stdio client against ``hive-rpc mcp``, its own
child, as Claude Code does; the human's answers go through the editor protocol
(``hive/respond``, with the approver's credential).  The children run
tests/relay/scripted_ling.py, which records what is typed into them."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters
from waiting import logged

from hive_rpc.client.async_client import HubClient, prove_approver
from hive_rpc.core.errors import LingNotFound
from hive_rpc.faces.mcp.tools import GROUPS
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

AGENT = Path(__file__).with_name("spawning_agent.py")
LING = Path(__file__).parents[1] / "relay" / "scripted_ling.py"
PASTE_START, PASTE_END = b"\x1b[200~", b"\x1b[201~"
WAIT_S = 30
"""The test's own bound on each wait below: a hang fails, a slow machine does not."""


def where(config: HubConfig) -> list[str]:
    return ["--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start"]


def submissions(record: Path) -> list[str]:
    """What was typed into a recorded program, one string per Enter."""
    lines = record.read_text().splitlines() if record.exists() else []
    raws = [bytes.fromhex(e["raw"]) for e in map(json.loads, lines) if "raw" in e]
    return [r.removeprefix(PASTE_START).removesuffix(PASTE_END).decode() for r in raws]


async def until_typed(record: Path, needle: str) -> str:
    """The first submission to the program recording to ``record`` that holds
    ``needle``.  The file is another process's, with no event to follow: polled, within
    the test's bound."""
    with trio.fail_after(WAIT_S):
        while True:
            found = [s for s in submissions(record) if needle in s]
            if found:
                return found[0]
            await trio.sleep(0.05)


def is_ready(record: Path) -> bool:
    return record.exists() and '"ready"' in record.read_text()


async def until_ready(record: Path) -> None:
    """Until the recorded program is set up (another process's file: polled)."""
    with trio.fail_after(WAIT_S):
        while not is_ready(record):  # noqa: ASYNC110
            await trio.sleep(0.05)


@dataclass
class Family:
    """The parent agent in its pane, and what the test sees of it."""

    socket: Path
    """The tmux server's."""
    record: Path
    control: Path
    repo: Path
    """The parent agent's working directory, a git repository."""

    async def tmux(self, *args: str) -> str:
        done = await trio.run_process(
            ["tmux", "-S", str(self.socket), *args], capture_stdout=True, capture_stderr=True
        )
        return done.stdout.decode().strip()

    async def windows(self) -> int:
        return len((await self.tmux("list-windows", "-a", "-F", "#{window_id}")).splitlines())

    async def call(self, tool: str | None, **args: Any) -> dict[str, Any]:
        """Have the agent call ``tool`` over its MCP session (None: list its tools)."""
        asked = {"list": True} if tool is None else {"tool": tool, "args": args}
        with trio.fail_after(WAIT_S):
            stream = await trio.open_unix_socket(str(self.control))
            async with stream:
                await stream.send_all(json.dumps(asked).encode() + b"\n")
                data = b""
                while not data.endswith(b"\n"):
                    more = await stream.receive_some()
                    assert more, "the agent closed its control socket"
                    data += more
        reply: dict[str, Any] = json.loads(data)
        return reply


@asynccontextmanager
async def parent_agent(
    config: HubConfig, short_tmp: Path, tools: str = "spawn"
) -> AsyncIterator[Family]:
    """The parent agent in a pane of a private tmux server, registered as ling main,
    working in a new git repository, its MCP server offering ``tools``; the server is
    killed at the end."""
    repo = short_tmp / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    await trio.run_process([*git, "init", "-q", "-b", "main"])
    await trio.run_process([*git, "commit", "-q", "--allow-empty", "-m", "root"])
    socket, record, control = short_tmp / "tmux.sock", short_tmp / "main.jsonl", short_tmp / "ctl"
    mcp = [sys.executable, "-m", "hive_rpc", "mcp", *where(config), "--tools", tools]
    argv = [
        sys.executable, "-m", "hive_rpc", "ling", "register", *where(config), "main",
        "--tmux", "--", sys.executable, str(AGENT), str(record), str(control), "--", *mcp,
    ]  # fmt: skip
    await trio.run_process(
        ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", "parent",
         "-x", "200", "-y", "50", "-c", str(repo), *argv],
    )  # fmt: skip
    try:
        await until_ready(record)
        yield Family(socket, record, control, repo)
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await trio.run_process(
                ["tmux", "-S", str(socket), "kill-server"], check=False, capture_stderr=True
            )


@pytest.fixture
async def family(hub: HubService, hub_config: HubConfig, short_tmp: Path) -> AsyncIterator[Family]:
    async with parent_agent(hub_config, short_tmp) as family:
        yield family


async def answer(client: HubClient, prompt_id: str, choice: str) -> None:
    """The human's answer from an editor, with the approver's credential."""
    assert await prove_approver(client.call) is None
    await client.call("hive/respond", {"id": prompt_id, "answer": choice, "by": "human"})


async def answered(
    hub: HubService, client: HubClient, prompt_id: str, choice: str, event: str, name: str
) -> Entry:
    """Answer a spawn's prompt; the hub's ``event`` about child ``name`` that follows."""
    before = hub.activity.last_id
    await answer(client, prompt_id, choice)
    return await logged(
        hub.activity,
        lambda e: (e.event, e.key) == (event, name),
        within_s=WAIT_S,
        after=before,
    )


def stdio(config: HubConfig, tools: str) -> StdioServerParameters:
    """An MCP stdio server run by this test process, which is no ling's agent."""
    args = ["-m", "hive_rpc", "mcp", *where(config), "--tools", tools]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


async def test_the_spawn_tools_are_offered_only_in_their_group(
    hub: HubService, hub_config: HubConfig
) -> None:
    assert GROUPS["spawn"] == ("spawn_subtree", "spawn_workers")
    with trio.fail_after(WAIT_S):
        for tools, offered in (
            ("ask", False),
            ("ask,agora,lings,events", False),
            ("spawn", True),
            ("all", True),
        ):
            async with Client(stdio(hub_config, tools), mode="legacy") as c:
                names = {t.name for t in (await c.list_tools()).tools}
            assert ({"spawn_subtree", "spawn_workers"} <= names) is offered, tools
            assert not offered or tools == "all" or names == {"spawn_subtree", "spawn_workers"}


async def test_an_agent_that_is_no_registered_lings_agent_is_refused(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> None:
    with trio.fail_after(WAIT_S):
        async with Client(stdio(hub_config, "spawn"), mode="legacy") as c:
            result = await c.call_tool("spawn_subtree", {"name": "auth", "command": ["true"]})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "runs under no registered ling's agent" in text, text
    assert "register your terminal first (in your pane: hive-rpc ling register NAME --tmux" in text
    # Where the hub cannot see the calling process (MCP over HTTP, the dashboard: no
    # peer credentials), it says so rather than guess.
    with pytest.raises(LingNotFound, match="spawning needs the hub to see which process asks"):
        await hub.call("ling/spawn", {"name": "auth", "command": ["true"]})
    assert hub.registry.statistics()["pending"] == 0  # the human was not even asked


async def test_a_spawn_starts_nothing_until_approved_and_a_refused_one_nothing_at_all(
    hub: HubService, client: HubClient, family: Family, short_tmp: Path
) -> None:
    record = short_tmp / "nope.jsonl"
    command = [sys.executable, str(LING), str(record)]
    got = await family.call("spawn_subtree", name="nope", command=command)
    assert not got["is_error"], got
    (child,) = got["structured"]["children"]
    assert (got["structured"]["parent"], child["name"], child["state"]) == (
        "main",
        "main.nope",
        "pending",
    )
    pending = f"main.nope: pending, the human must approve it (prompt {child['prompt_id']})"
    assert pending in got["text"]
    prompt = await client.call("hive/poll", {"id": child["prompt_id"]})
    question = prompt["question"]
    (parent,) = await client.call("ling/list", {})
    for said in (
        # Who asks: the parent ling, and its approved agent's process.
        f"main (its agent: {parent['agent']['comm']}, pid {parent['agent']['pid']}",
        "asks to start a child agent, ling main.nope",
        f"Command: {shlex.join(command)}",
        f"In: {family.repo}",
        "In a new window of tmux session parent",
        "Approving starts it now, registers its pane as ling main.nope, child of main, "
        "and lets other agents' messages be typed into it and submitted",
    ):
        assert said in question, (said, question)
    assert prompt["urgent"] is True
    assert prompt["choices"] == ["approve", "deny"]
    assert await family.windows() == 1  # nothing started while the human has not answered
    await answered(hub, client, child["prompt_id"], "deny", "ling/spawn-refused", "main.nope")
    told = await until_typed(family.record, "[SPAWN REFUSED]")
    assert told.startswith(
        "[SPAWN REFUSED] Agent 'nope' (main.nope) was not started: the human denied it. "
        "Nothing was started."
    ), told
    assert await family.windows() == 1
    assert not record.exists()
    assert [x["name"] for x in await client.call("ling/list", {})] == ["main"]


async def test_approved_workers_run_as_the_parents_children_and_their_events_reach_it(
    hub: HubService, client: HubClient, family: Family, short_tmp: Path
) -> None:
    auth, wt = short_tmp / "auth.jsonl", short_tmp / "wt.jsonl"
    got = await family.call(
        "spawn_workers",
        workers=[
            {"name": "auth", "command": [sys.executable, str(LING), str(auth)],
             "label": "auth-module"},
            {"name": "wt", "command": [sys.executable, str(LING), str(wt)],
             "worktree": "feature/wt"},
        ],
    )  # fmt: skip
    assert not got["is_error"], got
    children = got["structured"]["children"]
    worktree = short_tmp / "repo-feature-wt"
    assert [(c["name"], c["state"], c["workdir"]) for c in children] == [
        ("main.auth", "pending", str(family.repo)),
        ("main.wt", "pending", str(worktree)),
    ]
    assert not worktree.exists()  # made only once approved
    wt_prompt = await client.call("hive/poll", {"id": children[1]["prompt_id"]})
    assert f"In a new git worktree at {worktree}, on branch feature/wt" in wt_prompt["question"]
    for c in children:
        await answered(hub, client, c["prompt_id"], "approve", "ling/spawned", c["name"])
    await until_ready(auth)
    await until_ready(wt)
    lings = {x["name"]: x for x in await client.call("ling/list", {})}
    assert set(lings) == {"main", "main.auth", "main.wt"}
    for name in ("main.auth", "main.wt"):
        ling = lings[name]
        assert ling["state"] == "registered"
        assert ling["parent"] == "main"  # the birth branch: its events go to main
        pane = ling["address"].partition("@")[0]
        # The approved agent is the pane's own process (the child: spawned_pane, which
        # exec'd the command), in a new window of the parent's tmux session.
        assert ling["agent"]["pid"] == int(await family.tmux("display", "-p", "-t", pane,
                                                             "#{pane_pid}"))  # fmt: skip
        assert "hive_rpc.client.spawned_pane" in ling["agent"]["pending_exec"]
        assert await family.tmux("display", "-p", "-t", pane, "#{session_name}") == "parent"
    assert lings["main.auth"]["label"] == "auth-module"
    wt_pane = lings["main.wt"]["address"].partition("@")[0]
    assert await family.tmux("display", "-p", "-t", wt_pane, "#{pane_current_path}") == str(
        worktree
    )
    branch = await trio.run_process(
        ["git", "-C", str(worktree), "branch", "--show-current"], capture_stdout=True
    )
    assert branch.stdout.decode().strip() == "feature/wt"
    spawned = await until_typed(family.record, "[CHILD SPAWNED] Agent 'auth-module'")
    assert spawned.startswith(
        f"[CHILD SPAWNED] Agent 'auth-module' on branch main.auth is running in {family.repo}"
    ), spawned
    await until_typed(family.record, "[CHILD SPAWNED] Agent 'wt' on branch main.wt")
    # Implicit from spawn: a child's event reaches the parent's terminal, no subscribing.
    posted = await client.call(
        "event/post", {"kind": "child-note", "from": "main.auth", "message": "tokens done"}
    )
    assert (posted["to"], posted["delivery"]["state"]) == ("main", "delivered"), posted
    assert "tokens done" in await until_typed(family.record, "tokens done")


async def test_an_approved_spawn_whose_name_was_taken_meanwhile_fails_and_says_so(
    hub: HubService, client: HubClient, family: Family, short_tmp: Path
) -> None:
    got = await family.call("spawn_subtree", name="late", command=["true"])
    (child,) = got["structured"]["children"]
    pane = await family.tmux("display", "-p", "-t", "parent", "#{pane_id}")
    taken = await client.call(
        "ling/register",
        {"name": "main.late", "kind": "tmux", "address": f"{pane}@{family.socket}"},
    )
    assert taken["state"] == "pending"  # a registration request of the same name
    failed = await answered(
        hub, client, child["prompt_id"], "approve", "ling/spawn-failed", "main.late"
    )
    assert failed.data["reason"] == "main.late was registered meanwhile, so nothing was started"
    told = await until_typed(family.record, "[SPAWN FAILED]")
    assert told.startswith(
        "[SPAWN FAILED] Agent 'late' (main.late) was approved but did not start: main.late "
        "was registered meanwhile"
    ), told
    assert await family.windows() == 1


async def _append(into: list[dict[str, Any]], call: Awaitable[dict[str, Any]]) -> None:
    into.append(await call)


async def test_bad_spawns_are_refused_in_the_tools_words_and_pending_spawns_are_bounded(
    hub: HubService, client: HubClient, family: Family
) -> None:
    async def refused(tool: str, **args: Any) -> str:
        got = await family.call(tool, **args)
        assert got["is_error"], got
        text: str = got["text"]
        return text

    assert "command must be a non-empty list of strings" in await refused(
        "spawn_subtree", name="x", command=[]
    )
    assert "name: 'a.b' must be one part of a ling name" in await refused(
        "spawn_subtree", name="a.b", command=["true"]
    )
    assert "worktree: '-x' is not a branch name" in await refused(
        "spawn_subtree", name="x", command=["true"], worktree="-x"
    )
    assert "workers must be a non-empty list of {name, command}" in await refused(
        "spawn_workers", workers=[]
    )
    assert "workers[1].command must be a non-empty list" in await refused(
        "spawn_workers", workers=[{"name": "a", "command": ["true"]}, {"name": "b", "command": []}]
    )
    nine = [{"name": f"w{i}", "command": ["true"]} for i in range(9)]
    assert "9 children asked for at once; at most 8" in await refused("spawn_workers", workers=nine)
    assert hub.registry.statistics()["pending"] == 0  # none of these asked the human
    # Two requests for one child at once: the name is held from the first one's check,
    # before it waits on tmux, git or the store, so the second is refused.
    twins: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        for _ in range(2):
            nursery.start_soon(
                lambda: _append(twins, family.call("spawn_subtree", name="twin", command=["true"]))
            )
    assert sorted(t["is_error"] for t in twins) == [False, True], twins
    assert "main.twin already waits for the human's approval" in next(
        t["text"] for t in twins if t["is_error"]
    )
    assert hub.registry.statistics()["pending"] == 1
    got = await family.call("spawn_workers", workers=nine[:7])
    assert not got["is_error"], got
    assert "at most 8 per parent may (spawn_requests_per_parent)" in await refused(
        "spawn_subtree", name="w9", command=["true"]
    )
    assert "main.w0 already waits for the human's approval" in await refused(
        "spawn_subtree", name="w0", command=["true"]
    )
    assert await family.windows() == 1


async def test_a_spawn_asked_before_the_hub_restarts_is_carried_out_by_the_new_hub(
    hub_config: HubConfig, short_tmp: Path
) -> None:
    """Like a terminal registration's request, a spawn's is kept in the store: the
    human's answer given to the restarted hub starts the child all the same."""
    record = short_tmp / "after.jsonl"
    async with trio.open_nursery() as nursery:
        first_ended = trio.Event()
        first = trio.CancelScope()

        async def first_hub(task_status: trio.TaskStatus[HubService]) -> None:
            with first:
                await run_hub(hub_config, task_status=task_status)
            first_ended.set()

        await nursery.start(first_hub)
        async with parent_agent(hub_config, short_tmp) as family:
            got = await family.call(
                "spawn_subtree", name="after", command=[sys.executable, str(LING), str(record)]
            )
            (child,) = got["structured"]["children"]
            first.cancel()
            await first_ended.wait()
            hub: HubService = await nursery.start(run_hub, hub_config)
            async with await HubClient.connect(hub_config.socket) as client:
                await answered(
                    hub, client, child["prompt_id"], "approve", "ling/spawned", "main.after"
                )
            await until_ready(record)
            await until_typed(family.record, "[CHILD SPAWNED] Agent 'after' on branch main.after")
            assert await hub.registry.store.documents("spawn-request") == []  # forgotten
        nursery.cancel_scope.cancel()
