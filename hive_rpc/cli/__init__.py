"""The ``hive-rpc`` command: run the hub, and ask, answer and inspect prompts from a shell.

Client commands start the hub in the background when none answers (``--no-start``
refuses), as emacsclient and gpg-agent do.  Exit codes are part of the interface, so
shell scripts can branch on an outcome without parsing text (see docs/cli.md).

The package: ``parser`` (the command line), ``commands`` (the client commands and
``methods``), ``serving`` (the hub and the faces, imported only by the commands that
run them), ``spawn`` (a child agent in a new tmux pane or Emacs buffer, registered
from inside it), ``hook`` (Claude Code's hook command: its permission requests and
questions asked in the editor), ``render`` (what is printed), ``exits`` (exit
codes).  A client command
such as ``hive-rpc status`` loads neither the hub nor a face nor the MCP SDK.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hive_rpc import __version__
from hive_rpc.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_CANCELLED,
    EXIT_DECLINED,
    EXIT_EXPIRED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CliError,
    is_refusal,
    outcome_code,
    remote_error_code,
)
from hive_rpc.cli.parser import build_parser
from hive_rpc.core.errors import HiveError, HubUnreachable
from hive_rpc.core.terminal_text import strip_controls
from hive_rpc.host.paths import DataDirUnusable, InsecurePath, default_data_dir, default_socket

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_CANCELLED",
    "EXIT_DECLINED",
    "EXIT_EXPIRED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_REFUSED",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "LIST_PAGE",
    "CliError",
    "__version__",
    "_parser",
    "_tmux_address",
    "main",
    "outcome_code",
]


def _parser() -> argparse.ArgumentParser:
    """The whole parser, every command's options included (the docs test walks it)."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv and not argv[0].startswith("-") else None
    # ``spawn NAME -- COMMAND...`` (and ``ling register NAME --tmux -- COMMAND...``):
    # argparse loses the words after ``--`` once they pass through a subparser, so
    # they are split off here, as ``env`` or ``ssh`` would take them: every word
    # after the first ``--`` is the command, as is.
    program = None
    if command in ("spawn", "ling") and "--" in argv:
        at = argv.index("--")
        argv, program = argv[:at], argv[at + 1 :]
    args = build_parser(command).parse_args(argv)
    if program is not None:
        if "program" not in args:
            print("hive-rpc: -- COMMAND goes with spawn or ling register", file=sys.stderr)
            return EXIT_USAGE
        args.program = [*args.program, *program]
    try:
        if "socket" in args:  # not ``methods``, which needs no hub
            args.socket = args.socket or default_socket()
            args.data_dir = args.data_dir or default_data_dir()
    except InsecurePath as e:
        print(f"hive-rpc: {e}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        return _run(args.func, args)
    except BaseException as raised:
        error = _sole_leaf(raised)
        if isinstance(error, KeyboardInterrupt):
            return 130
        if isinstance(error, BrokenPipeError):
            # The reader went away: no traceback, and nothing more to flush at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return EXIT_BROKEN_PIPE
        if isinstance(error, CliError):
            code = error.code
        elif isinstance(error, HiveError):
            code = remote_error_code(error.kind)
        elif (
            isinstance(error, HubUnreachable) or getattr(error, "kind", None) == "store_unavailable"
        ):
            code = EXIT_UNREACHABLE
        elif isinstance(error, InsecurePath | DataDirUnusable) or is_refusal(error):
            code = EXIT_REFUSED
        else:
            raise
        print(f"hive-rpc: {strip_controls(str(error))}", file=sys.stderr)
        return code


CO_COROUTINE = 0x80
"""``inspect.CO_COROUTINE``: an ``async def``'s code flag (``inspect`` costs 6 ms to import)."""


def _run(where: str, args: argparse.Namespace) -> int:
    """Import the command's module only now (``module:function``, parser.py), so a
    one-shot command loads what it runs; trio only for a coroutine function."""
    module, name = where.split(":")
    func: Callable[[argparse.Namespace], Any] = getattr(importlib.import_module(module), name)
    _set_up_logging(args)
    if not func.__code__.co_flags & CO_COROUTINE:
        code: int = func(args)
        return code
    import trio

    result: int = trio.run(func, args)
    return result


def _set_up_logging(args: argparse.Namespace) -> None:
    """The log format and level, for a command that logs: ``serve`` (``--log-level``)
    or one whose modules use ``logging``.  A one-shot command such as ``status``
    imports no logging, and does not pay its 6 to 8 ms for nothing."""
    if "log_level" not in args and "logging" not in sys.modules:
        return
    import logging

    logging.basicConfig(
        level=getattr(args, "log_level", "WARNING").upper(),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )


def __getattr__(name: str) -> Any:
    """``LIST_PAGE`` and ``_tmux_address`` live in commands.py, loaded on first use."""
    if name in ("LIST_PAGE", "_tmux_address"):
        from hive_rpc.cli import commands

        return getattr(commands, name)
    raise AttributeError(name)


def _sole_leaf(error: BaseException) -> BaseException:
    """The one real error inside nested exception groups (trio nurseries wrap them)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error
