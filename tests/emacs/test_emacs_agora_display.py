"""Issue 27, item 10, as the human sees it in Emacs: a turn held on the human's draft
in a ling's buffer says so in that buffer's header line (from the hub's ``hive/agora``),
without selecting anything; once the draft is cleared the turn is typed and the line
goes.  A real `emacs -nw` under tmux, a comint buffer registered with
M-x hive-rpc-register-ling, the in-process hub (test_emacs_lings.py's fixtures)."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_emacs_lings import LingEmacs, keys, lisp_list, wait_until

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None or shutil.which("tmux") is None,
    reason="needs emacs and tmux",
)

BUFFER, LING = "*rec comint*", "rec-comint"
HELD = "hive: a turn for this ling waits: the human is typing in rec-comint"


@pytest.fixture
async def ling_emacs(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> AsyncIterator[LingEmacs]:
    emacs = LingEmacs(short_tmp, hub_config.socket)
    try:
        yield emacs
    finally:
        emacs.close()


async def test_a_turn_held_on_the_draft_shows_in_the_lings_header_line(
    hub: HubService, ling_emacs: LingEmacs
) -> None:
    command = ling_emacs.recorder_command("comint")
    ling_emacs.start(
        f'(make-comint-in-buffer "rec" "{BUFFER}" {json.dumps(command[0])} nil'
        f' {lisp_list(command[1:])}) (switch-to-buffer "{BUFFER}")',
        load_path=[],
    )
    await wait_until(lambda: len(hub.delivery_peers) == 1, "Emacs to offer delivery", ling_emacs)
    await wait_until(lambda: "recorder ready" in ling_emacs.screen(), "the recorder", ling_emacs)
    keys(ling_emacs, "M-x", "hive-rpc-register-ling", "Enter")
    await wait_until(
        lambda: f"Ling name (default {LING}):" in ling_emacs.screen(), "the prompt", ling_emacs
    )
    keys(ling_emacs, "Enter")
    await wait_until(
        lambda: f"ling {LING} is buffer {BUFFER}" in ling_emacs.screen(), "registered", ling_emacs
    )
    keys(ling_emacs, "-l", "half a thought")  # the human's draft, not sent
    await wait_until(lambda: "half a thought" in ling_emacs.screen(), "the draft", ling_emacs)
    d = await hub.call("agora/create", {"topic": "Ship?", "participants": ["main", LING]})
    turn = await hub.call(
        "agora/dispatch",
        {"dialogue_id": d["id"], "from": "main", "to": LING, "signal": "propose",
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
