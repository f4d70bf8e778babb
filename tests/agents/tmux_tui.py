"""An agent's interactive TUI (Codex, Gemini CLI) in the only pane of a private tmux
server, as a human uses it: keys sent, the screen read.

The screen is another process's, with no event to follow: the waits poll tmux's
``capture-pane`` with a deadline (waiting.until)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import trio
from waiting import until

SCREEN_S = 60
"""How long a screen may take to come (the agent starting its MCP server and hooks,
on a busy machine)."""


@dataclass
class TmuxTui:
    """The agent in the pane of the tmux server at ``socket``; ``name`` for the
    failures' messages, ``prompt_mark`` what its prompt line shows before the words
    typed."""

    socket: Path
    name: str
    prompt_mark: str

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def screen(self, *, history: bool = False) -> str:
        """What the pane shows (and, with ``history``, the lines scrolled above)."""
        since = ("-S", "-200") if history else ()
        return self.tmux("capture-pane", "-p", *since, "-t", "0").stdout

    async def shows(self, words: str, *, within_s: float = SCREEN_S) -> str:
        """The screen once it shows ``words``."""

        async def look() -> str | None:
            screen = await trio.to_thread.run_sync(self.screen)
            return screen if words in screen else None

        try:
            return await until(look, f"{words!r} on {self.name}'s screen", within_s=within_s)
        except AssertionError as e:
            raise AssertionError(f"{e}; the screen:\n{self.screen()}") from None

    def keys(self, *keys: str) -> None:
        """Keys by tmux's names (``Enter``, ``Escape``, ``Down``, ``t``)."""
        self.tmux("send-keys", "-t", "0", *keys)

    async def type_in(self, words: str) -> None:
        """``words`` typed into the prompt, then Enter once the prompt shows them
        (Enter in the same burst as the typing is taken as part of a paste)."""
        self.tmux("send-keys", "-t", "0", "-l", words)
        await self.shows(f"{self.prompt_mark} {words}")
        self.keys("Enter")

    async def gone(self, words: str, what: str = "") -> None:
        """``words`` no longer on the screen (``what`` says what that means)."""

        async def look() -> bool:
            return words not in await trio.to_thread.run_sync(self.screen)

        what = what or f"{words!r} to leave {self.name}'s screen"
        await until(look, what, within_s=SCREEN_S)

    async def exited(self, within_s: float = SCREEN_S) -> None:
        """The agent has exited (its pane is dead: kept, see ``in_tmux``)."""

        async def dead() -> bool:
            done = await trio.to_thread.run_sync(
                self.tmux, "display-message", "-p", "-t", "0", "#{pane_dead}"
            )
            return done.stdout.strip() == "1"

        await until(dead, f"{self.name} to exit", within_s=within_s)


Tui = TypeVar("Tui", bound=TmuxTui)


@contextmanager
def in_tmux(tui: Tui, cwd: Path, env: Mapping[str, str], argv: Sequence[str]) -> Iterator[Tui]:
    """``argv`` in a 160x45 pane of ``tui``'s tmux server, in ``cwd``, with ``env``
    (less tmux's own variables) and TERM xterm-256color; an exit keeps its last screen
    (and says "Pane is dead"), for a failure's message; the server killed at the end."""
    env = {k: v for k, v in env.items() if not k.startswith("TMUX")}
    subprocess.run(
        ["tmux", "-S", str(tui.socket), "-f", "/dev/null", "new-session", "-d",
         "-x", "160", "-y", "45", "-c", str(cwd), "env", "TERM=xterm-256color", *argv,
         ";", "set-option", "-t", "0", "remain-on-exit", "on"],
        env=env,
        check=True,
    )  # fmt: skip
    try:
        yield tui
    finally:
        tui.tmux("kill-server")
