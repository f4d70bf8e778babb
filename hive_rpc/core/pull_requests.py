"""The pull requests of a ling's branch, and what changed since the hub last looked.
Pure: ``gh pr list --json`` output in, the parent's events out.

Seed 004 (exomonad) has a child's PR, its reviews (Copilot's among them) and its CI
arrive in the parent's terminal by themselves.  The hub looks with the ``gh`` CLI
(agora/pull_requests.py runs it); this module reads what gh printed (``parse``),
compares it with what was seen at the last look (``changes``: previous snapshot and
new pull requests -> events, each rendered by core/messages.py's ``child_event``),
and says when to look next (``Schedule``: every 30 s while a watched PR is open,
5 min when none is, doubling waits after gh fails, until the reset after a rate
limit).

What counts as a change, and why (docs/agora.md, "Pull requests, reviews and CI"):

========================  ==================================================
a PR first seen, open     ``pr-status``: opened (as a draft or not), its CI
a PR first seen, closed   nothing: old history, not news
open -> merged / closed   ``pr-status``: merged, closed without merging
closed -> open            ``pr-status``: reopened
draft -> ready            ``pr-status``: ready for review
ready -> draft            ``pr-status``: turned back into a draft
a review not seen before  ``pr-status`` with ``review`` (the seed's
                          ``[COPILOT REVIEW]``, or another reviewer's, named)
CI settles on a new       ``ci-status`` (passing or failing, with the failing
outcome                   checks); ``pending`` is not told: it is the absence
                          of an outcome, and each push would announce it
approved, CI passing,     ``pr-ready``, once each time it becomes so
open, not a draft
========================  ==================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GH_FIELDS = (
    "number",
    "state",
    "isDraft",
    "reviewDecision",
    "reviews",
    "statusCheckRollup",
    "url",
    "title",
    "headRefOid",
)
"""What the hub asks ``gh pr list --json`` for."""
GH_LIMIT = 20
"""``gh pr list --limit``: a branch seldom has more PRs than this, newest first."""
REMEMBERED = 50
"""Pull requests remembered per ling (the snapshot's size bound): oldest dropped."""

COPILOT_LOGINS = frozenset(
    {"copilot-pull-request-reviewer", "copilot-pull-request-reviewer[bot]", "copilot"}
)
"""How GitHub names Copilot as a review's author (gh prints the GraphQL login,
``copilot-pull-request-reviewer``; the REST API and the web page say ``Copilot``)."""
_COPILOT_COUNT = re.compile(r"generated (\d+|no) comments?", re.I)
"""Copilot's review body says how many comments it left ("Copilot reviewed 3 out of
3 changed files in this pull request and generated 2 comments."): gh's JSON gives
no count of a review's inline comments."""

PASSING, FAILING, PENDING = "passing", "failing", "pending"
_RUN_PASSING = frozenset({"SUCCESS", "NEUTRAL", "SKIPPED"})
_RUN_FAILING = frozenset(
    {"FAILURE", "CANCELLED", "TIMED_OUT", "ACTION_REQUIRED", "STARTUP_FAILURE", "ERROR"}
)
_STATUS_FAILING = frozenset({"FAILURE", "ERROR"})


class Unreadable(ValueError):
    """gh's output is not the JSON the hub asked for."""


@dataclass(frozen=True, slots=True)
class Review:
    id: str
    author: str
    state: str
    """Lower case, as the seed's template says it: ``approved``,
    ``changes_requested``, ``commented``, ``dismissed``."""
    comments: int | None = None

    @property
    def by_copilot(self) -> bool:
        return self.author.lower() in COPILOT_LOGINS


@dataclass(frozen=True, slots=True)
class PullRequest:
    """One pull request as ``gh pr list --json GH_FIELDS`` shows it now."""

    number: int
    url: str
    title: str
    state: str
    """``open``, ``closed`` or ``merged``."""
    draft: bool
    decision: str
    """``reviewDecision`` lower case: ``approved``, ``changes_requested``,
    ``review_required``, or "" when the repository requires no review."""
    reviews: tuple[Review, ...]
    ci: str | None
    """``passing``, ``failing``, ``pending``; None: no checks at all."""
    failing: tuple[str, ...]
    """The names of the failing checks."""
    head: str

    @property
    def approvers(self) -> tuple[str, ...]:
        """Who approved it: the reviewers whose latest review approves."""
        latest: dict[str, str] = {}
        for r in self.reviews:
            if r.state != "commented":  # a comment leaves an earlier verdict standing
                latest[r.author] = r.state
        return tuple(a for a, s in latest.items() if s == "approved")

    @property
    def approved(self) -> bool:
        """Approved as GitHub decides it, or, where the repository requires no
        review, by a reviewer's latest review with no other's asking for changes."""
        if self.decision:
            return self.decision == "approved"
        latest = {r.author: r.state for r in self.reviews if r.state != "commented"}
        return "approved" in latest.values() and "changes_requested" not in latest.values()

    @property
    def ready(self) -> bool:
        """The seed's "PR ready": open, not a draft, approved, its CI passing (or none)."""
        return (
            self.state == "open" and not self.draft and self.approved and self.ci in (PASSING, None)
        )


@dataclass(frozen=True, slots=True)
class Seen:
    """What the hub remembers of a pull request between looks (and hub restarts:
    a store document), enough to tell what changed."""

    number: int
    state: str
    draft: bool
    reviews: tuple[str, ...]
    ci: str | None
    head: str
    ready: bool

    @classmethod
    def of(cls, pr: PullRequest) -> Seen:
        return cls(
            pr.number, pr.state, pr.draft, tuple(r.id for r in pr.reviews), pr.ci, pr.head,
            pr.ready,
        )  # fmt: skip

    def record(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "state": self.state,
            "draft": self.draft,
            "reviews": list(self.reviews),
            "ci": self.ci,
            "head": self.head,
            "ready": self.ready,
        }

    @classmethod
    def from_record(cls, r: Mapping[str, Any]) -> Seen:
        return cls(
            int(r["number"]),
            str(r["state"]),
            bool(r["draft"]),
            tuple(str(i) for i in r.get("reviews") or ()),
            r["ci"] if r.get("ci") in (PASSING, FAILING, PENDING) else None,
            str(r.get("head") or ""),
            bool(r.get("ready")),
        )


@dataclass(frozen=True, slots=True)
class Event:
    """One event for the parent: a ``core.messages.EVENT_KINDS`` kind and the fields
    ``child_event`` renders."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)


# --- reading gh's output ---------------------------------------------------------------


def ci_of(rollup: object) -> tuple[str | None, tuple[str, ...]]:
    """``statusCheckRollup`` summed up: failing if any check failed, else pending if
    any has no outcome yet, else passing; None when there are no checks.  Check runs
    (``CheckRun``: ``status``, ``conclusion``) and commit statuses
    (``StatusContext``: ``state``) alike.  With the names of the failing ones."""
    if not isinstance(rollup, list) or not rollup:
        return None, ()
    failing: list[str] = []
    pending = False
    for check in rollup:
        if not isinstance(check, dict):
            continue
        name = str(check.get("name") or check.get("context") or "a check")
        if "state" in check and "conclusion" not in check:  # a commit status
            state = str(check.get("state") or "").upper()
            if state in _STATUS_FAILING:
                failing.append(name)
            elif state != "SUCCESS":
                pending = True
            continue
        conclusion = str(check.get("conclusion") or "").upper()
        if str(check.get("status") or "COMPLETED").upper() != "COMPLETED" or not conclusion:
            pending = True
        elif conclusion in _RUN_FAILING:
            failing.append(name)
        elif conclusion not in _RUN_PASSING:  # STALE: to be run again
            pending = True
    if failing:
        return FAILING, tuple(failing)
    return (PENDING if pending else PASSING), ()


def _review(r: object) -> Review | None:
    if not isinstance(r, dict):
        return None
    state = str(r.get("state") or "").lower()
    if state in ("", "pending"):  # a draft review, not posted
        return None
    author = r.get("author")
    login = str(author.get("login") or "") if isinstance(author, dict) else ""
    rid = str(r.get("id") or f"{login}@{r.get('submittedAt')}:{state}")
    comments = None
    if login.lower() in COPILOT_LOGINS:
        m = _COPILOT_COUNT.search(str(r.get("body") or ""))
        if m:
            comments = 0 if m.group(1).lower() == "no" else int(m.group(1))
    return Review(rid, login or "someone", state, comments)


def parse(output: str) -> list[PullRequest]:
    """``gh pr list --json GH_FIELDS``'s output; Unreadable when it is not that."""
    try:
        items = json.loads(output)
    except ValueError as e:
        raise Unreadable(f"gh printed no JSON ({e})") from None
    if not isinstance(items, list):
        raise Unreadable("gh printed JSON that is not a list of pull requests")
    prs = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("number"), int):
            raise Unreadable("gh printed a pull request without its number")
        ci, failing = ci_of(item.get("statusCheckRollup"))
        given = item.get("reviews")
        reviews = given if isinstance(given, list) else []
        prs.append(
            PullRequest(
                number=item["number"],
                url=str(item.get("url") or ""),
                title=str(item.get("title") or ""),
                state=str(item.get("state") or "open").lower(),
                draft=item.get("isDraft") is True,
                decision=str(item.get("reviewDecision") or "").lower(),
                reviews=tuple(r for r in map(_review, reviews) if r is not None),
                ci=ci,
                failing=failing,
                head=str(item.get("headRefOid") or ""),
            )
        )
    return prs


# --- what changed ----------------------------------------------------------------------


def _ci_line(pr: PullRequest) -> str:
    if pr.ci == FAILING:
        return f"Failing: {', '.join(pr.failing)}."
    return ""


def changes(before: Mapping[str, Seen], now: list[PullRequest]) -> list[Event]:
    """The events for the parent between the last look (``before``, by URL) and this
    one (``now``), in the order they are to be told; see the module doc."""
    events: list[Event] = []
    for pr in sorted(now, key=lambda p: p.number):
        base = {"pr": pr.number, "url": pr.url}
        old = before.get(pr.url)
        if old is None:
            if pr.state == "open":
                how = "Opened as a draft" if pr.draft else "Opened"
                ci = f" CI: {pr.ci}." if pr.ci else ""
                events.append(Event("pr-status", {**base, "message": f"{how}: {pr.title}.{ci}"}))
                if pr.ready:
                    events.append(_ready(pr))
            continue
        if pr.state != old.state:
            said = {"merged": "Merged.", "closed": "Closed without merging."}
            events.append(Event("pr-status", {**base, "message": said.get(pr.state, "Reopened.")}))
        if pr.state != "open":
            continue
        if old.draft and not pr.draft:
            events.append(Event("pr-status", {**base, "message": "Ready for review."}))
        elif pr.draft and not old.draft:
            events.append(Event("pr-status", {**base, "message": "Turned back into a draft."}))
        for r in pr.reviews:
            if r.id not in old.reviews:
                fields = {**base, "review": r.state, "comments": r.comments}
                if not r.by_copilot:
                    fields["reviewer"] = r.author
                events.append(Event("pr-status", fields))
        if pr.ci in (PASSING, FAILING) and (pr.ci, pr.head) != (old.ci, old.head):
            events.append(Event("ci-status", {**base, "ci": pr.ci, "message": _ci_line(pr)}))
        if pr.ready and not old.ready:
            events.append(_ready(pr))
    return events


def _ready(pr: PullRequest) -> Event:
    approvers = pr.approvers
    fields: dict[str, Any] = {"pr": pr.number, "url": pr.url, "review": "approved", "ci": pr.ci}
    humans = [a for a in approvers if a.lower() not in COPILOT_LOGINS]
    if humans or not approvers:
        fields["reviewer"] = ", ".join(humans) if humans else "the required reviewers"
    return Event("pr-ready", fields)


def remember(before: Mapping[str, Seen], now: list[PullRequest]) -> dict[str, Seen]:
    """The snapshot after this look: what was seen before, updated with ``now``, the
    ``REMEMBERED`` most recently seen kept."""
    after = {url: seen for url, seen in before.items() if url not in {p.url for p in now}}
    after |= {pr.url: Seen.of(pr) for pr in sorted(now, key=lambda p: p.number)}
    return dict(list(after.items())[-REMEMBERED:])


# --- when to look ----------------------------------------------------------------------

RATE_LIMITED, NOT_LOGGED_IN, NO_REPOSITORY, FAILED = (
    "rate-limited",
    "not-logged-in",
    "no-repository",
    "failed",
)
_RATE = re.compile(r"rate limit|HTTP 429|abuse detection", re.I)
_AUTH = re.compile(r"gh auth login|not logged in|HTTP 401|bad credentials|authentication", re.I)
_REPO = re.compile(
    r"no git remotes|none of the git remotes|not a git repository|could not resolve to a "
    r"repository|no such repository",
    re.I,
)


def trouble(stderr: str) -> str:
    """What a failed gh run's error says, for what to do next: ``RATE_LIMITED``
    (wait until the reset), ``NOT_LOGGED_IN`` (nothing works until the human logs
    in), ``NO_REPOSITORY`` (this ling's checkout is not a GitHub repository gh
    knows), or ``FAILED`` (anything else: the network, GitHub's 5xx ...)."""
    if _RATE.search(stderr):
        return RATE_LIMITED
    if _AUTH.search(stderr):
        return NOT_LOGGED_IN
    if _REPO.search(stderr):
        return NO_REPOSITORY
    return FAILED


def rate_limit_reset(output: str) -> float | None:
    """When the exhausted limits of ``gh api rate_limit`` reset (seconds since 1970,
    the latest of them); None when the output says none is exhausted (a secondary
    rate limit, which has no reset to read) or cannot be read."""
    try:
        resources = json.loads(output)["resources"]
        resets = [
            float(r["reset"])
            for r in resources.values()
            if isinstance(r, dict) and int(r.get("remaining", 1)) <= 0
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return max(resets) if resets else None


@dataclass(frozen=True, slots=True)
class Schedule:
    """When to look again: seed 004's "30s for active PRs, 5m for idle"."""

    active_s: float = 30.0
    """Between looks while any watched pull request is open."""
    idle_s: float = 300.0
    """Between looks while none is."""
    backoff_max_s: float = 1800.0
    """The longest wait after gh failed, however often."""
    rate_limit_max_s: float = 3600.0
    """The longest wait for a rate limit's reset (GitHub's reset within the hour)."""

    def interval(self, open_prs: bool) -> float:
        return self.active_s if open_prs else self.idle_s

    def backoff(self, failures: int) -> float:
        """The wait after ``failures`` failures in a row (1: twice ``active_s``)."""
        return min(self.active_s * 2.0 ** max(failures, 1), self.backoff_max_s)

    def rate_limited(self, reset_at: float | None, now: float, failures: int) -> float:
        """The wait after a rate limit: until ``reset_at`` (seconds since 1970, from
        ``rate_limit_reset``) and a second more, when known and ahead; otherwise
        ``backoff(failures)`` (a secondary limit: GitHub asks for a minute or more)."""
        if reset_at is None or reset_at <= now:
            return self.backoff(failures)
        return min(reset_at - now + 1.0, self.rate_limit_max_s)
