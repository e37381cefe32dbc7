"""Choosing a backend by URL; one shared backend (and connection pool) per URL."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kvs.blocks import Backend

_SHARED: dict[str, Backend] = {}
_LOCK = threading.Lock()


def connect(url: str | Path, **options: Any) -> Backend:
    """The backend for ``url``:

    - ``memory://`` (a new private backend on every call),
    - a file path or ``file:///path`` (sqlite3 file, created if missing),
    - ``redis://host:port/db``, ``rediss://...``, ``unix:///path.sock``,
    - ``redis+cluster://host:port,host:port`` (Redis Cluster; the nodes are seeds).

    Other than ``memory://``, the same URL gives the same backend object, so every
    window of a process shares its connection pool. ``options`` go to the backend's
    constructor the first time.
    """
    from kvs.file_backend import FileBackend
    from kvs.memory import MemoryBackend
    from kvs.redis_backend import RedisBackend

    text = str(url)
    scheme = urlsplit(text).scheme if "://" in text else ""
    if scheme == "memory":
        return MemoryBackend(text)
    with _LOCK:
        backend = _SHARED.get(text)
        if backend is None:
            if scheme in ("redis", "rediss", "unix", "redis+cluster"):
                backend = RedisBackend(text, **options)
            elif scheme in ("", "file"):
                backend = FileBackend(urlsplit(text).path if scheme else text, **options)
            else:
                raise ValueError(f"unknown store URL {text!r}: use memory://, a file path, redis:// "
                                 "or redis+cluster://")
            _SHARED[text] = backend
        return backend


def disconnect(url: str | Path) -> None:
    """Close the shared backend of ``url`` (the next :func:`connect` makes a new one)."""
    with _LOCK:
        backend = _SHARED.pop(str(url), None)
    if backend is not None:
        backend.close()
