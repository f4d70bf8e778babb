"""A relayed turn held because the human is typing in the receiver's terminal shows in
the dashboard's activity list with its reason (issue 19), in a real browser (Debian's
headless Chromium driven by Playwright, as test_dashboard_browser.py), while the
receiver is a real bash in a tmux pane with half a command typed at its prompt."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch

from hive_rpc.hub import HubConfig

pytestmark = [
    needs_chromium,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]
HELD = (
    "held: the human is typing in main.b (unsent text in its input); it is typed once "
    "they send or clear it"
)


async def test_a_turn_held_while_the_human_types_shows_why_in_the_activity_list(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path, short_tmp: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    agora = dashboard.service.agora
    assert agora is not None
    socket = str(short_tmp / "tmux.sock")

    def tmux(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", socket, "-f", "/dev/null", *args], capture_output=True, text=True
        )
        return done.stdout.strip()

    bash = "exec env -i TERM=xterm PS1='me@host:~$ ' bash --norc --noprofile"
    pane = tmux("new-session", "-d", "-P", "-F", "#{pane_id}", "-x", "120", "-y", "30",
                "sh", "-c", bash)  # fmt: skip
    try:
        with trio.fail_after(20):
            while "me@host:~$" not in tmux("capture-pane", "-p", "-t", pane):  # noqa: ASYNC110
                await trio.sleep(0.1)
        tmux("send-keys", "-t", pane, "-l", "echo half")
        await agora.register("main.b", "tmux", f"{pane}@{socket}", allow_shell=True, owner=True)
        d = await agora.create("Which cache?", ["main.a", "main.b"])

        async def dispatch() -> dict[str, Any]:
            assert agora is not None
            return await agora.dispatch(
                d["id"], sender="main.a", to="main.b", signal="propose", message="use sqlite"
            )

        def drive(page: Any) -> None:
            seen = watch(page)
            open_dashboard(page, dashboard)  # then the turn is dispatched, and held
            sent = trio.from_thread.run(dispatch)
            assert sent["delivery"] == {"state": "queued", "ling": "main.b", "reason": HELD}
            item = page.locator("#activity li[data-kind='dialogue']", has_text="relay/held")
            item.first.wait_for()
            assert item.first.inner_text().endswith(  # the hub's words (event_facts.message)
                "relay/held · Which cache? (active): not yet typed into main.b: "
                + HELD.removeprefix("held: ")
            )
            page.screenshot(path=dashboard.shots / "relay-held-01.png", full_page=True)
            assert (seen.errors, seen.dialogs) == ([], [])

        with trio.fail_after(120):
            await trio.to_thread.run_sync(run_in_chromium, drive, 1400)
        assert tmux("capture-pane", "-p", "-t", pane).rstrip().endswith("me@host:~$ echo half")
    finally:
        tmux("kill-server")
