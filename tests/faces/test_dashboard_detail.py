"""A permission prompt's detail on the dashboard, in Debian's headless Chromium driven
by Playwright: the real ``hive-rpc hook claude-code`` asks (a Bash command with markup
in it), the card says "Permission", and the tool's whole input is shown as text in a
<pre> above the answers, first in the keyboard's order after the skip link: what runs
is read before it is approved; the human's deny given on the page reaches the hook.
Nothing of the agent's text becomes HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch
from hook_process import decision_of, start_permission_hook, stopped_at_exit

from hive_rpc.hub import HubConfig

COMMAND = "echo '<img src=x onerror=alert(1)>' && npm test\nrm -rf build/only-in-the-detail"
TOOL_INPUT = {"command": COMMAND, "description": "Run the tests"}

pytestmark = needs_chromium


async def test_a_permission_shows_the_whole_tool_input_as_text_before_the_answers(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def scenario() -> None:
        with stopped_at_exit(
            start_permission_hook(hub_config, tmp_path, "Bash", TOOL_INPUT)
        ) as hook:
            run_in_chromium(drive)
            # Denied on the page: the hook prints the human's deny for Claude Code.
            decision = decision_of(hook, timeout_s=30)
            assert decision["behavior"] == "deny", decision

    def drive(page: Any) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)

        card = page.locator("li.prompt", has_text="wants to run Bash")
        card.wait_for()
        meta = card.locator(".meta").inner_text()
        assert meta.startswith("Permission · From claude-code-3f2a9c1d"), meta
        question = card.locator(".question").inner_text()
        assert question.endswith("rm -rf build/only-in-the-detail (see detail)"), question
        pre = card.locator("pre.detail")
        # The whole input, exactly as the hook sent it, as text: the markup is not HTML.
        assert pre.text_content() == json.dumps(TOOL_INPUT, indent=2, ensure_ascii=False)
        assert pre.evaluate("(e) => e.children.length") == 0
        assert card.locator("img").count() == 0
        assert pre.get_attribute("aria-label") == "Tool input, in full"
        # Signed in with the human's token, the page is an approver: the choices
        # follow the input, which is the first stop of the keyboard after the skip
        # link, so what runs is read before it is approved.
        assert card.locator("input[type=radio]").count() == 4
        assert card.locator(".approver-only").count() == 0
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.className") == "detail"
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.value") == "allow"
        page.screenshot(path=dashboard.shots / "dashboard-permission-detail.png", full_page=True)
        card.get_by_label("deny", exact=True).check()
        card.get_by_role("button", name="Answer").click()
        card.wait_for(state="detached")
        assert (seen.dialogs, seen.errors) == ([], [])

    await trio.to_thread.run_sync(scenario)
