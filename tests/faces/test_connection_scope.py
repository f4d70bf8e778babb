"""The connection-scoped methods (service/table.py's ``connection_method`` rows) are
run by exactly the faces the table names: each face's handlers are checked against
the table when its module loads, and a face refuses a method of the table that is
not its own instead of passing it on."""

from __future__ import annotations

import pytest

from hive_rpc.core.errors import MethodNotFound
from hive_rpc.faces import editor_socket, lsp_server
from hive_rpc.faces.connection_scope import connection_handlers, refuse_elsewhere
from hive_rpc.service import METHODS


def own(face: str) -> set[str]:
    return {n for n, row in METHODS.items() if row.scope == "connection" and face in row.faces}


def test_each_face_runs_exactly_the_rows_that_name_it() -> None:
    assert set(editor_socket._CONNECTION_METHODS) == own("socket")
    assert set(lsp_server._CONNECTION_METHODS) == own("lsp")
    assert own("socket") == {
        "hive/subscribe", "hive/unsubscribe", "hive/offerDelivery", "hive/proveApprover",
        "hive/openMcp", "hive/bufferChanged",
    }  # fmt: skip


def test_a_face_that_misses_a_row_or_adds_one_fails_at_once() -> None:
    with pytest.raises(RuntimeError, match="hive/offerDelivery"):
        connection_handlers("socket", {"hive/subscribe": 1, "hive/unsubscribe": 2})
    with pytest.raises(RuntimeError, match="method table gives it"):
        connection_handlers("lsp", {"hive/subscribe": 1, "hive/unsubscribe": 2, "hive/x": 3})


def test_a_method_of_another_face_is_refused_and_the_rest_pass() -> None:
    with pytest.raises(MethodNotFound, match=r"only: socket"):
        refuse_elsewhere("lsp", "hive/offerDelivery")
    refuse_elsewhere("lsp", "hive/ask")  # offered: no error
    refuse_elsewhere("lsp", "hive/frobnicate")  # unknown: the hub words that refusal
