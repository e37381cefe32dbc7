"""The level-store interface the tree algorithms are written against."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class StoreError(RuntimeError):
    """A store could not serve a request (missing node, unreachable backend, bad layout)."""


class MissingWindow(StoreError):
    """The store holds no window of that id (it was never created, or was deleted)."""


class Level(ABC):
    """One tree level: a queue of nodes with absolute indices ``head <= i < tail``.

    The interface is batch-shaped because a remote store pays a round trip per
    call: algorithms buffer new nodes and ``extend`` them in one write, and read
    ranges into a local cache (paper section 4.1.5, Fig. 3). ``drop_until``
    only moves ``head`` (paper section 4.1.4, ``remove_pairs``): releasing what
    was dropped is the store's business and may happen later.
    """

    head: int
    tail: int

    @abstractmethod
    def extend(self, values: list[Any]) -> None:
        """Store ``values`` at indices ``tail, tail + 1, ...`` and advance ``tail``."""

    @abstractmethod
    def read(self, start: int, stop: int) -> list[Any]:
        """The nodes ``start <= i < stop`` (``head <= start <= stop <= tail``)."""

    @abstractmethod
    def drop_until(self, index: int) -> None:
        """Forget every node below ``index``: ``head = max(head, min(index, tail))``."""

    @abstractmethod
    def reset(self, index: int) -> None:
        """Empty the level and restart it at ``index`` (``head = tail = index``)."""

    def __len__(self) -> int:
        return self.tail - self.head


class LevelStore(ABC):
    """The levels of one window, created on first use.

    A *durable* store also keeps a checkpoint of the algorithm's local state:
    :meth:`commit` makes the levels and the checkpoint durable together, and
    :meth:`load` restores the levels and returns the checkpoint.
    """

    durable: bool = False

    @abstractmethod
    def level(self, number: int) -> Level:
        """Level ``number`` (0 = leaves), created empty at index 0 if new."""

    @abstractmethod
    def clear(self) -> None:
        """Drop every level."""

    def read_many(self, runs: list[tuple[int, int, int]]) -> list[list[Any]]:
        """``level(n).read(start, stop)`` for each ``(n, start, stop)``; a remote store
        fetches them in one round trip."""
        return [self.level(n).read(start, stop) for n, start, stop in runs]

    def commit(self, state: Any, wait: bool = True) -> None:
        """Make the levels and ``state`` durable together (nothing to do in memory);
        ``wait=False`` lets it happen in the background."""

    def drain(self) -> None:
        """Wait until every commit is durable (StoreError if the last one failed)."""

    def load(self) -> Any:
        """Restore the levels of the last :meth:`commit` and return its ``state`` (None if none)."""
        return None

    def release(self) -> None:
        """Give up the window's lease (a store's window has one writer): another writer
        may open it at once. Nothing to do for a store of one process's own."""
