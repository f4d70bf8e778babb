"""Method names have one form per face (docs/protocol.md, JSON-RPC rules, "Method
names"): the editor socket's ``area/lowerCamelCase`` as LSP spells its own, MCP
tools in snake_case, EPC methods as lower-case Lisp symbols.  Read from the method
table, the MCP tool groups and the documentation, so a new name in any of them that
breaks the rule fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hive_rpc.faces.mcp.tools import GROUP_OF
from hive_rpc.service import METHODS

DOCS = Path(__file__).resolve().parents[2] / "docs"
AREAS = ("hive", "agora", "ling", "event", "agent", "rule", "audit")
SOCKET_NAME = re.compile(rf"^(?:{'|'.join(AREAS)})/[a-z][a-zA-Z]*$")
MCP_TOOL = re.compile(r"^[a-z]+(?:_[a-z]+)*$")
EPC_NAME = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
DOCUMENTED = re.compile(r"^#{3} `([^`]+/[^`]+)`", re.MULTILINE)
"""A method's, notification's or hub request's own heading in protocol.md / agora.md."""


def documented_names() -> set[str]:
    return {
        name
        for page in ("protocol.md", "agora.md", "activity.md")
        for name in DOCUMENTED.findall((DOCS / page).read_text())
    }


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_is_area_slash_lower_camel_case(name: str) -> None:
    assert SOCKET_NAME.match(name), f"{name!r} breaks the rule area/lowerCamelCase"


def test_every_documented_name_follows_the_rule_too() -> None:
    names = documented_names()
    # The headings include the notifications and the hub's requests to editors.
    assert {"hive/prompt", "hive/dismiss", "hive/deliver"} <= names
    broken = sorted(n for n in names if not SOCKET_NAME.match(n))
    assert not broken, f"documented names that break area/lowerCamelCase: {broken}"


def test_mcp_tools_are_snake_case_and_epc_methods_lisp_symbols() -> None:
    assert GROUP_OF, "no MCP tools found"
    assert [t for t in GROUP_OF if not MCP_TOOL.match(t)] == []
    epc = [m.epc for m in METHODS.values() if m.epc is not None]
    assert epc, "no EPC names found"
    assert [n for n in epc if not EPC_NAME.match(n)] == []


def test_the_rule_refuses_what_it_should() -> None:
    """The patterns themselves: the forms a careless rename would bring in."""
    for bad in ("hive/await_ask", "hive/AwaitAsk", "hive.ask", "prompts/ask", "hive/"):
        assert not SOCKET_NAME.match(bad), bad
    assert not MCP_TOOL.match("hivemindAsk")
    assert not EPC_NAME.match("await_ask")
