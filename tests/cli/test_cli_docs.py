"""docs/cli.md covers the real command line: every command (nested ones included) and
every option of the argparse parser, each in its command's own section, and the
overview lists every command with its ``--help`` text."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hive_rpc import cli

DOC = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
COMMON = {"--socket", "--data-dir", "--no-start", "--json", "--hub-timeout", "-h", "--help"}
"""Flags documented once, under "Common options"."""


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str | None, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name), sub


def _commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        found.append((path, parser))
        for name, _, sub in _subcommands(parser):
            walk((*path, name), sub)

    walk((), cli._parser())
    return found


def _section(command: str) -> str:
    """The text of ``### `command` `` up to the next heading of that level or above."""
    m = re.search(rf"^### `{re.escape(command)}`\n(.*?)(?=^##? |^### |\Z)", DOC, re.M | re.S)
    assert m, f"docs/cli.md has no section ### `{command}`"
    return m.group(1)


def _overview() -> dict[str, str]:
    block = DOC.split("hive-rpc [-h] [--version] COMMAND ...\n", 1)[1].split("```", 1)[0]
    rows = (re.fullmatch(r"  (\S+)\s+(.*)", line) for line in block.splitlines())
    return {m.group(1): m.group(2) for m in rows if m}


def test_the_overview_lists_every_command_with_its_help() -> None:
    commands = {name: help_ for name, help_, _ in _subcommands(cli._parser())}
    assert _overview() == commands


@pytest.mark.parametrize(
    ("path", "parser"),
    [(path, parser) for path, parser in _commands() if path],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)
def test_every_command_and_flag_is_documented(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    section = _section(path[0])
    assert f"hive-rpc {' '.join(path)}" in section, "no synopsis line for the command"
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        for flag in action.option_strings:
            where = DOC.split("## Common options", 1)[1] if flag in COMMON else section
            assert re.search(rf"`{re.escape(flag)}[` \[]", where), (
                f"{flag} of `hive-rpc {' '.join(path)}` is not in its docs/cli.md section"
            )
        for choice in action.choices or ():
            if not isinstance(action.choices, dict):
                assert f"`{choice}`" in section, f"{action.dest} choice {choice!r}"


def test_top_level_flags_are_documented() -> None:
    assert "`--version`" in DOC
    assert "hive-rpc [-h] [--version] COMMAND ..." in DOC


def test_the_parser_knows_every_command_by_name_and_builds_only_the_one_that_runs() -> None:
    """parser.COMMANDS is the whole parser's list of commands, in order: for any other
    name the parser would build no command at all.  Given one, only its parser is
    built, whole (its own ``--help`` is the full parser's)."""
    from hive_rpc.cli.parser import COMMANDS, build_parser

    everything = {name: sub for name, _, sub in _subcommands(cli._parser())}
    assert tuple(everything) == COMMANDS
    for name in COMMANDS:
        (only,) = ((n, sub) for n, _, sub in _subcommands(build_parser(name)))
        assert only[0] == name
        assert only[1].format_help() == everything[name].format_help()
