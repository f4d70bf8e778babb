"""Starting a child agent in a new tmux window, and its git worktree: what ``hive-rpc
spawn`` (cli/spawn.py) and the hub's ``ling/spawn`` (agora/spawning.py) both do.

The new pane does not start the command directly: it starts
client/spawned_pane.py, which registers the pane from inside it (the kernel's
peer credentials prove it runs there: relay/consent.py) and then ``exec``s the
command in its own place, so the process the ling approves is the child agent
itself.  It signals a ``tmux wait-for`` channel once it has tried, so whoever opened
the pane waits on tmux, not on a clock.

Errors are ``SpawnError``: the CLI turns them into its exit codes, the hub into the
answer it gives the agent that asked.
"""

from __future__ import annotations

import re
from pathlib import Path

import trio


class SpawnError(Exception):
    """A step of starting a child failed; ``usage``: the caller asked for something
    that cannot work here (no git, not a repository), rather than a tool failing."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


async def tmux(*args: str, socket: str | None = None) -> str:
    """``tmux [-S socket] ARGS``'s output; a failure is a SpawnError in tmux's words."""
    argv = ["tmux", *(["-S", socket] if socket else []), *args]
    try:
        done = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False)
    except FileNotFoundError:
        raise SpawnError("tmux is not installed or not on PATH", usage=True) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise SpawnError(f"tmux {args[0]} failed: {message}")
    return done.stdout.decode("utf-8", "replace")


async def open_window(
    argv: list[str],
    workdir: Path,
    window_name: str,
    *,
    socket: str | None = None,
    session: str | None = None,
    new_session: bool = False,
) -> str:
    """A new tmux window running ``argv`` in ``workdir``: in ``session`` (a session
    id or name) when given, else tmux's current one, or in a new session when
    ``new_session``; its pane id."""
    where = ["new-session"] if new_session else ["new-window"]
    if session is not None and not new_session:
        where += ["-t", f"{session}:"]  # the session's next free window index
    out = await tmux(
        *where, "-d", "-P", "-F", "#{pane_id}", "-n", window_name, "-c", str(workdir), *argv,
        socket=socket,
    )  # fmt: skip
    return out.strip()


async def wait_for(channel: str, timeout_s: float, *, socket: str | None = None) -> bool:
    """Until the pane signals ``channel`` (``tmux wait-for -S``), at most ``timeout_s``
    seconds; whether it did."""
    with trio.move_on_after(timeout_s):
        await tmux("wait-for", channel, socket=socket)
        return True
    return False


async def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    """``git ARGS`` run in ``cwd``; its output ("" when it failed and not ``check``)."""
    try:
        done = await trio.run_process(
            ["git", *args], capture_stdout=True, capture_stderr=True, check=False, cwd=cwd
        )
    except FileNotFoundError:
        raise SpawnError("a worktree needs git, which is not on PATH", usage=True) from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise SpawnError(f"git {args[0]} failed: {message}")
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def worktree_path(top: Path, branch: str) -> Path:
    """Where ``branch``'s worktree goes: beside the repository, ``REPO-BRANCH``."""
    return top.parent / f"{top.name}-{branch.replace('/', '-')}"


async def add_worktree(branch: str, cwd: Path | None = None) -> Path:
    """A new git worktree for ``branch`` beside the top level of the repository
    ``cwd`` is in (the current directory when None): an existing branch is checked out
    there, a new one created."""
    top = (await git("rev-parse", "--show-toplevel", cwd=cwd, check=False)).strip()
    if not top:
        where = f"{cwd} is" if cwd is not None else "this is"
        raise SpawnError(f"a worktree needs a git repository, and {where} not in one", usage=True)
    path = worktree_path(Path(top), branch)
    ref = f"refs/heads/{branch}"
    exists = await git("rev-parse", "--verify", "--quiet", ref, cwd=cwd, check=False)
    if exists.strip():
        await git("worktree", "add", str(path), branch, cwd=cwd)
    else:
        await git("worktree", "add", "-b", branch, str(path), cwd=cwd)
    return path


BRANCH = re.compile(
    r"(?!-)(?!/)(?!.*//)(?!.*\.\.)(?!.*@\{)(?!.*(?:^|/)\.)(?!.*\.lock(?:/|$))"
    r"[A-Za-z0-9._/@+-]{1,200}(?<![/.])"
)
"""A branch name ``git check-ref-format --branch`` takes, narrowed to plain
characters: no space, ``~^:?*[\\``, ``..``, ``@{``, a part starting with ``.`` or
ending in ``.lock``, nor a name starting with ``-`` (read as an option)."""


def check_branch(branch: object) -> str | None:
    """Why ``branch`` cannot name a worktree's branch, or None when it can."""
    if not isinstance(branch, str) or not BRANCH.fullmatch(branch) or branch == "@":
        return (
            f"{str(branch)[:60]!r} is not a branch name git takes here: letters, digits "
            "and ._/@+- (like feature/auth), not starting with - or /, no .. nor //"
        )
    return None
