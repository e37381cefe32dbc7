"""What Log MTA and Amortized MTA share: dyadic levels with the paper's storage split.

Leaves get absolute indices 0, 1, 2, ... in insertion order; the live window is
``[head, tail)``. Node ``(l, j)`` covers leaves ``[j * 2**l, (j + 1) * 2**l)``,
so its children are ``(l-1, 2j)`` and ``(l-1, 2j+1)`` (paper Theorem 1, with
the offset of a partly evicted first pair folded into the absolute index).

Each level is split as in paper Fig. 3: the newest nodes sit in a local write
buffer (the *Tails*), older ones in a ``kvs.Level`` of the store, and a local
*Cache* holds a run of stored nodes near the head. A flush moves every buffer
but its last node to the store (the last node of a level is the only one an
insertion may still need or change); a cache miss reads one run. The hot paths
of the algorithms touch only the local lists.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Callable, Iterator

from kvs import LevelStore, MemoryStore, StoreError
from mta.algorithms.base import Aggregator
from mta.monoid import Monoid

#: Marks "no partial yet" where ``monoid.identity`` would cost a combine call.
EMPTY: Any = object()

#: Single evictions release dropped nodes once every ``DROP_MASK + 1`` (they only move ``head``).
DROP_MASK = 255

#: Paper section 5.1: 512 buffered leaves per write, 512 nodes per cache read.
BUFFER_SIZE = 512
CACHE_SIZE = 512


class TreeAggregator(Aggregator):
    """Level buffers, caches and leaf bookkeeping common to both MTAs."""

    uses_store = True
    _SAVED_APART = frozenset({"_bufs", "_leaves"})
    #: Levels 1 .. CHUNK_BITS-1 are not stored: their nodes are folded from leaves on demand.
    CHUNK_BITS = 0

    def __init__(self, monoid: Monoid, store: LevelStore | None = None, *,
                 buffer_size: int = BUFFER_SIZE, cache_size: int = CACHE_SIZE,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(monoid)
        if buffer_size < 1 or cache_size < 1:
            raise ValueError("buffer_size and cache_size must be >= 1")
        self.store = store if store is not None else MemoryStore()
        self.buffer_size = buffer_size
        self.cache_size = cache_size
        self._combine = monoid.combine
        self._fold = monoid.fold
        self._chunk_mask = (1 << self.CHUNK_BITS) - 1
        #: Extra entries for every checkpoint (``mta.Window`` adds the newest timestamp).
        self.annotate: Callable[[], dict[str, Any]] | None = None
        self._flush_due = False  # a flush came due during hold
        if state is None:
            self._reset()
        else:
            self._restore(state)

    def _reset(self) -> None:
        self.store.clear()
        self._levels: list[Any] = []
        self._bufs: list[list[Any]] = []    # write buffer of level l holds [_bstart[l], level tail)
        self._bstart: list[int] = []
        self._caches: list[list[Any]] = []  # cache of level l holds [_cstart[l], _cstart[l] + len)
        self._cstart: list[int] = []
        for _ in range(self.CHUNK_BITS + 1):
            self._add_level()
        self._leaves = self._bufs[0]
        self._head = 0
        self._tail = 0

    def checkpoint(self) -> dict[str, Any]:
        """The local part of the window (paper Fig. 3 and 4c): what a durable store
        must keep beside the levels for the window to be reopened."""
        return {
            "algorithm": self.name,
            "head": self._head,
            "tail": self._tail,
            "bstart": list(self._bstart),
            "bufs": [list(buf) for buf in self._bufs],
            "annotations": self.annotate() if self.annotate is not None else {},
        }

    def _restore(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`checkpoint` whose levels the store has restored."""
        if state.get("algorithm") != self.name:
            raise StoreError(f"checkpoint is of algorithm {state.get('algorithm')!r}, not {self.name!r}")
        self._bufs = [list(buf) for buf in state["bufs"]]
        self._bstart = list(state["bstart"])
        self._levels = [self.store.level(n) for n in range(len(self._bufs))]
        for number, level in enumerate(self._levels):
            if level.tail != self._bstart[number]:
                raise StoreError(f"level {number} ends at {level.tail} in the store but the checkpoint "
                                 f"continues it at {self._bstart[number]}: store and checkpoint disagree")
        self._caches = [[] for _ in self._bufs]
        self._cstart = list(self._bstart)
        self._leaves = self._bufs[0]
        self._head = state["head"]
        self._tail = state["tail"]

    def _add_level(self) -> None:
        level = self.store.level(len(self._levels))
        self._levels.append(level)
        self._bufs.append([])
        self._bstart.append(level.tail)
        self._caches.append([])
        self._cstart.append(level.tail)

    def _node(self, number: int, index: int) -> Any:
        """Node ``(number, index)`` from the buffer, the cache, or a cache refill."""
        if 0 < number < self.CHUNK_BITS:
            return reduce(self._combine, self._leaf_range(index << number, (index + 1) << number))
        offset = index - self._bstart[number]
        if offset >= 0:
            return self._bufs[number][offset]
        cache = self._caches[number]
        offset = index - self._cstart[number]
        if 0 <= offset < len(cache):
            return cache[offset]
        cache = self._levels[number].read(index, min(index + self.cache_size, self._bstart[number]))
        self._caches[number] = cache
        self._cstart[number] = index
        return cache[0]

    def _oldest(self) -> Any:
        return self._node(0, self._head)

    def _gather(self, nodes: list[tuple[int, int]]) -> None:
        """Bring ``nodes`` into the caches in one store round trip (the first node of a level
        starts its run).

        A bulk eviction then pays one round trip instead of one per level
        (a no-op in memory, where reads are free)."""
        if not self.store.durable:
            return
        runs: dict[int, tuple[int, int, int]] = {}
        for number, index in nodes:
            if 0 < number < self.CHUNK_BITS or index >= self._bstart[number] or number in runs:
                continue  # folded from leaves, in the write buffer, or covered by an earlier run
            if 0 <= index - self._cstart[number] < len(self._caches[number]):
                continue
            runs[number] = (number, index, min(index + self.cache_size, self._bstart[number]))
        if runs:
            for (number, start, _), values in zip(runs.values(), self.store.read_many(list(runs.values()))):
                self._caches[number] = values
                self._cstart[number] = start

    #: Levels below a node whose descendants one cache run covers (2^9 <= CACHE_SIZE).
    GATHER_DEPTH = 9

    def _gather_below(self, number: int, index: int) -> None:
        """Before a root-to-leaf search descends from node ``(number, index)``: the live part
        of its subtree on the next levels, in one round trip (instead of one per level)."""
        h = self._head
        depth = min(number, self.GATHER_DEPTH, self.cache_size.bit_length() - 1)
        self._gather([(number - d, max(index << d, h >> (number - d))) for d in range(1, depth + 1)])

    def _leaf_range(self, start: int, stop: int) -> list[Any]:
        """Leaves ``start <= i < stop``: stored ones through the level-0 cache, then buffered ones."""
        split = self._bstart[0]
        out: list[Any] = []
        if start < split:
            middle = min(stop, split)
            cache, first = self._caches[0], self._cstart[0]
            if not (first <= start and middle <= first + len(cache)):
                cache = self._levels[0].read(start, max(middle, min(start + self.cache_size, split)))
                self._caches[0] = cache
                self._cstart[0] = first = start
            out = cache[start - first:middle - first]
            start = middle
        if start < stop:
            out += self._leaves[start - split:stop - split]
        return out

    def flush(self, wait: bool = True) -> None:
        """Move the buffered nodes to the store and, for a durable store, commit them
        with a checkpoint; with ``wait``, until it is durable (StoreError if that
        fails: the commit stays queued, retry later).

        Insertions flush a full write buffer without waiting: the commit is sent in
        the background, so they go on (correctly, in memory) even while the store
        is unreachable, and a failed commit is retried by the next one. While
        :attr:`hold` is set such a flush only comes due (:meth:`end_hold` says so)."""
        if self.hold and not wait:
            self._flush_due = True
            return
        self._move_buffers()
        if self.store.durable:
            self.store.commit(self.checkpoint(), wait=wait)

    def begin_hold(self) -> None:
        super().begin_hold()
        self._held_head = self._head

    def end_hold(self) -> bool:
        """Leave :attr:`hold`: release the stored nodes evicted meanwhile and move the
        write buffers if a flush came due (the commit is the caller's: a batch is never
        split by one). Return whether it did."""
        self.hold = False
        self._release(self._held_head)
        due, self._flush_due = self._flush_due, False
        if due:
            self._move_buffers()
        return due

    def snapshot(self) -> Any:
        """The local state (O(log n) nodes plus the write buffers), for :meth:`restore`:
        valid while :attr:`hold` keeps the store untouched."""
        state = super().snapshot()
        state["_bufs"] = [list(buf) for buf in self._bufs]
        state["_leaves"] = state["_bufs"][0]
        return state

    @property
    def commit_error(self) -> Exception | None:
        """Why the store's last commit failed (None once one succeeds)."""
        return getattr(self.store, "error", None)

    def _move_buffers(self) -> None:
        """Move buffered nodes to the store, but the last node of each level and the
        leaves of an incomplete chunk: insertion still reads (Log MTA: rewrites) those.

        A level restarted since (Log MTA, ``_restart_level``) is reset in the store
        first: restarts touch only local state until here, so that a batch in
        :attr:`hold` can be undone."""
        for number, buf in enumerate(self._bufs):
            level = self._levels[number]
            if level.tail != self._bstart[number]:
                level.reset(self._bstart[number])
            n = self._movable(number, buf)
            if n > 0:
                level.extend(buf[:n])
                del buf[:n]
                self._bstart[number] += n

    def _movable(self, number: int, buf: list[Any]) -> int:
        """How many of level ``number``'s buffered nodes a flush moves to the store."""
        if number:
            return len(buf) - 1
        return (self._tail & ~self._chunk_mask) - self._bstart[0]

    def _release(self, old_head: int) -> None:
        """Drop the stored nodes wholly before ``head`` (pointer moves only), in batches:
        only when the head has crossed a multiple of ``DROP_MASK + 1`` since ``old_head``
        (and not during :attr:`hold`: :meth:`end_hold` releases them)."""
        head = self._head
        if (head ^ old_head) > DROP_MASK and not self.hold:
            for number, level in enumerate(self._levels):
                level.drop_until(head >> number)

    def __len__(self) -> int:
        return self._tail - self._head

    def __iter__(self) -> Iterator[Any]:
        h, split = self._head, self._bstart[0]
        if h < split:
            yield from self._levels[0].read(h, split)
        yield from self._leaves[max(h - split, 0):]

    def clear(self) -> None:
        self._reset()
