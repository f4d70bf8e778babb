"""Issue 26, section 2: a ling is typed into only while the agent the human approved
there holds the terminal's foreground, never "anything but a shell".

Each attack runs against the real programs: a private tmux server (``tmux -S``), an
interactive bash in the pane, the scripted ling (tests/relay/scripted_ling.py) as
the agent the human approved, started from that bash as a human would; then the
agent is stopped (Ctrl-Z) or exits and something else takes the pane's foreground:
``sleep`` (the message became bash's type-ahead), ``less`` (a ``q`` quit it and bash
ran the rest), ``head -n1`` (the lines after the first reached bash), a python3 REPL
(not a shell, so the code ran).  The message carries ``touch PWNED``; before the
fix the file was created.  Whether anything reached bash is decided without
waiting on the clock: after the foreground program is ended, the test types a
marker command the way a human would and waits for its output; bash reads its input
in order, so anything the relay typed would have run before the marker.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio
from test_tmux import LING, Ling, Tmux, tmux, until

from hive_rpc.agora import Agora, open_agora
from hive_rpc.relay.delivery import Relay
from hive_rpc.relay.emacs import DeliveryPeers
from hive_rpc.relay.proc import stat
from hive_rpc.relay.tmux import find_tmux
from hive_rpc.store.memory import MemoryStore

pytestmark = pytest.mark.skipif(
    find_tmux() is None, reason="tmux is not installed; these tests drive a real tmux"
)

__all__ = ["tmux"]  # test_tmux's fixture, for pytest to find here
PROMPT = "me$ "


def exists(path: Path) -> bool:
    return path.exists()


@dataclass
class BashPane:
    tmux: Tmux
    pane: str
    dir: Path

    @property
    def address(self) -> str:
        return f"{self.pane}@{self.tmux.socket}"

    async def screen(self) -> str:
        return await self.tmux.run("capture-pane", "-p", "-J", "-t", self.pane)

    async def keys(self, *keys: str) -> None:
        await self.tmux.run("send-keys", "-t", self.pane, *keys)

    pane_pid: int = 0

    def foreground(self) -> tuple[int, str] | None:
        """The pane's foreground process group leader (pid, comm), from /proc."""
        shell = stat(self.pane_pid)
        if shell is None or shell.tpgid <= 0:
            return None
        leader = stat(shell.tpgid)
        return (leader.pid, leader.comm) if leader is not None else None

    async def wait_foreground(self, comm: str) -> int:
        async def found() -> int | None:
            now = self.foreground()
            return now[0] if now is not None and now[1].startswith(comm) else None

        return await until(f"{comm} in the pane's foreground", found)

    async def wait_screen(self, text: str) -> str:
        async def shown() -> str | None:
            screen = await self.screen()
            return screen if text in screen else None

        return await until(f"{text!r} on the pane's screen", shown)

    async def start_agent(self) -> Ling:
        """The agent, started from bash as a human would: a job in the foreground."""
        record = self.dir / "agent.jsonl"
        await self.keys("-l", f"{sys.executable} {LING} {record}")
        await self.keys("Enter")
        agent = Ling(
            tmux=self.tmux, name="agent", pane=self.pane, record=record, dialog_flag=Path("/")
        )
        await until("the agent to start", agent.ready)
        return agent

    async def human_runs(self, command: str, comm: str) -> int:
        """The human types ``command`` at bash's prompt; its pid once it holds the
        foreground."""
        await self.keys("-l", command)
        await self.keys("Enter")
        return await self.wait_foreground(comm)

    async def nothing_reached_bash(self, planted: Path) -> None:
        """After the foreground program ended: a marker typed as the human would
        runs, and nothing typed before it did."""
        await self.wait_foreground("bash")
        await self.keys("-l", "echo MARK-$((6*7))")
        await self.keys("Enter")
        await self.wait_screen("\nMARK-42")
        assert not exists(planted), await self.screen()


@pytest.fixture
async def bash(tmux: Tmux) -> BashPane:
    env = f"env -i TERM=xterm HOME={tmux.dir} PS1='{PROMPT}' bash --norc --noprofile -i"
    pane = await tmux.run(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "shell", "-x", "150", "-y", "40",
        "-c", str(tmux.dir), "sh", "-c", f"exec {env}",
    )  # fmt: skip
    pane_pid = await tmux.run("display-message", "-p", "-t", pane, "#{pane_pid}")
    shell = BashPane(tmux, pane, tmux.dir, int(pane_pid))
    await shell.wait_screen(PROMPT.strip())
    await shell.wait_foreground("bash")
    return shell


@pytest.fixture
async def agora(nursery: trio.Nursery) -> Agora:
    relay = Relay(nursery, min_interval_s=0.0, hold_retry_s=0.05, hold_attempts=4)
    return await open_agora(
        MemoryStore(), time.time, DeliveryPeers(), nursery, relay=relay, dispatch_wait_s=20
    )


async def approved_agent(agora: Agora, bash: BashPane, name: str = "main.kid") -> Ling:
    """The agent runs in the pane, and the human approves the pane as ling ``name``."""
    agent = await bash.start_agent()
    await agora.register(name, "tmux", bash.address, owner=True)
    sent = await agora.answer(name, "hello", None)
    assert sent["delivery"]["state"] == "delivered", sent
    await agent.wait_for(1)
    return agent


async def stop_agent(bash: BashPane) -> None:
    """The agent is suspended (Ctrl-Z): bash takes the foreground back."""
    found = bash.foreground()
    assert found is not None
    os.kill(found[0], signal.SIGSTOP)
    await bash.wait_screen("Stopped")
    await bash.wait_foreground("bash")


async def end_agent(bash: BashPane) -> None:
    """The agent exits: the pane is back at bash's prompt."""
    found = bash.foreground()
    assert found is not None
    os.kill(found[0], signal.SIGTERM)
    await bash.wait_foreground("bash")


async def test_sleep_in_the_foreground_gets_no_type_ahead(bash: BashPane, agora: Agora) -> None:
    """``sleep`` (or ``make``, ``npm test``) holds the pane while the approved agent
    is stopped: the message was kept by the tty as type-ahead, and bash ran it when
    sleep ended.  Now it is held, then fails naming what runs there."""
    await approved_agent(agora, bash)
    await stop_agent(bash)
    planted = bash.dir / "PWNED"
    sleeper = await bash.human_runs("sleep 600", "sleep")
    sent = await agora.answer("main.kid", f"ok\ntouch {planted}", None)
    delivery = sent["delivery"]
    assert delivery["state"] == "failed", delivery
    assert "is not in the terminal's foreground now: sleep runs there" in delivery["reason"]
    assert "not typed into; tried 4 times" in delivery["reason"]
    os.kill(sleeper, signal.SIGTERM)
    await bash.nothing_reached_bash(planted)


async def test_less_in_the_foreground_is_not_typed_into(bash: BashPane, agora: Agora) -> None:
    """``less`` (what ``git log`` opens) in a parent's pane: a child's event (the event
    template typed into the parent's terminal) carried a ``q`` that quit it, and bash
    ran the rest."""
    await approved_agent(agora, bash, "main")
    await stop_agent(bash)
    planted = bash.dir / "PWNED"
    page = bash.dir / "page.txt"
    page.write_text("".join(f"line {n}\n" for n in range(200)))
    pager = await bash.human_runs(f"less {page}", "less")
    await bash.wait_screen("line 1\n")
    sent = await agora.post_event(
        "child-note", "main.kid", {"message": f"\nqq\nq\ntouch {planted}"}
    )
    delivery = sent["delivery"]
    assert delivery["state"] == "failed", delivery
    assert "is not in the terminal's foreground now: less runs there" in delivery["reason"]
    assert (await bash.screen()).startswith("line 0"), "less is still showing its page"
    os.kill(pager, signal.SIGTERM)
    await bash.nothing_reached_bash(planted)


async def test_head_reading_one_line_passes_nothing_on_to_bash(
    bash: BashPane, agora: Agora
) -> None:
    """``head -n1`` in the foreground after the agent exited: it read the first line,
    and the lines after it reached bash.  The agent is gone, so nothing is typed."""
    agent = await approved_agent(agora, bash)
    await end_agent(bash)
    planted = bash.dir / "PWNED"
    reader = await bash.human_runs("head -n1", "head")
    sent = await agora.answer("main.kid", f"ok\ntouch {planted}", None)
    delivery = sent["delivery"]
    assert delivery["state"] == "failed", delivery
    assert "has exited" in delivery["reason"]
    assert "hive-rpc ling register main.kid --tmux" in delivery["reason"]
    assert delivery["attempts"] == 1  # an agent that is gone is not waited for
    assert len(agent.received()) == 1
    os.kill(reader, signal.SIGTERM)
    await bash.nothing_reached_bash(planted)


async def test_a_python_repl_is_not_the_agent(bash: BashPane, agora: Agora) -> None:
    """A python3 REPL where the agent ran: not counted as a shell, so the code ran
    (node, psql, irb, gdb likewise).  It is not the process the human approved."""
    await approved_agent(agora, bash)
    await end_agent(bash)
    planted = bash.dir / "PWNED"
    repl = await bash.human_runs(f"{sys.executable} -q", "python")
    await bash.wait_screen(">>>")
    sent = await agora.answer("main.kid", f"x\n__import__('os').system('touch {planted}')", None)
    delivery = sent["delivery"]
    assert delivery["state"] == "failed", delivery
    assert "has exited" in delivery["reason"]
    assert not exists(planted)
    os.kill(repl, signal.SIGTERM)
    await bash.nothing_reached_bash(planted)
