"""Issue 27, item 10, in a real Emacs: a ling in a comint buffer of an `emacs -nw`
under tmux, registered with M-x hive-rpc-register-ling.  The human half-types a line
in the buffer, so a turn for it is held; subscribed editors are sent why, with the
buffer's name.  The human then closes the buffer (C-x k): the held turn fails, the
dialogue is ``paused``, and editors and the coordinator are told, in words.

(How Emacs shows these is the Emacs package's; this proves what the hub sends it.)"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
import trio
from test_agora_tells import Notes, editor
from test_emacs_lings import (
    COMINT,
    COMINT_LING,
    LingEmacs,
    comint_ling_with_a_draft,
    keys,
    wait_until,
)

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

BUFFER, LING = COMINT, COMINT_LING


async def sent(notes: Notes, event: str, emacs: LingEmacs) -> dict[str, Any]:
    """The first ``hive/agora`` notification of ``event``; past 20 seconds, fail
    with the screen (what Emacs showed says why it never came)."""
    try:
        return await notes.first(lambda n: n["event"] == event, within_s=20)
    except trio.TooSlowError:
        pytest.fail(f"timed out waiting for {event}; the screen was:\n{emacs.screen()}")


async def test_a_turn_held_on_a_draft_then_its_buffer_closed_is_told(
    hub: HubService, hub_config: HubConfig, ling_emacs: LingEmacs
) -> None:
    await comint_ling_with_a_draft(hub, ling_emacs)

    async with editor(hub_config) as seen:
        d = await hub.call(
            "agora/create",
            {"topic": "Ship?", "participants": ["main", LING], "coordinator": "lead"},
        )
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main", "to": LING, "signal": "propose",
             "message": "Ship it today."},
        )  # fmt: skip
        assert turn["delivery"]["state"] == "queued", turn
        held = await sent(seen, "relay/held", ling_emacs)
        assert (held["ling"], held["buffer"], held["hold"]) == (LING, BUFFER, "draft")
        assert held["reason"] == (
            f"held: the human is typing in {LING} (unsent text in its input); it is typed "
            "once they send or clear it"
        )
        assert ling_emacs.record("comint") == b""  # nothing typed after the draft

        keys(ling_emacs, "C-x", "k")  # the human closes the buffer
        await wait_until(lambda: "Kill buffer" in ling_emacs.screen(), "C-x k", ling_emacs)
        keys(ling_emacs, "Enter")
        await wait_until(
            lambda: "running process" in ling_emacs.screen(), "the question", ling_emacs
        )
        keys(ling_emacs, "-l", "yes" if "yes or no" in ling_emacs.screen() else "y")
        keys(ling_emacs, "Enter")

        failed = await sent(seen, "relay/failed", ling_emacs)
        assert (failed["buffer"], failed["cause"], failed["was_held"]) == (BUFFER, "gone", True)
        assert failed["reason"] == f"no connected Emacs has a buffer named {BUFFER}"
        paused = await sent(seen, "agora/paused", ling_emacs)
        assert (paused["status"], paused["buffers"]) == ("paused", {LING: BUFFER})
        assert paused["message"] == (
            f"the dialogue {d['id']} (Ship?) is paused: {LING} is absent and main alone "
            "cannot reach consensus; it goes on when a turn is dispatched to a participant "
            "that is back (its terminal registered again)"
        )
    status = await hub.call("agora/status", {"dialogue_id": d["id"]})
    assert (status["status"], status["absent"]) == ("paused", [LING])
    news = await hub.call("agora/news", {"coordinators": ["lead"]})
    assert [e["event"] for e in news["events"]] == [
        "agora/participant-absent",
        "agora/paused",
        "agora/ling-unavailable",
    ]
