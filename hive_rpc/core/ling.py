"""Lings: agents' terminals the hub can type into.  Pure: no I/O.

A ling is registered under a branch-like name (``main.feature.auth``): the name says
where it sits in a tree of agents, and its parent is the name without the last part
(``main.feature``), so children can report to their parent without any other
wiring.  Its ``kind`` says how to reach its terminal and ``address`` where:

==============  ==========================================================
kind            address
==============  ==========================================================
``tmux``        a pane (``%3``, or any tmux target such as ``work:1.0``)
``zellij``      ``SESSION:PANE_ID``
``emacs-buffer`` a buffer name in the Emacs connected to the hub
==============  ==========================================================

A ling is typed into only while the agent the human approved there holds the
terminal's foreground (docs/security.md, "Typing into terminals"): registration
records that process (``Agent``: pid, start time, executable), and ``verdict``
decides, at every delivery, from what the kernel says now (``Proc``), whether to
type, hold or refuse.  An allowlist by identity: whatever else holds the terminal
(``sleep``, ``less``, a python REPL, the shell the agent ran from) gets nothing.
``is_shell`` remains a second rule on the approved process itself: a shell is typed
into only when the human registered the ling with ``allow_shell``.  A ling also
records where its terminal is (``Place``), to find its pane again once its id is
gone (core/refind.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hive_rpc.core.errors import InvalidParams

KINDS = ("tmux", "zellij", "emacs-buffer")
MAX_NAME_CHARS = 128
MAX_ADDRESS_CHARS = 256
_NAME = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\Z")

SHELLS = frozenset(
    {
        "sh", "bash", "zsh", "fish", "dash", "ksh", "mksh", "pdksh", "oksh", "tcsh", "csh",
        "nu", "nushell", "pwsh", "powershell", "elvish", "xonsh", "yash", "osh", "ysh", "oil",
        "ion", "rc", "es", "busybox", "ash", "hush", "screen", "tmux", "login", "su", "sudo",
    }
)  # fmt: skip
"""Programs whose input is a command line: text typed into them runs.  ``su``,
``sudo``, ``login`` and a nested ``tmux``/``screen`` are here too: what they run
next is a shell, or a password prompt."""
SHELL_REFUSED = "a shell, not an agent, runs in this terminal"


def is_shell(command: str | None) -> bool:
    """Whether ``command`` (a program name as tmux, ``/proc/PID/comm`` or Zellij gives
    it: ``bash``, ``-zsh``, ``/usr/bin/fish``) is a shell.  None (unknown) is not."""
    if not command:
        return False
    name = command.strip().rsplit("/", 1)[-1].lstrip("-").lower()
    name = re.sub(r"(?:\.exe)?$", "", name)
    return name in SHELLS or re.fullmatch(r"(?:ba|z|k|c|tc|da)?sh[0-9.]*", name) is not None


def check_ling_name(name: object, *, param: str = "name") -> str:
    """A ling name: dot-separated parts of letters, digits, ``-`` and ``_``."""
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > MAX_NAME_CHARS:
        raise InvalidParams(
            f"{param}: {str(name)[:60]!r} is not a ling name; use dot-separated parts of "
            "letters, digits, '-' and '_' (like main.feature.auth)",
            param=param,
        )
    return name


def parent_of(name: str) -> str | None:
    """``main.feature.auth`` -> ``main.feature``; a root has no parent."""
    return name.rsplit(".", 1)[0] if "." in name else None


def short_name(name: str) -> str:
    """The last part of a ling's name, as events call it (``auth``)."""
    return name.rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class Proc:
    """A process as /proc tells it (relay/proc.py reads it; this module only judges)."""

    pid: int
    start: int
    """``/proc/PID/stat`` field 22, the start time in clock ticks since boot: with the
    pid it names one process, so a recycled pid is not the same process."""
    exe: str
    """``/proc/PID/exe``'s target ("" when it cannot be read)."""
    comm: str
    cmdline: str = ""
    """``/proc/PID/cmdline``, NULs as spaces: it tells a process that has ``exec``'d
    from the one that registered (``Agent.pending_exec``)."""


@dataclass(frozen=True, slots=True)
class Agent:
    """The process the human approved in a ling's terminal: typed into only while it
    holds the terminal's foreground."""

    pid: int
    start: int
    exe: str
    comm: str
    pending_exec: str | None = None
    """Set when the process registered is about to ``exec`` the agent (``hive-rpc
    spawn``, ``hive-rpc ling register NAME --tmux -- COMMAND``, a ``sh -c '...;
    exec AGENT'``): its command line then.  The first check that finds the same
    process (pid and start time) with another command line takes its executable as
    the agent's; until then nothing is typed."""

    @classmethod
    def of(cls, proc: Proc, *, pending_exec: bool = False) -> Agent:
        return cls(
            proc.pid,
            proc.start,
            proc.exe,
            proc.comm,
            pending_exec=proc.cmdline if pending_exec else None,
        )

    def describe(self) -> str:
        """``claude, pid 4242`` (``/usr/bin/node``), for people."""
        exe = f", {self.exe}" if self.exe and not self.exe.endswith("/" + self.comm) else ""
        return f"{self.comm}, pid {self.pid}{exe}"

    def record(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "start": self.start,
            "exe": self.exe,
            "comm": self.comm,
            "pending_exec": self.pending_exec,
        }

    @classmethod
    def from_record(cls, r: object) -> Agent | None:
        if not isinstance(r, dict):
            return None
        try:
            pending = r.get("pending_exec")
            return cls(
                int(r["pid"]),
                int(r["start"]),
                str(r["exe"]),
                str(r["comm"]),
                pending_exec=pending if isinstance(pending, str) else None,
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Place:
    """Where a ling's terminal was, besides its id: what finds the pane again once
    that id is gone (core/refind.py).  The terminal says it at registration and at
    each delivery; tmux gives all of it, Zellij its tab name, command and cwd."""

    session: str = ""
    window: str = ""
    """tmux's window name where a person gave it (not tmux's automatic name: the
    program running there), Zellij's tab name."""
    window_index: int | None = None
    pane_index: int | None = None
    """The pane's index in its window (tmux)."""
    cwd: str = ""
    """The pane's working directory, as the terminal says it."""
    command: str = ""
    """The program in its foreground, as the terminal names it (``claude``)."""

    def describe(self) -> str:
        """``session work, window w, pane 0`` for people."""
        window = self.window or ("" if self.window_index is None else str(self.window_index))
        parts = [f"session {self.session}" if self.session else ""]
        parts.append(f"window {window}" if window else "")
        parts.append(f"pane {self.pane_index}" if self.pane_index is not None else "")
        return ", ".join(p for p in parts if p) or "nowhere known"

    def record(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "window": self.window,
            "window_index": self.window_index,
            "pane_index": self.pane_index,
            "cwd": self.cwd,
            "command": self.command,
        }

    @classmethod
    def from_record(cls, r: object) -> Place | None:
        """None for a record kept before places were (or a broken one)."""
        if not isinstance(r, dict):
            return None

        def number(key: str) -> int | None:
            value = r.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        return cls(
            str(r.get("session") or ""),
            str(r.get("window") or ""),
            number("window_index"),
            number("pane_index"),
            str(r.get("cwd") or ""),
            str(r.get("command") or ""),
        )


TYPE, HOLD, REFUSE = "type", "hold", "refuse"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a message for a ling now: ``TYPE`` it, ``HOLD`` it (``reason``
    says why, for the waiting sender) or ``REFUSE`` it (``reason`` says why and what
    to do)."""

    action: str
    reason: str = ""
    bound: Agent | None = None
    """The agent's identity once a pending ``exec`` has happened: to be kept."""


LAUNCHERS = frozenset(
    {"env", "nice", "nohup", "setsid", "stdbuf", "ionice", "taskset", "chrt", "exec", "command"}
)
"""Programs that set something up and ``exec`` the program they are given in their
own place (``env VAR=1 claude``): never the agent itself."""


def will_exec(proc: Proc) -> bool:
    """Whether ``proc`` is about to ``exec`` another program in its own place: a
    launcher (``LAUNCHERS``), or a non-interactive shell running ``sh -c '...; exec
    AGENT'`` (a tmux pane's command string, vterm's ``stty ... && exec COMMAND``)."""
    name = proc.exe.rsplit("/", 1)[-1] or proc.comm
    if name in LAUNCHERS or proc.comm in LAUNCHERS:
        return True
    words = proc.cmdline.split()
    shell = is_shell(proc.comm) or is_shell(proc.exe)
    return shell and "-c" in words[1:3] and "exec" in words[2:]


def register_again(kind: str, name: str) -> str:
    """How the human registers ling ``name`` again (once its agent runs)."""
    if kind == "tmux":
        return (
            f"register the pane again: run `hive-rpc ling "
            f"register {name} --tmux` from the agent (its shell tool) or start the agent "
            f"with `hive-rpc ling register {name} --tmux -- COMMAND` in the pane"
        )
    if kind == "emacs-buffer":
        return f"register the buffer again: M-x hive-rpc-register-ling {name} in it"
    return "register it again"


def restarted(agent: Agent | None, now: Proc | None, foreground: Proc | None) -> Proc | None:
    """The new process of the same program that holds the terminal's foreground where
    the approved ``agent`` has exited (the agent restarted in its pane or buffer), or
    None.  Such a process is not typed into (``verdict``: the agent has exited); the
    hub asks the human to approve it, as it does a pane found in a gone one's place.
    Another program there (the shell the agent left, an editor) is not asked about."""
    if agent is None or agent.pending_exec is not None or foreground is None:
        return None
    if now is not None and now.start == agent.start:
        return None  # the agent lives
    if not agent.exe or foreground.exe != agent.exe:
        return None
    if (foreground.pid, foreground.start) == (agent.pid, agent.start):
        return None
    return foreground


def verdict(
    agent: Agent | None,
    now: Proc | None,
    foreground: Proc | None,
    *,
    kind: str,
    name: str,
    allow_shell: bool = False,
    no_foreground: str = "",
) -> Verdict:
    """May a message be typed into ling ``name`` (a ``kind`` terminal) now?

    ``agent`` is the identity approved at registration; ``now`` what /proc says of
    its pid now (None: no such process); ``foreground`` the leader of the terminal's
    foreground process group (None: the terminal cannot tell, ``no_foreground`` says
    why)."""
    where = {"tmux": "pane", "zellij": "pane", "emacs-buffer": "buffer"}.get(kind, "terminal")
    if agent is None:
        return Verdict(
            REFUSE,
            f"the hub does not know which program is the agent in ling {name}'s {where} "
            "(registered before hive-rpc recorded the agent's process, or the terminal "
            f"could not say it); not typed: once the agent runs there, "
            f"{register_again(kind, name)}",
        )
    who = f"the agent registered here ({agent.describe()})"
    if now is None or now.start != agent.start:
        return Verdict(
            REFUSE,
            f"{who} has exited; not typed: once the agent runs there, {register_again(kind, name)}",
        )
    bound: Agent | None = None
    if agent.pending_exec is not None:
        if now.cmdline == agent.pending_exec:
            return Verdict(
                HOLD,
                f"{who} has not started its program yet; it is typed once it has",
            )
        if will_exec(now):  # exec'd a launcher (env, sh -c 'exec ...'): not yet
            return Verdict(
                HOLD,
                f"{who} has not started its program yet ({now.comm} starts it); it is "
                "typed once it has",
                Agent.of(now, pending_exec=True),
            )
        bound = agent = Agent.of(now)
        who = f"the agent registered here ({agent.describe()})"
    if now.exe != agent.exe:
        return Verdict(
            REFUSE,
            f"{who} runs another program now ({now.exe or now.comm}); not typed: "
            f"once the agent runs there, {register_again(kind, name)}",
            bound,
        )
    if foreground is None:
        why = f" ({no_foreground})" if no_foreground else ""
        return Verdict(
            REFUSE,
            f"the {kind} terminal does not say which process holds its foreground{why}, "
            f"so the hub cannot check that {who} does; not typed",
            bound,
        )
    if foreground.pid != agent.pid or foreground.start != agent.start:
        return Verdict(
            HOLD,
            f"{who} is not in the terminal's foreground now: {foreground.comm} runs there "
            f"(pid {foreground.pid}); it is typed once the agent is back",
            bound,
        )
    if not allow_shell and (is_shell(agent.comm) or is_shell(agent.exe)):
        return Verdict(
            REFUSE,
            f"{SHELL_REFUSED} ({agent.comm}); not typed: start the agent there and "
            f"{register_again(kind, name)}, "
            "or register the ling with --allow-shell to type into the shell itself",
            bound,
        )
    return Verdict(TYPE, bound=bound)


@dataclass(frozen=True, slots=True)
class Ling:
    name: str
    kind: str
    address: str
    registered_at: float
    label: str | None = None
    """What events call it (``auth-module``); defaults to the last part of the name."""
    allow_shell: bool = False
    """The human let the relay type into this terminal's shell: the approved process
    (``agent``) may be a shell."""
    agent: Agent | None = None
    """The process approved as the agent (None: unknown, so nothing is typed)."""
    place: Place | None = None
    """Where its terminal was (session, window, pane), to find it again by once its
    id is gone (core/refind.py); None for a record kept before places were."""

    @property
    def display(self) -> str:
        return self.label or short_name(self.name)

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "address": self.address,
            "label": self.label,
            "parent": parent_of(self.name),
            "registered_at": self.registered_at,
            "allow_shell": self.allow_shell,
            "agent": self.agent.record() if self.agent is not None else None,
            "place": self.place.record() if self.place is not None else None,
        }

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> Ling:
        return cls(
            name=str(r["name"]),
            kind=str(r["kind"]),
            address=str(r["address"]),
            registered_at=float(r["registered_at"]),
            label=r.get("label"),
            allow_shell=r.get("allow_shell") is True,
            agent=Agent.from_record(r.get("agent")),
            place=Place.from_record(r.get("place")),
        )


def new_ling(
    name: object,
    kind: object,
    address: object,
    *,
    now: float,
    label: object = None,
    allow_shell: object = False,
    agent: Agent | None = None,
) -> Ling:
    """A checked ling record, or InvalidParams saying what is wrong."""
    check_ling_name(name)
    assert isinstance(name, str)
    if kind not in KINDS:
        raise InvalidParams(f"kind must be one of {', '.join(KINDS)}", param="kind")
    if not isinstance(address, str) or not address.strip() or len(address) > MAX_ADDRESS_CHARS:
        raise InvalidParams(
            f"address must be a non-empty string of at most {MAX_ADDRESS_CHARS} characters",
            param="address",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in address):
        raise InvalidParams("address must not contain control characters", param="address")
    if kind == "zellij" and ":" not in address:
        raise InvalidParams("a zellij address is SESSION:PANE_ID", param="address")
    if label is not None and (not isinstance(label, str) or not 0 < len(label) <= 64):
        raise InvalidParams("label must be a string of 1 to 64 characters", param="label")
    if not isinstance(allow_shell, bool):
        raise InvalidParams("allow_shell must be true or false", param="allow_shell")
    return Ling(
        name,
        str(kind),
        address,
        now,
        label if isinstance(label, str) else None,
        allow_shell=allow_shell,
        agent=agent,
    )
