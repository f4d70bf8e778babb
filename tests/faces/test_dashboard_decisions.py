"""The dashboard's Decisions panel in a real browser (Debian's headless Chromium driven
by Playwright, as test_dashboard_browser.py): a rule's decision made before the page
opened is listed from ``GET /api/decisions``; a person's answer to a permission prompt
from an editor, made while the page is open, appears without a reload (the activity
stream's ``audit`` event); an agent's hostile command stays text; a reload lists them
all again from the hub's store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch
from test_audit import as_approver, hook_ask

from hive_rpc.client.async_client import HubClient
from hive_rpc.hub import HubConfig

pytestmark = needs_chromium


async def test_a_decision_made_while_the_page_is_open_shows_in_the_decisions_panel(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    base, shots = dashboard.base, dashboard.shots
    editor = await HubClient.connect(hub_config.socket)
    await as_approver(editor)

    def hub(method: str, params: dict[str, Any]) -> Any:
        return trio.from_thread.run(editor.call, method, params)

    rule = await editor.call(
        "rule/add", {"pattern": "Bash(npm test:*)", "decision": "allow", "scope": "global"}
    )
    await editor.call(
        "rule/check", {"tool_name": "Bash", "tool_input": {"command": "npm test -- --ci"}}
    )
    (before,) = await editor.call("audit/list", {})

    def drive(page: Any) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)
        panel = page.get_by_role("region", name="Decisions")
        # 1. The rule's decision, made before the page opened.
        row = panel.locator(f"tr[data-id='{before['id']}']")
        row.wait_for()
        cells = row.locator("td").all_inner_texts()
        assert cells[1:] == [
            "allow", "rule", f"{before['latency_s']:.1f}s", "Bash", "npm test -- --ci",
            f"rule {rule['id']} Bash(npm test:*) (global)",
        ]  # fmt: skip
        page.screenshot(path=shots / "decisions-01-rule.png", full_page=True)

        # 2. A permission prompt, answered by a person in an editor while the page is open.
        asked = hub("hive/ask", {**hook_ask().params(), "question": hook_ask().question})
        page.locator(f"li.prompt[data-id='{asked['id']}']").wait_for()
        hub("hive/respond", {"id": asked["id"], "answer": "deny", "by": "emacs"})
        row = panel.locator(f"tr[data-id='{asked['id']}']")
        row.wait_for()
        page.locator(f"li.prompt[data-id='{asked['id']}']").wait_for(state="detached")
        cells = row.locator("td").all_inner_texts()
        assert cells[1:3] == ["deny", "emacs"]
        assert cells[4:] == ["Bash", "npm test", f"prompt {asked['id']} (deny)"]
        # newest first
        ids = panel.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")
        assert ids == [asked["id"], before["id"]]
        page.screenshot(path=shots / "decisions-02-human.png", full_page=True)

        # 3. An agent's command is text, never markup.
        hostile = "<img src=x onerror=alert(1)>"
        hub("rule/check", {"tool_name": "Bash", "tool_input": {"command": f"npm test {hostile}"}})
        panel.get_by_text(f"npm test {hostile}", exact=True).wait_for()
        assert page.locator("img").count() == 0

        # 4. A reload reads them back from the hub's store.
        page.reload()
        page.locator("#connection.live").wait_for()
        panel.locator("tbody tr").nth(2).wait_for()
        assert panel.locator("tbody tr").count() == 3
        page.screenshot(path=shots / "decisions-03-reloaded.png", full_page=True)
        newest = page.request.get(f"{base}/api/decisions?limit=1")
        assert [e["summary"] for e in newest.json()] == [f"npm test {hostile}"]
        assert page.request.get(f"{base}/api/decisions?limit=x").status == 400
        assert (seen.errors, seen.dialogs) == ([], [])

    try:
        await trio.to_thread.run_sync(run_in_chromium, drive, 1100)
    finally:
        await editor.aclose()
