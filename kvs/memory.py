"""In-memory level store: each level is a list of fixed-size blocks.

Blocks make ``drop_until`` cheap whatever the number of nodes dropped: whole
blocks move to a garbage list in one slice, and the garbage is released one
block per new block (the paper's background garbage collector, section 4.1.4),
so neither a bulk eviction nor a later insertion pays for freeing millions of
objects at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kvs.base import Level, LevelStore, MissingWindow, StoreError
from kvs.blocks import Backend, check_window_id
from kvs.leases import Lease, WindowBusy, WindowDeleted, WindowFenced

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

    def snapshot(self) -> tuple:
        """What :meth:`restore` needs to rebuild the level as it is now, in O(blocks):
        full blocks are never changed again, and the last one only grows."""
        return (self.head, self.tail, self._first, list(self._blocks))

    @classmethod
    def restore(cls, snapshot: tuple) -> MemoryLevel:
        """A level as it was at ``snapshot``, sharing its full blocks (not its last one)."""
        level = cls()
        level.head, level.tail, level._first, blocks = snapshot
        blocks = list(blocks)
        blocks[-1] = blocks[-1][:level.tail - ((level._first + len(blocks) - 1) << SHIFT)]
        level._blocks = blocks
        return level


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


@dataclass
class _Stored:
    """A memory:// window: its record, its last commit and its writer's lease."""

    meta: dict[str, Any]
    levels: list[tuple] = field(default_factory=list)  # MemoryLevel.snapshot() of each level
    state: Any = None
    token: str | None = None
    owner: str | None = None
    ttl: float = 0.0
    expires: float = 0.0  # time.monotonic()


class HeldMemoryStore(MemoryStore):
    """The levels of a ``memory://`` window as one writer sees them: restored from the
    window's last commit, and committed back only while the writer holds the lease."""

    def __init__(self, backend: MemoryBackend, lease: Lease, stored: _Stored) -> None:
        super().__init__()
        self.backend, self.lease = backend, lease
        self.fenced: WindowFenced | None = None
        self._levels = [MemoryLevel.restore(snapshot) for snapshot in stored.levels]
        self._checkpoint = stored.state

    def commit(self, state: Any, wait: bool = True) -> None:
        """Record the levels and ``state`` as the window's (WindowFenced if this writer lost it)."""
        if self.fenced is not None:
            raise self.fenced
        self.backend._commit(self.lease, [level.snapshot() for level in self._levels], state)
        self._checkpoint = state

    def fence(self, error: WindowFenced) -> None:
        self.fenced = error
        self.backend.keeper.drop(self.lease)

    def release(self) -> None:
        self.backend.keeper.drop(self.lease)
        self.backend.release(self.lease)


class MemoryBackend(Backend):
    """``memory://``: windows that live as long as this backend object (no durability).

    A window can be reopened in the same process after it was closed; it then
    holds what its last flush (or close) left. ``memory://NAME`` is one backend per
    name and process (:func:`kvs.connect`); bare ``memory://`` a new one per call.
    """

    def __init__(self, url: str = "memory://", **lease_options: Any) -> None:
        super().__init__(**lease_options)
        self.url = url
        self._windows: dict[str, _Stored] = {}
        self._lock = threading.Lock()

    def create(self, window_id: str, meta: dict[str, Any], *, replace: bool = False) -> Lease:
        check_window_id(window_id)
        lease = self.new_lease(window_id)
        with self._lock:
            if window_id in self._windows and not replace:
                raise StoreError(f"window {window_id!r} already exists in {self.url}; open it instead (Window.open for a "
                                 "window, Stream.load for a stream)")
            self._windows[window_id] = stored = _Stored(dict(meta))
            self._hold(stored, lease)
        return lease

    def acquire(self, window_id: str, *, take_over: bool = False) -> Lease:
        lease = self.new_lease(window_id)
        with self._lock:
            stored = self._entry(window_id)
            left = stored.expires - time.monotonic()
            if stored.token is not None and left > 0 and stored.owner != lease.owner and not take_over:
                raise WindowBusy(window_id, self.url, stored.owner or "", left, stored.ttl)
            self._hold(stored, lease)
        return lease

    @staticmethod
    def _hold(stored: _Stored, lease: Lease) -> None:
        stored.token, stored.owner, stored.ttl = lease.token, lease.owner, lease.ttl
        stored.expires = time.monotonic() + lease.ttl

    def _lost(self, lease: Lease) -> StoreError | None:
        """None if ``lease`` is still its window's (the caller holds the lock)."""
        stored = self._windows.get(lease.window_id)
        if stored is None:
            return WindowDeleted(lease.window_id, self.url)
        return None if stored.token == lease.token else WindowFenced(lease.window_id, self.url)

    def renew(self, leases: list[Lease]) -> list[StoreError | None]:
        with self._lock:
            lost = [self._lost(lease) for lease in leases]
            for lease, error in zip(leases, lost):
                if error is None:
                    self._hold(self._windows[lease.window_id], lease)
        return lost

    def release(self, lease: Lease) -> None:
        with self._lock:
            if self._lost(lease) is None:
                self._windows[lease.window_id].expires = 0.0

    def _commit(self, lease: Lease, levels: list[tuple], state: Any) -> None:
        with self._lock:
            error = self._lost(lease)
            if error is not None:
                raise error
            stored = self._windows[lease.window_id]
            stored.levels, stored.state = levels, state
            self._hold(stored, lease)

    def _entry(self, window_id: str) -> _Stored:
        check_window_id(window_id)
        try:
            return self._windows[window_id]
        except KeyError:
            raise MissingWindow(f"no window {window_id!r} in {self.url}") from None

    def meta(self, window_id: str) -> dict[str, Any]:
        return dict(self._entry(window_id).meta)

    def _store(self, window_id: str, lease: Lease, **options: Any) -> HeldMemoryStore:
        with self._lock:
            return HeldMemoryStore(self, lease, self._entry(window_id))

    def windows(self) -> list[str]:
        return sorted(self._windows)

    def delete(self, window_id: str) -> bool:
        check_window_id(window_id)
        with self._lock:
            return self._windows.pop(window_id, None) is not None
