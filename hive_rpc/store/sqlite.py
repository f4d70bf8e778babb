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

That backstop alone fails when the machine is busy: it cannot run while the worker
holds the checkpoint lock, and a starved worker holds it long.  So two rules make the
bound hold whatever the load: writers wait (a trio wait, not a blocked thread) once
they are ``CHECKPOINT_LAG`` checkpoints' worth of commits ahead of a running
checkpoint, and when a checkpoint finds the log at ``BACKSTOP_PAGES`` or more, the
log is rewound (``wal_checkpoint(TRUNCATE)``, short: the frames are already copied)
on the trio thread at once, before the next checkpoint can take SQLite's checkpoint
lock.  (The rewind once waited for the next write, which raced the next checkpoint:
a TRUNCATE that finds the lock held reports "busy" and does nothing, so under load
the log grew past the bound.)  A rewind that is refused (another process reading)
is tried again after the next checkpoint.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from hive_rpc.core.errors import PromptUnreadable, StoreWriteFailed
from hive_rpc.core.prompt import Prompt, Status
from hive_rpc.store.base import RETAINED_DOCUMENTS, RETENTION_BATCH, StoreCorrupt
from hive_rpc.store.records import ENCODE, UnreadableRecord, decode_prompt, encode_prompt

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 1000
"""Commits between two checkpoints (SQLite's own default is 1000 WAL pages)."""
BACKSTOP_PAGES = 4000
"""WAL size (pages) at which SQLite checkpoints inline while run_checkpoints runs."""
CHECKPOINT_LAG = 2
"""How many ``checkpoint_every``s of commits writers may run ahead of a running
checkpoint before they wait for it (see the module doc)."""
WAL_LIMIT_BYTES = 64 << 20
"""What a rewound WAL file is truncated to (``journal_size_limit``)."""

BASE_SCHEMA = """
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
"""Schema version 0: the tables as every hive-rpc before versioning made them."""

MIGRATIONS: tuple[str, ...] = (
    # 0 -> 1: rows a hub could not read are set aside here, with the reason, instead
    # of stopping its restart; ``hive-rpc doctor`` lists them.
    """
    CREATE TABLE IF NOT EXISTS quarantine (
        source         TEXT NOT NULL,
        id             TEXT NOT NULL,
        record         TEXT,
        reason         TEXT NOT NULL,
        quarantined_at REAL NOT NULL,
        PRIMARY KEY (source, id)
    );
    """,
)
"""``MIGRATIONS[n]`` takes a file from schema version n to n+1 (``PRAGMA
user_version``), each in its own transaction.  Add one for every change to the
tables, never edit one that shipped: a user's file may be at any earlier version."""
SCHEMA_VERSION = len(MIGRATIONS)

_INSERT_PROMPT = "INSERT INTO prompts (id, agent_id, status, created_at, record) VALUES (?,?,?,?,?)"
_UPDATE_PROMPT = "UPDATE prompts SET status = ?, record = ? WHERE id = ? AND status = ?"
_STATUS_TEXT = {status: status.value for status in Status}
"""The ``status`` column's text: a dict lookup costs less than the enum's ``value``."""

_CORRUPT = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def is_corruption(error: sqlite3.Error) -> bool:
    """True if SQLite says the file is damaged (or not a database at all)."""
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith(tuple(_CORRUPT)) or "malformed" in str(error)


def corrupt(path: Path, error: sqlite3.Error) -> StoreCorrupt:
    """The error a hub gives for a damaged file: what happened and what to run."""
    return StoreCorrupt(
        f"the prompt store {path} is damaged ({error}); run `hive-rpc doctor` to see "
        "what can be read, then `hive-rpc doctor --recover` (with the hub stopped) to "
        "copy every readable row into a new file, keeping the old one"
    )


def migrate(db: sqlite3.Connection, path: Path) -> int:
    """Bring the file at ``db`` to ``SCHEMA_VERSION``; the version it had."""
    found = int(db.execute("PRAGMA user_version").fetchone()[0])
    if found > SCHEMA_VERSION:
        raise StoreCorrupt(
            f"the prompt store {path} was made by a newer hive-rpc (schema version "
            f"{found}; this one knows up to {SCHEMA_VERSION}): upgrade hive-rpc, or "
            "point --data-dir elsewhere"
        )
    new = (
        found == 0
        and not db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'prompts'"
        ).fetchone()
    )
    if found == 0:
        db.executescript(BASE_SCHEMA)
    for version in range(found, SCHEMA_VERSION):
        db.executescript(
            f"BEGIN; {MIGRATIONS[version]}; PRAGMA user_version = {version + 1}; COMMIT;"
        )
        if not new:  # a new file is made at the current version: nothing to tell
            log.info("prompt store %s: schema version %d -> %d", path, version, version + 1)
    return found


class SqliteStore:
    """Prompts as JSON records in one table, with status and agent pulled out for queries."""

    kind = "sqlite"

    def __init__(
        self,
        path: Path,
        *,
        checkpoint_every: int = CHECKPOINT_EVERY,
        backstop_pages: int = BACKSTOP_PAGES,
    ) -> None:
        """Open (or create) the file and bring its schema up to date.

        Raises ``StoreCorrupt`` naming ``hive-rpc doctor`` when the file is damaged,
        rather than SQLite's bare "database disk image is malformed"."""
        self.path = path
        self.where = f"SQLite at {path}"
        self.checkpoint_every = checkpoint_every
        self.backstop_pages = backstop_pages
        self.checkpoints = 0
        self.schema_version_found = 0
        """The file's schema version before this hub migrated it (tests, doctor)."""
        self._commits = 0
        self._checkpoint_due = trio.Event()
        self._checkpoint_done = trio.Event()
        self._checkpointing = False
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._db = sqlite3.connect(path, isolation_level=None)
        try:
            path.chmod(0o600)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self.schema_version_found = migrate(self._db, path)
        except sqlite3.Error as e:
            self._db.close()
            if is_corruption(e):
                raise corrupt(path, e) from None
            raise StoreWriteFailed(self.where, str(e)) from None
        except BaseException:
            self._db.close()
            raise

    def _committed(self) -> None:
        self._commits += 1
        if self._commits >= self.checkpoint_every:
            self._checkpoint_due.set()

    async def _room_to_write(self) -> None:
        """Wait while the writers are too far ahead of a running checkpoint."""
        while self._checkpointing and self._commits >= CHECKPOINT_LAG * self.checkpoint_every:
            await self._checkpoint_done.wait()

    def _write(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        """One committed statement; a refused write (full disk ...) becomes
        ``StoreWriteFailed``, which every face reports as -32007.  Callers await
        ``_room_to_write`` first."""
        try:
            cur = self._db.execute(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as e:
            raise StoreWriteFailed(self.where, str(e)) from None
        self._committed()
        return cur

    def _rewind(self) -> None:
        """Rewind the log to its start; called between two checkpoints, so no
        connection of this hub holds the checkpoint lock.  Refused (another process
        reading, or holding the lock), it is tried after the next checkpoint."""
        try:
            busy, _log, _copied = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as e:
            log.debug("rewinding the WAL failed: %s", e)
            return
        if busy:
            log.debug("rewinding the WAL: busy, tried again after the next checkpoint")

    async def run_checkpoints(
        self,
        *,
        trouble: Callable[[str, Exception | None], None] | None = None,
        task_status: Any = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run WAL checkpoints in a worker thread until cancelled (see the module doc).

        A checkpoint that fails (a full disk) is reported to ``trouble`` and tried
        again at the next one due: it never ends the hub."""
        checkpointer = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA wal_autocheckpoint={self.backstop_pages}")

        def passive() -> int:
            """The checkpoint; returns the log's size in pages."""
            _busy, log_pages, _copied = checkpointer.execute(
                "PRAGMA wal_checkpoint(PASSIVE)"
            ).fetchone()
            return int(log_pages)

        self._checkpointing = True
        try:
            task_status.started()
            while True:
                await self._checkpoint_due.wait()
                self._checkpoint_due = trio.Event()
                self._commits = 0
                # The count starts again: writers waiting for room have it (they
                # wait on this event, so it is set before the next one replaces it).
                self._checkpoint_done.set()
                self._checkpoint_done = trio.Event()
                try:
                    log_pages = await trio.to_thread.run_sync(passive)
                except sqlite3.Error as e:
                    if trouble is None:
                        raise
                    trouble("checkpoint", StoreWriteFailed(self.where, str(e)))
                    continue
                finally:
                    self._checkpoint_done.set()
                if log_pages >= self.backstop_pages:
                    self._rewind()
                if trouble is not None:
                    trouble("checkpoint", None)
                self.checkpoints += 1
        finally:
            self._checkpointing = False
            self._checkpoint_done.set()
            self._db.execute("PRAGMA wal_autocheckpoint=1000")
            checkpointer.close()

    # --- reading rows without trusting them -----------------------------------

    def _decode(self, prompt_id: str, text: str) -> Prompt | None:
        """The row's prompt, or None once an unreadable row is set aside."""
        try:
            return decode_prompt(prompt_id, text)
        except UnreadableRecord as e:
            self._set_aside("prompt", prompt_id, text, e.reason)
            return None

    def _set_aside(self, source: str, key: str, text: str | None, reason: str) -> None:
        """Move an unreadable row into ``quarantine`` (kept for ``hive-rpc doctor``).

        If even that write fails (a full disk) the row stays where it is, skipped
        again next time: the hub goes on either way."""
        log.warning("store: set aside unreadable %s %s: %s", source, key, reason)
        table, where = (
            ("prompts", "id = ?") if source == "prompt" else ("documents", "kind || '/' || key = ?")
        )
        try:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT OR REPLACE INTO quarantine (source, id, record, reason, quarantined_at)"
                " VALUES (?,?,?,?,?)",
                (source, key, text, reason, time.time()),
            )
            self._db.execute(f"DELETE FROM {table} WHERE {where}", (key,))
            self._db.execute("COMMIT")
        except sqlite3.Error as e:
            log.warning("store: could not set %s %s aside: %s", source, key, e)
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    def quarantined(self) -> list[dict[str, Any]]:
        """Rows set aside, oldest first: ``source``, ``id``, ``reason``, ``quarantined_at``."""
        rows = self._db.execute(
            "SELECT source, id, reason, quarantined_at FROM quarantine ORDER BY quarantined_at"
        ).fetchall()
        return [
            dict(zip(("source", "id", "reason", "quarantined_at"), r, strict=True)) for r in rows
        ]

    def _unreadable(self, prompt_id: str) -> PromptUnreadable | None:
        row = self._db.execute(
            "SELECT reason FROM quarantine WHERE source = 'prompt' AND id = ?", (prompt_id,)
        ).fetchone()
        return PromptUnreadable(prompt_id, row[0]) if row else None

    # --- the PromptStore protocol ---------------------------------------------

    # The registry's two writes test ``_room_to_write``'s condition before awaiting
    # it, saving a coroutine per write for a wait that almost never happens.

    async def insert(self, prompt: Prompt) -> None:
        if self._checkpointing and self._commits >= CHECKPOINT_LAG * self.checkpoint_every:
            await self._room_to_write()
        self._write(
            _INSERT_PROMPT,
            (
                prompt.id,
                prompt.agent_id,
                _STATUS_TEXT[prompt.status],
                prompt.created_at,
                encode_prompt(prompt),
            ),
        )

    async def update(self, prompt: Prompt, *, expected: Status) -> Prompt | None:
        if self._checkpointing and self._commits >= CHECKPOINT_LAG * self.checkpoint_every:
            await self._room_to_write()
        cur = self._write(
            _UPDATE_PROMPT,
            (_STATUS_TEXT[prompt.status], encode_prompt(prompt), prompt.id, _STATUS_TEXT[expected]),
        )
        if cur.rowcount == 1:
            return None
        current = await self.get(prompt.id)
        if current is None:
            raise KeyError(f"prompt {prompt.id} is not in the store")
        return current

    async def get(self, prompt_id: str) -> Prompt | None:
        """The prompt, None if there is none, or ``PromptUnreadable`` (-32008) if its
        row cannot be read (it is set aside on the way)."""
        row = self._db.execute("SELECT record FROM prompts WHERE id = ?", (prompt_id,)).fetchone()
        if row is not None:
            prompt = self._decode(prompt_id, row[0])
            if prompt is not None:
                return prompt
        unreadable = self._unreadable(prompt_id)
        if unreadable is not None:
            raise unreadable
        return None

    async def pending(self) -> list[Prompt]:
        """Every readable pending prompt; an unreadable row is set aside and logged
        with its id, so one bad row cannot stop a restart."""
        try:
            rows = self._db.execute(
                "SELECT id, record FROM prompts WHERE status = 'pending' ORDER BY created_at"
            ).fetchall()
        except sqlite3.DatabaseError as e:
            if is_corruption(e):
                raise corrupt(self.path, e) from None
            raise
        found = (self._decode(i, text) for i, text in rows)
        return [p for p in found if p is not None]

    async def find(self, prefix: str) -> list[Prompt]:
        # A range on the primary key, so the lookup reads the matches, not the table:
        # ids starting with prefix sort from prefix up to prefix + the last code point
        # (hub ids are hex; the substr check keeps the answer exact for any prefix).
        rows = self._db.execute(
            "SELECT id, record FROM prompts WHERE id >= ?1 AND id <= ?1 || ?2"
            " AND substr(id, 1, length(?1)) = ?1 ORDER BY created_at",
            (prefix, "\U0010ffff"),
        ).fetchall()
        readable = [p for p in (self._decode(i, text) for i, text in rows) if p is not None]
        if not any(p.id == prefix for p in readable):
            # A whole id whose row was set aside: say so (-32008), not "no prompt".
            unreadable = self._unreadable(prefix)
            if unreadable is not None:
                raise unreadable
        return readable

    async def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Status}
        for status, n in self._db.execute("SELECT status, count(*) FROM prompts GROUP BY status"):
            counts[status] = n
        return counts

    async def prune_closed(self, before: float, *, limit: int = RETENTION_BATCH) -> int:
        # One status at a time, so each statement walks the (status, created_at) index.
        left = limit
        for status in Status:
            if status is Status.PENDING or left <= 0:
                continue
            await self._room_to_write()
            cur = self._write(
                "DELETE FROM prompts WHERE id IN (SELECT id FROM prompts"
                " WHERE status = ? AND created_at < ? LIMIT ?)",
                (status.value, before, left),
            )
            left -= cur.rowcount
        for kind, field in RETAINED_DOCUMENTS.items():
            if left <= 0:
                break
            # The walk (the kind's keys, by the primary key) stops at the LIMIT;
            # only a run's last batch reads each report of the kind once.
            await self._room_to_write()
            cur = self._write(
                "DELETE FROM documents WHERE rowid IN (SELECT rowid FROM documents"
                " WHERE kind = ? AND json_valid(body) AND json_extract(body, ?) < ? LIMIT ?)",
                (kind, f"$.{field}", before, left),
            )
            left -= cur.rowcount
        return limit - left

    async def put_document(self, kind: str, key: str, body: dict[str, Any]) -> None:
        await self._room_to_write()
        text = ENCODE(body)
        self._write(
            "INSERT INTO documents (kind, key, body) VALUES (?,?,?) "
            "ON CONFLICT (kind, key) DO UPDATE SET body = excluded.body",
            (kind, key, text),
        )

    async def documents(self, kind: str) -> list[dict[str, Any]]:
        """Every readable document of ``kind``; an unreadable one is set aside."""
        rows = self._db.execute(
            "SELECT key, body FROM documents WHERE kind = ? ORDER BY rowid", (kind,)
        ).fetchall()
        found = []
        for key, text in rows:
            try:
                body = json.loads(text)
            except (ValueError, RecursionError) as e:
                self._set_aside("document", f"{kind}/{key}", text, f"not JSON ({e})")
                continue
            if not isinstance(body, dict):
                self._set_aside("document", f"{kind}/{key}", text, "not a JSON object")
                continue
            found.append(body)
        return found

    async def get_document(self, kind: str, key: str) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT body FROM documents WHERE kind = ? AND key = ?", (kind, key)
        ).fetchone()
        try:
            body = json.loads(row[0]) if row is not None else None
        except (ValueError, RecursionError):
            return None  # ``documents`` sets it aside, saying why
        return body if isinstance(body, dict) else None

    async def delete_document(self, kind: str, key: str) -> bool:
        await self._room_to_write()
        cur = self._write("DELETE FROM documents WHERE kind = ? AND key = ?", (kind, key))
        return cur.rowcount == 1

    async def aclose(self) -> None:
        self._db.close()
