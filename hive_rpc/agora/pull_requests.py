"""The hub's watch of its lings' pull requests: PR, review and CI events typed into
the parent's terminal by themselves (docs/agora.md, "Pull requests, reviews and CI").

A child ling works on a branch; its parent wants to hear when the child's PR opens,
is ready for review, gets a review (Copilot's among them), when its CI settles and
when it is ready to merge, without a hook or a CI script calling ``hive-rpc event``.
So, for every registered ling that has a parent, the hub:

1. finds where it works from what it can check, not from what a client said: the
   working directory of the agent process the human approved (``/proc/PID/cwd`` of
   ``ling.agent``, the same pid *and* start time, so a recycled pid is not taken
   for it), and that checkout's branch (``git symbolic-ref``).  When that cannot be
   read (no agent recorded, the agent exited, not a git checkout, a detached HEAD,
   its parent not registered) the ling is skipped, and said so: an event
   ``pull-requests/skipped`` on the activity stream and in the log, each time the
   reason changes, and ``status()``;
2. asks ``gh pr list --head BRANCH --state all --json ...`` in that checkout (gh
   finds the repository from its remotes; ``GH_HOST`` and gh's other variables pass
   through the hub's environment, so GitHub Enterprise works as it does for gh);
3. compares with what it saw last (core/pull_requests.py ``changes``) and posts each
   change to the parent as the child's event (``AgoraDelivery.post_event``, the same
   path and templates as ``hive-rpc event``);
4. remembers what it saw as a store document (kind ``pull-requests``, key the
   ling's name), written after the events are posted: a hub restarted finds it and
   does not announce the old state again, and one stopped between posting and
   saving announces those events again rather than never (at least once).

The looks follow ``Schedule``: every 30 s while a watched PR is open, every 5 min
while none is; a ling whose gh run failed waits twice as long each time (up to
30 min) while the others go on; a rate limit, gh not logged in or not installed
stop every look until the limit's reset (``gh api rate_limit``) or for the doubling
wait.  Each such trouble is an event ``pull-requests/trouble`` (level ``warn``,
``message`` in words, ``retry_in``) on the activity stream and in the log, and
``pull-requests/recovered`` once gh answers again.

Several hubs sharing a NATS store would each announce the same change: run the
watch on one of them (``hive-rpc serve --no-watch-prs`` on the others).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from hive_rpc.core import pull_requests as prs
from hive_rpc.core.ling import Ling, parent_of
from hive_rpc.relay import proc
from hive_rpc.store.base import PromptStore

log = logging.getLogger("hive_rpc.agora.pull_requests")

DOC = "pull-requests"
"""The store's document kind of the snapshots (key: the ling's name)."""
GH_TIMEOUT_S = 60.0
"""How long one gh run may take before it counts as failed."""
GIT_TIMEOUT_S = 10.0
NOT_INSTALLED = "not-installed"
STOPS_EVERY_LOOK = frozenset({prs.RATE_LIMITED, prs.NOT_LOGGED_IN, NOT_INSTALLED})
"""gh's troubles that are not one ling's: every look waits them out."""
TROUBLE_WORDS = {
    prs.RATE_LIMITED: "GitHub's rate limit is reached",
    prs.NOT_LOGGED_IN: "gh is not logged in (run `gh auth login`, with GH_HOST for "
    "GitHub Enterprise, as the user the hub runs as)",
    NOT_INSTALLED: "gh is not on the hub's PATH",
    prs.NO_REPOSITORY: "gh finds no GitHub repository in the checkout",
    prs.FAILED: "gh failed",
}


class Parents(Protocol):
    """What the watch needs of the Agora: its lings, and a child's event posted."""

    async def lings(self, *, check: bool = False) -> list[dict[str, Any]]: ...

    async def post_event(
        self, kind: str, sender: str, fields: dict[str, Any]
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Place:
    """Where a ling's agent works: its checkout's top directory and branch."""

    checkout: str
    branch: str


@dataclass(frozen=True, slots=True)
class GhResult:
    output: str
    trouble: str | None = None
    """None when gh answered; else ``core.pull_requests.trouble``'s kind or
    ``NOT_INSTALLED``, with ``error`` in gh's words."""
    error: str = ""


class Gh(Protocol):
    async def pr_list(self, place: Place) -> GhResult: ...

    async def rate_limit(self, place: Place) -> GhResult: ...


class GhCli:
    """The ``gh`` on the hub's PATH, run in the ling's checkout with the hub's
    environment (``GH_HOST``, ``GH_TOKEN``, ``GH_ENTERPRISE_TOKEN`` ... as given),
    never prompting."""

    async def pr_list(self, place: Place) -> GhResult:
        return await self._run(
            ["pr", "list", "--head", place.branch, "--state", "all",
             "--limit", str(prs.GH_LIMIT), "--json", ",".join(prs.GH_FIELDS)],
            place.checkout,
        )  # fmt: skip

    async def rate_limit(self, place: Place) -> GhResult:
        return await self._run(["api", "rate_limit"], place.checkout)

    async def _run(self, args: list[str], cwd: str) -> GhResult:
        program = shutil.which("gh")
        if program is None:
            return GhResult("", NOT_INSTALLED, "gh is not on PATH")
        env = os.environ | {"GH_PROMPT_DISABLED": "1", "GH_NO_UPDATE_NOTIFIER": "1",
                            "GH_SPINNER_DISABLED": "1", "NO_COLOR": "1"}  # fmt: skip
        with trio.move_on_after(GH_TIMEOUT_S):
            try:
                done = await trio.run_process(
                    [program, *args], cwd=cwd, env=env, capture_stdout=True,
                    capture_stderr=True, check=False,
                )  # fmt: skip
            except OSError as e:
                return GhResult("", prs.FAILED, f"gh could not be run: {e}")
            out = done.stdout.decode("utf-8", "replace")
            err = done.stderr.decode("utf-8", "replace").strip()
            if done.returncode != 0:
                return GhResult(out, prs.trouble(err), err or f"gh exited {done.returncode}")
            return GhResult(out)
        return GhResult("", prs.FAILED, f"gh did not answer within {GH_TIMEOUT_S:g} s")


async def _git(cwd: str, *args: str) -> tuple[str, str]:
    """``git -C cwd ARGS``: (its output, "") or ("", why it failed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    with trio.move_on_after(GIT_TIMEOUT_S):
        try:
            done = await trio.run_process(
                ["git", "-C", cwd, *args], env=env, capture_stdout=True,
                capture_stderr=True, check=False,
            )  # fmt: skip
        except OSError as e:
            return "", f"git could not be run: {e}"
        if done.returncode != 0:
            return "", done.stderr.decode("utf-8", "replace").strip() or "git failed"
        return done.stdout.decode("utf-8", "replace").strip(), ""
    return "", f"git did not answer within {GIT_TIMEOUT_S:g} s"


async def locate(ling: Ling) -> Place | str:
    """Where ``ling``'s approved agent works, from the kernel and git; or why that
    cannot be said (the ling is then skipped)."""
    agent = ling.agent
    if agent is None:
        return "the hub does not know which process is its agent, so not where it works"
    exited = f"its agent ({agent.describe()}) has exited"
    now = proc.process(agent.pid)
    if now is None or now.start != agent.start:
        return exited
    cwd = proc.working_dir(agent.pid)
    again = proc.process(agent.pid)  # the pid was not recycled while cwd was read
    if again is None or again.start != agent.start:
        return exited
    if cwd is None:
        return f"the working directory of its agent ({agent.describe()}) cannot be read"
    top, why = await _git(cwd, "rev-parse", "--show-toplevel")
    if not top:
        return f"its agent works in {cwd}, which is not a git checkout ({why})"
    branch, why = await _git(top, "symbolic-ref", "--short", "-q", "HEAD")
    if not branch:
        return f"{top} has no branch checked out (a detached HEAD)"
    return Place(top, branch)


def _in_words(seen: prs.Seen) -> str:
    """``#42 open, draft, CI pending``."""
    facts = [seen.state, "draft" if seen.draft else "", f"CI {seen.ci}" if seen.ci else "",
             "ready" if seen.ready else ""]  # fmt: skip
    return f"#{seen.number} {', '.join(f for f in facts if f)}"


@dataclass
class Watched:
    """One ling's watch between looks."""

    seen: dict[str, prs.Seen] = field(default_factory=dict)
    place: Place | None = None
    skipped: str | None = None
    trouble: str | None = None
    failures: int = 0
    due: float = -math.inf
    """When its next look may be (the watch's clock): later after failures."""

    @property
    def open(self) -> bool:
        return any(s.state == "open" for s in self.seen.values())


class PullRequestWatcher:
    """The watch (see the module doc).  ``run`` is the hub's task; ``look`` one
    look at every watched ling, which tests drive step by step.  ``clock`` (trio's
    by default) times the waits, ``wall`` (seconds since 1970) reads a rate limit's
    reset."""

    def __init__(
        self,
        parents: Parents,
        store: PromptStore,
        *,
        report: Callable[[dict[str, Any]], None] | None = None,
        gh: Gh | None = None,
        where: Callable[[Ling], Awaitable[Place | str]] = locate,
        schedule: prs.Schedule = prs.Schedule(),  # noqa: B008 (frozen)
        clock: Callable[[], float] = trio.current_time,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._parents = parents
        self._store = store
        self._report = report
        self._gh: Gh = gh if gh is not None else GhCli()
        self._where = where
        self.schedule = schedule
        self._clock = clock
        self._wall = wall
        self._watched: dict[str, Watched] = {}
        self.trouble: str | None = None
        """What stops every look now, in words; None while gh answers."""
        self._failures = 0
        """Looks stopped in a row by ``STOPS_EVERY_LOOK`` troubles."""

    async def load(self) -> None:
        """The snapshots the store kept: what was already told is not told again."""
        for body in await self._store.documents(DOC):
            try:
                seen = {str(u): prs.Seen.from_record(r) for u, r in body["prs"].items()}
                self._watched[str(body["ling"])] = Watched(seen=seen)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                log.warning("pull requests: skipping an unreadable snapshot (%r)", e)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Look, wait as the schedule says, look again, until cancelled.  The wait is
        a schedule, not a poll for something that has an event: GitHub sends none
        the hub can receive."""
        try:
            await self.load()
        except Exception as e:  # the store: start without, at worst telling again
            log.warning("pull requests: the snapshots could not be read (%s)", e)
        log.info("pull requests: watching the branches of lings that have a parent, with gh")
        task_status.started()
        while True:
            try:
                wait = await self.look()
            except Exception as e:  # a bug or a failing store must not end the hub
                wait = self.schedule.backoff(1)
                log.exception("pull requests: a look failed; looking again in %g s", wait)
                self._tell("pull-requests/trouble", None, trouble=prs.FAILED, retry_in=wait,
                           message=f"a look at the pull requests failed ({e!r}); looking "
                           f"again in {wait:g} s")  # fmt: skip
            await trio.sleep(wait)

    def status(self) -> dict[str, Any]:
        """The watch now, for people and tests: its trouble, and per ling where it
        works, why it is skipped, its trouble and its pull requests."""
        now = self._clock()
        return {
            "trouble": self.trouble,
            "failures": self._failures,
            "lings": {
                name: {
                    "checkout": w.place.checkout if w.place else None,
                    "branch": w.place.branch if w.place else None,
                    "skipped": w.skipped,
                    "trouble": w.trouble,
                    "failures": w.failures,
                    "next_look_in": max(w.due - now, 0.0),
                    "pull_requests": sorted(s.number for s in w.seen.values()),
                }
                for name, w in sorted(self._watched.items())
            },
        }

    def summary(self) -> dict[str, Any]:
        """What ``hive/status`` says of the watch, for a person asking why an event
        did not come: how many branches it watches, their open pull requests, the
        lings skipped and why, and what stops the looks now (the whole watch's
        trouble, else the first ling's)."""
        watched = [w for w in self._watched.values() if w.place is not None]
        troubled = ((n, w.trouble) for n, w in sorted(self._watched.items()) if w.trouble)
        trouble = self.trouble or next((f"{n}: {t}" for n, t in troubled), None)
        return {
            "watching": len(watched),
            "open": sum(s.state == "open" for w in watched for s in w.seen.values()),
            "skipped": {n: w.skipped for n, w in sorted(self._watched.items()) if w.skipped},
            "trouble": trouble,
        }

    async def look(self) -> float:
        """One look at the pull requests of every watched ling that is due; the wait
        until the next look."""
        now = self._clock()
        records = await self._parents.lings()
        lings = [Ling.from_record(r) for r in records if r.get("state") == "registered"]
        names = {ling.name for ling in lings}
        for gone in set(self._watched) - names:  # removed: its snapshot goes too
            del self._watched[gone]
            await self._save(gone, None)
        children = [ling for ling in lings if parent_of(ling.name) is not None]
        for ling in children:
            w = self._watched.setdefault(ling.name, Watched())
            parent = parent_of(ling.name)
            if parent not in names:
                self._skip(ling.name, w, f"its parent {parent} is not registered: nobody to tell")
                continue
            if w.due > now:
                continue
            stop = await self._look_at(ling, w, now)
            if stop is not None:
                return stop
        watched = [self._watched[c.name] for c in children]
        return self.schedule.interval(any(w.open for w in watched if w.skipped is None))

    async def _look_at(self, ling: Ling, w: Watched, now: float) -> float | None:
        """Look at ``ling``'s pull requests; the wait of every look when gh's trouble
        stops them all, else None."""
        place = await self._where(ling)
        if isinstance(place, str):
            self._skip(ling.name, w, place)
            return None
        if place != w.place or w.skipped is not None:
            w.place, w.skipped = place, None
            self._tell("pull-requests/watching", ling.name, checkout=place.checkout,
                       branch=place.branch,
                       message=f"watching the pull requests of {ling.name}'s branch "
                       f"{place.branch} in {place.checkout}")  # fmt: skip
        result = await self._gh.pr_list(place)
        if result.trouble in STOPS_EVERY_LOOK:
            return await self._stopped(place, result)
        if self.trouble is not None:
            self._recovered(None)
        found: list[prs.PullRequest] | None = None
        if result.trouble is None:
            try:
                found = prs.parse(result.output)
            except prs.Unreadable as e:
                result = GhResult("", prs.FAILED, f"{e}: {result.output[:200]!r}")
        if found is None:
            w.failures += 1
            wait = self.schedule.backoff(w.failures)
            w.due = now + wait
            w.trouble = f"{TROUBLE_WORDS[result.trouble or prs.FAILED]}: {result.error}"
            self._tell("pull-requests/trouble", ling.name, trouble=result.trouble,
                       retry_in=wait, failures=w.failures,
                       message=f"{ling.name}'s pull requests were not read: {w.trouble}; "
                       f"looked at again in {wait:g} s")  # fmt: skip
            return None
        if w.trouble is not None:
            w.trouble, w.failures = None, 0
            self._recovered(ling.name)
        for event in prs.changes(w.seen, found):
            try:
                await self._parents.post_event(event.kind, ling.name, event.fields)
            except Exception:  # one event's failure must not stop the watch
                log.exception("pull requests: posting %s of %s failed", event.kind, ling.name)
        after = prs.remember(w.seen, found)
        if after != w.seen:
            w.seen = after
            await self._save(ling.name, w)
            now_seen = [prs.Seen.of(p) for p in sorted(found, key=lambda p: p.number)]
            self._tell("pull-requests/seen", ling.name,
                       pull_requests=[s.record() for s in now_seen],
                       message=f"{ling.name}'s pull requests: "
                       + ("; ".join(map(_in_words, now_seen)) or "none"))  # fmt: skip
        return None

    async def _stopped(self, place: Place, result: GhResult) -> float:
        """gh's trouble stops every look: the wait, told."""
        self._failures += 1
        wait = self.schedule.backoff(self._failures)
        if result.trouble == prs.RATE_LIMITED:
            limits = await self._gh.rate_limit(place)
            reset = prs.rate_limit_reset(limits.output) if limits.trouble is None else None
            wait = self.schedule.rate_limited(reset, self._wall(), self._failures)
        self.trouble = f"{TROUBLE_WORDS[str(result.trouble)]}: {result.error}"
        self._tell("pull-requests/trouble", None, trouble=result.trouble, retry_in=wait,
                   failures=self._failures,
                   message=f"no pull request is looked at: {self.trouble}; looking again "
                   f"in {wait:g} s")  # fmt: skip
        return wait

    def _recovered(self, name: str | None) -> None:
        if name is None:
            self.trouble, self._failures = None, 0
        self._tell("pull-requests/recovered", name,
                   message=f"gh answers again{f' for {name}' if name else ''}")  # fmt: skip

    def _skip(self, name: str, w: Watched, why: str) -> None:
        """``name`` is not looked at, for ``why``: told when the reason changes."""
        if w.skipped != why:
            w.skipped, w.place = why, None
            self._tell("pull-requests/skipped", name, reason=why,
                       message=f"{name}'s pull requests are not watched: {why}")  # fmt: skip

    def _tell(self, event: str, ling: str | None, **facts: Any) -> None:
        level = "warn" if event == "pull-requests/trouble" else "info"
        entry = {"event": event, "at": self._wall(), "level": level, "ling": ling, **facts}
        log.log(logging.WARNING if level == "warn" else logging.INFO, "%s", facts["message"])
        if self._report is not None:
            self._report(entry)

    async def _save(self, name: str, w: Watched | None) -> None:
        """The snapshot of ``name`` into the store (None: removed).  A failing store
        is logged and the watch goes on: a restart may then tell those changes again."""
        try:
            if w is None:
                await self._store.delete_document(DOC, name)
            else:
                prs_seen = {url: s.record() for url, s in w.seen.items()}
                await self._store.put_document(DOC, name, {"ling": name, "prs": prs_seen})
        except Exception as e:
            log.warning("pull requests: the snapshot of %s was not saved (%s)", name, e)
