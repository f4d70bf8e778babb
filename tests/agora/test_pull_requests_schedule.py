"""The watch's own loop (``PullRequestWatcher.run``) keeps seed 004's schedule: 30 s
between looks while a PR is open, 5 min while none is, doubling waits for a ling
whose gh run failed, and a rate limit waited out until its reset.

Minutes of the schedule pass on trio's MockClock (autojump), so gh and the Agora are
in-process stand-ins here: a subprocess would let the clock jump while it runs.
tests/agora/test_pull_requests.py runs the same watch against the real parts (a hub,
tmux panes, git, a gh on PATH)."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing

from hive_rpc.agora.pull_requests import GhResult, Place, PullRequestWatcher
from hive_rpc.core import pull_requests as prs
from hive_rpc.core.ling import Ling
from hive_rpc.store import MemoryStore

OPEN = json.dumps([{"number": 1, "state": "OPEN", "isDraft": False, "url": "u1",
                    "title": "t", "headRefOid": "a", "reviews": []}])  # fmt: skip
WALL = 1_800_000_000.0


class Gh:
    """Answers in the order given; records the (virtual) time of each run."""

    def __init__(self, *answers: GhResult) -> None:
        self.answers = list(answers)
        self.runs: list[tuple[float, str]] = []

    async def pr_list(self, place: Place) -> GhResult:
        self.runs.append((trio.current_time(), "pr list"))
        return self.answers.pop(0) if self.answers else GhResult(OPEN)

    async def rate_limit(self, place: Place) -> GhResult:
        self.runs.append((trio.current_time(), "rate_limit"))
        graphql = {"remaining": 0, "reset": WALL + trio.current_time() + 200}
        return GhResult(json.dumps({"resources": {"graphql": graphql}}))


class Parents:
    def __init__(self) -> None:
        self.posted: list[tuple[float, str]] = []

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]:
        return [{**Ling(name, "tmux", "%1", 0.0).record(), "state": "registered"}
                for name in ("main", "main.auth")]  # fmt: skip

    async def post_event(self, kind: str, sender: str, fields: dict[str, Any]) -> dict[str, Any]:
        self.posted.append((trio.current_time(), kind))
        return {}


async def where(ling: Ling) -> Place | str:
    return Place("/src/app", "feature/auth")


async def test_the_looks_keep_the_seeds_schedule(
    autojump_clock: trio.testing.MockClock,
) -> None:
    gh = Gh(
        GhResult("[]"),  # t=0: no PR: next look in 5 min
        GhResult(OPEN),  # t=300: opened: every 30 s now
        GhResult("", prs.FAILED, "HTTP 502"),  # t=330: this ling waits 60 s
        GhResult("", prs.FAILED, "HTTP 502"),  # t=390: then 120 s
        GhResult("", prs.RATE_LIMITED, "API rate limit exceeded"),  # t=510: until the reset
    )
    parents = Parents()
    watch = PullRequestWatcher(
        parents, MemoryStore(), gh=gh, where=where, wall=lambda: WALL + trio.current_time()
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(watch.run)
        await trio.sleep(800)
        nursery.cancel_scope.cancel()
    assert gh.runs == [
        (0.0, "pr list"),
        (300.0, "pr list"),
        (330.0, "pr list"),
        (390.0, "pr list"),
        (510.0, "pr list"),
        (510.0, "rate_limit"),
        (711.0, "pr list"),  # the reset, 200 s on, and a second
        (741.0, "pr list"),
        (771.0, "pr list"),
    ]
    assert parents.posted == [(300.0, "pr-status")]  # opened, told once


class Failing(Parents):
    """Its lings cannot be listed once (a bug, a store failing)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]:
        if not self.failed:
            self.failed = True
            raise RuntimeError("boom")
        return await super().lings()


async def test_a_look_that_fails_is_told_and_the_watch_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    gh, told = Gh(), []
    watch = PullRequestWatcher(Failing(), MemoryStore(), gh=gh, where=where, report=told.append)
    async with trio.open_nursery() as nursery:
        await nursery.start(watch.run)
        await trio.sleep(100)
        nursery.cancel_scope.cancel()
    assert gh.runs == [(60.0, "pr list"), (90.0, "pr list")]
    assert told[0]["event"] == "pull-requests/trouble"
    assert "RuntimeError('boom')" in told[0]["message"]
