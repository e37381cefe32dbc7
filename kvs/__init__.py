"""Where a window's tree levels live.

A level store hands out one :class:`Level` per tree level: a FIFO queue of nodes
addressed by absolute index. ``kvs`` knows nothing of monoids or algorithms; it
stores opaque values (encoded by :mod:`kvs.codec` when they leave the process).

A :class:`Backend` holds many windows, each with its own level store:
in memory, in a sqlite3 file, in Redis or in Redis Cluster, chosen by URL
with :func:`connect`. A stored window has one writer at a time (:mod:`kvs.leases`).
"""

from kvs.base import Level, LevelStore, MissingWindow, StoreError
from kvs.blocks import Backend, BlockStore, RoundTrips
from kvs.leases import LEASE_TTL, Lease, WindowBusy, WindowDeleted, WindowFenced
from kvs.memory import MemoryBackend, MemoryLevel, MemoryStore
from kvs.redis_backend import RedisBackend
from kvs.file_backend import FileBackend
from kvs.urls import connect, disconnect

__all__ = ["Level", "LevelStore", "MissingWindow", "StoreError", "Backend", "BlockStore", "RoundTrips",
           "LEASE_TTL", "Lease", "WindowBusy", "WindowDeleted", "WindowFenced",
           "MemoryBackend", "MemoryLevel", "MemoryStore", "RedisBackend", "FileBackend", "connect",
           "disconnect"]
