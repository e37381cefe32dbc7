"""Where a window's tree levels live.

A level store hands out one :class:`Level` per tree level: a FIFO queue of nodes
addressed by absolute index. ``kvs`` knows nothing of monoids or algorithms; it
stores opaque values. This issue ships the in-memory store; Redis and file stores
implement the same two classes.
"""

from kvs.base import Level, LevelStore, StoreError
from kvs.memory import MemoryLevel, MemoryStore

__all__ = ["Level", "LevelStore", "StoreError", "MemoryLevel", "MemoryStore"]
