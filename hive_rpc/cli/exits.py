"""The ``hive-rpc`` command's exit codes, and which outcome or error maps to which.

Exit codes are part of the interface (docs/cli.md#exit-codes): shell scripts branch on
them without parsing text.  This module imports nothing of the hub, so every command
can use it.
"""

from __future__ import annotations

import sys
from typing import Any

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNREACHABLE = 4
EXIT_EXPIRED = 5
EXIT_CANCELLED = 6
EXIT_DECLINED = 7
EXIT_PENDING = 8
EXIT_BROKEN_PIPE = 128 + 13
"""stdout was closed early (``hive-rpc list --json | head``): what a shell reports for
a command killed by SIGPIPE (13 on every POSIX system; not read from ``signal``, whose
enums cost every command 0.5 ms to build), as Python ignores that signal and raises
instead."""


class CliError(Exception):
    """A command's refusal, worded for the human, with the exit code it ends with."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def outcome_code(record: dict[str, Any]) -> int:
    """The exit code a prompt's state maps to."""
    status = record["status"]
    if status == "responded":
        return EXIT_OK if record.get("action") == "accept" else EXIT_DECLINED
    return {"expired": EXIT_EXPIRED, "cancelled": EXIT_CANCELLED}.get(status, EXIT_PENDING)


def remote_error_code(kind: str | None) -> int:
    """The exit code for a hub's error of this kind (``HiveError.kind``)."""
    if kind == "store_unavailable":
        return EXIT_UNREACHABLE
    return EXIT_NOT_FOUND if kind == "not_found" else EXIT_REFUSED


_REFUSALS = (
    ("hive_rpc.hub", "HubAlreadyRunning"),
    ("hive_rpc.faces.editor_socket", "SocketInUse"),
    ("hive_rpc.store.base", "StoreCorrupt"),
)
"""Errors that refuse a hub's start or a store's use (exit 1).  Only the commands that
import these modules can raise them, so they are looked up among the modules already
loaded: a client command does not import the hub to learn that it did not fail there."""


def is_refusal(error: BaseException) -> bool:
    """Whether ``error`` is one of ``_REFUSALS`` (or a permission error)."""
    if isinstance(error, PermissionError):
        return True
    for module_name, class_name in _REFUSALS:
        module = sys.modules.get(module_name)
        kind = getattr(module, class_name, None) if module is not None else None
        if isinstance(kind, type) and isinstance(error, kind):
            return True
    return False
