"""``hive-rpc spawn NAME [--worktree BRANCH] -- COMMAND...``: start a child agent in a
new tmux pane and register that pane as ling NAME, a child of the caller's ling.

The human runs it, so the human consents to the new ling, but the hub cannot tell a
human's ``spawn`` from an agent's request by anything the command says
(docs/security.md, "Typing into terminals").  What it does trust is a registration
made from inside the terminal it names: the kernel says the registering process
runs there.  So the new pane does not start COMMAND directly: it starts
``python -m hive_rpc.cli.spawned_pane``, which registers the pane from inside it as
``hive-rpc ling register NAME --tmux`` would, then ``exec``s COMMAND in its place
(same process, same terminal).  No new trust rule: a spawned ling is consented to
exactly as one registered by hand in its pane.

The command waits for the pane's registration without polling: the pane signals a
``tmux wait-for`` channel once it has tried, and the command then reads the hub's
answer from ``ling/list``.  With ``--worktree BRANCH`` the pane starts in a new git
worktree of the current repository (``git worktree add``), next to it as
``REPO-BRANCH``; an existing branch is checked out there, a new one created.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import uuid
from pathlib import Path
from typing import Any

import trio

from hive_rpc.cli.exits import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CliError
from hive_rpc.cli.oneshot import hub_timeout
from hive_rpc.cli.render import print_json
from hive_rpc.client.async_client import HubClient, connect_or_start
from hive_rpc.client.spawned_pane import pane_argv
from hive_rpc.core.errors import InvalidParams
from hive_rpc.core.ling import check_ling_name, parent_of, short_name
from hive_rpc.host import spawn_pane
from hive_rpc.host.spawn_pane import SpawnError

REGISTER_TIMEOUT_S = 30.0
"""How long ``spawn`` waits for the new pane to register itself."""


async def client_for(args: argparse.Namespace) -> HubClient:
    """A connection to the hub, starting one unless ``--no-start`` (the trio client:
    this command waits on tmux and git beside the hub)."""
    return await connect_or_start(
        args.socket, args.data_dir, start=not args.no_start, timeout_s=hub_timeout(args)
    )


async def cmd_spawn(args: argparse.Namespace) -> int:

    try:
        check_ling_name(args.name)
    except InvalidParams as e:
        raise CliError(e.message, EXIT_USAGE) from None
    command = list(args.program)
    if not command:
        raise CliError(
            "give the command to run after --: hive-rpc spawn NAME -- COMMAND", EXIT_USAGE
        )
    if args.worktree and (why := spawn_pane.check_branch(args.worktree)) is not None:
        raise CliError(f"--worktree: {why}", EXIT_USAGE)
    try:
        return await _spawn(args, command)
    except SpawnError as e:
        raise CliError(e.message, EXIT_USAGE if e.usage else EXIT_REFUSED) from None


async def _spawn(args: argparse.Namespace, command: list[str]) -> int:
    async with await client_for(args) as client:
        parent = parent_of(args.name)
        known = {x["name"] for x in await client.call("ling/list", {})}
        workdir = Path.cwd()
        if args.worktree:
            workdir = await spawn_pane.add_worktree(args.worktree)
        if args.emacs:
            where = await open_emacs_buffer(args.name, command, workdir)
            record = await _registered(client, args.name)
            if record is None or record.get("state") != "registered":
                raise CliError(f"started {where}, but Emacs did not register it", EXIT_REFUSED)
            if args.json:
                print_json({**record, "workdir": str(workdir), "command": command})
            else:
                print(f"{args.name}: {where} running {shlex.join(command)} in {workdir}")
            return EXIT_OK
        channel = f"hive-rpc-spawn-{uuid.uuid4().hex}"
        pane = await open_pane(args, command, workdir, channel)
        signalled = await spawn_pane.wait_for(channel, REGISTER_TIMEOUT_S)
        record = await _registered(client, args.name)
    if record is None or record.get("state") != "registered":
        why = "its registration failed" if signalled else "it did not register in time"
        raise CliError(f"started tmux pane {pane}, but {why}: see that pane", EXIT_REFUSED)
    if args.json:
        print_json({**record, "pane": pane, "workdir": str(workdir), "command": command})
        return EXIT_OK
    print(f"{args.name}: tmux {record['address']} running {shlex.join(command)} in {workdir}")
    if parent is not None and parent not in known:
        print(
            f"hive-rpc: note: its parent {parent} is not a registered ling yet, so its "
            "events reach no one until it is",
            file=sys.stderr,
        )
    return EXIT_OK


async def open_pane(
    args: argparse.Namespace, command: list[str], workdir: Path, channel: str
) -> str:
    """A new tmux window (in the current tmux session when run inside tmux, else a new
    session) whose pane registers itself and then runs ``command``; its pane id."""
    inside = pane_argv(
        args.name, str(args.socket), str(args.data_dir), args.label or "", channel, command,
        module="hive_rpc.cli.spawned_pane",
    )  # fmt: skip
    new_session = not os.environ.get("TMUX")
    return await spawn_pane.open_window(
        inside, workdir, short_name(args.name), new_session=new_session
    )


def elisp_string(text: str) -> str:
    """``text`` as an Emacs Lisp string literal: only ``\\`` and ``"`` need escaping."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def open_emacs_buffer(name: str, command: list[str], workdir: Path) -> str:
    """Ask the human's running Emacs (``emacsclient``, its server) to start ``command``
    in a terminal buffer and register it as ling ``name`` (``hive-rpc-spawn-ling``):
    what the human would do there with M-x.  The hub is not on this path: the words
    go from the human's command line to the human's Emacs."""
    form = (
        f"(hive-rpc-spawn-ling {elisp_string(name)} "
        f"(list {' '.join(elisp_string(w) for w in command)}) {elisp_string(str(workdir))} t)"
    )
    try:
        done = await trio.run_process(
            ["emacsclient", "--eval", form], capture_stdout=True, capture_stderr=True, check=False
        )
    except FileNotFoundError:
        raise CliError("--emacs needs emacsclient, which is not on PATH", EXIT_USAGE) from None
    said = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
    if done.returncode != 0 or said.startswith("*ERROR*"):
        raise CliError(
            f"Emacs did not start it: {said or 'emacsclient failed'} (is the Emacs server "
            "running, with hive-rpc-mode on? M-x server-start; or run M-x "
            "hive-rpc-spawn-ling in Emacs)",
            EXIT_REFUSED,
        )
    return f"Emacs buffer *ling {name}*"


async def _registered(client: HubClient, name: str) -> dict[str, Any] | None:
    for record in await client.call("ling/list", {}):
        if record["name"] == name:
            found: dict[str, Any] = record
            return found
    return None
