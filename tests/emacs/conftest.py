"""The ``ling_emacs`` fixture: an `emacs -nw` under tmux connected to the in-process
hub, for the tests that type into terminal buffers of a real Emacs (test_emacs_lings.py
holds ``LingEmacs`` and the steps those tests share)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_emacs_lings import LingEmacs

from hive_rpc.hub import HubConfig
from hive_rpc.service import HubService


@pytest.fixture
async def ling_emacs(
    hub: HubService, hub_config: HubConfig, short_tmp: Path
) -> AsyncIterator[LingEmacs]:
    emacs = LingEmacs(short_tmp, hub_config.socket)
    try:
        yield emacs
    finally:
        emacs.close()
