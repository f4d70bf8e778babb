"""Questions whose schema fields carry options with descriptions, a multi-select and
an answer of one's own (the shape Claude Code's own questions take, core/
claude_questions.py) on the dashboard, in Debian's headless Chromium: each option's
description beside it, checkboxes for a multi-select, a text box for one's own
answer; and Claude Code's own question, a permission prompt the page answers once
signed in with the human's token, shows every option and description in its detail,
and its answer reaches the real hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from ask_user_question import DATABASE, FEATURES
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch
from hook_process import decision_of, start_permission_hook, stopped_at_exit
from test_dashboard_browser import cli, cli_ask

from hive_rpc.core.claude_questions import parse_questions, questions_schema
from hive_rpc.hub import HubConfig

pytestmark = needs_chromium

QUESTIONS = parse_questions({"questions": [FEATURES, DATABASE]})
assert QUESTIONS is not None
SCHEMA = questions_schema(QUESTIONS)


async def test_options_with_descriptions_checkboxes_and_an_answer_of_ones_own(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    asked: list[str] = []

    def drive(page: Any) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)
        ask_id = cli_ask(hub_config, "Two questions", "--schema", json.dumps(SCHEMA))
        asked.append(ask_id)
        card = page.locator(f"li.prompt[data-id='{ask_id}']")
        card.wait_for()
        features = card.locator("fieldset.options", has_text="Features")
        assert features.locator("input[type=checkbox]").count() == 4
        assert "Alpha the first" in " ".join(features.inner_text().split())
        database = card.locator("fieldset.options", has_text="Database")
        assert database.locator("input[type=radio]").count() == 3
        assert "Postgres the server we already run" in " ".join(database.inner_text().split())
        page.screenshot(path=dashboard.shots / "dashboard-options.png", full_page=True)
        features.get_by_label("Alpha").check()
        features.get_by_label("Gamma").check()
        database.get_by_label("Other: type your own answer").check()
        database.get_by_label("Your own answer", exact=True).fill("MariaDB, why not?")
        card.get_by_role("button", name="Answer").click()
        card.wait_for(state="detached")
        assert (seen.dialogs, seen.errors) == ([], [])

    await trio.to_thread.run_sync(run_in_chromium, drive)
    done = await trio.to_thread.run_sync(cli, hub_config, "poll", asked[0], "--json")
    record = json.loads(done.stdout)
    assert record["answer"] == {"q1": ["Alpha", "Gamma"], "q2": "MariaDB, why not?"}
    assert record["by"] == "dashboard"


async def test_claude_codes_question_is_answered_on_the_page_and_reaches_the_hook(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def scenario() -> None:
        questions = {"questions": [FEATURES, DATABASE]}
        hook = start_permission_hook(hub_config, tmp_path, "AskUserQuestion", questions)
        with stopped_at_exit(hook):
            run_in_chromium(drive)
            decision = decision_of(hook, timeout_s=30)
            assert decision["behavior"] == "allow", decision
            answers = decision["updatedInput"]["answers"]
            assert answers == {
                FEATURES["question"]: "Alpha, Gamma",
                DATABASE["question"]: "MariaDB, why not?",
            }, decision

    def drive(page: Any) -> None:
        open_dashboard(page, dashboard)
        card = page.locator("li.prompt", has_text="Claude Code asks 2 questions")
        card.wait_for()
        detail = card.locator("pre.detail").text_content()
        assert "- Postgres: the server we already run" in detail
        assert "- Gamma: the third" in detail
        assert card.locator(".approver-only").count() == 0
        features = card.locator("fieldset.options", has_text="Features")
        features.get_by_label("Alpha").check()
        features.get_by_label("Gamma").check()
        database = card.locator("fieldset.options", has_text="Database")
        database.get_by_label("Other: type your own answer").check()
        database.get_by_label("Your own answer", exact=True).fill("MariaDB, why not?")
        page.screenshot(path=dashboard.shots / "dashboard-claude-question.png", full_page=True)
        card.get_by_role("button", name="Answer").click()
        card.wait_for(state="detached")

    await trio.to_thread.run_sync(scenario)
