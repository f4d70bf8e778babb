"""Issue 28, section 5, in a real Emacs: a turn held on the human's draft in a ling's
comint buffer goes in once the human clears the draft, because Emacs tells the hub
the buffer changed (``hive/watchBuffer``, ``hive/bufferChanged`` from a buffer-local
change hook), not because a poll came round.  The hub's relay checks a held turn on
its schedule once an hour here (``hold_retry_s``), so the turn can only go in within
the test's deadline if the change notification woke it; it fails on a relay that
polls.  An `emacs -nw` under tmux, registered with M-x hive-rpc-register-ling, as in
test_emacs_agora_tells.py."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from test_emacs_agora_tells import editor, sent
from test_emacs_lings import LingEmacs, keys, lisp_list, wait_until

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

BUFFER, LING = "*rec comint*", "rec-comint"
AN_HOUR = 3600.0


@pytest.fixture
async def ling_emacs(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> AsyncIterator[LingEmacs]:
    emacs = LingEmacs(short_tmp, hub_config.socket)
    try:
        yield emacs
    finally:
        emacs.close()


async def test_a_turn_held_on_a_draft_goes_in_once_the_draft_is_cleared(
    hub: HubService, hub_config: HubConfig, ling_emacs: LingEmacs
) -> None:
    assert hub.agora is not None
    hub.agora._relay.hold_retry_s = AN_HOUR  # only the buffer's change can release it
    command = ling_emacs.recorder_command("comint")
    ling_emacs.start(
        f'(make-comint-in-buffer "rec" "{BUFFER}" {json.dumps(command[0])} nil'
        f' {lisp_list(command[1:])}) (switch-to-buffer "{BUFFER}")',
        load_path=[],
    )
    # The screen and the hub's peers are another process's state: polled.
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    await wait_until(lambda: "recorder ready" in ling_emacs.screen(), "the recorder", ling_emacs)
    keys(ling_emacs, "M-x", "hive-rpc-register-ling", "Enter")
    await wait_until(
        lambda: f"Ling name (default {LING}):" in ling_emacs.screen(), "the prompt", ling_emacs
    )
    keys(ling_emacs, "Enter")
    await wait_until(
        lambda: f"ling {LING} is buffer {BUFFER}" in ling_emacs.screen(),
        "the confirmation",
        ling_emacs,
    )
    keys(ling_emacs, "-l", "half a thought")  # the human's draft, not sent
    await wait_until(lambda: "half a thought" in ling_emacs.screen(), "the draft", ling_emacs)

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
