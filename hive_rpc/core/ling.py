"""Lings: agents' terminals the hub can type into.  Pure: no I/O.

A ling is registered under a branch-like name (``main.feature.auth``): the name says
where it sits in a tree of agents, and its parent is the name without the last part
(``main.feature``), so children can report to their parent without any other wiring
(seed 004).  Its ``kind`` says how to reach its terminal and ``address`` where:

==============  ==========================================================
kind            address
==============  ==========================================================
``tmux``        a pane (``%3``, or any tmux target such as ``work:1.0``)
``zellij``      ``SESSION:PANE_ID``
``emacs-buffer`` a buffer name in the Emacs connected to the hub
==============  ==========================================================

A ling is typed into only while an agent runs in it: ``is_shell`` names the
programs whose input is a command line (docs/security.md, "Typing into
terminals"), and a terminal whose foreground program is one of them gets nothing
unless the human registered it with ``allow_shell``.
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
HUB_AGENT = "hive-rpc"
"""The agent id of the hub's own prompts: the consent questions that only the human
answers (MCP's ``hivemind_respond`` refuses them)."""


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
class Ling:
    name: str
    kind: str
    address: str
    registered_at: float
    label: str | None = None
    """What events call it (``auth-module``); defaults to the last part of the name."""
    allow_shell: bool = False
    """The human let the relay type into this terminal even while a shell runs there."""

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
        )


def new_ling(
    name: object,
    kind: object,
    address: object,
    *,
    now: float,
    label: object = None,
    allow_shell: object = False,
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
    )
