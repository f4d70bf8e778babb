"""``hive-rpc setup AGENT``: register the hub with an agent, merged into the files the
agent keeps; one module per agent (claude_code, codex, gemini), what they share in
files.py."""

from __future__ import annotations

import argparse

from hive_rpc.cli.setup.claude_code import HOOK_EVENTS

__all__ = ["HOOK_EVENTS", "cmd_setup"]


async def cmd_setup(args: argparse.Namespace) -> int:
    """Files only, no hub: nothing here waits, so each runs as plain code."""
    if args.agent == "codex":
        from hive_rpc.cli.setup.codex import setup as codex_setup

        return codex_setup(args)
    if args.agent == "gemini":
        from hive_rpc.cli.setup.gemini import setup as gemini_setup

        return gemini_setup(args)
    from hive_rpc.cli.setup.claude_code import setup as claude_code_setup

    return claude_code_setup(args)
