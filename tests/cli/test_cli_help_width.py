"""The parser's help is as wide as argparse made it, read without ``shutil``
(cli/parser.py ``terminal_columns``: argparse imported ``shutil`` for every option)."""

from __future__ import annotations

import argparse
import shutil

import pytest

from hive_rpc.cli.parser import build_parser, terminal_columns


@pytest.mark.parametrize("columns", [None, "40", "200", "0", "-3", "wide", ""])
def test_terminal_columns_is_shutils(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize("columns", ["50", "120"])
def test_help_as_argparse_formats_it(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    parser = build_parser("ask")
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    ask = commands.choices["ask"]
    ours = ask.format_help()
    ask.formatter_class = argparse.HelpFormatter
    assert ours == ask.format_help()
    widest = max(len(line) for line in ours.splitlines())
    assert int(columns) - 20 < widest <= int(columns) - 2
