"""The dashboard and the human's attention (issue 27), in Debian's headless Chromium:
when the question the human was in closes, the keyboard goes to the heading, never
into the next question, so keys typed ahead ("no", Enter) answer nothing; and a
question the open, focused page showed is "shown" to the hub, so its expiry is not
reported as unseen."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard
from test_dashboard_browser import cli, cli_ask

from hive_rpc.hub import HubConfig

pytestmark = needs_chromium


def record(config: HubConfig, ask_id: str) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(cli(config, "poll", ask_id, "--json").stdout)
    return got


def focused(page: Any) -> dict[str, str]:
    info: dict[str, str] = page.evaluate(
        "() => { const e = document.activeElement;"
        " return {id: e.id, tag: e.tagName, type: e.type || ''}; }"
    )
    return info


async def test_keys_typed_after_an_answer_never_answer_the_next_question(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def drive(page: Any) -> None:
        open_dashboard(page, dashboard)
        first = cli_ask(hub_config, "Name the release", "--timeout", "600")
        second = cli_ask(hub_config, "Deploy to production?", "--choices", "yes,no")
        for ask_id in (first, second):
            page.locator(f"li.prompt[data-id='{ask_id}']").wait_for()
        page.locator(f"li.prompt[data-id='{first}'] input[type=text]").click()
        page.keyboard.type("v2.1", delay=120)  # a person's pace
        # Enter answers the first; "no" and Enter follow at typing pace, meant for
        # wherever the human thinks the keyboard is.
        page.keyboard.press("Enter")
        page.locator(f"li.prompt[data-id='{first}']").wait_for(state="detached")
        page.keyboard.type("no", delay=150)
        page.keyboard.press("Space")
        page.keyboard.press("Enter")
        assert focused(page)["id"] == "waiting-heading"
        assert record(hub_config, first)["answer"] == "v2.1"
        untouched = record(hub_config, second)
        assert (untouched["status"], untouched["answer"]) == ("pending", None)
        # On purpose: Tab reaches the next question, and it answers as before.
        page.keyboard.press("Tab")
        now = focused(page)
        assert (now["tag"], now["type"]) == ("INPUT", "radio")
        page.keyboard.press("Space")
        page.keyboard.press("Enter")
        page.locator(f"li.prompt[data-id='{second}']").wait_for(state="detached")
        assert record(hub_config, second)["answer"] == "yes"

    await trio.to_thread.run_sync(run_in_chromium, drive)


async def test_a_question_the_page_showed_does_not_expire_unseen(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def drive(page: Any) -> None:
        # Asked before the page opens: it expires unseen.
        before = cli_ask(hub_config, "Asked with nobody looking", "--timeout", "1")
        done = cli(hub_config, "poll", before, "--wait")
        assert done.stdout.startswith("expired unseen"), done
        open_dashboard(page, dashboard)
        shown = cli_ask(hub_config, "Rotate the keys?", "--timeout", "3")
        page.locator(f"li.prompt[data-id='{shown}']").wait_for()
        for _ in range(200):
            if record(hub_config, shown)["shown_at"] is not None:
                break
            time.sleep(0.05)
        ended = cli(hub_config, "poll", shown, "--wait")
        assert ended.stdout.strip() == "expired (timeout)", ended
        assert record(hub_config, shown)["unseen"] is False

    await trio.to_thread.run_sync(run_in_chromium, drive)


async def test_what_expired_unseen_stays_on_the_page_until_the_human_clears_it(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def drive(page: Any) -> None:
        gone = cli_ask(
            hub_config, "Bump the minor version?", "--agent", "releaser", "--timeout", "1"
        )
        assert cli(hub_config, "poll", gone, "--wait").stdout.startswith("expired unseen")
        open_dashboard(page, dashboard)
        box = page.locator("#unseen")
        box.get_by_text("releaser: Bump the minor version?").wait_for()
        assert "1 question expired before anyone saw it" in box.inner_text()
        page.get_by_role("button", name="I have seen these: clear").click()
        box.wait_for(state="hidden")
        assert record(hub_config, gone)["unseen"] is False
        assert json.loads(cli(hub_config, "list", "--expired-unseen", "--json").stdout) == []

    await trio.to_thread.run_sync(run_in_chromium, drive)
