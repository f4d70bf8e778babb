"""The connection-scoped methods a face runs itself, checked against the method table.

``hive/subscribe``, ``hive/unsubscribe`` and ``hive/offerDelivery`` are about the
connection they arrive on, so the service cannot run them: each streaming face does
(service/table.py, ``connection_method``, names which).  A face declares its handlers
with ``connection_handlers`` when its module loads, and a row that names the face
without a handler there (or a handler the table does not give the face) fails at
import, not at a client's first request.  ``refuse_elsewhere`` is what a face answers
for a method the table says it does not offer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from hive_rpc.core.errors import MethodNotFound
from hive_rpc.service import METHODS
from hive_rpc.service.table import Face

T = TypeVar("T")


def connection_handlers(face: Face, handlers: Mapping[str, T]) -> Mapping[str, T]:
    """``handlers``, once checked to be exactly the connection-scoped methods the
    table gives ``face``."""
    declared = {
        name for name, row in METHODS.items() if row.scope == "connection" and face in row.faces
    }
    if set(handlers) != declared:
        raise RuntimeError(
            f"the {face} face handles {sorted(handlers)} but the method table gives it "
            f"{sorted(declared)}"
        )
    return handlers


def refuse_elsewhere(face: Face, method: str) -> None:
    """Raise MethodNotFound if the table has ``method`` but not for ``face``."""
    row = METHODS.get(method)
    if row is not None and face not in row.faces:
        raise MethodNotFound(
            f"{method} is not offered here (only: {', '.join(row.faces) or 'none'})",
            method=method,
        )


__all__ = ["connection_handlers", "refuse_elsewhere"]
