"""A real `emacs -nw` under tmux that connects to a hub already full of an agent's
connections (issue 26, section 4: an editor reconnecting failed with Connection
reset) gets in, subscribes and asks the human.

The hub runs with so few descriptors that its cap is 40
(``accept_loop.split_descriptors``); one process in a session of its own fills it
with connections that each sent a request, so none is idle to close.  Emacs then
connects into the reserve, proves itself an approver (``hive/status``, then
``hive/proveApprover``, as it does on every connection) and subscribes; the
question asked with the human's CLI (which proves itself too) opens in its
minibuffer."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from emacs_session import EmacsSession, tag
from flood_support import Flood

from hive_rpc.faces.accept_loop import split_descriptors

pytestmark = pytest.mark.skipif(
    shutil.which("emacs") is None
    or shutil.which("tmux") is None
    or shutil.which("prlimit") is None,
    reason="needs emacs, tmux and prlimit",
)

CAP = 40
FD_LIMIT = next(n for n in range(65, 1000) if split_descriptors(n)[0] == CAP)


class FullHubSession(EmacsSession):
    """The hub on few descriptors, filled by ``flood`` before Emacs starts."""

    flood: Flood | None = None

    def hub_command(self) -> list[str]:
        return ["prlimit", f"--nofile={FD_LIMIT}:{FD_LIMIT}", "--", *super().hub_command()]

    def start(self) -> None:
        self.start_hub()
        self.flood = Flood(self.socket, 0)
        assert self.flood.fill() == CAP
        self.start_emacs()

    def close(self) -> None:
        if self.flood is not None:
            self.flood.close()
        super().close()


@pytest.fixture
def emacs(short_tmp: Path) -> Iterator[FullHubSession]:
    session = FullHubSession(short_tmp)
    try:
        session.start()
        yield session
    finally:
        session.close()


def test_an_emacs_connecting_to_a_hub_full_of_an_agents_connections_gets_in(
    emacs: FullHubSession,
) -> None:
    assert emacs.flood is not None
    # Still full: one more from the agent is refused, by its request's id.
    over = emacs.flood.ask("one hive/list")
    assert (over["code"], over["limit"], over["id"]) == (-32011, "connections", 7)
    prompt_id = emacs.ask("Deploy while the hub is full?", "--agent", "deployer")
    emacs.wait_for(lambda screen: "hive:1" in screen)
    emacs.answer_next()
    emacs.wait_prompt(f"{tag('deployer')} Deploy while the hub is full? (C-c")
    emacs.type("yes")
    emacs.keys("Enter")
    emacs.wait_until(lambda: emacs.record(prompt_id)["status"] == "responded", "the answer")
    assert emacs.record(prompt_id)["answer"] == "yes"
