"""An in-memory store: for tests and throwaway hubs (``--store memory``)."""

from __future__ import annotations

from typing import Any

from hive_rpc.core.prompt import Prompt, Status
from hive_rpc.store.base import RETENTION_BATCH


class MemoryStore:
    """Prompts in a dict.  Records are immutable, so no copies are needed."""

    kind = "memory"

    def __init__(self) -> None:
        self._prompts: dict[str, Prompt] = {}
        self._documents: dict[tuple[str, str], dict[str, Any]] = {}

    async def insert(self, prompt: Prompt) -> None:
        if prompt.id in self._prompts:
            raise KeyError(f"prompt {prompt.id} already exists")
        self._prompts[prompt.id] = prompt

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        current = self._prompts[prompt.id]
        if current.status is not expected:
            return current
        self._prompts[prompt.id] = prompt
        return None

    async def get(self, prompt_id: str) -> Prompt | None:
        return self._prompts.get(prompt_id)

    async def pending(self) -> list[Prompt]:
        found = [p for p in self._prompts.values() if p.status is Status.PENDING]
        return sorted(found, key=lambda p: p.created_at)

    async def find(self, prefix: str) -> list[Prompt]:
        found = [p for i, p in self._prompts.items() if i.startswith(prefix)]
        return sorted(found, key=lambda p: p.created_at)

    async def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for p in self._prompts.values():
            counts[p.status.value] += 1
        return counts

    async def prune_closed(self, before: float, *, limit: int = RETENTION_BATCH) -> int:
        old = [i for i, p in self._prompts.items() if not p.is_pending and p.created_at < before][
            :limit
        ]
        for prompt_id in old:
            del self._prompts[prompt_id]
        return len(old)

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        self._documents[kind, key] = body

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        return [body for (k, _), body in self._documents.items() if k == kind]

    async def get_document(self, kind: str, key: str) -> dict[str, Any] | None:
        return self._documents.get((kind, key))

    async def delete_document(self, kind: str, key: str) -> bool:
        return self._documents.pop((kind, key), None) is not None

    async def aclose(self) -> None:
        self._prompts.clear()
        self._documents.clear()
