"""The dashboard's sessions panel (issue 30, item 1), in Debian's headless Chromium.

Two Claude Code sessions report their events through the real ``hive-rpc hook
claude-code``, run as Claude Code runs its hooks: in the background, as children of a
process whose comm is ``claude`` (a bash started through a symlink of that name:
tests/fake_claude.py), so the hub names and checks each agent by its pid and watches
that process.  A third agent is known only by its question.
The page shows every session with its state in words, what it waits on, where it
runs, waiting ones first; it follows each change live: a permission answered on the
page moves its session to working, a killed process shows gone, the session known
only by its question leaves the list once the question is gone.  Text from the
agents (a notice's message, a directory's name) is shown as text.  A click on a
waiting session brings the prompt it waits on into view; nothing else moves the
keyboard."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from chromium_page import needs_chromium, open_dashboard, run_in_chromium, start_dashboard, watch
from fake_claude import TrioClaude, agent_env
from test_dashboard_browser import cli_ask
from waiting import logged

from hive_rpc.client.async_client import HubClient
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.hub import HubConfig

pytestmark = needs_chromium

HOSTILE_DIR = "<img src=x onerror=alert(1)>\x1b[31mred"
"""A project directory's name: markup, and an escape sequence's ESC (a byte a
browser shows nothing for; the page removes it as every invisible character)."""
HOSTILE_NOTICE = (
    "Claude needs your permission to use Bash <script>alert(2)</script>"
    "\x1b]0;pwned\x07 <img src=x onerror=alert(3)>"
)
"""What Claude Code's Notification says: markup and a window-title escape sequence
(the hub strips the sequence, as from every agent's text)."""


def permission(command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def row(page: Any, agent_id: str, state: str | None = None) -> Any:
    where = f"#session-rows tr[data-agent='{agent_id}']"
    return page.locator(where + (f"[data-state='{state}']" if state else ""))


def order(page: Any) -> list[tuple[str, str]]:
    got: list[tuple[str, str]] = page.evaluate(
        "() => [...document.querySelectorAll('#session-rows tr')]"
        ".map((r) => [r.dataset.agent, r.dataset.state])"
    )
    return [tuple(pair) for pair in got]  # type: ignore[misc]


def title_is(page: Any, title: str) -> None:
    page.wait_for_function("(t) => document.title === t", arg=title)


def in_view(locator: Any) -> bool:
    seen: bool = locator.evaluate(
        "(e) => { const r = e.getBoundingClientRect();"
        " return r.top >= 0 && r.bottom <= window.innerHeight; }"
    )
    return seen


async def test_the_sessions_panel_follows_each_agent_live(
    hub_config: HubConfig, nursery: trio.Nursery, short_tmp: Path, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    hub = dashboard.service
    socket, data_dir = hub_config.socket, hub_config.data_dir
    alpha = TrioClaude(short_tmp, "alpha", socket=socket, data_dir=data_dir)
    await alpha.start(nursery, agent_env(pane="%3"))
    beta_dir = short_tmp / HOSTILE_DIR
    beta = TrioClaude(short_tmp, "beta", socket=socket, data_dir=data_dir, cwd=beta_dir)
    await beta.start(nursery, agent_env(pane="%9"))
    a, b = alpha.agent_id, beta.agent_id

    def on_hub(fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run(fn, *args)

    def drive(page: Any) -> None:
        seen = watch(page)
        # Before the page opens: a question from an agent with no hooks, and a
        # Claude Code that started and waits for a first prompt.
        deployer_q = cli_ask(hub_config, "Deploy build 412?", "--agent", "deployer")
        on_hub(alpha.hook, {"hook_event_name": "SessionStart", "source": "startup", "cwd": "/x"})
        trio.from_thread.run(wait_state, a, "idle")
        open_dashboard(page, dashboard)  # the snapshot (/api/state) has both
        row(page, "deployer", "waiting").wait_for()
        row(page, a, "idle").wait_for()
        assert order(page) == [("deployer", "waiting"), (a, "idle")]
        assert page.locator("#sessions-summary").inner_text() == ("2 sessions · 1 waiting on you")
        title_is(page, "(1 waiting) hive-rpc")
        deployer_row = row(page, "deployer")
        assert deployer_row.locator("td.waits").inner_text() == "1 question"
        assert deployer_row.locator("td.kind").inner_text() == "—"
        assert row(page, a).locator("td.kind").inner_text() == "Claude Code"
        # The kernel's working directory, not the event's "cwd".
        assert row(page, a).locator("td.project").inner_text() == str(short_tmp / "alpha")

        # Live from the stream: alpha works, beta starts, then waits in its terminal.
        on_hub(alpha.hook, {"hook_event_name": "UserPromptSubmit", "prompt": "fix the tests"})
        row(page, a, "working").wait_for()
        on_hub(beta.hook, {"hook_event_name": "SessionStart", "source": "startup"})
        row(page, b, "idle").wait_for()
        assert order(page) == [("deployer", "waiting"), (a, "working"), (b, "idle")]
        on_hub(
            beta.hook,
            {
                "hook_event_name": "Notification",
                "notification_type": "permission_prompt",
                "message": HOSTILE_NOTICE,
            },
        )
        row(page, b, "waiting").wait_for()
        assert order(page) == [("deployer", "waiting"), (b, "waiting"), (a, "working")]
        beta_row = row(page, b)
        assert beta_row.locator("td.waits").inner_text().split("\n") == [
            "its own dialog in its terminal",
            "tmux:%9@/tmp/tmux-test/default",
        ]
        assert beta_row.locator("td.waits button").count() == 0  # nothing on the page to show

        # Two permission requests from alpha, each a hook waiting for the human.
        on_hub(alpha.hook, permission("make test"))
        row(page, a, "waiting").wait_for()
        on_hub(alpha.hook, permission("make lint"))
        row(page, a).get_by_role("button", name=f"Show what {a} waits on: 2 permissions").wait_for()
        assert order(page) == [("deployer", "waiting"), (b, "waiting"), (a, "waiting")]
        assert page.locator("#sessions-summary").inner_text() == ("3 sessions · 3 waiting on you")
        title_is(page, "(3 waiting) hive-rpc")
        # Its permission requests, oldest first (the session record's prompt_ids).
        first, second = trio.from_thread.run_sync(
            lambda: hub.sessions.get(a).record()["prompt_ids"]
        )
        page.screenshot(path=dashboard.shots / "sessions-waiting.png", full_page=True)

        # Agents' text is text: no element made of it, no script run.
        assert beta_row.locator("td.message").inner_text() == (
            "Claude needs your permission to use Bash <script>alert(2)</script> "
            "<img src=x onerror=alert(3)>"
        )
        # the hub strips the escape sequence from the kernel's directory name
        assert beta_row.locator("td.project").inner_text() == strip_controls(str(beta_dir))
        assert "[31m" not in beta_row.locator("td.project").inner_text()
        assert page.locator("#sessions img, #sessions script").count() == 0

        # Beta's process is killed while the keyboard is on alpha's button: the hub
        # sees it exit (a pidfd), the page says gone, and the rows, rebuilt in their
        # new order, leave the keyboard where the human put it.
        shows = f"Show what {a} waits on: 2 permissions"
        row(page, a).get_by_role("button", name=shows).focus()
        beta.proc.send_signal(signal.SIGKILL)
        row(page, b, "gone").wait_for()
        assert order(page) == [("deployer", "waiting"), (a, "waiting"), (b, "gone")]
        assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == shows
        assert page.locator("#sessions-summary").inner_text() == (
            "2 sessions · 2 waiting on you · 1 gone"
        )
        title_is(page, "(2 waiting) hive-rpc")

        # The human clicks alpha's row: its oldest permission request comes into view,
        # marked, the keyboard on its question text (not on an answer).
        card = page.locator(f"li.prompt[data-id='{first}']")
        # It came by the stream: a permission card all the same (the entry's kind).
        assert card.locator(".meta").inner_text().startswith(f"Permission · From {a}")
        assert card.get_by_role("button", name="Withdraw this permission request").count() == 1
        row(page, a).scroll_into_view_if_needed()
        assert not in_view(card)  # the rows are below the prompts
        row(page, a).locator("th").click()
        assert card.evaluate("(e) => e.classList.contains('sought')")
        assert in_view(card)
        assert page.evaluate("() => document.activeElement.id") == f"q-{first}"
        page.screenshot(path=dashboard.shots / "sessions-shown.png")

        # Answered on the page, one by one: one permission left, then working.
        card.get_by_label("allow", exact=True).check()
        card.get_by_role("button", name="Answer").click()
        card.wait_for(state="detached")
        row(page, a).get_by_role("button", name=f"Show what {a} waits on: 1 permission").wait_for()
        other = page.locator(f"li.prompt[data-id='{second}']")
        other.get_by_label("deny", exact=True).check()
        other.get_by_role("button", name="Answer").click()
        row(page, a, "working").wait_for()
        assert order(page) == [("deployer", "waiting"), (a, "working"), (b, "gone")]
        title_is(page, "(1 waiting) hive-rpc")

        # The deployer's question is cancelled: known only by it, the deployer leaves.
        page.locator(f"li.prompt[data-id='{deployer_q}']").get_by_role(
            "button", name="Cancel this question"
        ).click()
        row(page, "deployer").wait_for(state="detached")
        assert order(page) == [(a, "working"), (b, "gone")]
        title_is(page, "hive-rpc")
        assert page.locator("#sessions-summary").inner_text() == (
            "1 session · none waiting on you · 1 gone"
        )
        page.screenshot(path=dashboard.shots / "sessions-after.png", full_page=True)
        assert (seen.dialogs, seen.errors) == ([], [])

    async def wait_state(agent_id: str, state: str) -> None:
        await logged(
            hub.activity,
            lambda e: e.kind == "session" and e.key == agent_id and e.data.get("state") == state,
            within_s=60,
        )

    await trio.to_thread.run_sync(run_in_chromium, drive, 1000, 500)


async def test_past_200_sessions_the_panel_says_how_many_more(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Rows are drawn for the first 200 sessions in the hub's order (waiting first):
    each row costs the page layout time, and nobody reads thousands; the rest are
    counted, and the summary counts them all."""
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    async with await HubClient.connect(hub_config.socket) as agent:
        for i in range(201):
            await agent.call("agent/session", {"agent_id": f"agent-{i:03d}", "event": "start"})
        await agent.call("hive/ask", {"question": "Which region?", "agent_id": "agent-000"})
        await logged(
            dashboard.service.activity,
            lambda e: e.kind == "session" and e.key == "agent-000" and e.data["state"] == "waiting",
            within_s=30,
        )

        def drive(page: Any) -> None:
            open_dashboard(page, dashboard)
            page.locator("#sessions-more").get_by_text("1 more session, not shown here").wait_for()
            rows = order(page)
            assert len(rows) == 200
            assert rows[0] == ("agent-000", "waiting")
            assert page.locator("#sessions-summary").inner_text() == (
                "201 sessions · 1 waiting on you"
            )

        await trio.to_thread.run_sync(run_in_chromium, drive)
