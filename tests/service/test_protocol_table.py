"""The protocol's one table (protocol/methods.py) is plain data, and what the Python side
writes by hand agrees with it: the handlers attached to the rows, the prompt record
core/prompt.py makes, the dismissal service/hub.py sends, core/errors.py's classes,
protocol/jsonrpc.py's codes, the dashboard's HTTP statuses and docs/protocol.md's
headings and error table.  (The TypeScript and elisp copies: test_protocol_copies.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hive_rpc.core.errors import HiveError
from hive_rpc.protocol.methods import (
    CODES,
    DISMISSAL,
    ERRORS,
    HUB_REQUESTS,
    METHODS,
    NOTIFICATIONS,
    NUM,
    PROMPT_RECORD,
    RECORD_VALUES,
    Method,
)

if TYPE_CHECKING:
    from hive_rpc.core.prompt import Prompt

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_MD = (ROOT / "docs" / "protocol.md").read_text()

PROBE = """
import json, sys
import hive_rpc.protocol.methods
print(json.dumps(sorted(sys.modules)))
"""


def test_importing_the_table_loads_no_trio_registry_nor_handler() -> None:
    """A fresh interpreter: the table is read by one-shot clients (sync_client.py)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert "trio" not in loaded
    assert "dataclasses" not in loaded
    assert sorted(m for m in loaded if m.startswith("hive_rpc")) == [
        "hive_rpc",
        "hive_rpc.protocol",
        "hive_rpc.protocol.frozen",
        "hive_rpc.protocol.methods",
    ]


def test_every_hub_scoped_row_has_a_handler_and_nothing_else_does() -> None:
    from hive_rpc.service import HANDLERS

    hub_scoped = {name for name, row in METHODS.items() if row.scope == "hub"}
    assert set(HANDLERS) == hub_scoped


def test_the_rows_are_named_once_each() -> None:
    names = [*METHODS, *NOTIFICATIONS, *HUB_REQUESTS]
    assert len(names) == len(set(names))
    assert all(row.name == name for name, row in METHODS.items())


def _prompt(**fields: Any) -> Prompt:
    """A prompt with every required field, and ``fields``."""
    from hive_rpc.core.prompt import Prompt

    return Prompt(
        id="0123456789abcdef",
        agent_id="a",
        question="q?",
        created_at=1.0,
        deadline_at=2.0,
        max_deadline_at=3.0,
        **fields,
    )


def test_the_prompt_record_is_what_prompt_makes() -> None:
    from hive_rpc.core.prompt import Action, ExpiryReason, Kind, Status

    record = _prompt().to_record()
    assert list(record) == list(PROMPT_RECORD)
    assert {
        "status": tuple(s.value for s in Status),
        "kind": tuple(k.value for k in Kind),
        "action": tuple(a.value for a in Action),
        "expiry_reason": tuple(r.value for r in ExpiryReason),
    } == RECORD_VALUES
    for name, value in record.items():
        field = PROMPT_RECORD[name]
        assert field.required
        if value is None:
            assert field.nullable, name


def test_the_dismissal_is_what_the_hub_sends() -> None:
    from hive_rpc.core.prompt import Status
    from hive_rpc.service import dismissal

    assert list(dismissal(_prompt(status=Status.EXPIRED))) == list(DISMISSAL)
    assert NOTIFICATIONS["hive/dismiss"].params is DISMISSAL
    assert NOTIFICATIONS["hive/prompt"].params is PROMPT_RECORD


def test_the_editor_socket_sends_the_tables_notifications() -> None:
    from hive_rpc.faces import editor_socket

    assert {editor_socket.HEALTH, editor_socket.AGORA} <= set(NOTIFICATIONS)


def _classes(cls: type[HiveError]) -> list[type[HiveError]]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _classes(sub))]


def test_every_hive_error_class_has_its_row() -> None:
    import hive_rpc.faces.editor_socket
    import hive_rpc.service  # noqa: F401  (imports the modules that define the others)

    pairs = {(e.code, e.kind) for e in ERRORS}
    for cls in _classes(HiveError):
        if (cls.code, cls.kind) in pairs:
            continue
        # A code about the message or the link (no kind of its own: -32011) may carry
        # another rule's kind (limit_reached).
        assert (cls.code, None) in pairs, (cls.__name__, cls.code)
        assert cls.kind in CODES, (cls.__name__, cls.kind)
    for kind, code in CODES.items():
        assert any(c.kind == kind and c.code == code for c in _classes(HiveError)), kind


def test_a_bug_and_a_lost_hub_have_different_codes() -> None:
    from hive_rpc.core.errors import HubLost, InternalError

    assert InternalError.code == CODES["internal"] == -32603
    assert HubLost.code == CODES["hub_unreachable"] != InternalError.code
    assert -32099 <= HubLost.code <= -32000


def test_the_codecs_codes_are_in_the_table() -> None:
    from hive_rpc.protocol import jsonrpc

    codes = {e.code for e in ERRORS}
    named = {
        jsonrpc.PARSE_ERROR,
        jsonrpc.INVALID_REQUEST,
        jsonrpc.METHOD_NOT_FOUND,
        jsonrpc.INVALID_PARAMS,
        jsonrpc.INTERNAL_ERROR,
        jsonrpc.MESSAGE_TOO_LARGE,
        jsonrpc.OVERLOADED,
    }
    assert named <= codes


def test_the_dashboards_statuses_are_the_tables() -> None:
    from hive_rpc.faces.web import HTTP_STATUS

    http = {e.code: e.http for e in ERRORS}
    assert {code: http[code] for code in HTTP_STATUS} == HTTP_STATUS


def test_protocol_md_lists_every_code_and_message() -> None:
    errors = PROTOCOL_MD[PROTOCOL_MD.index("\n## Errors\n") :]
    errors = errors[: errors.index("\n## ", 1)]
    listed = {int(c) for c in re.findall(r"^\| (-\d+) \|", errors, re.MULTILINE)}
    sent_alone = {e.code for e in ERRORS if e.kind != "hive_error" and e.sender != "editor"}
    assert listed == sent_alone
    for e in ERRORS:
        if e.kind is not None and e.kind != "hive_error":
            assert f"| {e.code} | `{e.kind}` |" in errors, e
    headings = set(re.findall(r"^### `([^`]+)`", PROTOCOL_MD, re.MULTILINE))
    hub_sent = {n for n, m in NOTIFICATIONS.items() if m.sender == "hub"}
    assert hub_sent | set(HUB_REQUESTS) <= headings
    pages = PROTOCOL_MD + "".join(
        (ROOT / "docs" / page).read_text() for page in ("agora.md", "activity.md")
    )
    assert [n for n in METHODS if f"`{n}`" not in pages] == []


def test_the_clients_long_polls_and_retries_are_the_tables() -> None:
    from hive_rpc.client.sync_client import LONG_POLLS
    from hive_rpc.faces.backends import RETRYABLE

    assert {n: m.long_poll for n, m in METHODS.items() if m.long_poll} == LONG_POLLS
    assert {n for n, m in METHODS.items() if m.retryable} == RETRYABLE
    for name, param in LONG_POLLS.items():
        assert METHODS[name].params[param].type == "number", name


def test_a_long_poll_names_one_of_its_number_params() -> None:
    with pytest.raises(ValueError, match="long_poll 'wait_s' is not one of its number params"):
        Method("x/wait", params={"timeout_s": NUM}, doc="d", long_poll="wait_s")
