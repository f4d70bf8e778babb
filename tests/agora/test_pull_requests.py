"""The hub's watch of its lings' pull requests (agora/pull_requests.py): PR, review and
CI events reach the parent's terminal by themselves, once each.

GitHub cannot be reached from the test machines, so ``gh`` is a stand-in
(tests/agora/gh_standin.py), put first on PATH, that replays the ``gh pr list
--json`` output the test writes and changes between the hub's looks, and records
how it was run.  Everything else is real: the hub (its Agora, relay and SQLite
store, restarted where the test says), a git repository with the child's branch
checked out where the child's agent process works, and tmux panes for the parent
(the scripted ling of tests/relay/, which records what is typed into it) and the
child."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio
from test_cli_events import Parent

from hive_rpc.agora import Agora
from hive_rpc.agora.pull_requests import PullRequestWatcher
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or shutil.which("git") is None, reason="needs tmux and git"
)

HERE = Path(__file__).parent
LING = HERE.parent / "relay" / "scripted_ling.py"
URL = "https://github.example.com/owner/app/pull/42"
WALL = 1_800_000_000.0
"""The watch's wall clock in these tests, so a rate limit's reset is an exact wait."""


@dataclass
class StandIn:
    """The stand-in gh's directory: what it replays, and how it was run."""

    dir: Path

    def replay(self, *prs: dict[str, Any]) -> None:
        (self.dir / "pr-list.json").write_text(json.dumps(list(prs)))

    def fail(self, stderr: str, code: int = 1) -> None:
        (self.dir / "pr-list.fail").write_text(json.dumps({"stderr": stderr, "code": code}))

    def succeed(self) -> None:
        (self.dir / "pr-list.fail").unlink()

    def calls(self) -> list[dict[str, Any]]:
        log = self.dir / "calls.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def gh(short_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> StandIn:
    """``gh`` on PATH is the stand-in; GH_HOST names a GitHub Enterprise host."""
    where = short_tmp / "gh"
    (where / "bin").mkdir(parents=True)
    program = where / "bin" / "gh"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} {HERE / "gh_standin.py"} "$@"\n')
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{where / 'bin'}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("GH_STANDIN_DIR", str(where))
    monkeypatch.setenv("GH_HOST", "github.example.com")
    stand_in = StandIn(where)
    stand_in.replay()
    return stand_in


@pytest.fixture
def repo(short_tmp: Path) -> Path:
    """A git repository with the child's branch ``feature/auth`` checked out."""
    path = short_tmp / "app"
    path.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(path)]
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"],
                 ["checkout", "-q", "-b", "feature/auth"]):  # fmt: skip
        subprocess.run([*git, *args], check=True)
    return path


@dataclass
class Panes(Parent):
    """The tmux server of the parent's pane (what was typed into it: ``Parent``) and
    the children's."""

    socket: Path = Path()
    children: dict[str, str] = field(default_factory=dict)

    async def child(self, cwd: Path) -> str:
        """A pane whose program (the child's agent) works in ``cwd``."""
        done = await trio.run_process(
            ["tmux", "-S", str(self.socket), "new-window", "-d", "-P", "-F", "#{pane_id}",
             "-c", str(cwd), "sleep 3600"],
            capture_stdout=True,
        )  # fmt: skip
        return f"{done.stdout.decode().strip()}@{self.socket}"


@pytest.fixture
async def panes(short_tmp: Path) -> AsyncIterator[Panes]:
    socket, record = short_tmp / "tmux.sock", short_tmp / "parent.jsonl"
    done = await trio.run_process(
        ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-P", "-F",
         "#{pane_id}", "-x", "200", "-y", "50", f"{sys.executable} {LING} {record}"],
        capture_stdout=True,
    )  # fmt: skip
    panes = Panes(record, socket, {"main.feature": f"{done.stdout.decode().strip()}@{socket}"})
    try:
        with trio.fail_after(20):
            while not record.exists():  # noqa: ASYNC110 (the ling writes it when ready)
                await trio.sleep(0.05)
        yield panes
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await trio.run_process(
                ["tmux", "-S", str(socket), "kill-server"], check=False, capture_stderr=True
            )


async def register(agora: Agora, panes: Panes, repo: Path) -> None:
    """The parent's pane as ling ``main.feature``, and the child ``main.feature.auth``
    (auth-module), whose agent works in ``repo``: registered by the hub's owner, as the
    human does from inside each pane."""
    await agora.register("main.feature", "tmux", panes.children["main.feature"], owner=True)
    child = await panes.child(repo)
    await agora.register("main.feature.auth", "tmux", child, label="auth-module", owner=True)


@dataclass
class Posting:
    """The Agora, counting the events the watch posts through it (to the real one)."""

    agora: Agora
    posted: list[tuple[str, str]] = field(default_factory=list)

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]:
        return await self.agora.lings(check=check)

    async def post_event(self, kind: str, sender: str, fields: dict[str, Any]) -> dict[str, Any]:
        result = await self.agora.post_event(kind, sender, fields)
        self.posted.append((kind, result["delivery"]["state"]))
        return result


def pr(**over: Any) -> dict[str, Any]:
    """PR #42 as ``gh pr list --json`` prints it."""
    return {
        "number": 42, "state": "OPEN", "isDraft": True, "reviewDecision": "REVIEW_REQUIRED",
        "reviews": [], "url": URL, "title": "Add the JWT middleware", "headRefOid": "a1",
        "statusCheckRollup": [{"__typename": "CheckRun", "name": "test",
                               "status": "IN_PROGRESS", "conclusion": ""}],
    } | over  # fmt: skip


COPILOT = {
    "id": "PRR_1", "author": {"login": "copilot-pull-request-reviewer"}, "state": "COMMENTED",
    "body": "Copilot reviewed 3 out of 3 changed files in this pull request and generated "
    "3 comments.", "submittedAt": "2026-11-29T08:00:00Z",
}  # fmt: skip
ALICE = {"id": "PRR_2", "author": {"login": "alice"}, "state": "APPROVED", "body": "LGTM",
         "submittedAt": "2026-11-29T08:10:00Z"}  # fmt: skip


def checks(conclusion: str) -> list[dict[str, Any]]:
    return [{"__typename": "CheckRun", "name": "test", "status": "COMPLETED",
             "conclusion": conclusion}]  # fmt: skip


OPENED = (
    "[PR STATUS] PR #42 (auth-module). Opened as a draft: Add the JWT middleware. "
    f"CI: pending.\nView: {URL}"
)
COPILOT_REVIEW = (
    "[COPILOT REVIEW] PR #42 (auth-module) received new Copilot review.\n"
    f"Status: commented. 3 comments.\nView: {URL}"
)


class Clock:
    """The watch's clock, moved by the test: no test waits for a backoff to pass."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Watch:
    """The watch of a hub whose lings are registered, and what it told."""

    watch: PullRequestWatcher
    agora: Posting
    clock: Clock
    reported: list[dict[str, Any]]


@pytest.fixture
async def watching(hub: HubService, gh: StandIn, repo: Path, panes: Panes) -> Watch:
    agora, reported, clock = Posting(hub.require_agora()), [], Clock()
    await register(agora.agora, panes, repo)
    watch = PullRequestWatcher(
        agora, hub.registry.store, report=reported.append, clock=clock, wall=lambda: WALL
    )
    return Watch(watch, agora, clock, reported)


async def test_a_prs_life_reaches_the_parent_once_each_in_the_seeds_words(
    watching: Watch, gh: StandIn, repo: Path, panes: Panes
) -> None:
    watch, agora, reported = watching.watch, watching.agora, watching.reported
    assert await watch.look() == 300.0  # no PR yet: the idle interval
    ling = watch.status()["lings"]["main.feature.auth"]
    assert (ling["branch"], ling["checkout"]) == ("feature/auth", str(repo))
    assert [(e["event"], e["ling"]) for e in reported] == [
        ("pull-requests/skipped", "main.feature"),  # its parent, main, is not registered
        ("pull-requests/watching", "main.feature.auth"),
    ]

    gh.replay(pr())
    assert await watch.look() == 30.0  # an open PR: the active interval
    assert await panes.wait_for(1) == [OPENED]

    gh.replay(pr(isDraft=False, reviews=[COPILOT], statusCheckRollup=checks("FAILURE")))
    await watch.look()
    assert (await panes.wait_for(4))[1:] == [
        f"[PR STATUS] PR #42 (auth-module). Ready for review.\nView: {URL}",
        COPILOT_REVIEW,
        "[CI STATUS] PR #42 (auth-module): failing. Failing: test.",
    ]

    ready = pr(isDraft=False, reviews=[COPILOT, ALICE], reviewDecision="APPROVED",
               statusCheckRollup=checks("SUCCESS"), headRefOid="b2")  # fmt: skip
    gh.replay(ready)
    await watch.look()
    await watch.look()  # nothing changed since: nothing is told again
    assert (await panes.wait_for(7))[4:] == [
        "[PR REVIEW] PR #42 (auth-module) received a new review from alice.\n"
        f"Status: approved.\nView: {URL}",
        "[CI STATUS] PR #42 (auth-module): passing.",
        "[PR READY] PR #42 (auth-module) on branch main.feature.auth is ready to merge.\n"
        f"Review: approved by alice. CI: passing.\nView: {URL}\nReview with: gh pr view 42",
    ]
    # Posted 7 times in all, so nothing more can reach the pane than these 7.
    assert [kind for kind, _ in agora.posted] == [
        "pr-status", "pr-status", "pr-status", "ci-status", "pr-status", "ci-status", "pr-ready",
    ]  # fmt: skip

    calls = gh.calls()
    assert len(calls) == 5
    for call in calls:
        assert call["argv"][:5] == ["pr", "list", "--head", "feature/auth", "--state"]
        assert call["cwd"] == str(repo)
        assert call["env"]["GH_HOST"] == "github.example.com"  # GitHub Enterprise
        assert call["env"]["GH_PROMPT_DISABLED"] == "1"


async def test_a_failing_gh_backs_off_for_that_ling_and_a_rate_limit_waits_for_its_reset(
    watching: Watch, gh: StandIn, repo: Path, panes: Panes
) -> None:
    watch, clock, reported = watching.watch, watching.clock, watching.reported
    gh.fail("HTTP 502: Bad Gateway (https://github.example.com/api/graphql)")
    assert await watch.look() == 300.0
    ling = watch.status()["lings"]["main.feature.auth"]
    assert (ling["failures"], ling["next_look_in"]) == (1, 60.0)
    assert reported[-1]["event"] == "pull-requests/trouble"
    assert reported[-1]["level"] == "warn"
    assert "HTTP 502" in reported[-1]["message"]
    assert reported[-1]["retry_in"] == 60.0

    clock.now = 59.0
    await watch.look()  # not due yet: gh is not run
    assert len(gh.calls()) == 1
    clock.now = 60.0
    await watch.look()
    assert len(gh.calls()) == 2
    ling = watch.status()["lings"]["main.feature.auth"]
    assert (ling["failures"], ling["next_look_in"]) == (2, 120.0)  # doubled

    clock.now = 180.0
    gh.fail("GraphQL: API rate limit exceeded for user ID 1.")
    core = {"limit": 5000, "remaining": 4990, "reset": WALL + 50}
    graphql = {"limit": 5000, "remaining": 0, "reset": WALL + 600}  # what gh pr list spends
    limits = {"resources": {"core": core, "graphql": graphql}}
    (gh.dir / "rate_limit.json").write_text(json.dumps(limits))
    assert await watch.look() == 601.0  # until the reset, and a second
    assert gh.calls()[-1]["argv"] == ["api", "rate_limit"]
    assert watch.status()["trouble"].startswith("GitHub's rate limit is reached")
    assert reported[-1]["retry_in"] == 601.0

    clock.now = 781.0
    gh.succeed()
    gh.replay(pr())
    assert await watch.look() == 30.0
    assert await panes.wait_for(1) == [OPENED]
    assert watch.status()["trouble"] is None
    assert watch.status()["lings"]["main.feature.auth"]["failures"] == 0
    assert "pull-requests/recovered" in [e["event"] for e in reported]


async def test_a_ling_whose_branch_cannot_be_read_is_skipped_and_says_why(
    watching: Watch, gh: StandIn, repo: Path, panes: Panes, short_tmp: Path
) -> None:
    watch, agora, reported = watching.watch, watching.agora.agora, watching.reported
    plain = short_tmp / "plain"
    plain.mkdir()
    await agora.register("main.feature.docs", "tmux", await panes.child(plain), owner=True)
    await agora.register("orphan.auth", "tmux", await panes.child(repo), owner=True)
    await watch.look()
    await watch.look()  # told once, not at every look
    skipped = {e["ling"]: e["reason"] for e in reported if e["event"] == "pull-requests/skipped"}
    assert sorted(skipped) == ["main.feature", "main.feature.docs", "orphan.auth"]
    assert "which is not a git checkout" in skipped["main.feature.docs"]
    assert skipped["orphan.auth"] == "its parent orphan is not registered: nobody to tell"
    assert len([e for e in reported if e["event"] == "pull-requests/skipped"]) == 3
    lings = watch.status()["lings"]
    assert lings["main.feature.docs"]["skipped"] == skipped["main.feature.docs"]
    assert lings["main.feature.auth"]["skipped"] is None
    assert [c["cwd"] for c in gh.calls()] == [str(repo)] * 2  # only the child in a checkout


async def seen(service: HubService, ling: str) -> None:
    """Until the watch has saved what it saw of ``ling``'s pull requests (its
    ``pull-requests/seen`` entry on the activity stream)."""
    last = 0
    while True:
        batch = await service.activity.after(last) or []
        if any(e.event == "pull-requests/seen" and e.key == ling for e in batch):
            return
        last = batch[-1].id if batch else service.activity.last_id


async def test_a_restarted_hub_watching_by_itself_does_not_tell_old_news_again(
    hub_config: HubConfig, gh: StandIn, repo: Path, panes: Panes
) -> None:
    """``serve --watch-prs``'s hub (HubConfig.watch_prs) looks as it starts, and
    remembers what it told in its store across a restart."""
    async with trio.open_nursery() as nursery:
        service: HubService = await nursery.start(run_hub, hub_config)
        await register(service.require_agora(), panes, repo)
        nursery.cancel_scope.cancel()
    hub_config.watch_prs = True
    gh.replay(pr())
    async with trio.open_nursery() as nursery:
        service = await nursery.start(run_hub, hub_config)
        with trio.fail_after(20):
            await seen(service, "main.feature.auth")  # told, and then saved
        assert await panes.wait_for(1) == [OPENED]
        summary = (await service.call("hive/status", {}))["pull_requests"]
        assert (summary["watching"], summary["open"], summary["trouble"]) == (1, 1, None)
        assert "main.feature.auth" not in summary["skipped"]
        nursery.cancel_scope.cancel()
    gh.replay(pr(reviews=[COPILOT]))
    async with trio.open_nursery() as nursery:
        service = await nursery.start(run_hub, hub_config)
        # Told again, "Opened" would come first: a PR first seen is opened news.
        assert await panes.wait_for(2) == [OPENED, COPILOT_REVIEW]
        nursery.cancel_scope.cancel()
    assert len(panes.received()) == 2
