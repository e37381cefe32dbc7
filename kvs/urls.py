"""Choosing a backend by URL; one shared backend (and connection pool) per store and process.

Spellings of one store share a backend: the URL is normalised first, but only
where the two spellings provably reach the same store (see :func:`normalise`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from kvs.blocks import Backend

_SHARED: dict[str, Backend] = {}
_LOCK = threading.Lock()
_REDIS_PORT = 6379


def connect(url: str | Path, **options: Any) -> Backend:
    """The backend for ``url``:

    - ``memory://NAME`` (one in-memory backend per name and process), ``memory://``
      (a new private backend on every call: keep the object to reopen its windows),
    - a file path or ``file:///path`` (sqlite3 file, created if missing),
    - ``redis://host:port/db``, ``rediss://...``, ``unix:///path.sock``,
    - ``redis+cluster://host:port,host:port`` (Redis Cluster; the nodes are seeds).

    Other than bare ``memory://``, the same store gives the same backend object, so
    every window of a process shares its connection pool and writer thread.
    ``options`` go to the backend's constructor the first time (``owner``,
    ``lease_ttl``: see :class:`kvs.Backend`).
    """
    from kvs.file_backend import FileBackend
    from kvs.memory import MemoryBackend
    from kvs.redis_backend import RedisBackend

    key = normalise(url)
    scheme = key.partition("://")[0]
    if key == "memory://":
        return MemoryBackend(key, **options)
    with _LOCK:
        backend = _SHARED.get(key)
        if backend is None:
            if scheme == "memory":
                backend = MemoryBackend(key, **options)
            elif scheme in ("redis", "rediss", "unix", "redis+cluster"):
                backend = RedisBackend(key, **options)
            else:
                backend = FileBackend(key, **options)
            _SHARED[key] = backend
        return backend


def disconnect(url: str | Path) -> None:
    """Close the shared backend of ``url`` (the next :func:`connect` makes a new one)."""
    with _LOCK:
        backend = _SHARED.pop(normalise(url), None)
    if backend is not None:
        backend.close()


def normalise(url: str | Path) -> str:
    """One spelling per store, changing only what provably names the same one:

    - Redis: scheme and host in lower case, the host redis-py assumes (``localhost``)
      and port (6379) written out, the database number as redis-py reads it (a ``db``
      query argument, else the path, else 0); ``localhost`` and ``127.0.0.1`` stay
      different (a name may resolve elsewhere);
    - Redis Cluster: the seed nodes likewise, sorted and without repeats;
    - a file: its absolute path with symbolic links resolved (``file://`` dropped);
    - ``memory://NAME``: the scheme in lower case, the name as written.
    """
    text = str(url)
    scheme = urlsplit(text).scheme.lower() if "://" in text else ""
    if scheme == "memory":
        return "memory" + text[len(scheme):]
    if scheme in ("redis", "rediss"):
        return _redis_url(scheme, text)
    if scheme == "redis+cluster":
        return _cluster_url(text)
    if scheme == "unix":
        return "unix" + text[len(scheme):]
    if scheme in ("", "file"):
        path = urlsplit(text).path if scheme else text
        return os.path.realpath(path) if path else text
    raise ValueError(f"unknown store URL {text!r}: use memory://, a file path, redis:// or redis+cluster://")


def _host_port(netloc: str) -> str:
    """``host:port`` of a netloc without user info, host in lower case, port written out."""
    parts = urlsplit(f"//{netloc}")
    host = parts.hostname or "localhost"
    host = f"[{host}]" if ":" in host else host
    try:
        port = parts.port or _REDIS_PORT
    except ValueError as error:
        raise ValueError(f"bad port in store URL host {netloc!r}: {error}") from None
    return f"{host}:{port}"


def _redis_url(scheme: str, text: str) -> str:
    parts = urlsplit(text)
    userinfo, _, hostport = parts.netloc.rpartition("@")
    query = parse_qsl(parts.query, keep_blank_values=True)
    db = next((value for name, value in query if name == "db"), None)
    if db is not None:
        db = str(int(db)) if db.strip().isdigit() else db
    else:
        try:
            db = str(int(parts.path.replace("/", ""))) if parts.path.strip("/") else "0"
        except ValueError:
            db = "0"  # redis-py ignores a path that is not a number
    rest = urlencode(sorted((name, value) for name, value in query if name != "db"))
    return (f"{scheme}://{userinfo + '@' if userinfo else ''}{_host_port(hostport)}/{db}"
            + (f"?{rest}" if rest else ""))


def _cluster_url(text: str) -> str:
    netloc = text.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    seeds = sorted({_host_port(seed) for seed in netloc.split(",") if seed})
    return "redis+cluster://" + ",".join(seeds)
