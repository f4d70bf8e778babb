"""The copies of the protocol other languages keep agree with its one table
(protocol/methods.py), as lsprotocol's clients follow the LSP's: read from the sources
themselves, so a code, a method or a field renamed on one side fails here.

* vscode-ext/src/protocol.ts: ``ErrorCode``, the requests and notifications it sends
  (also checked against ``hive-rpc methods --json`` by the extension's own
  test/protocol.table.test.ts, with their params), the notifications it takes, the
  prompt record's fields and values, the params of ``hive/dismiss``,
  ``hive/connection`` and ``hive/health``;
* elisp/*.el: every error code it names, every method it sends (requests and
  notifications), every message of the hub it handles (``cl-defmethod`` on
  ``(eql 'NAME)``), and the EPC methods hive-rpc-epc.el calls.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hive_rpc.protocol.methods import (
    DISMISSAL,
    ERRORS,
    HUB_REQUESTS,
    METHODS,
    NOTIFICATIONS,
    PROMPT_RECORD,
    RECORD_VALUES,
)

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_TS = (ROOT / "vscode-ext" / "src" / "protocol.ts").read_text()
ELISP = {p.name: p.read_text() for p in sorted((ROOT / "elisp").glob("*.el"))}
CODES = {e.code for e in ERRORS}
CODE = re.compile(r"(?<![\d.])-32\d{3}\b")
"""A JSON-RPC error code written out: -32000..-32768."""


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


def _ts_block(start: str) -> str:
    """The text of ``start ... {`` up to its closing brace at the start of a line."""
    at = PROTOCOL_TS.index(start)
    return PROTOCOL_TS[at : PROTOCOL_TS.index("\n}", at) + 2]


def _ts_fields(interface: str) -> set[str]:
    body = _ts_block(f"export interface {interface} {{")
    return set(re.findall(r"^  (\w+)\??:", body, re.MULTILINE))


def _ts_union(name: str) -> set[str]:
    line = re.search(rf"^export type {name} = (.*);$", PROTOCOL_TS, re.MULTILINE)
    assert line is not None, name
    return set(re.findall(r"'([^']+)'", line.group(1)))


# --- vscode-ext/src/protocol.ts --------------------------------------------------------


def test_the_extensions_error_codes_are_the_tables() -> None:
    body = _ts_block("export const ErrorCode = {")
    named = dict(re.findall(r"^  (\w+): (-\d+),", body, re.MULTILINE))
    assert named, "no ErrorCode entries found"
    pairs = {(e.code, e.kind) for e in ERRORS}
    for name, code in named.items():
        assert (int(code), _snake(name)) in pairs, f"ErrorCode.{name} = {code}"


VSCODE_JSONRPC = {-32099, -32098, -32097, -32096}
"""vscode-jsonrpc's own codes (a message it could not write or read, a request lost
with its connection): the client library's, not the hub's."""


def test_every_code_the_extension_writes_is_in_the_table() -> None:
    for path in sorted((ROOT / "vscode-ext" / "src").glob("*.ts")):
        stray = sorted({int(c) for c in CODE.findall(path.read_text())} - CODES - VSCODE_JSONRPC)
        assert not stray, f"{path.name}: codes not in protocol/methods.py: {stray}"


def test_the_extensions_messages_are_the_tables() -> None:
    sent = re.findall(r"new (?:HubRequest|RequestType0?)<[^(]*\('([^']+)'", PROTOCOL_TS)
    told = re.findall(r"new HubNotification<[^(]*\('([^']+)'", PROTOCOL_TS)
    taken = re.findall(
        r"new NotificationType<[^(]*\('([^']+)'", _ts_block("export const ServerNotifications")
    )
    assert sent
    assert told
    assert taken
    assert [n for n in sent if n not in METHODS] == []
    assert [n for n in told if not METHODS[n].notification_ok] == []
    assert set(taken) == set(NOTIFICATIONS) - {"hive/agora"}  # the extension shows no Agora


def test_the_extensions_records_are_the_tables() -> None:
    assert _ts_fields("PromptRecord") == set(PROMPT_RECORD)
    assert _ts_fields("DismissParams") == set(DISMISSAL)
    assert _ts_fields("ConnectionParams") == set(NOTIFICATIONS["hive/connection"].params)
    assert _ts_fields("HealthParams") == set(NOTIFICATIONS["hive/health"].params)
    # 'unknown': a dismiss the extension makes itself for a prompt a new hub lost.
    assert _ts_union("PromptStatus") == {*RECORD_VALUES["status"], "unknown"}
    assert _ts_union("RespondAction") == set(RECORD_VALUES["action"])


# --- elisp/*.el --------------------------------------------------------------------------

NOT_THE_HUBS = {-1: "jsonrpc.el's own code for a request whose connection closed"}
SENDS = re.compile(r"\(jsonrpc-(request|async-request|notify)\s+[\w-]+\s+'([a-z]+/[A-Za-z]+)")
HANDLES = re.compile(r"\(_method \(eql '([a-z]+/[A-Za-z]+)\)\)")


def test_the_emacs_packages_error_codes_are_the_tables() -> None:
    consts = re.findall(r"\(defconst hive-rpc-error-([\w-]+) (-?\d+)", ELISP["hive-rpc-core.el"])
    assert consts, "no hive-rpc-error-* constants found"
    rows = {e.code: e for e in ERRORS}
    for name, text in consts:
        code = int(text)
        if code in NOT_THE_HUBS:
            continue
        row = rows.get(code)
        assert row is not None, f"hive-rpc-error-{name} = {code} is not in the table"
        if row.kind is not None:
            kinds = {e.kind for e in ERRORS if e.code == code}
            assert name.replace("-", "_") in kinds, f"hive-rpc-error-{name} = {code}"
        else:
            assert row.sender == "editor", f"hive-rpc-error-{name} = {code}"


@pytest.mark.parametrize("name", sorted(ELISP))
def test_every_code_an_elisp_file_writes_is_in_the_table(name: str) -> None:
    stray = sorted({int(c) for c in CODE.findall(ELISP[name])} - CODES)
    assert not stray, f"{name}: codes not in protocol/methods.py: {stray}"


def test_the_emacs_package_sends_the_tables_methods() -> None:
    sent = [(how, m) for text in ELISP.values() for how, m in SENDS.findall(text)]
    assert len(sent) > 10, "the pattern found too few calls"
    assert [m for _, m in sent if m not in METHODS] == []
    assert [m for how, m in sent if how == "notify" and not METHODS[m].notification_ok] == []


def test_the_emacs_package_handles_what_the_hub_sends() -> None:
    handled = {m for text in ELISP.values() for m in HANDLES.findall(text)}
    hub_sends = {n for n, m in NOTIFICATIONS.items() if m.sender == "hub"} | set(HUB_REQUESTS)
    assert handled == hub_sends


def test_the_epc_client_calls_the_tables_epc_names() -> None:
    called = set(re.findall(r"\(hive-rpc-epc-call '([\w-]+)", ELISP["hive-rpc-epc.el"]))
    assert called
    assert called <= {m.epc for m in METHODS.values() if m.epc is not None}
