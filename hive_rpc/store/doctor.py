"""``hive-rpc doctor``: look at a data dir and its SQLite store without a hub.

Plain synchronous code on ``sqlite3``: the doctor runs while no hub does (or beside
one, reading only), and a person reads its findings.  Each finding is one line with
a level (``ok``, ``warn``, ``fail``) and, when something is wrong, what to do.

``recover`` copies every row it can still read from a damaged file into a new one,
row by row, so that a broken page loses the rows on it, not the rest; the old file
is kept beside the new one.  Python's ``sqlite3`` has no binding for SQLite's own
recovery extension (the shell's ``.recover``), and ``iterdump`` stops at the first
error, hence the walk by rowid.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hive_rpc.core.prompt import Status
from hive_rpc.host.paths import DB_NAME, HubLock
from hive_rpc.store.records import UnreadableRecord, decode_prompt
from hive_rpc.store.sqlite import SCHEMA_VERSION, is_corruption, migrate

TABLES = {
    "prompts": ("id", "agent_id", "status", "created_at", "record"),
    "documents": ("kind", "key", "body"),
    "quarantine": ("source", "id", "record", "reason", "quarantined_at"),
}
"""What ``recover`` copies, table by table (the current schema's columns)."""
PROBE_GAP = 10_000
"""Rowids ``recover`` tries one by one past a damaged stretch before giving up."""


@dataclass
class Finding:
    level: str
    """``ok``, ``warn`` or ``fail``."""
    text: str


@dataclass
class Report:
    """What ``check`` found; ``ok`` is False when anything failed."""

    findings: list[Finding] = field(default_factory=list)
    quarantined: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    """Rows still in ``prompts`` that a hub will set aside when it reads them."""
    corrupt: bool = False

    @property
    def ok(self) -> bool:
        return all(f.level != "fail" for f in self.findings)

    def add(self, level: str, text: str) -> None:
        self.findings.append(Finding(level, text))

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "corrupt": self.corrupt,
            "findings": [{"level": f.level, "text": f.text} for f in self.findings],
            "quarantined": self.quarantined,
            "unreadable": self.unreadable,
        }


def _mode_check(report: Report, path: Path, what: str, private: int) -> None:
    """``private`` is the mode the hub makes it (0700 for dirs, 0600 for files)."""
    st = path.lstat()
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.getuid():
        report.add("fail", f"{what} {path} belongs to uid {st.st_uid}, not to you")
    elif mode & 0o077:
        report.add(
            "fail", f"{what} {path} is mode {mode:04o}, open to others: chmod {private:o} {path}"
        )
    else:
        report.add("ok", f"{what} {path} (mode {mode:04o})")


def lock_holder(path: Path) -> str | None:
    """The pid written in a held hub lock, or None when no live hub holds it."""
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return HubLock(path).holder()
    finally:
        os.close(fd)
    return None


def check(data_dir: Path, socket: Path | None = None) -> Report:
    """Look at ``data_dir`` (and ``socket``): modes, locks, the store's integrity,
    its schema version, rows set aside and rows a hub will not be able to read."""
    report = Report()
    if not data_dir.exists():
        report.add("warn", f"data dir {data_dir} does not exist yet (a hub creates it)")
        return report
    _mode_check(report, data_dir, "data dir", 0o700)
    holder = lock_holder(data_dir / "hub.lock")
    report.add(
        "ok",
        f"a hub (pid {holder}) is running on this data dir"
        if holder
        else "no hub is running on this data dir",
    )
    if socket is not None:
        if socket.exists() or socket.is_symlink():
            if not stat.S_ISSOCK(socket.lstat().st_mode):
                report.add("fail", f"socket {socket} is not a socket: remove it")
            elif lock_holder(socket.with_name(socket.name + ".lock")) is None:
                report.add(
                    "warn", f"socket {socket} is stale (no hub holds it; the next removes it)"
                )
            else:
                _mode_check(report, socket, "socket", 0o600)
        else:
            report.add("ok", f"no socket at {socket} (no hub listening there)")
    db_path = data_dir / DB_NAME
    if not db_path.exists():
        report.add("ok", f"no store yet at {db_path}")
        return report
    _mode_check(report, db_path, "store", 0o600)
    _check_db(report, db_path)
    return report


def _check_db(report: Report, path: Path) -> None:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        problems = [r[0] for r in db.execute("PRAGMA integrity_check(20)")]
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as e:
        problems, version = [str(e)], -1
    if problems != ["ok"]:
        report.corrupt = True
        shown = "; ".join(problems[:5])
        report.add(
            "fail",
            f"store {path} is damaged ({shown}): stop the hub, then run "
            "`hive-rpc doctor --recover` to copy every readable row into a new file "
            "(the damaged one is kept beside it)",
        )
        db.close()
        return
    report.add("ok", f"store {path} passes PRAGMA integrity_check")
    if version > SCHEMA_VERSION:
        report.add(
            "fail",
            f"store schema version {version} is newer than this hive-rpc knows "
            f"({SCHEMA_VERSION}): upgrade hive-rpc",
        )
    elif version < SCHEMA_VERSION:
        report.add("ok", f"store schema version {version}; a hub migrates it to {SCHEMA_VERSION}")
    else:
        report.add("ok", f"store schema version {version}")
    try:
        counts = dict(db.execute("SELECT status, count(*) FROM prompts GROUP BY status").fetchall())
        shown = ", ".join(f"{counts.get(s.value, 0)} {s.value}" for s in Status)
        report.add("ok", f"prompts: {shown}")
        for prompt_id, text in db.execute("SELECT id, record FROM prompts"):
            try:
                decode_prompt(prompt_id, text)
            except UnreadableRecord as e:
                report.unreadable.append({"id": prompt_id, "reason": e.reason})
        if version >= 1:
            rows = db.execute(
                "SELECT source, id, reason, quarantined_at FROM quarantine ORDER BY quarantined_at"
            ).fetchall()
            names = ("source", "id", "reason", "quarantined_at")
            report.quarantined = [dict(zip(names, row, strict=True)) for row in rows]
    finally:
        db.close()
    if report.unreadable:
        report.add(
            "warn",
            f"{len(report.unreadable)} stored prompt(s) cannot be read; a hub sets them "
            "aside when it comes to them",
        )
    if report.quarantined:
        report.add(
            "warn",
            f"{len(report.quarantined)} row(s) set aside in the quarantine table "
            "(listed below; the hub goes on without them)",
        )


@dataclass
class Recovery:
    new: Path
    kept: Path
    copied: dict[str, int]
    lost: dict[str, int]


class RecoverRefused(RuntimeError):
    """``recover`` will not run (a hub holds the data dir, or there is no store)."""


def recover(data_dir: Path) -> Recovery:
    """Copy every readable row of the store into a new file that takes its place;
    the old file (and its WAL) is renamed ``prompts.sqlite3.damaged-TIME``.

    Holds the hub's own data-dir lock meanwhile, so no hub starts on a half-made file.
    """
    path = data_dir / DB_NAME
    if not path.exists():
        raise RecoverRefused(f"there is no store at {path} to recover")
    lock = HubLock(data_dir / "hub.lock")
    if not lock.acquire():
        raise RecoverRefused(
            f"a hub (pid {lock.holder()}) is running on {data_dir}: stop it first "
            "(`kill PID`), then run `hive-rpc doctor --recover` again"
        )
    try:
        return _recover(path)
    finally:
        lock.release()


def _recover(path: Path) -> Recovery:
    new = path.with_name(path.name + ".recovering")
    new.unlink(missing_ok=True)
    dst = sqlite3.connect(new, isolation_level=None)
    new.chmod(0o600)
    migrate(dst, new)
    copied: dict[str, int] = {}
    lost: dict[str, int] = {}
    try:
        src = sqlite3.connect(path)
    except sqlite3.DatabaseError:
        src = None
    for table, columns in TABLES.items():
        rows, missed = _salvage(src, table, columns) if src is not None else ([], 0)
        marks = ",".join("?" * len(columns))
        dst.execute("BEGIN")
        dst.executemany(
            f"INSERT OR IGNORE INTO {table} ({','.join(columns)}) VALUES ({marks})", rows
        )
        dst.execute("COMMIT")
        copied[table], lost[table] = len(rows), missed
    if src is not None:
        src.close()
    dst.close()
    kept = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(kept.with_name(kept.name + suffix))
    path.rename(kept)
    new.rename(path)
    return Recovery(new=path, kept=kept, copied=copied, lost=lost)


def _salvage(
    src: sqlite3.Connection, table: str, columns: tuple[str, ...]
) -> tuple[list[tuple[Any, ...]], int]:
    """The rows of ``table`` that can be read, and a count of rowids skipped over
    (an estimate of what was lost: a damaged page hides how many rows it held)."""
    wanted = ",".join(columns)
    try:
        top = src.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0
    except sqlite3.DatabaseError as e:
        if not is_corruption(e) and "no such table" in str(e):
            return [], 0
        top = None
    rows: list[tuple[Any, ...]] = []
    last = 0
    missed = 0
    while True:
        try:
            batch = src.execute(
                f"SELECT rowid, {wanted} FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT 500",
                (last,),
            ).fetchall()
        except sqlite3.DatabaseError:
            # A damaged stretch: try the rowids after it one at a time.
            found = _probe(src, table, wanted, last, top)
            if found is None:
                return rows, missed
            missed += found[0] - last - 1
            rows.append(found[1:])
            last = found[0]
            continue
        if not batch:
            return rows, missed
        rows.extend(r[1:] for r in batch)
        last = batch[-1][0]


def _probe(
    src: sqlite3.Connection, table: str, wanted: str, last: int, top: int | None
) -> tuple[Any, ...] | None:
    end = (top if top is not None else last + PROBE_GAP) + 1
    for rowid in range(last + 1, min(end, last + 1 + PROBE_GAP)):
        try:
            row = src.execute(
                f"SELECT rowid, {wanted} FROM {table} WHERE rowid = ?", (rowid,)
            ).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is not None:
            return tuple(row)
    return None
