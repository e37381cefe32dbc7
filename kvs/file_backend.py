"""Windows in one local file (standard-library sqlite3): durable on one machine, no server.

Tables: ``mta_store`` (format marker), ``windows`` (id, creation record,
checkpoint, lease of its writer) and ``blocks`` (window, key, block). A commit
is one sqlite transaction that first checks the writer's fencing token; WAL mode
with ``synchronous=NORMAL`` survives a killed process (a power cut may lose the
newest commits; pass ``synchronous="FULL"`` to close that too).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from kvs.base import MissingWindow, StoreError
from kvs.blocks import FORMAT, BlockBackend, check_window_id
from kvs.codec import pack, unpack
from kvs.leases import Lease, WindowBusy, WindowDeleted, WindowFenced

#: The lease of a window's writer (kvs.leases): fencing token, owner, ttl, expiry (time.time()).
_LEASE_COLUMNS = (("writer", "TEXT"), ("owner", "TEXT"), ("ttl", "REAL"), ("expires", "REAL"))

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mta_store (format TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS windows (id TEXT PRIMARY KEY, meta BLOB NOT NULL, state BLOB,
                                    writer TEXT, owner TEXT, ttl REAL, expires REAL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blocks (window TEXT NOT NULL, key BLOB NOT NULL, data BLOB NOT NULL,
                                   PRIMARY KEY (window, key)) WITHOUT ROWID;
"""


class FileBackend(BlockBackend):
    """A sqlite3 file at ``path`` (created if missing); ``file:///abs/path`` URLs too."""

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL", **lease_options: Any) -> None:
        super().__init__(**lease_options)
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}")
        self.url = str(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if tables and "mta_store" not in tables:
                raise StoreError(f"{path} is a sqlite database of something else (tables: {', '.join(sorted(tables))})")
            with self._db:
                self._db.executescript(_SCHEMA)
                marks = [row[0] for row in self._db.execute("SELECT format FROM mta_store")]
                if not marks:
                    self._db.execute("INSERT INTO mta_store VALUES (?)", (FORMAT,))
                elif marks != [FORMAT]:
                    raise StoreError(f"{path} holds an mta store of format {marks}, not {FORMAT}")
                self._migrate()
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path} is not an mta file store: {error}") from None

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as error:
                raise StoreError(f"{self.url}: {error}") from error

    @contextlib.contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (all or nothing; it holds the file's write lock, so what
        it reads is not changed by another process before it commits)."""
        with self._lock:
            try:
                with self._db:
                    self._db.execute("BEGIN IMMEDIATE")
                    yield self._db
            except sqlite3.Error as error:
                raise StoreError(f"{self.url}: {what} failed: {error}") from error

    def _migrate(self) -> None:
        """Files written before leases existed get their columns."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(windows)")}
        for name, kind in _LEASE_COLUMNS:
            if name not in columns:
                self._db.execute(f"ALTER TABLE windows ADD COLUMN {name} {kind}")

    # -- windows and leases ----------------------------------------------------------

    def create(self, window_id: str, meta: dict[str, Any], *, replace: bool = False) -> Lease:
        check_window_id(window_id)
        lease = self.new_lease(window_id)
        with self._transaction(f"create window {window_id!r}") as db:
            if db.execute("SELECT 1 FROM windows WHERE id = ?", (window_id,)).fetchall():
                if not replace:
                    raise StoreError(f"window {window_id!r} already exists in {self.url}; "
                                     "open it instead (Window.open for a window, Stream.load for a stream)")
                db.execute("DELETE FROM blocks WHERE window = ?", (window_id,))
                db.execute("DELETE FROM windows WHERE id = ?", (window_id,))
            db.execute("INSERT INTO windows (id, meta, writer, owner, ttl, expires) VALUES (?, ?, ?, ?, ?, ?)",
                       (window_id, pack(meta), lease.token, lease.owner, lease.ttl, time.time() + lease.ttl))
        self.round_trips.writes += 1
        return lease

    def acquire(self, window_id: str, *, take_over: bool = False) -> Lease:
        check_window_id(window_id)
        lease = self.new_lease(window_id)
        with self._transaction(f"open window {window_id!r}") as db:
            rows = db.execute("SELECT owner, ttl, expires FROM windows WHERE id = ?", (window_id,)).fetchall()
            if not rows:
                raise MissingWindow(f"no window {window_id!r} in {self.url}")
            owner, ttl, expires = rows[0]
            now = time.time()  # one machine's clock: every writer of a sqlite file runs there
            if owner is not None and expires > now and owner != lease.owner and not take_over:
                raise WindowBusy(window_id, self.url, owner, expires - now, ttl)
            db.execute("UPDATE windows SET writer = ?, owner = ?, ttl = ?, expires = ? WHERE id = ?",
                       (lease.token, lease.owner, lease.ttl, now + lease.ttl, window_id))
        self.round_trips.writes += 1
        return lease

    def renew(self, leases: list[Lease]) -> list[StoreError | None]:
        if not leases:
            return []
        with self._transaction(f"renew {len(leases)} leases") as db:
            lost = [self._renew(db, lease) for lease in leases]
        self.round_trips.writes += 1
        return lost

    def _renew(self, db: sqlite3.Connection, lease: Lease) -> StoreError | None:
        """Extend ``lease`` in the current transaction; the error if it is lost."""
        if db.execute("UPDATE windows SET owner = ?, ttl = ?, expires = ? WHERE id = ? AND writer = ?",
                      (lease.owner, lease.ttl, time.time() + lease.ttl, lease.window_id, lease.token)).rowcount:
            return None
        if db.execute("SELECT 1 FROM windows WHERE id = ?", (lease.window_id,)).fetchall():
            return WindowFenced(lease.window_id, self.url)
        return WindowDeleted(lease.window_id, self.url)

    def release(self, lease: Lease) -> None:
        self._query("UPDATE windows SET owner = NULL, expires = NULL WHERE id = ? AND writer = ?",
                    (lease.window_id, lease.token))

    def _row(self, window_id: str) -> tuple[bytes, bytes | None, str | None]:
        check_window_id(window_id)
        rows = self._query("SELECT meta, state, writer FROM windows WHERE id = ?", (window_id,))
        self.round_trips.reads += 1
        if not rows:
            raise MissingWindow(f"no window {window_id!r} in {self.url}")
        return rows[0]

    def meta(self, window_id: str) -> dict[str, Any]:
        return unpack(self._row(window_id)[0])

    def load(self, window_id: str, lease: Lease | None = None) -> bytes | None:
        try:
            _, state, writer = self._row(window_id)
        except MissingWindow:
            if lease is not None:
                raise WindowDeleted(window_id, self.url) from None
            raise
        if lease is not None and writer != lease.token:
            raise WindowFenced(window_id, self.url)
        return state

    def windows(self) -> list[str]:
        return [row[0] for row in self._query("SELECT id FROM windows ORDER BY id")]

    def delete(self, window_id: str) -> bool:
        check_window_id(window_id)
        with self._transaction(f"delete window {window_id!r}") as db:
            db.execute("DELETE FROM blocks WHERE window = ?", (window_id,))
            return db.execute("DELETE FROM windows WHERE id = ?", (window_id,)).rowcount > 0

    # -- blocks --------------------------------------------------------------------

    def fetch(self, window_id: str, keys: list[bytes]) -> list[bytes | None]:
        marks = ",".join("?" * len(keys))
        rows = dict(self._query(f"SELECT key, data FROM blocks WHERE window = ? AND key IN ({marks})",
                                (window_id, *keys)))
        self.round_trips.reads += 1
        return [rows.get(k) for k in keys]

    def commit(self, window_id: str, writes: dict[bytes, bytes], deletes: list[bytes], checkpoint: bytes,
               lease: Lease) -> None:
        self.round_trips.writes += 1
        with self._transaction(f"commit of window {window_id!r}") as db:  # all or nothing
            lost = self._renew(db, lease)  # first: the write lock is ours until the end
            if lost is not None:
                raise lost
            db.executemany("DELETE FROM blocks WHERE window = ? AND key = ?", [(window_id, k) for k in deletes])
            db.executemany("INSERT OR REPLACE INTO blocks VALUES (?, ?, ?)",
                           [(window_id, k, v) for k, v in writes.items()])
            db.execute("UPDATE windows SET state = ? WHERE id = ?", (checkpoint, window_id))

    def close(self) -> None:
        super().close()
        with self._lock:
            self._db.close()
