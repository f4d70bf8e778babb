"""An agent's notice (``agent/notify``: Claude Code's Notification through ``hive-rpc
hook claude-code``) in the dashboard's activity list, in a real browser (Debian's
headless Chromium driven by Playwright, as test_dashboard_browser.py): it appears
while the page is open, urgent ones marked, its text kept as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from test_dashboard_browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, prepare, pytestmark

from hive_rpc.client import HubClient
from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

__all__ = ["pytestmark"]


async def test_a_notice_shows_in_the_activity_list(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    hub_config.http = "127.0.0.1:0"
    service: HubService = await nursery.start(run_hub, hub_config)
    base = str(service.info.http_url).removesuffix("/mcp")
    token, shots = prepare(service, tmp_path)
    agent = await HubClient.connect(hub_config.socket)

    def hub(method: str, params: dict[str, Any]) -> Any:
        return trio.from_thread.run(agent.call, method, params)

    def drive(page: Any) -> None:
        page.set_default_timeout(TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/dashboard?token={token}")
        page.locator("#connection.live").wait_for()
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
        page.screenshot(path=shots / "notices-01.png", full_page=True)
        assert errors == []

    def scenario() -> None:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                drive(browser.new_page(viewport={"width": 1100, "height": 900}))
            finally:
                browser.close()

    async with agent:
        with trio.fail_after(120):
            await trio.to_thread.run_sync(scenario)
