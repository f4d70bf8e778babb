"""A relay whose terminal program is not installed says so in plain words, both when
the ling is checked (``ling list --check``) and when a delivery is tried."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive_rpc.relay.target import DeliveryError
from hive_rpc.relay.tmux import TmuxTarget
from hive_rpc.relay.zellij import ZellijTarget


@pytest.mark.parametrize(
    ("program", "target"),
    [("zellij", lambda: ZellijTarget("agents:3")), ("tmux", lambda: TmuxTarget("%0"))],
)
async def test_a_missing_program_is_named(
    program: str, target: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    made = target()  # type: ignore[operator]
    state = await made.check()
    reason = f"{program} is not installed or not on PATH"
    assert (state.alive, state.reason) == (False, reason)
    with pytest.raises(DeliveryError, match=f"^{reason}$"):
        await made.type_text("hello")
