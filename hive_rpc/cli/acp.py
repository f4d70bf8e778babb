"""``hive-rpc acp -- AGENT [ARGS]``: run an ACP agent behind the proxy of hive_rpc/acp/,
on this process's stdio, for an ACP client (agent-shell, Zed) that starts this
command instead of the agent (docs/acp.md).

A long-lived process, so it runs on trio and pays its imports once.  It starts no
hub: a hub started now would have no editor to show a question, and ``--unanswered``
already says what happens when none answers.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import trio

from hive_rpc.acp import wire
from hive_rpc.acp.proxy import ProxyConfig, run_proxy, say
from hive_rpc.cli.exits import EXIT_USAGE
from hive_rpc.core.agents import name_suffix


def agent_argv(words: list[str]) -> list[str]:
    """The agent's command line: the words after ``--`` (argparse keeps the ``--``)."""
    return words[1:] if words[:1] == ["--"] else words


RUNNERS = frozenset(("node", "npx", "bunx", "bun", "deno", "uvx", "python", "python3", "env"))
"""Programs that run the agent rather than being it (``npx @google/gemini-cli``)."""


def agent_name(argv: list[str]) -> str:
    """The agent program's name: the first word that is neither a runner, an option
    nor a ``VAR=value``, without its path, npm scope, version or script suffix
    (``npx @google/gemini-cli@latest --acp``: ``gemini-cli``)."""
    for word in argv:
        if word.startswith("-") or ("=" in word and not word.startswith("@")):
            continue
        name = word[1:].partition("/")[2] if word.startswith("@") else Path(word).name
        name = name.split("@")[0]
        if name.endswith((".js", ".mjs", ".cjs", ".ts", ".py")):
            name = name.rsplit(".", 1)[0]
        if name and name not in RUNNERS:
            return name[:64]
    return Path(argv[0]).name[:64] or "acp"


def default_agent_id(argv: list[str]) -> str:
    """The agent id of this run: the agent's name plus a random suffix, one per proxy
    (its sessions share it), as ``hive-rpc mcp`` names a client."""
    return f"{agent_name(argv)}-{name_suffix()}"


def mcp_command() -> tuple[str, list[str]]:
    """``hive-rpc`` by absolute path: the script beside this Python (a venv's or
    pipx's bin), else this Python running the package (ACP wants an absolute path)."""
    script = Path(sys.executable).parent / "hive-rpc"
    if script.is_file() and os.access(script, os.X_OK):
        return str(script), []
    return sys.executable, ["-m", "hive_rpc"]


def mcp_entry(args: argparse.Namespace, agent: str) -> dict[str, object]:
    """The MCP server added to each session: ``hive-rpc mcp`` on this proxy's hub,
    as this proxy's agent, so its asks and the permission prompts are one agent.
    ``--no-start``: with no hub running, the proxy leaves permission requests to the
    client's own dialog; a hub the agent's server started would take them instead,
    where no editor shows them, until the proxy's ``--timeout`` (measured with Gemini
    CLI 0.61.0, which starts the server with the session)."""
    command, head = mcp_command()
    where = ["--socket", str(Path(args.socket).absolute())]
    where += ["--data-dir", str(Path(args.data_dir).absolute()), "--no-start"]
    return wire.mcp_server(command, [*head, "mcp", *where, "--agent", agent])


async def cmd_acp(args: argparse.Namespace) -> int:
    argv = agent_argv(list(args.agent))
    if not argv:
        print(
            "hive-rpc acp: name the agent after --: hive-rpc acp -- gemini --acp", file=sys.stderr
        )
        return EXIT_USAGE
    agent = args.agent_id or default_agent_id(argv)
    config = ProxyConfig(
        argv=argv,
        socket=Path(args.socket),
        agent_id=agent,
        timeout_s=args.timeout,
        unanswered=args.unanswered,
        mcp_entry=None if args.no_mcp else mcp_entry(args, agent),
        home=os.environ.get("HOME"),
    )
    client_in = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    client_out = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
    code = 0
    async with trio.open_nursery() as nursery:

        async def stop_on_signal() -> None:
            # SIGTERM's default would end this process and leave the agent's tree.
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP, signal.SIGINT) as got:
                async for signum in got:
                    say(f"got {signal.Signals(signum).name}; stopping the agent")
                    nursery.cancel_scope.cancel()

        async def proxy() -> None:
            nonlocal code
            try:
                code = await run_proxy(config, client_in, client_out)
            except OSError as e:  # the agent could not be started
                say(f"cannot start {argv[0]}: {e}")
                code = 127
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_on_signal)
        nursery.start_soon(proxy)
    return code
