"""A fake Claude Code for the agent-sessions tests: a bash run through a symlink named
``claude``, so its comm is ``claude`` as a real Claude Code's is, that runs the real
``hive-rpc hook claude-code`` for each event the test gives it, in the background, as a
child of its own, as Claude Code runs its hooks.  The hook finds that process in its
ancestry and the hub checks it, so the session is ``claude-code-PID`` and the hub
watches the process's exit, as for the real agent.

Three ways to hand it the hooks' command lines, for three kinds of test: on its stdin
from trio (``TrioClaude``), on its stdin from a synchronous test (``PipedClaude``), or
through a FIFO (``FifoClaude``), for a fake started by someone else (a vterm buffer in
Emacs, a tmux pane).

Files, under ``ROOT``: the ``claude`` link, the project directory ``ROOT/NAME`` (the
process's cwd, unless the test names another), and ``ROOT/NAME-logs``: the events,
each hook's stdout (``hook-N.out``), their stderr (``hook.err``), and the fake's HOME
when the helper starts it."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

TMUX_SERVER = "/tmp/tmux-test/default"
"""The tmux server a fake says it runs under when a test gives it only a pane: no such
server runs, so nothing can switch to it."""

STDIN_LOOP = 'while read -r line; do eval "$line"; done'
"""The piped fake's program: each line on its stdin run as a shell command."""

FIFO_LOOP = 'exec 3<>"$1"; echo "$$" > "$2"; while read -r line <&3; do eval "$line"; done\n'
"""The FIFO fake's program: the pid of its ``claude`` process to a file, then each line
written to its FIFO run as a shell command."""


def claude_link(root: Path) -> Path:
    """``ROOT/claude``, a symlink to bash (made once, shared by the fakes under ROOT)."""
    link = root / "claude"
    if not link.is_symlink():
        root.mkdir(parents=True, exist_ok=True)
        link.symlink_to("/bin/bash")
    return link


def agent_env(pane: str | None = None, server: str = TMUX_SERVER, **more: str) -> dict[str, str]:
    """This process's environment without tmux's, zellij's and the hub's variables, so
    the hook sees neither the test's terminal nor its hub; in tmux pane ``pane`` of
    ``server`` (by the environment only) if given; then ``more``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "ZELLIJ", "HIVE"))}
    if pane is not None:
        env |= {"TMUX": f"{server},1,0", "TMUX_PANE": pane}
    return env | more


class _Hooks:
    """The part every fake shares: each event written to a file, and the shell line
    that runs the real hook on it, in the background, with its output in files."""

    def __init__(
        self,
        root: Path,
        name: str,
        *,
        socket: Path,
        data_dir: Path,
        cwd: Path | None = None,
        session_id: str | None = None,
        options: tuple[str, ...] = (),
    ) -> None:
        self.name, self.socket, self.data_dir, self.options = name, socket, data_dir, options
        self.link = claude_link(root)
        self.cwd = root / name if cwd is None else cwd
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.logs = root / f"{name}-logs"
        self.logs.mkdir()
        self._session_id = session_id
        self.events = 0

    @property
    def pid(self) -> int:
        raise NotImplementedError

    @property
    def agent_id(self) -> str:
        return f"claude-code-{self.pid}"

    @property
    def session_id(self) -> str:
        """Claude Code's session id in each event: the test's, or one of this process."""
        return f"s-{self.pid}" if self._session_id is None else self._session_id

    def hook_errors(self) -> str:
        """What its hooks wrote on stderr, for a failure's message."""
        err = self.logs / "hook.err"
        return err.read_text() if err.exists() else ""

    def _started(self, env: Mapping[str, str] | None) -> dict[str, Any]:
        """How the helper starts it: the loop on its stdin, in its own process group
        (killed with its hooks), in ``cwd``, with ``env`` (``agent_env()`` by default)
        and its logs directory as HOME."""
        return {
            "args": [str(self.link), "-c", STDIN_LOOP],
            "stdin": subprocess.PIPE,
            "cwd": self.cwd,
            "env": {**(agent_env() if env is None else env), "HOME": str(self.logs)},
            "start_new_session": True,
        }

    def _hook_line(self, event: dict[str, Any]) -> tuple[bytes, Path]:
        """The line running the hook on ``event`` (its ``cwd`` the process's unless the
        event says otherwise), and the file the hook's stdout goes to (written whole
        when it decides: a hook prints one JSON object, then exits)."""
        self.events += 1
        path = self.logs / f"event-{self.events}.json"
        path.write_text(json.dumps({"session_id": self.session_id, "cwd": str(self.cwd), **event}))
        out = self.logs / f"hook-{self.events}.out"
        where = ["--socket", str(self.socket), "--data-dir", str(self.data_dir)]
        argv = [sys.executable, "-m", "hive_rpc", "hook", "claude-code", *where, *self.options]
        q = shlex.quote
        # One simple command in the background: bash forks and the fork runs the hook
        # itself, so the hook's parent is this ``claude`` (a compound command would put
        # a subshell, also named ``claude``, in between).
        err = self.logs / "hook.err"
        line = f"{shlex.join(argv)} < {q(str(path))} > {q(str(out))} 2>> {q(str(err))} &\n"
        return line.encode(), out


class TrioClaude(_Hooks):
    """A fake fed on its stdin from trio: ``await TrioClaude(...).start(nursery)``."""

    proc: trio.Process

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def start(
        self, nursery: trio.Nursery, env: Mapping[str, str] | None = None
    ) -> TrioClaude:
        """Started (``_started``); killed with its hooks when ``nursery`` is cancelled."""
        started = self._started(env)
        proc = self.proc = await trio.lowlevel.open_process(started.pop("args"), **started)

        async def reap() -> None:
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)  # the fake and any hook left
                    await proc.wait()

        nursery.start_soon(reap)
        return self

    async def hook(self, event: dict[str, Any]) -> Path:
        """Run the hook on ``event`` in the background; the file its stdout goes to."""
        line, out = self._hook_line(event)
        assert self.proc.stdin is not None
        await self.proc.stdin.send_all(line)
        return out


class PipedClaude(_Hooks):
    """A fake fed on its stdin from a synchronous test: ``PipedClaude(...).start()``;
    ``stop`` kills it and the hooks it still runs."""

    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, env: Mapping[str, str] | None = None) -> PipedClaude:
        """Started (``_started``)."""
        self.proc = subprocess.Popen(**self._started(env))
        return self

    def hook(self, event: dict[str, Any]) -> Path:
        """Run the hook on ``event`` in the background; the file its stdout goes to."""
        line, out = self._hook_line(event)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()


class FifoClaude(_Hooks):
    """A fake the test does not start: whoever runs ``argv()`` (in ``cwd``) starts it,
    and it reads the hooks' lines from its FIFO.  Its pid is in a file it writes once
    it runs (``started``), read by another process: the test polls it."""

    @property
    def fifo(self) -> Path:
        return self.logs / "hooks.fifo"

    @property
    def pidfile(self) -> Path:
        return self.logs / "claude.pid"

    def argv(self) -> list[str]:
        """The command that starts it; its FIFO and its program made on the first call."""
        script = self.logs / "agent-loop.sh"
        if not script.exists():
            os.mkfifo(self.fifo)
            script.write_text(FIFO_LOOP)
        return [str(self.link), str(script), str(self.fifo), str(self.pidfile)]

    @property
    def pid(self) -> int:
        return int(self.pidfile.read_text())

    def started(self) -> bool:
        return self.pidfile.exists() and self.pidfile.read_text().strip() != ""

    def hook(self, event: dict[str, Any]) -> Path:
        """Run the hook on ``event`` in the background; the file its stdout goes to."""
        line, out = self._hook_line(event)
        with self.fifo.open("wb") as fifo:
            fifo.write(line)
        return out
