"""Windows in one local file (standard-library sqlite3): durable on one machine, no server.

Tables: ``mta_store`` (format marker), ``windows`` (id, creation record,
checkpoint) and ``blocks`` (window, key, block). A commit is one sqlite
transaction; WAL mode with ``synchronous=NORMAL`` survives a killed process
(a power cut may lose the newest commits; pass ``synchronous="FULL"`` to close that too).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from kvs.base import MissingWindow, StoreError
from kvs.blocks import FORMAT, BlockBackend, check_window_id
from kvs.codec import pack, unpack

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mta_store (format TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS windows (id TEXT PRIMARY KEY, meta BLOB NOT NULL, state BLOB) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blocks (window TEXT NOT NULL, key BLOB NOT NULL, data BLOB NOT NULL,
                                   PRIMARY KEY (window, key)) WITHOUT ROWID;
"""


class FileBackend(BlockBackend):
    """A sqlite3 file at ``path`` (created if missing); ``file:///abs/path`` URLs too."""

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        super().__init__()
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
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path} is not an mta file store: {error}") from None

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as error:
                raise StoreError(f"{self.url}: {error}") from error

    # -- windows -------------------------------------------------------------------

    def create(self, window_id: str, meta: dict[str, Any]) -> None:
        check_window_id(window_id)
        try:
            self._query("INSERT INTO windows (id, meta) VALUES (?, ?)", (window_id, pack(meta)))
        except StoreError as error:
            if isinstance(error.__cause__, sqlite3.IntegrityError):
                raise StoreError(f"window {window_id!r} already exists in {self.url}; "
                                 "open it with Window.open") from None
            raise
        self.round_trips.writes += 1

    def _row(self, window_id: str) -> tuple[bytes, bytes | None]:
        check_window_id(window_id)
        rows = self._query("SELECT meta, state FROM windows WHERE id = ?", (window_id,))
        self.round_trips.reads += 1
        if not rows:
            raise MissingWindow(f"no window {window_id!r} in {self.url}")
        return rows[0]

    def meta(self, window_id: str) -> dict[str, Any]:
        return unpack(self._row(window_id)[0])

    def load(self, window_id: str) -> bytes | None:
        return self._row(window_id)[1]

    def windows(self) -> list[str]:
        return [row[0] for row in self._query("SELECT id FROM windows ORDER BY id")]

    def delete(self, window_id: str) -> bool:
        check_window_id(window_id)
        with self._lock, self._db:
            self._db.execute("DELETE FROM blocks WHERE window = ?", (window_id,))
            return self._db.execute("DELETE FROM windows WHERE id = ?", (window_id,)).rowcount > 0

    # -- blocks --------------------------------------------------------------------

    def fetch(self, window_id: str, keys: list[bytes]) -> list[bytes | None]:
        marks = ",".join("?" * len(keys))
        rows = dict(self._query(f"SELECT key, data FROM blocks WHERE window = ? AND key IN ({marks})",
                                (window_id, *keys)))
        self.round_trips.reads += 1
        return [rows.get(k) for k in keys]

    def commit(self, window_id: str, writes: dict[bytes, bytes], deletes: list[bytes], checkpoint: bytes) -> None:
        self.round_trips.writes += 1
        with self._lock:
            try:
                with self._db:  # one transaction: all or nothing
                    self._db.execute("BEGIN IMMEDIATE")
                    self._db.executemany("DELETE FROM blocks WHERE window = ? AND key = ?",
                                         [(window_id, k) for k in deletes])
                    self._db.executemany("INSERT OR REPLACE INTO blocks VALUES (?, ?, ?)",
                                         [(window_id, k, v) for k, v in writes.items()])
                    if not self._db.execute("UPDATE windows SET state = ? WHERE id = ?",
                                            (checkpoint, window_id)).rowcount:
                        raise StoreError(f"window {window_id!r} was deleted from {self.url}")
            except sqlite3.Error as error:
                raise StoreError(f"{self.url}: commit of window {window_id!r} failed: {error}") from error

    def close(self) -> None:
        with self._lock:
            self._db.close()
