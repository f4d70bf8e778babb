"""The real Gemini CLI (0.61.0) as a human uses it: its interactive TUI in a tmux pane,
with the settings ``hive-rpc setup gemini`` wrote (run as a process,
agent_homes.run_setup) and the scripted Gemini API (scripted_gemini.py): its session
on the hub, moved by setup's hooks (cli/hook_events.py).

What the test holds, measured here: with the API key in the environment, the auth
chosen and the project folder trusted (agent_homes.write_gemini_config) the TUI opens
straight on its prompt ("Type your message or @path/to/file") and runs SessionStart
(source ``startup``) then.  A prompt runs BeforeAgent; the model's
``run_shell_command`` first meets setup's BeforeTool hook (the editor asks), then, as
nothing allowed it in Gemini CLI's own policy, Gemini's confirmation ("Allow
execution of [Shell]?", ``1. Allow once`` chosen, Enter takes it), announced to the
Notification hook as ``ToolPermission`` ("Tool Confirm Shell Command requires
execution") before it shows; AfterAgent once the answer is whole; SessionEnd at
``/quit``.

The screen is another process's, with no event to follow: the test polls tmux's
``capture-pane`` with a deadline (waiting.until); what the hub sees it waits for on
the activity stream (waiting.logged)."""

from __future__ import annotations

import shutil
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import trio
from agent_homes import AgentHome, Gemini, run_setup, write_gemini_config
from editor import human_editor, next_prompt
from scripted_gemini import function_call, in_turns, scripted_gemini, text
from tmux_tui import SCREEN_S, TmuxTui, in_tmux
from waiting import logged

from hive_rpc.hub import HubConfig
from hive_rpc.runtime.activity import Entry
from hive_rpc.service import HubService

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

READY = "Type your message"
DIALOG = "Allow execution of [Shell]?"
MOVED_S = 2.0
"""How long a key may take to show its effect before it is pressed again."""


class GeminiTui(TmuxTui):
    """The interactive ``gemini`` in the only pane of a private tmux server."""

    async def quit(self) -> None:
        """``/quit``, once its completion ("Exit the cli") shows, and Enter until
        Gemini CLI has exited: an Enter while the completion list is still coming may
        only take the completion (seen once: the TUI stayed, ``/quit`` on its prompt)."""
        self.tmux("send-keys", "-t", "0", "-l", "/quit")
        await self.shows("Exit the cli")
        with trio.fail_after(SCREEN_S):
            while True:
                self.keys("Enter")
                with trio.move_on_after(MOVED_S):
                    await self.exited()
                    return


def gemini_tui(gemini: Gemini, root: Path) -> AbstractContextManager[GeminiTui]:
    """``gemini`` in its pane (tmux_tui.in_tmux), its environment Gemini's
    (agent_homes.Gemini.env) less ``CI`` and ``GITHUB_ACTIONS``: Gemini CLI 0.61.0
    runs headless whenever ``CI=true`` (isHeadlessMode), whatever the terminal, and
    exits "No input provided via stdin". A CI runner sets it; a human's terminal
    does not (seen: the project's CI failed this test, ``CI=true pytest`` here too)."""
    tui = GeminiTui(root / "tmux.sock", "Gemini CLI", ">")
    env = {k: v for k, v in gemini.env().items() if k not in ("CI", "GITHUB_ACTIONS")}
    return in_tmux(tui, gemini.agent.project, env, [str(gemini.gemini)])


async def session_entry(hub: HubService, event: str, after: int = 0) -> Entry:
    """The next session entry after id ``after`` of a ``gemini-`` agent for ``event``
    (``start``, ``prompt``, ``notice``, ``stop``, ``end``)."""
    return await logged(
        hub.activity,
        lambda e: e.kind == "session" and e.event == event and e.key.startswith("gemini-"),
        within_s=SCREEN_S,
        after=after,
    )


async def test_the_tuis_session_on_the_hub_waits_while_its_own_dialog_asks(
    hub: HubService, hub_config: HubConfig, gemini_bin: Path, agent_home: AgentHome
) -> None:
    """One turn of the TUI with setup's hooks: idle once it opened, working from the
    prompt; the editor allows the shell command (BeforeTool), then Gemini CLI's own
    confirmation opens and the session waits on the human in its terminal (the
    Notification hook, ``ToolPermission`` as the hub's ``permission_prompt``, an
    urgent notice); the human's Enter there runs the command, and the answer leaves
    the session idle; ``/quit`` makes it gone.  One agent id, ``gemini-PID``."""
    target = agent_home.project / "made-by-gemini"
    script = in_turns(
        [function_call("run_shell_command", {"command": f"touch {target}"})], [text("made it")]
    )
    with scripted_gemini(script) as model:
        gemini = Gemini(gemini_bin, agent_home, model.base_url)
        write_gemini_config(agent_home)
        run_setup(agent_home, "gemini", hub_config.socket)
        async with human_editor(hub_config.socket) as human:
            with gemini_tui(gemini, agent_home.root) as tui:
                await tui.shows(READY)
                started = await session_entry(hub, "start")
                agent = started.key
                assert started.data["state"] == "idle"
                await tui.type_in("make the file")
                prompted = await session_entry(hub, "prompt", started.id)
                assert (prompted.key, prompted.data["state"]) == (agent, "working")

                with trio.fail_after(SCREEN_S):
                    asked = (await next_prompt(human)).params
                await human.call("hive/respond", {"id": asked["id"], "answer": "allow"})
                await tui.shows(DIALOG)
                noticed = await session_entry(hub, "notice", prompted.id)
                assert (noticed.key, noticed.data["state"]) == (agent, "waiting")
                assert noticed.data["in_terminal"] is True
                assert not target.exists()
                with trio.fail_after(SCREEN_S):
                    while DIALOG in await trio.to_thread.run_sync(tui.screen):
                        tui.keys("Enter")  # 1. Allow once; again if it was dropped
                        with trio.move_on_after(MOVED_S):
                            await tui.gone(DIALOG)
                await tui.shows("made it")
                stopped = await session_entry(hub, "stop", noticed.id)
                assert (stopped.key, stopped.data["state"]) == (agent, "idle")
                assert stopped.data["in_terminal"] is False
                # The hub hears AfterAgent before the hook returns: the turn is over
                # once Gemini's "esc to cancel" line has gone.
                await tui.gone("esc to cancel")

                await tui.quit()
                ended = await session_entry(hub, "end", stopped.id)
                assert (ended.key, ended.data["state"]) == (agent, "gone")
            notices = [
                e.data for e in hub.activity.recent(1000) if e.kind == "notice" and e.key == agent
            ]
    assert model.errors == [], model.errors
    assert target.exists()
    assert asked["agent_id"] == agent
    assert agent.removeprefix("gemini-").isdigit(), agent
    (notice,) = notices
    assert (notice["type"], notice["urgent"]) == ("permission_prompt", True)
    assert notice["message"] == "Tool Confirm Shell Command requires execution"
