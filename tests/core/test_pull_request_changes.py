"""core/pull_requests.py: gh's JSON read, the changes between two looks told once each
in the seed's words (core/messages.py renders them), and the schedule of looks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hive_rpc.core import messages
from hive_rpc.core import pull_requests as prs

URL = "https://github.com/owner/repo/pull/42"
COPILOT_BODY = (
    "## Pull Request Overview\nCopilot reviewed 3 out of 3 changed files in this pull "
    "request and generated 3 comments."
)


def item(**over: Any) -> dict[str, Any]:
    """One PR as ``gh pr list --json`` prints it."""
    base: dict[str, Any] = {
        "number": 42,
        "state": "OPEN",
        "isDraft": True,
        "reviewDecision": "",
        "reviews": [],
        "statusCheckRollup": [],
        "url": URL,
        "title": "Add the JWT middleware",
        "headRefOid": "a1",
    }
    return base | over


def run(name: str, status: str = "COMPLETED", conclusion: str = "SUCCESS") -> dict[str, Any]:
    return {"__typename": "CheckRun", "name": name, "status": status, "conclusion": conclusion}


def review(rid: str, login: str, state: str, body: str = "") -> dict[str, Any]:
    return {"id": rid, "author": {"login": login}, "state": state, "body": body,
            "submittedAt": "2026-11-29T08:00:00Z"}  # fmt: skip


def look(*items: dict[str, Any]) -> list[prs.PullRequest]:
    return prs.parse(json.dumps(list(items)))


def texts(events: list[prs.Event]) -> list[str]:
    return [messages.child_event(e.kind, "auth-module", "main.feature.auth", e.fields)
            for e in events]  # fmt: skip


def step(before: dict[str, prs.Seen], *items: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    now = look(*items)
    return texts(prs.changes(before, now)), prs.remember(before, now)


def test_a_pr_s_life_is_told_once_each_change_in_the_seeds_words() -> None:
    said, seen = step({}, item(statusCheckRollup=[run("test", "IN_PROGRESS", "")]))
    assert said == [
        "[PR STATUS] PR #42 (auth-module). Opened as a draft: Add the JWT middleware. "
        f"CI: pending.\nView: {URL}"
    ]
    assert step(seen, item(statusCheckRollup=[run("test", "IN_PROGRESS", "")]))[0] == []
    copilot = review("R1", "copilot-pull-request-reviewer", "COMMENTED", COPILOT_BODY)
    failing = [run("test", conclusion="FAILURE")]
    said, seen = step(seen, item(isDraft=False, reviews=[copilot], statusCheckRollup=failing))
    assert said == [
        f"[PR STATUS] PR #42 (auth-module). Ready for review.\nView: {URL}",
        "[COPILOT REVIEW] PR #42 (auth-module) received new Copilot review.\n"
        f"Status: commented. 3 comments.\nView: {URL}",
        "[CI STATUS] PR #42 (auth-module): failing. Failing: test.",
    ]
    alice = review("R2", "alice", "APPROVED")
    approved = item(isDraft=False, reviews=[copilot, alice], headRefOid="b2",
                    reviewDecision="APPROVED", statusCheckRollup=[run("test")])  # fmt: skip
    said, seen = step(seen, approved)
    assert said == [
        f"[PR REVIEW] PR #42 (auth-module) received a new review from alice.\n"
        f"Status: approved.\nView: {URL}",
        "[CI STATUS] PR #42 (auth-module): passing.",
        "[PR READY] PR #42 (auth-module) on branch main.feature.auth is ready to merge.\n"
        f"Review: approved by alice. CI: passing.\nView: {URL}\nReview with: gh pr view 42",
    ]
    merged = item(state="MERGED", isDraft=False, reviews=[copilot, alice], headRefOid="b2",
                  reviewDecision="APPROVED", statusCheckRollup=[run("test")])  # fmt: skip
    said, seen = step(seen, merged)
    assert said == [f"[PR STATUS] PR #42 (auth-module). Merged.\nView: {URL}"]
    assert step(seen, merged)[0] == []


def test_pending_ci_is_not_told_and_a_new_heads_outcome_is() -> None:
    _, seen = step({}, item(isDraft=False, statusCheckRollup=[run("t")]))
    said, seen = step(seen, item(isDraft=False, headRefOid="b2",
                                 statusCheckRollup=[run("t", "QUEUED", "")]))  # fmt: skip
    assert said == []
    said, _ = step(seen, item(isDraft=False, headRefOid="b2", statusCheckRollup=[run("t")]))
    assert said == ["[CI STATUS] PR #42 (auth-module): passing."]
    # The pending look missed: the same outcome on another head is a new outcome.
    _, seen = step({}, item(isDraft=False, statusCheckRollup=[run("t")]))
    said, _ = step(seen, item(isDraft=False, headRefOid="c3", statusCheckRollup=[run("t")]))
    assert said == ["[CI STATUS] PR #42 (auth-module): passing."]


def test_closed_prs_first_seen_are_history_not_news() -> None:
    said, seen = step({}, item(state="MERGED"), item(number=7, state="CLOSED", url="u7"))
    assert said == []
    assert set(seen) == {URL, "u7"}


def test_a_ready_pr_with_copilot_approving_says_copilot_status() -> None:
    approve = review("R1", "Copilot", "APPROVED")
    said, _ = step({}, item(isDraft=False, reviews=[approve], statusCheckRollup=[run("t")]))
    assert said[-1] == (
        "[PR READY] PR #42 (auth-module) on branch main.feature.auth is ready to merge.\n"
        f"Copilot status: approved. CI: passing.\nView: {URL}\nReview with: gh pr view 42"
    )


def test_the_snapshot_survives_its_record() -> None:
    _, seen = step({}, item(reviews=[review("R1", "bob", "COMMENTED")]))
    again = {url: prs.Seen.from_record(json.loads(json.dumps(s.record())))
             for url, s in seen.items()}  # fmt: skip
    assert again == seen


@pytest.mark.parametrize(
    ("rollup", "ci"),
    [
        ([], None),
        ([run("a"), run("b", conclusion="SKIPPED")], "passing"),
        ([run("a"), run("b", "IN_PROGRESS", "")], "pending"),
        ([run("a", "IN_PROGRESS", ""), run("b", conclusion="TIMED_OUT")], "failing"),
        ([{"__typename": "StatusContext", "context": "ci/x", "state": "PENDING"}], "pending"),
        ([{"__typename": "StatusContext", "context": "ci/x", "state": "ERROR"}], "failing"),
        ([{"__typename": "StatusContext", "context": "ci/x", "state": "SUCCESS"}], "passing"),
        ([run("a", conclusion="STALE")], "pending"),
    ],
)
def test_the_check_rollup_in_one_word(rollup: list[dict[str, Any]], ci: str | None) -> None:
    assert prs.ci_of(rollup)[0] == ci


def test_output_that_is_not_gh_s_json_is_unreadable() -> None:
    for bad in ("", "{}", '[{"title": "x"}]'):
        with pytest.raises(prs.Unreadable):
            prs.parse(bad)


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        ("GraphQL: API rate limit exceeded for user ID 1.", prs.RATE_LIMITED),
        ("You have exceeded a secondary rate limit.", prs.RATE_LIMITED),
        ("To get started with GitHub CLI, please run:  gh auth login", prs.NOT_LOGGED_IN),
        ("HTTP 401: Bad credentials (https://api.github.com/graphql)", prs.NOT_LOGGED_IN),
        ("no git remotes found", prs.NO_REPOSITORY),
        (
            "none of the git remotes configured for this repository point to a known host",
            prs.NO_REPOSITORY,
        ),
        ("HTTP 502: Bad Gateway", prs.FAILED),
    ],
)
def test_gh_s_errors_are_told_apart(stderr: str, kind: str) -> None:
    assert prs.trouble(stderr) == kind


def test_the_schedule_of_looks() -> None:
    s = prs.Schedule()
    assert (s.interval(True), s.interval(False)) == (30.0, 300.0)
    assert [s.backoff(n) for n in (1, 2, 3, 10)] == [60.0, 120.0, 240.0, 1800.0]
    assert s.rate_limited(1000.0 + 90, 1000.0, 1) == 91.0
    assert s.rate_limited(None, 1000.0, 2) == 120.0  # a secondary limit: no reset to read
    assert s.rate_limited(900.0, 1000.0, 1) == 60.0  # a reset already past
    assert s.rate_limited(1000.0 + 86400, 1000.0, 1) == 3600.0


def test_the_reset_of_the_exhausted_limits() -> None:
    limits = {"resources": {"core": {"remaining": 4000, "reset": 50},
                            "graphql": {"remaining": 0, "reset": 1234}}}  # fmt: skip
    assert prs.rate_limit_reset(json.dumps(limits)) == 1234.0
    limits["resources"]["graphql"]["remaining"] = 10
    assert prs.rate_limit_reset(json.dumps(limits)) is None
    assert prs.rate_limit_reset("not json") is None
