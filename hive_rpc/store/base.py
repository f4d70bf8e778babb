"""The narrow interface every prompt store implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from hive_rpc.core.prompt import Prompt, Status

RETENTION_BATCH = 500
"""Closed prompts deleted per statement by ``prune_closed``: small enough that the
hub's other writes never wait long behind one."""


RETAINED_DOCUMENTS = {"task": "completed_at"}
"""Document kinds ``prune_closed`` removes once old, with the body field saying when
each ended: task reports (runtime/activity.py ``TASK_DOC``), one per task id, which
would otherwise pile up for ever."""


@runtime_checkable
class ResultObjects(Protocol):
    """A store shared by several hubs that keeps large task results apart from their
    reports (NATS: the object store ``hive_results``), named by the SHA-256 of their
    JSON, which the report carries instead (``result_sha256``): a report stays small
    in the bucket every hub scans, and any hub reads the result when asked for it.
    ``prune_closed`` removes a result with the last report naming it.  A store
    without it (SQLite, memory) keeps each result inline in its report."""

    async def put_result(self, digest: str, text: str) -> None:
        """Keep ``text`` (a result's JSON) under ``digest``, its SHA-256 in hex."""

    async def get_result(self, digest: str, *, limit: int) -> str | None:
        """The JSON kept under ``digest``, or None (not kept, or over ``limit`` bytes)."""


class StoreCorrupt(RuntimeError):
    """The store's file is damaged or made by a newer hive-rpc: the hub cannot start
    on it.  The message says what to run."""


class PromptStore(Protocol):
    """Durable home of prompt records, and of the hub's other records as documents.

    The registry alone writes prompts (under its write lock); documents are kept by
    the registry (unseen expiries), the Agora (dialogues, lings) and the service
    (answer rules, the audit trail, askers, task reports); the hub prunes and closes.

    Methods are async so that network-backed stores fit; local ones may finish
    without yielding.
    """

    kind: str
    """Short name shown by ``hive-rpc status`` (``memory``, ``sqlite`` ...)."""

    async def insert(self, prompt: Prompt) -> None:
        """Save a new prompt.  Its id is new: ids are 64-bit random."""

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        """Replace the stored prompt if its stored status is still ``expected``.

        Returns None on success, or the stored prompt when it had moved on (another
        hub answered first): the caller reports that one instead.
        """

    async def get(self, prompt_id: str) -> Prompt | None:
        """The prompt with this id, whatever its status, or None."""

    async def pending(self) -> list[Prompt]:
        """Every pending prompt, oldest first: what a restarted hub resumes."""

    async def find(self, prefix: str) -> list[Prompt]:
        """Every prompt whose id starts with ``prefix``, whatever its status, oldest
        first: people copy ids in part, as they do git's commit ids."""

    async def counts(self) -> dict[str, int]:
        """How many prompts are in each status (every status present, zero included)."""

    async def prune_closed(self, before: float, *, limit: int = RETENTION_BATCH) -> int:
        """Delete up to ``limit`` old records: closed prompts created before ``before``
        (wall-clock seconds) and documents of a ``RETAINED_DOCUMENTS`` kind (task
        reports) that ended before it; how many went.  The hub calls it until it
        returns less than ``limit`` (``--retain``), so the store does not grow without
        end.  (The memory store keeps its documents: they end with the hub.)"""

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        """Save (insert or replace) one JSON document of ``kind`` (``dialogue``,
        ``ling`` ...) under ``key``: the hub's other durable records."""

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        """Every document of ``kind``, in the order they were first saved."""

    async def get_document(self, kind: str, key: str) -> dict[str, Any] | None:
        """The document of ``kind`` under ``key``, or None (none, or unreadable)."""

    async def delete_document(self, kind: str, key: str) -> bool:
        """Remove one document; False when there was none."""

    async def aclose(self) -> None:
        """Release files or connections."""


class StoreChange(Protocol):
    """One change seen in a shared store, made by any hub (this one included)."""

    @property
    def kind(self) -> str:
        """``prompt`` or ``document``."""

    @property
    def key(self) -> str:
        """The prompt id, or the document's key."""

    @property
    def doc_kind(self) -> str | None:
        """For a document: its kind (``dialogue``, ``ling`` ...)."""

    @property
    def value(self) -> dict[str, Any] | None:
        """The new record; None when it was deleted."""


class SharedStore(PromptStore, Protocol):
    """A store several hubs use at once (NATS KV): it tells each hub what changed."""

    def changes(self) -> AbstractAsyncContextManager[AsyncIterator[StoreChange]]:
        """Every change after the call, by anyone, until the block ends."""
