"""A hold that lasts is told again: ``relay/still-held``, each time the checks that
found it have doubled since it was last told, so a watcher sees the relay still
looking without an event per check.  Units on trio's autojump clock with the scripted
terminal of test_holds_reported.py; the real Claude Code waits on these events in
tests/claude/test_claude_agora.py."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from test_holds_reported import BOX, DIALOG, Terminal, agora_typing_into
from waiting import Collected

from hive_rpc.relay.delivery import HOLD_ATTEMPTS


async def test_a_lasting_hold_is_told_at_doubling_checks_until_it_fails(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A dialog stays on screen for the whole hold (``HOLD_ATTEMPTS`` checks, then
    the turn fails untyped): ``relay/held`` once, at the first check, then
    ``relay/still-held`` after 2, 4, 8 ... 256 checks, each with the reason and the
    count, and nothing is typed."""
    terminal = Terminal()
    events: Collected[dict[str, Any]] = Collected()
    async with agora_typing_into(terminal, events.append) as (agora, _):
        d = await agora.create("topic", ["a", "b"])
        await agora.dispatch(d["id"], sender="a", to="b", signal="propose", message="go")
        still = await events.first(lambda e: e["event"] == "relay/still-held", within_s=60)
        assert (still["ling"], still["dialogue_id"], still["turn"]) == ("b", d["id"], 1)
        assert (still["reason"], still["hold"], still["attempts"]) == (DIALOG, "dialog", 2)
        assert still["message"] == (
            "still not typed into b after 2 checks: "
            + DIALOG.removeprefix("held: ")
        )  # fmt: skip
        failed = await events.first(lambda e: e["event"] == "relay/failed", within_s=3600)
        told = [(e["event"], e["attempts"]) for e in events.items if "attempts" in e]

    assert failed["cause"] == "held"
    assert told == [("relay/held", 1)] + [("relay/still-held", 2**n) for n in range(1, 9)]
    assert 2**8 <= HOLD_ATTEMPTS < 2**9
    assert terminal.typed == []


async def test_a_new_reason_is_held_and_the_doubling_starts_from_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The dialog answered, the human types: ``relay/held`` says so at once, and the
    next ``relay/still-held`` comes once the checks have doubled since then."""
    terminal = Terminal()
    events: Collected[dict[str, Any]] = Collected()
    async with agora_typing_into(terminal, events.append) as (agora, _):
        await agora.answer("b", "yes", "a")
        await events.first(lambda e: e.get("attempts") == 4, within_s=60)
        terminal.screen = BOX.format("half a prompt")
        typing = await events.first(lambda e: e.get("hold") == "draft", within_s=60)
        after = await events.first(
            lambda e: e.get("hold") == "draft" and e["event"] == "relay/still-held", within_s=60
        )

    assert typing["event"] == "relay/held"
    assert after["attempts"] == 2 * typing["attempts"]
