"""The embedded default store: one SQLite file in WAL mode under the data dir.

Why this survives ``kill -9``: every change is its own committed transaction before
the registry reports it, and in WAL mode a commit is in the operating system's hands
once ``COMMIT`` returns, even with ``synchronous=NORMAL`` (which only gives up the
last transactions on power loss, not on a process crash).  Statements are small and
indexed, so they run inline on the trio thread: a round trip to a worker thread would
cost more than the write itself (see docs/benchmarks.md).

What does not belong on the trio thread is the WAL checkpoint (copying the log back
into the database, with an fsync), which SQLite would otherwise run inside every
~200th commit and stall the whole hub for milliseconds.  While ``run_checkpoints`` is
running (the hub starts it), that task runs a PASSIVE checkpoint on its own
connection in a worker thread every ``CHECKPOINT_EVERY`` commits.

A checkpoint that runs while writes go on never catches up with the last of them,
and SQLite only rewinds the WAL once one has, so under sustained writes the log
would grow without end.  SQLite's own automatic checkpoint stays on as a backstop,
at ``BACKSTOP_PAGES`` instead of its usual 1000: when it fires on the trio thread,
the worker has already copied almost every frame, so it is short, and it rewinds
the log; ``journal_size_limit`` then gives the file's space back.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import trio

from hive_rpc.core.prompt import Prompt, Status

CHECKPOINT_EVERY = 1000
"""Commits between two checkpoints (SQLite's own default is 1000 WAL pages)."""
BACKSTOP_PAGES = 4000
"""WAL size (pages) at which SQLite checkpoints inline while run_checkpoints runs."""
WAL_LIMIT_BYTES = 64 << 20
"""What a rewound WAL file is truncated to (``journal_size_limit``)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    id         TEXT PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at REAL NOT NULL,
    record     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS prompts_status ON prompts (status, created_at);
CREATE INDEX IF NOT EXISTS prompts_agent ON prompts (agent_id, created_at);
CREATE TABLE IF NOT EXISTS documents (
    kind TEXT NOT NULL,
    key  TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, key)
);
"""


def _dump(prompt: Prompt) -> str:
    # ASCII escapes keep any string Python can hold storable, lone surrogates included.
    return json.dumps(prompt.to_record(), separators=(",", ":"))


def _load(text: str) -> Prompt:
    return Prompt.from_record(json.loads(text))


class SqliteStore:
    """Prompts as JSON records in one table, with status and agent pulled out for queries."""

    kind = "sqlite"

    def __init__(self, path: Path, *, checkpoint_every: int = CHECKPOINT_EVERY) -> None:
        self.path = path
        self.checkpoint_every = checkpoint_every
        self.checkpoints = 0
        self._commits = 0
        self._checkpoint_due = trio.Event()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(path, isolation_level=None)
        path.chmod(0o600)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)

    def _committed(self) -> None:
        self._commits += 1
        if self._commits >= self.checkpoint_every:
            self._checkpoint_due.set()

    async def run_checkpoints(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run WAL checkpoints in a worker thread until cancelled (see the module doc)."""
        checkpointer = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
        try:
            task_status.started()
            while True:
                await self._checkpoint_due.wait()
                self._checkpoint_due = trio.Event()
                self._commits = 0
                await trio.to_thread.run_sync(
                    checkpointer.execute, "PRAGMA wal_checkpoint(PASSIVE)"
                )
                self.checkpoints += 1
        finally:
            self._db.execute("PRAGMA wal_autocheckpoint=1000")
            checkpointer.close()

    async def insert(self, prompt: Prompt) -> None:
        self._db.execute(
            "INSERT INTO prompts (id, agent_id, status, created_at, record) VALUES (?,?,?,?,?)",
            (prompt.id, prompt.agent_id, prompt.status.value, prompt.created_at, _dump(prompt)),
        )
        self._committed()

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        cur = self._db.execute(
            "UPDATE prompts SET status = ?, record = ? WHERE id = ? AND status = ?",
            (prompt.status.value, _dump(prompt), prompt.id, expected.value),
        )
        if cur.rowcount == 1:
            self._committed()
            return None
        current = await self.get(prompt.id)
        if current is None:
            raise KeyError(f"prompt {prompt.id} is not in the store")
        return current

    async def get(self, prompt_id: str) -> Prompt | None:
        row = self._db.execute("SELECT record FROM prompts WHERE id = ?", (prompt_id,)).fetchone()
        return _load(row[0]) if row else None

    async def pending(self) -> list[Prompt]:
        rows = self._db.execute(
            "SELECT record FROM prompts WHERE status = 'pending' ORDER BY created_at"
        ).fetchall()
        return [_load(r[0]) for r in rows]

    async def find(self, prefix: str) -> list[Prompt]:
        # A range on the primary key, so the lookup reads the matches, not the table:
        # ids starting with prefix sort from prefix up to prefix + the last code point
        # (hub ids are hex; the substr check keeps the answer exact for any prefix).
        rows = self._db.execute(
            "SELECT record FROM prompts WHERE id >= ?1 AND id <= ?1 || ?2"
            " AND substr(id, 1, length(?1)) = ?1 ORDER BY created_at",
            (prefix, "\U0010ffff"),
        ).fetchall()
        return [_load(r[0]) for r in rows]

    async def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for status, n in self._db.execute("SELECT status, count(*) FROM prompts GROUP BY status"):
            counts[status] = n
        return counts

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        text = json.dumps(body, separators=(",", ":"))
        self._db.execute(
            "INSERT INTO documents (kind, key, body) VALUES (?,?,?) "
            "ON CONFLICT (kind, key) DO UPDATE SET body = excluded.body",
            (kind, key, text),
        )
        self._committed()

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT body FROM documents WHERE kind = ? ORDER BY rowid", (kind,)
        ).fetchall()
        return [json.loads(r[0]) for r in rows]

    async def delete_document(self, kind: str, key: str) -> bool:
        cur = self._db.execute("DELETE FROM documents WHERE kind = ? AND key = ?", (kind, key))
        self._committed()
        return cur.rowcount == 1

    async def aclose(self) -> None:
        self._db.close()
