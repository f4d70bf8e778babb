"""An agent's notice (``agent/notify``: Claude Code's Notification through ``hive-rpc
hook claude-code``) in the dashboard's activity list, in a real browser (Debian's
headless Chromium driven by Playwright, as test_dashboard_browser.py): it appears
while the page is open, urgent ones marked, its text kept as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig

pytestmark = needs_chromium


async def test_a_notice_shows_in_the_activity_list(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    agent = await HubClient.connect(hub_config.socket)

    def hub(method: str, params: dict[str, Any]) -> Any:
        return trio.from_thread.run(agent.call, method, params)

    def drive(page: Any) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)
        notice = {
            "agent_id": "claude-code-3f2a9c1d",
            "message": "Claude needs your <b>permission</b>",
            "type": "permission_prompt",
            "urgent": True,
            "cwd": "/src/app",
        }
        hub("agent/notify", notice)
        hub("agent/notify", {**notice, "urgent": False, "message": "Claude is waiting"})
        items = page.locator("#activity li[data-kind='notice']")
        items.nth(1).wait_for()
        texts = sorted(items.all_inner_texts())
        urgent = "urgent · claude-code-3f2a9c1d: Claude needs your <b>permission</b> (in /src/app)"
        assert any(t.endswith(urgent) for t in texts), texts
        assert any(
            t.endswith("claude-code-3f2a9c1d: Claude is waiting (in /src/app)") for t in texts
        )
        assert page.locator("#activity li[data-kind='notice'] b").count() == 0  # text, not HTML
        page.screenshot(path=dashboard.shots / "notices-01.png", full_page=True)
        assert (seen.errors, seen.dialogs) == ([], [])

    async with agent:
        with trio.fail_after(120):
            await trio.to_thread.run_sync(run_in_chromium, drive, 1100)
