"""In-memory level store: each level is a list of fixed-size blocks.

Blocks make ``drop_until`` cheap whatever the number of nodes dropped: whole
blocks move to a garbage list in one slice, and the garbage is released one
block per new block (the paper's background garbage collector, section 4.1.4),
so neither a bulk eviction nor a later insertion pays for freeing millions of
objects at once.
"""

from __future__ import annotations

from typing import Any

from kvs.base import Level, LevelStore, MissingWindow, StoreError
from kvs.blocks import Backend, check_window_id

SHIFT = 10
BLOCK = 1 << SHIFT
MASK = BLOCK - 1


class MemoryLevel(Level):
    __slots__ = ("head", "tail", "_blocks", "_first", "_garbage")

    def __init__(self) -> None:
        self._garbage: list[list[Any]] = []
        self.reset(0)

    def reset(self, index: int) -> None:
        if index < 0:
            raise ValueError(f"level index must be >= 0, got {index}")
        self.head = self.tail = index
        # Invariant: _blocks[b] holds indices [(_first + b) * BLOCK, (_first + b + 1) * BLOCK);
        # only the last block is partial; slots below head are padding or dead nodes.
        self._first = index >> SHIFT
        self._blocks: list[list[Any]] = [[None] * (index & MASK)]

    def extend(self, values: list[Any]) -> None:
        blocks = self._blocks
        done = 0
        while done < len(values):
            last = blocks[-1]
            if len(last) == BLOCK:
                last = []
                blocks.append(last)
                if self._garbage:
                    self._garbage.pop()
            room = BLOCK - len(last)
            last.extend(values[done:done + room])
            done += room
        self.tail += len(values)

    def read(self, start: int, stop: int) -> list[Any]:
        if not self.head <= start <= stop <= self.tail:
            raise IndexError(f"nodes [{start}, {stop}) are outside [{self.head}, {self.tail})")
        first = self._first
        b, offset = (start >> SHIFT) - first, start & MASK
        out = self._blocks[b][offset:offset + stop - start]
        while len(out) < stop - start:
            b += 1
            out += self._blocks[b][:stop - start - len(out)]
        return out

    def drop_until(self, index: int) -> None:
        if index <= self.head:
            return
        self.head = index = min(index, self.tail)
        whole = min((index >> SHIFT) - self._first, len(self._blocks) - 1)
        if whole > 0:  # the partial last block stays so that extend continues in place
            self._garbage.extend(self._blocks[:whole])
            del self._blocks[:whole]
            self._first += whole

    def collect(self) -> None:
        """Release every dropped block now."""
        self._garbage.clear()


class MemoryStore(LevelStore):
    """All levels in local memory (the paper's "Mem." variants)."""

    #: Nothing survives the process: the tree algorithms do not checkpoint on every flush.
    durable = False

    def __init__(self) -> None:
        self._levels: list[MemoryLevel] = []
        self._checkpoint: Any = None

    def commit(self, state: Any, wait: bool = True) -> None:
        """Keep ``state`` for a reopen in this process (levels are shared, so only after a close)."""
        self._checkpoint = state

    def load(self) -> Any:
        return self._checkpoint

    def level(self, number: int) -> MemoryLevel:
        levels = self._levels
        while len(levels) <= number:
            levels.append(MemoryLevel())
        return levels[number]

    def clear(self) -> None:
        self._levels.clear()

    def collect(self) -> None:
        for level in self._levels:
            level.collect()


class MemoryBackend(Backend):
    """``memory://``: windows that live as long as this backend object (no durability).

    A window can be reopened in the same process after it was closed.
    """

    def __init__(self, url: str = "memory://") -> None:
        super().__init__()
        self.url = url
        self._windows: dict[str, tuple[dict[str, Any], MemoryStore]] = {}

    def create(self, window_id: str, meta: dict[str, Any]) -> None:
        check_window_id(window_id)
        if window_id in self._windows:
            raise StoreError(f"window {window_id!r} already exists in {self.url}; open it with Window.open")
        self._windows[window_id] = (dict(meta), MemoryStore())

    def _entry(self, window_id: str) -> tuple[dict[str, Any], MemoryStore]:
        check_window_id(window_id)
        try:
            return self._windows[window_id]
        except KeyError:
            raise MissingWindow(f"no window {window_id!r} in {self.url}") from None

    def meta(self, window_id: str) -> dict[str, Any]:
        return dict(self._entry(window_id)[0])

    def store(self, window_id: str, **options: Any) -> MemoryStore:
        return self._entry(window_id)[1]

    def windows(self) -> list[str]:
        return sorted(self._windows)

    def delete(self, window_id: str) -> bool:
        check_window_id(window_id)
        return self._windows.pop(window_id, None) is not None
