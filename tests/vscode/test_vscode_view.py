"""The Hive: Pending view and the deadlines it shows, in a real VS Code (code-server +
headless Chromium) against a real hub; the agent's side is the ``hive-rpc`` CLI.

- Typing an answer in one window stops the countdown in every other window: the open
  box's and the view row's (the hub sends ``hive/update``).
- A question without a timeout says "no time limit", not the hub's maximum lifetime.
- The view refreshes only the rows that changed: twelve Withdraw clicks made at a
  person's pace (move to the row, rest on it, press, release) all land. With the whole
  tree refreshed every second, 2 of 12 were lost.

``hive.autoAsk`` is off in this module: questions wait in the view and open only when
asked for, so no input box comes and goes over the clicks.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable

import pytest
from vscode_session import EditorSetup, Hub, Window

HOVER_S = 0.4
"""How long the pointer rests on a row before the click, as a person's does."""
PRESS_S = 0.1
"""Between pressing and releasing the mouse button."""


@pytest.fixture(scope="module")
def editor_setup() -> EditorSetup:
    return EditorSetup(
        machine={"hive.pythonPath": sys.executable},
        user={"hive.autoAsk": False, "hive.openGraceSeconds": 0},
    )


def view_row(window: Window, text: str) -> str | None:
    """The Hive: Pending row (label and description) that contains ``text``."""
    rows = window.pending_view() or []
    return next((r for r in rows if text in r), None)


def wait_row(window: Window, text: str, check: Callable[[str], bool], what: str) -> str:
    return window.wait(
        lambda: (row := view_row(window, text)) is not None and check(row) and row, what
    )


_ROW_BOXES = """(text) => {
  const header = Array.from(document.querySelectorAll('.pane-header'))
    .find((h) => (h.getAttribute('aria-label') || h.textContent).toUpperCase()
      .includes('HIVE: PENDING'));
  const body = header && header.parentElement.querySelector('.pane-body');
  const row = body && Array.from(body.querySelectorAll('.monaco-list-row'))
    .find((r) => r.textContent.includes(text));
  if (!row) return null;
  const box = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 ? b : null; };
  const action = row.querySelector('.action-label[aria-label^="Withdraw"]');
  const r = box(row), a = action && box(action);
  return {row: [r.x, r.y, r.width, r.height], action: a && [a.x, a.y, a.width, a.height]};
}"""


def row_boxes(window: Window, text: str) -> dict[str, list[float] | None] | None:
    """Where the view's row showing ``text`` is, and its Withdraw button (None while
    the button is hidden: it shows while the pointer is over the row)."""
    got: dict[str, list[float] | None] | None = window.page.evaluate(_ROW_BOXES, text)
    return got


def human_click_at(window: Window, box: list[float]) -> None:
    """Click as a person does: move the pointer there, rest, press, release. No
    retries: a click the page loses is lost, as it is for a person."""
    x, y, w, h = box
    window.page.mouse.move(x + w / 2, y + h / 2, steps=4)
    time.sleep(HOVER_S)
    window.page.mouse.down()
    time.sleep(PRESS_S)
    window.page.mouse.up()


def withdraw_by_hand(window: Window, text: str) -> None:
    """Move the pointer onto the row, rest there until its inline buttons show, then
    click Withdraw (x)."""
    boxes = window.wait(lambda: row_boxes(window, text), f"the row {text!r} on screen")
    x, y, w, h = boxes["row"] or [0, 0, 0, 0]
    window.page.mouse.move(x + w / 3, y + h / 2, steps=8)
    time.sleep(HOVER_S)
    button = window.wait(
        lambda: (b := row_boxes(window, text)) and b["action"],
        f"the Withdraw button of {text!r} (shown while the pointer is on the row)",
    )
    human_click_at(window, button)


def test_typing_in_another_window_stops_this_windows_countdowns(
    window: Window, vscode_hub: Hub, new_window: Callable[[str], Window]
) -> None:
    window.show_pending_view()
    ask_id = vscode_hub.ask("Which region?", "--timeout", "600", "--agent", "ops")
    free = vscode_hub.ask("Anything else?", "--agent", "poet")
    row = wait_row(window, "Which region?", lambda r: "left" in r, "the row to count down")
    # to the minute ("10m left"), so the row is redrawn once a minute, not every second
    assert re.search(r"\b(10|9)m left", row), row
    # no "23h59m left" (the hub's maximum lifetime) for a question without a timeout
    wait_row(window, "Anything else?", lambda r: "no time limit" in r, "'no time limit'")
    assert "left" not in (view_row(window, "Anything else?") or ""), window.pending_view()

    # this window has the question open; it counts down there too
    window.command("Hive: Answer Next Question")
    box = window.wait_quick_input("Which region?", "the question to open in window 1")
    assert "left" in box.text(), box

    other = new_window("second")
    other.command("Hive: Answer Next Question")
    other.wait_quick_input("Which region?", "the question to open in window 2")
    other.type_human("eu-west")
    window.wait(
        lambda: vscode_hub.record(ask_id)["typing_at"] is not None or None,
        "the hub to hear window 2 typing",
    )

    # window 1 never typed, yet its countdowns stop
    wait_row(
        window,
        "Which region?",
        lambda r: "typing: countdown stopped" in r,
        "window 1's row to say the countdown stopped",
    )
    box = window.wait(
        lambda: (b := window.quick_input()) is not None and "left" not in b.text() and b,
        "window 1's open box to stop counting down",
    )
    assert "Which region?" in box.text(), box
    assert box.value == "", box  # nothing was typed here
    window.shot("typed-elsewhere")
    # and it stays stopped (no tick puts a countdown back)
    rows_before = window.pending_view()
    other.press("Enter")
    window.wait_no_quick_input("window 1's box to close: answered in window 2")
    assert rows_before is not None
    assert any("typing: countdown stopped" in r for r in rows_before), rows_before
    assert vscode_hub.poll(ask_id).stdout.strip() == "eu-west"
    vscode_hub.cli("cancel", free, "--agent", "poet")


def test_twelve_withdraw_clicks_at_human_pace_all_land(window: Window, vscode_hub: Hub) -> None:
    window.show_pending_view()
    ids = [
        vscode_hub.ask(f"Question {i:02d} of 12?", "--timeout", "900", "--agent", f"a{i:02d}")
        for i in range(1, 13)
    ]
    window.wait_status("12")
    # the view shows the rows that fit (a virtual list): the oldest first
    window.wait(
        lambda: (v := window.pending_view()) and "Question 01 of 12?" in v[0] and v,
        "the view to list the questions, oldest first",
    )
    window.shot("twelve")
    lost: list[str] = []
    for i in range(1, 13):
        text = f"Question {i:02d} of 12?"
        withdraw_by_hand(window, text)
        dialog = window.page.locator(".monaco-dialog-box")
        try:
            window.wait(
                lambda d=dialog: d.is_visible() or None,
                f"the confirmation for {text}",
            )
        except AssertionError:
            lost.append(text)  # the click did not land; a person would click again
            continue
        assert f"Withdraw this question from a{i:02d}?" in dialog.inner_text()
        confirm = dialog.locator(".monaco-button", has_text="Withdraw").first.bounding_box()
        assert confirm is not None
        human_click_at(window, [confirm["x"], confirm["y"], confirm["width"], confirm["height"]])
        window.wait(
            lambda t=text: view_row(window, t) is None,
            f"{text} to leave the view",
        )
    assert lost == [], f"{len(lost)} of 12 Withdraw clicks were lost: {lost}"
    window.wait_status(None, "the status bar to hide: nothing pending")
    statuses = [vscode_hub.record(i)["status"] for i in ids]
    assert statuses == ["cancelled"] * 12, statuses
