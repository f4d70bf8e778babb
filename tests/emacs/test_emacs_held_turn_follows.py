"""Issue 28, section 5, in a real Emacs: a turn held on the human's draft in a ling's
comint buffer goes in once the human clears the draft, because Emacs tells the hub
the buffer changed (``hive/watchBuffer``, ``hive/bufferChanged`` from a buffer-local
change hook), not because a poll came round.  The hub's relay checks a held turn on
its schedule once an hour here (``hold_retry_s``), so the turn can only go in within
the test's deadline if the change notification woke it; it fails on a relay that
polls.  An `emacs -nw` under tmux, registered with M-x hive-rpc-register-ling, as in
test_emacs_agora_tells.py."""

from __future__ import annotations

import shutil

import pytest
import trio
from test_emacs_agora_tells import editor, sent
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
AN_HOUR = 3600.0


async def test_a_turn_held_on_a_draft_goes_in_once_the_draft_is_cleared(
    hub: HubService, hub_config: HubConfig, ling_emacs: LingEmacs
) -> None:
    assert hub.agora is not None
    hub.agora._relay.hold_retry_s = AN_HOUR  # only the buffer's change can release it
    await comint_ling_with_a_draft(hub, ling_emacs)

    async with editor(hub_config) as seen:
        d = await hub.call("agora/create", {"topic": "Ship?", "participants": ["main", LING]})
        turn = await hub.call(
            "agora/dispatch",
            {"dialogue_id": d["id"], "from": "main", "to": LING, "signal": "propose",
             "message": "Ship it today."},
        )  # fmt: skip
        assert turn["delivery"]["state"] == "queued", turn
        held = await sent(seen, "relay/held", ling_emacs)
        assert (held["ling"], held["buffer"], held["hold"]) == (LING, BUFFER, "draft")
        assert ling_emacs.record("comint") == b""  # nothing typed after the draft

        keys(ling_emacs, "C-c", "C-u")  # comint-kill-input: the human clears the draft
        # Far less than the hour the relay's schedule would wait; no timing is asserted.
        with trio.fail_after(60):
            delivered = await sent(seen, "relay/delivered", ling_emacs)
    assert (delivered["ling"], delivered["was_held"]) == (LING, True)
    await wait_until(
        lambda: b"Ship it today." in ling_emacs.record("comint"), "the turn typed", ling_emacs
    )
    assert b"half a thought" not in ling_emacs.record("comint")  # the draft was cleared
