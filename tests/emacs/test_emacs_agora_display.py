"""Issue 27, item 10, as the human sees it in Emacs: a turn held on the human's draft
in a ling's buffer says so in that buffer's header line (from the hub's ``hive/agora``),
without selecting anything; once the draft is cleared the turn is typed and the line
goes.  A real `emacs -nw` under tmux, a comint buffer registered with
M-x hive-rpc-register-ling, the in-process hub (test_emacs_lings.py's steps, conftest.py's
``ling_emacs``)."""

from __future__ import annotations

import shutil

import pytest
from test_emacs_lings import (
    COMINT_LING,
    LingEmacs,
    comint_ling_with_a_draft,
    keys,
    wait_until,
)

from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

HELD = "hive: a turn for this ling waits: the human is typing in rec-comint"


async def test_a_turn_held_on_the_draft_shows_in_the_lings_header_line(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    await comint_ling_with_a_draft(hub, ling_emacs)
    d = await hub.call("agora/create", {"topic": "Ship?", "participants": ["main", COMINT_LING]})
    turn = await hub.call(
        "agora/dispatch",
        {"dialogue_id": d["id"], "from": "main", "to": COMINT_LING, "signal": "propose",
         "message": "Ship it today."},
    )  # fmt: skip
    assert turn["delivery"]["state"] == "queued", turn
    await wait_until(lambda: HELD in ling_emacs.screen(), "the header line", ling_emacs)
    assert ling_emacs.record("comint") == b""
    keys(ling_emacs, "C-c", "C-u")  # comint-kill-input: the draft cleared
    await wait_until(
        lambda: b"Ship it today." in ling_emacs.record("comint"), "the turn typed", ling_emacs
    )
    await wait_until(lambda: HELD not in ling_emacs.screen(), "the line gone", ling_emacs)
