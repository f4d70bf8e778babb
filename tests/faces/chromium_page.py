"""The dashboard in a real browser, for every dashboard test: Debian's headless
Chromium (/usr/bin/chromium) driven by Playwright (never a browser of Playwright's
own).  Playwright's Python API runs on asyncio, so its sync API is driven from a
worker thread (``run_in_chromium``) while the hub runs on trio in the test's thread.
Screenshots go to $HIVE_ARTIFACTS (or the test's tmp dir)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from hive_rpc.hub import HubConfig, run_hub
from hive_rpc.service import HubService

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_MS = 15_000

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
)


@dataclass(frozen=True)
class Dashboard:
    """A running hub's dashboard: where it is, the token to sign in, where shots go."""

    service: HubService
    base: str
    token: str
    shots: Path

    @property
    def sign_in(self) -> str:
        """The address that trades the token for a cookie."""
        return f"{self.base}/dashboard?token={self.token}"


def dashboard_of(service: HubService, tmp_path: Path) -> Dashboard:
    """The dashboard of a hub started with ``http``; the shots directory made, and
    printed."""
    # The human's sign-in: the approver token, never the agents' MCP token.
    token = Path(str(service.info.approver_token_file)).read_text().strip()
    shots = Path(os.environ.get("HIVE_ARTIFACTS", str(tmp_path)))
    shots.mkdir(parents=True, exist_ok=True)
    print(f"screenshots in {shots}")
    return Dashboard(service, str(service.info.http_url).removesuffix("/mcp"), token, shots)


async def start_dashboard(
    hub_config: HubConfig, nursery: trio.Nursery, tmp_path: Path
) -> Dashboard:
    """A hub with its HTTP face on a free port, run in ``nursery``."""
    hub_config.http = "127.0.0.1:0"
    service: HubService = await nursery.start(run_hub, hub_config)
    return dashboard_of(service, tmp_path)


def run_in_chromium(drive: Callable[[Any], None], width: int = 1000, height: int = 900) -> None:
    """Blocking (run it in a worker thread): one page of a fresh Chromium, with
    Playwright's waits bounded by TIMEOUT_MS, given to ``drive``; closed after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(TIMEOUT_MS)
            drive(page)
        finally:
            browser.close()


@dataclass
class PageWatch:
    """What a page said that it should not have: script errors, and dialogs (alert,
    confirm: dismissed, so a stray one cannot block the test)."""

    errors: list[str]
    dialogs: list[str]


def watch(page: Any) -> PageWatch:
    seen = PageWatch([], [])

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    return seen


def open_dashboard(page: Any, dashboard: Dashboard) -> None:
    """Sign in and wait until the page follows the hub's activity stream."""
    page.goto(dashboard.sign_in)
    page.locator("#connection.live").wait_for()
