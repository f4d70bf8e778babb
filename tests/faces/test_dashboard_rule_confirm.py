"""Claude Code's permission requests on the dashboard, in Debian's headless Chromium
driven by Playwright, with the real ``hive-rpc hook claude-code`` asking:

- "always allow in this project" shows the rule it will save, in the question's own
  words (its ``confirm``, written by the hook that saves the rule), and sends nothing
  until the human presses its Send button: the keyboard goes to the text, so an Enter
  typed ahead confirms nothing; Back sends nothing and saves nothing;
- an Edit request shows the diff of what it changes, not the JSON of its
  ``old_string`` and ``new_string``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch
from hook_process import decision_of, start_permission_hook, stopped_at_exit

from hive_rpc.hub import HubConfig

pytestmark = needs_chromium

RULE = (
    "This answer saves a rule: allow Bash(npm test), for every later request in this "
    "project (~/app). Matching requests then run without asking you."
)


def rules(config: HubConfig) -> list[dict[str, Any]]:
    where = ["--socket", str(config.socket), "--data-dir", str(config.data_dir), "--no-start"]
    listed = subprocess.run(
        [sys.executable, "-m", "hive_rpc", "rules", "list", "--json", *where],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    found: list[dict[str, Any]] = json.loads(listed.stdout)
    return found


async def test_always_allow_shows_its_rule_and_sends_only_from_the_confirmation(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def scenario() -> None:
        with stopped_at_exit(
            start_permission_hook(hub_config, tmp_path, "Bash", {"command": "npm test"})
        ) as hook:
            run_in_chromium(lambda page: drive(page, hook))
            decision = decision_of(hook, timeout_s=30)
        assert decision == {"behavior": "allow"}
        saved = rules(hub_config)
        assert [(r["pattern"], r["scope"], r["decision"]) for r in saved] == [
            ("Bash(npm test)", "project", "allow")
        ]

    def drive(page: Any, hook: subprocess.Popen[bytes]) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)
        card = page.locator("li.prompt", has_text="wants to run Bash")
        card.wait_for()
        box = card.locator(".confirm")
        assert box.is_hidden()
        card.get_by_label("always allow in this project", exact=True).check()
        card.get_by_role("button", name="Answer").click()
        box.wait_for()
        assert box.locator(".confirm-text").inner_text() == RULE
        # The keyboard is on the text: Enter typed ahead sends nothing.
        assert page.evaluate("() => document.activeElement.className") == "confirm-text"
        page.keyboard.press("Enter")
        assert hook.poll() is None
        assert rules(hub_config) == []
        page.screenshot(path=dashboard.shots / "dashboard-rule-confirm.png", full_page=True)
        # Back: nothing sent, the pick keeps the keyboard.
        box.get_by_role("button", name="Back").click()
        box.wait_for(state="hidden")
        assert page.evaluate("() => document.activeElement.value") == "always allow in this project"
        assert hook.poll() is None
        assert rules(hub_config) == []
        # Answer again, then the deliberate Send.
        card.get_by_role("button", name="Answer").click()
        box.wait_for()
        box.get_by_role("button", name='Send "always allow in this project"').click()
        card.wait_for(state="detached")
        assert (seen.dialogs, seen.errors) == ([], [])

    await trio.to_thread.run_sync(scenario)


async def test_an_edit_request_shows_as_a_diff(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    edit = {
        "file_path": "/src/app/main.py",
        "old_string": "def main():\n    run(debug=True)\n    return 0",
        "new_string": "def main():\n    run(debug=False)\n    return 0",
    }

    def scenario() -> None:
        with stopped_at_exit(start_permission_hook(hub_config, tmp_path, "Edit", edit)) as hook:
            run_in_chromium(drive)
            decision = decision_of(hook, timeout_s=30)
        assert decision["behavior"] == "deny", decision

    def drive(page: Any) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)
        card = page.locator("li.prompt", has_text="wants to use Edit")
        card.wait_for()
        assert card.locator(".detail-label").inner_text() == "Edit"
        pre = card.locator("pre.detail")
        assert pre.get_attribute("aria-label") == "Edit, as a diff"
        assert pre.inner_text().split("\n")[:6] == [
            "--- /src/app/main.py (now)",
            "+++ /src/app/main.py (after the edit)",
            " def main():",
            "-    run(debug=True)",
            "+    run(debug=False)",
            "     return 0",
        ]
        assert "old_string" not in card.inner_text()
        assert pre.locator(".diff-del").count() == 1
        assert pre.locator(".diff-add").count() == 1
        page.screenshot(path=dashboard.shots / "dashboard-edit-diff.png", full_page=True)
        card.get_by_label("deny", exact=True).check()
        card.get_by_role("button", name="Answer").click()
        card.wait_for(state="detached")
        assert (seen.dialogs, seen.errors) == ([], [])

    await trio.to_thread.run_sync(scenario)
