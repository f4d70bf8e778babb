"""The dashboard in a real browser: Debian's headless Chromium (/usr/bin/chromium),
driven by Playwright (never a browser of Playwright's own).  The CLI asks, the page
shows the question without a reload, the human answers with the keyboard alone, and the
CLI's poll gets the answer.  Screenshots go to $HIVE_ARTIFACTS (or the test's tmp dir).

Playwright's Python API runs on asyncio, so its sync API is driven from a worker thread
while the hub runs on trio in the test's own thread."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trio
from chromium_page import (
    dashboard_of,
    needs_chromium,
    open_dashboard,
    run_in_chromium,
    start_dashboard,
    watch,
)

from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

ROOT = Path(__file__).resolve().parents[2]

pytestmark = needs_chromium


def cli(config: HubConfig, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hive_rpc", *args, "--socket", str(config.socket), "--no-start"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def cli_ask(config: HubConfig, question: str, *more: str) -> str:
    done = cli(config, "ask", question, *more, "--json")
    assert done.returncode == 0, done.stderr
    ask_id: str = json.loads(done.stdout)["id"]
    return ask_id


async def test_a_prompt_is_answered_and_cancelled_on_the_page_with_the_keyboard(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    service, base, shots = dashboard.service, dashboard.base, dashboard.shots

    def on_hub(fn: Callable[..., Any], *args: Any) -> Any:
        return trio.from_thread.run(fn, *args)

    def drive(page: Any) -> None:
        seen = watch(page)

        # Sign in: the token is traded for a cookie and leaves the address bar.
        page.goto(dashboard.sign_in)
        assert page.url == f"{base}/dashboard"
        page.get_by_role("heading", name="Waiting for you").wait_for()
        page.locator("#connection.live").wait_for()
        page.screenshot(path=shots / "01-empty.png", full_page=True)

        # 1. The CLI asks; the question appears without a reload.
        first = cli_ask(hub_config, "Deploy build 412 to production?", "--choices", "yes,no")
        card = page.locator(f"li.prompt[data-id='{first}']")
        card.get_by_text("Deploy build 412 to production?").wait_for()
        assert "From cli" in card.inner_text()
        announcer = page.locator("#announcer")
        # A locator, not wait_for_function: a string predicate is eval'd in the page,
        # which the dashboard's CSP (no 'unsafe-eval') refuses whenever it must poll.
        page.locator("#announcer", has_text="Deploy build 412").wait_for(state="attached")
        assert "New question from cli" in announcer.inner_text()
        page.screenshot(path=shots / "02-prompt.png", full_page=True)

        # Keyboard alone: the skip link comes first, then the first choice.
        page.keyboard.press("Tab")
        assert focused(page)["id"] == "skip-link"
        page.keyboard.press("Tab")
        now = focused(page)
        assert (now["type"], now["value"]) == ("radio", "yes")
        assert now["label"].strip() == "yes"  # a label tied to the input
        assert now["outline"] != "none"  # focus is visible
        page.screenshot(path=shots / "03-focus-on-yes.png", full_page=True)
        page.keyboard.press("Space")
        page.keyboard.press("Enter")
        card.wait_for(state="detached")
        polled = cli(hub_config, "poll", first)
        assert (polled.returncode, polled.stdout.strip()) == (0, "yes"), polled
        record = json.loads(cli(hub_config, "poll", first, "--json").stdout)
        assert (record["by"], record["action"]) == ("dashboard", "accept")
        page.screenshot(path=shots / "04-answered.png", full_page=True)

        # 2. A second prompt is cancelled from the page: Tab from its input to Cancel.
        second = cli_ask(hub_config, "Name the release")
        card = page.locator(f"li.prompt[data-id='{second}']")
        card.wait_for()
        back_to_skip_link(page)
        page.keyboard.press("Enter")
        assert focused(page)["type"] == "text"
        page.keyboard.press("Tab")
        assert focused(page)["text"] == "Answer"
        page.keyboard.press("Tab")
        assert focused(page)["text"] == "Cancel"
        page.keyboard.press("Enter")
        card.wait_for(state="detached")
        record = json.loads(cli(hub_config, "poll", second, "--json").stdout)
        assert (record["status"], record["by"]) == ("cancelled", "dashboard")

        # 3. A hostile question stays text; typing an answer and Enter submits it.
        hostile = "<img src=x onerror=alert(1)>"
        third = cli_ask(hub_config, hostile, "--timeout", "600")
        card = page.locator(f"li.prompt[data-id='{third}']")
        card.get_by_text(hostile, exact=True).wait_for()
        assert page.locator("img").count() == 0
        page.screenshot(path=shots / "05-hostile.png", full_page=True)
        back_to_skip_link(page)
        page.keyboard.press("Enter")
        page.keyboard.type("<b>not bold</b>")
        # the first keystroke stopped the countdown on the hub, as in the editors
        for _ in range(100):
            typed = json.loads(cli(hub_config, "poll", third, "--json").stdout)
            if typed["typing_at"] is not None:
                break
            time.sleep(0.05)
        assert typed["deadline_at"] == typed["max_deadline_at"]
        page.keyboard.press("Enter")
        card.wait_for(state="detached")
        polled = cli(hub_config, "poll", third)
        assert polled.stdout.strip() == "<b>not bold</b>"

        # 4. A dialogue shows with its turn (relayed to a ling nobody registered).
        dialogue = on_hub(
            service.call,
            "agora/create",
            {"topic": "Cache <script>?", "participants": ["main.a", "main.b"]},
        )
        on_hub(
            service.call,
            "agora/dispatch",
            {"dialogue_id": dialogue["id"], "from": "main.a", "to": "main.b",
             "signal": "propose", "message": "Use Redis"},
        )  # fmt: skip
        shown = page.locator(f"li.dialogue[data-id='{dialogue['id']}']")
        shown.get_by_text("Use Redis").wait_for()
        text = shown.inner_text()
        assert "Cache <script>?" in text
        assert "main.a, main.b" in text
        assert "main.a → main.b (propose)" in text
        assert page.locator("#activity li").count() >= 6
        page.screenshot(path=shots / "06-dialogue.png", full_page=True)

        assert page.locator("img, script:not([src])").count() == 0
        assert (seen.dialogs, seen.errors) == ([], [])

    await trio.to_thread.run_sync(run_in_chromium, drive)


async def test_a_page_left_after_typing_gives_the_countdown_back(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Issue 14, seed 002, typed then left: the human types into a prompt's form and
    leaves the page without answering; the page sends /api/defer (hive/defer) as it
    goes, so the countdown runs again, its whole timeout from then, instead of the
    prompt waiting for the 24 h maximum lifetime.  A prompt not typed into ("hidden
    blank") keeps its countdown as it was."""
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)
    shots = dashboard.shots

    def record(ask_id: str) -> dict[str, Any]:
        got: dict[str, Any] = json.loads(cli(hub_config, "poll", ask_id, "--json").stdout)
        return got

    def drive(page: Any) -> None:
        open_dashboard(page, dashboard)
        blank = cli_ask(hub_config, "Rotate the keys?", "--timeout", "300")
        typed = cli_ask(hub_config, "Name the codename", "--timeout", "300")
        for ask_id in (blank, typed):
            page.locator(f"li.prompt[data-id='{ask_id}']").wait_for()
        blank_before = record(blank)
        page.locator(f"li.prompt[data-id='{typed}'] input[type=text]").focus()
        page.keyboard.type("Bumble", delay=120)  # a person's pace
        for _ in range(100):
            if record(typed)["typing_at"] is not None:
                break
            time.sleep(0.05)
        assert record(typed)["deadline_at"] == record(typed)["max_deadline_at"]
        page.screenshot(path=shots / "defer-01-typed.png", full_page=True)
        left_at = time.time()
        page.goto("about:blank")  # the human leaves the page, the answer unsent
        for _ in range(200):
            back = record(typed)
            if back["typing_at"] is None:
                break
            time.sleep(0.05)
        assert (back["status"], back["typing_at"]) == ("pending", None), back
        assert left_at + 300 - 5 < back["deadline_at"] < time.time() + 300 + 1, back
        blank_after = record(blank)
        assert blank_after["typing_at"] is None
        assert blank_after["deadline_at"] == blank_before["deadline_at"]

    await trio.to_thread.run_sync(run_in_chromium, drive)


def back_to_skip_link(page: Any) -> None:
    """Shift+Tab until the skip link has the focus (it is first in the tab order)."""
    for _ in range(40):
        page.keyboard.press("Shift+Tab")
        if focused(page)["id"] == "skip-link":
            return
    raise AssertionError("Shift+Tab never reached the skip link")


def focused(page: Any) -> dict[str, str]:
    """What has the keyboard focus: its id, type, value, label, text and outline."""
    result: dict[str, str] = page.evaluate(
        """() => {
            const el = document.activeElement;
            const label = el.labels && el.labels.length ? el.labels[0].textContent : "";
            return {
                id: el.id || "",
                type: el.type || el.tagName.toLowerCase(),
                value: el.value || "",
                label,
                text: el.tagName === "BUTTON" ? el.textContent : "",
                outline: getComputedStyle(el).outlineStyle,
            };
        }"""
    )
    return result


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_the_page_follows_a_restarted_hub(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Issue 14, seed 003: activity ids started again at 1 with each hub run, and the
    page (like any EventSource client resuming with Last-Event-ID) passed over every
    entry whose id it had already seen, so a question asked after a restart never
    appeared.  Real Chromium, the hub stopped and started again on the same port."""
    hub_config.http = f"127.0.0.1:{_free_port()}"
    runs: list[tuple[trio.CancelScope, trio.Event]] = []

    async def start() -> HubService:
        scope, ended = trio.CancelScope(), trio.Event()

        async def run(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            try:
                with scope:
                    await run_hub(hub_config, task_status=task_status)
            finally:
                ended.set()

        service: HubService = await nursery.start(run)
        runs.append((scope, ended))
        return service

    async def stop() -> None:
        scope, ended = runs[-1]
        scope.cancel()
        await ended.wait()

    dashboard = dashboard_of(await start(), tmp_path)

    def drive(page: Any) -> None:
        open_dashboard(page, dashboard)
        before = [cli_ask(hub_config, f"Before the restart, question {i}?") for i in range(3)]
        for ask_id in before:
            page.locator(f"li.prompt[data-id='{ask_id}']").wait_for()
        # The page may reconnect only once the new run has logged more entries than the
        # page saw in the old one: the entries whose ids the new run would reuse.
        held = [True]
        page.route(
            "**/activity?*",
            lambda route: route.abort() if held[0] else route.continue_(),
        )
        trio.from_thread.run(stop)
        page.locator("#connection.down").wait_for()
        trio.from_thread.run(start)
        after = [cli_ask(hub_config, f"After the restart, question {i}?") for i in range(6)]
        held[0] = False
        page.locator("#connection.live").wait_for()
        for ask_id in [*before, *after]:  # the store kept the old ones
            page.locator(f"li.prompt[data-id='{ask_id}']").wait_for()
        page.screenshot(path=dashboard.shots / "restart-01-after.png", full_page=True)

    await trio.to_thread.run_sync(run_in_chromium, drive)


HIDDEN = "\u00ad\U000e0041\u3164\ufff9\u034f\ufe0f\u200b\u061c\ufeff"
"""A soft hyphen, a tag character, a Hangul filler, an interlinear annotation, the
grapheme joiner, a variation selector, a zero-width space, the Arabic letter mark
and the byte-order mark: invisible, and they reached the screen (issue 26)."""


async def test_invisible_characters_never_reach_the_page(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Shown by category and property as every face shows them (dom.js ``visible``);
    the choice picked still answers with the exact text the agent sent."""
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def drive(page: Any) -> None:
        seen = watch(page)
        open_dashboard(page, dashboard)
        choice = f"ship{HIDDEN} it"
        asked = cli_ask(
            hub_config, f"De{HIDDEN}ploy?", "--choices", f"{choice},no", "--agent", f"a{HIDDEN}b"
        )
        card = page.locator(f"li.prompt[data-id='{asked}']")
        card.get_by_text("Deploy?").wait_for()
        text = card.inner_text()
        assert "ship it" in text
        assert "From ab" in text
        assert not set(HIDDEN) & set(text), [f"U+{ord(c):04X}" for c in set(HIDDEN) & set(text)]
        page.locator(f"li.prompt[data-id='{asked}'] input[type=radio]").first.check()
        page.locator(f"li.prompt[data-id='{asked}'] input[type=radio]").first.press("Enter")
        card.wait_for(state="detached")
        polled = json.loads(cli(hub_config, "poll", asked, "--json").stdout)
        assert polled["answer"] == choice
        assert (seen.dialogs, seen.errors) == ([], [])

    await trio.to_thread.run_sync(run_in_chromium, drive)


DASHBOARD = ROOT / "hive_rpc" / "faces" / "dashboard"


async def test_every_module_is_served_as_javascript_and_the_page_loads_without_a_console_error(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """The page is ES modules: index.html loads app.js as a module, which imports the
    others by relative address.  A module is run only when it comes as JavaScript
    (and the hub sends nosniff), and one missing from web.py's ``_ASSETS`` is a 404:
    either is a console error and a dead page.  So every .js file of the dashboard's
    folder must reach the browser, with its content type, and nothing be logged as an
    error while the page starts, shows a question and sends its answer."""
    dashboard = await start_dashboard(hub_config, nursery, tmp_path)

    def drive(page: Any) -> None:
        seen = watch(page)
        console: list[str] = []
        served: dict[str, tuple[int, str]] = {}

        def on_console(message: Any) -> None:
            # The browser's own ask for /favicon.ico is a 404: the hub serves no icon,
            # and the page names none (the CSP's img-src 'self' refuses a data: one).
            asked_for = urlsplit(message.location.get("url", "")).path
            if message.type == "error" and asked_for != "/favicon.ico":
                console.append(f"{message.text} ({message.location})")

        def on_response(response: Any) -> None:
            path = urlsplit(response.url).path
            if path.endswith(".js"):
                served[path] = (response.status, response.headers.get("content-type", ""))

        page.on("console", on_console)
        page.on("response", on_response)
        try:
            open_dashboard(page, dashboard)
        except Exception as e:  # a page that never starts: say what the browser said
            raise AssertionError(f"the page did not start: {console + seen.errors}") from e
        assert page.locator("script[type=module][src='/dashboard/app.js']").count() == 1
        asked = cli_ask(hub_config, "Ship the modules?", "--choices", "yes,no")
        card = page.locator(f"li.prompt[data-id='{asked}']")
        card.locator("input[type=radio]").first.check()
        card.get_by_role("button", name="Answer").click()
        card.wait_for(state="detached")
        page.screenshot(path=dashboard.shots / "modules-01-answered.png", full_page=True)

        modules = {f"/dashboard/{file.name}" for file in DASHBOARD.glob("*.js")}
        assert "/dashboard/app.js" in modules
        assert set(served) == modules
        for path, (status, content_type) in served.items():
            assert status == 200, path
            assert content_type.startswith("text/javascript"), (path, content_type)
        assert (console, seen.errors, seen.dialogs) == ([], [], [])

    await trio.to_thread.run_sync(run_in_chromium, drive)
