"""A window's levels in a durable backend, as aligned blocks of encoded nodes.

Block ``b`` of a level holds its nodes ``[b * size, (b + 1) * size)``: one
stored value per block (DESIGN.md, "Storage in Redis"), so a flush of the write
buffer is a few block writes and a cache refill one or two block reads. The block
being filled is mirrored locally (at most ``size`` nodes per level).

Nothing reaches the backend between commits: a commit writes the changed blocks,
deletes a batch of dropped ones and replaces the checkpoint in one atomic backend
call, so the stored window is always a checkpoint's window. Commits are encoded
by the caller and sent by the backend's :class:`Writer` thread (paper section 5.1:
"storing the buffered elements is always a background operation"); commits that
queue up while one is in flight are merged into one. Until a commit is confirmed
its blocks are served from memory. A failed commit stays queued and is retried
with the next one (writes are whole blocks, so repeating one is harmless).

``reset`` and ``clear`` give the level a new *generation*: old blocks keep their
keys (``level:generation:block``) until they are deleted in the background, so
they never collide with new ones.
"""

from __future__ import annotations

import atexit
import threading
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kvs.base import Level, LevelStore, StoreError
from kvs.codec import pack, unpack, unpack_chunks
from kvs.leases import LEASE_TTL, Keeper, Lease, WindowFenced, new_lease

FORMAT = "mta-window/1"


@dataclass
class RoundTrips:
    """Backend calls that crossed to the store (tests count them; benchmarks report them)."""

    reads: int = 0
    writes: int = 0


class Backend(ABC):
    """A place that holds many windows: a Redis server or cluster, a file, memory.

    Backends are shared: every window opened through the same URL uses one
    backend and its connection pool.

    A window has one writer at a time (:mod:`kvs.leases`): :meth:`create` and
    :meth:`acquire` hand out its lease, and the level store of :meth:`store`
    commits only while it holds it. ``owner`` names this backend's writers (None:
    each lease gets a unique owner id); ``lease_ttl`` is how long a lease lasts
    without renewal.
    """

    url: str

    def __init__(self, *, owner: str | None = None, lease_ttl: float = LEASE_TTL) -> None:
        if not (isinstance(lease_ttl, (int, float)) and 0 < lease_ttl < 1e6):
            raise ValueError(f"lease_ttl must be a positive number of seconds, got {lease_ttl!r}")
        if owner is not None and (not isinstance(owner, str) or not owner or len(owner) > 200):
            raise ValueError(f"owner must be a non-empty string of at most 200 characters, got {owner!r}")
        self.round_trips = RoundTrips()
        self.owner = owner
        self.lease_ttl = float(lease_ttl)
        self.keeper = Keeper(self)

    def new_lease(self, window_id: str) -> Lease:
        return new_lease(window_id, self.owner, self.lease_ttl)

    @abstractmethod
    def create(self, window_id: str, meta: dict[str, Any], *, replace: bool = False) -> Lease:
        """Register a new window, held by the returned lease (StoreError if ``window_id``
        exists, unless ``replace``: then the old window is dropped and its writer fenced)."""

    @abstractmethod
    def acquire(self, window_id: str, *, take_over: bool = False) -> Lease:
        """The lease of an existing window (MissingWindow); WindowBusy if another owner's
        lease is live, unless ``take_over`` (that writer's commits then fail)."""

    @abstractmethod
    def renew(self, leases: list[Lease]) -> list[StoreError | None]:
        """Extend each lease still held (None); for one that is lost, WindowFenced or
        WindowDeleted. One round trip."""

    @abstractmethod
    def release(self, lease: Lease) -> None:
        """End ``lease`` if it is still the window's (others may open it at once)."""

    @abstractmethod
    def meta(self, window_id: str) -> dict[str, Any]:
        """The window's creation record (StoreError if missing or not an mta window)."""

    @abstractmethod
    def windows(self) -> list[str]:
        """The ids of the windows stored here, sorted."""

    @abstractmethod
    def delete(self, window_id: str) -> bool:
        """Remove the window and every key it owns; False if there was none. A writer that
        has it open is fenced: its next commit raises WindowDeleted."""

    def store(self, window_id: str, lease: Lease | None = None, *, take_over: bool = False,
              **options: Any) -> LevelStore:
        """The level store of an existing window, writing under ``lease`` (by default
        one acquired now: WindowBusy if another writer holds the window)."""
        if lease is None:
            lease = self.acquire(window_id, take_over=take_over)
        elif lease.window_id != window_id:
            raise ValueError(f"lease of window {lease.window_id!r} given for window {window_id!r}")
        try:
            store = self._store(window_id, lease, **options)
        except Exception:
            self.release(lease)  # a bad option or layout: the window is free again at once
            raise
        self.keeper.hold(lease, store)
        return store

    @abstractmethod
    def _store(self, window_id: str, lease: Lease, **options: Any) -> LevelStore:
        """The level store of ``window_id`` writing under ``lease``."""

    def finish(self) -> None:
        """Wait until the commits sent in the background are done (nothing to do here)."""

    def close(self) -> None:
        """Release the leases of open windows and the connections (the backend cannot
        be used afterwards)."""
        self.keeper.close()


@dataclass
class _Outbox:
    """A window's commits not yet confirmed by the backend, merged (newest wins)."""

    writes: dict[bytes, bytes] = field(default_factory=dict)
    deletes: list[bytes] = field(default_factory=list)
    checkpoint: bytes | None = None

    def absorb(self, newer: _Outbox) -> None:
        # A deleted block is dead and never written again, so writes and deletes never clash.
        self.writes.update(newer.writes)
        self.deletes += newer.deletes
        self.checkpoint = newer.checkpoint or self.checkpoint


class Writer:
    """One background thread per backend that sends its windows' commits, in order."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[BlockStore] = deque()
        self._queued: set[int] = set()
        self._busy: BlockStore | None = None
        self._thread: threading.Thread | None = None

    def submit(self, store: BlockStore) -> None:
        with self._cond:
            if id(store) not in self._queued:
                self._queued.add(id(store))
                self._queue.append(store)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kvs-writer", daemon=True)
                self._thread.start()
                atexit.register(self.finish)
            self._cond.notify_all()

    def finish(self, timeout: float = 30.0) -> None:
        """Send what is queued (at interpreter exit too), waiting at most ``timeout`` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: not self._queue and self._busy is None, timeout)

    def wait(self, store: BlockStore) -> None:
        """Until everything ``store`` submitted has been sent (or has failed)."""
        with self._cond:
            while id(store) in self._queued or self._busy is store:
                self._cond.wait()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                store = self._busy = self._queue.popleft()
                self._queued.discard(id(store))
            try:
                store.push()
            finally:
                with self._cond:
                    self._busy = None
                    self._cond.notify_all()


class BlockBackend(Backend):
    """A backend that stores blocks under byte keys and one checkpoint per window."""

    def __init__(self, **lease_options: Any) -> None:
        super().__init__(**lease_options)
        self.writer = Writer()

    def _store(self, window_id: str, lease: Lease, **options: Any) -> BlockStore:
        self.meta(window_id)  # exists and is ours
        return BlockStore(self, window_id, lease, **options)

    @abstractmethod
    def load(self, window_id: str, lease: Lease | None = None) -> bytes | None:
        """The window's last committed checkpoint (None before the first commit); with
        ``lease``, WindowFenced if it is no longer the window's (in the same read)."""

    @abstractmethod
    def fetch(self, window_id: str, keys: list[bytes]) -> list[bytes | None]:
        """The stored blocks under ``keys`` (None where missing), one round trip."""

    @abstractmethod
    def commit(self, window_id: str, writes: dict[bytes, bytes], deletes: list[bytes],
               checkpoint: bytes, lease: Lease) -> None:
        """Apply the writes and deletes and replace the checkpoint, all or nothing, and
        renew ``lease``; WindowFenced (nothing applied) unless ``lease`` is still the
        window's, checked in the same atomic operation."""

    def finish(self) -> None:
        self.writer.finish()


class BlockLevel(Level):
    __slots__ = ("head", "tail", "number", "generation", "purged", "_store", "_open", "_packed", "_dirty",
                 "_recent", "keep_blocks")

    def __init__(self, store: BlockStore, number: int, generation: int,
                 head: int = 0, tail: int = 0, purged: int | None = None,
                 open_block: list[Any] | None = None) -> None:
        self._store = store
        self.number = number
        self.generation = generation
        self.head = head
        self.tail = tail
        self.purged = head >> store.shift if purged is None else purged  # blocks below are deleted
        # Invariant: _open holds block tail >> shift from its start up to tail. A block is
        # stored as packed chunks: _packed = (bytes, count) encodes _open[:count], so a
        # commit packs only the nodes added since the last one.
        self._open = open_block if open_block is not None else [None] * (tail & store.mask)
        self._packed: tuple[bytes, int] = (b"", 0)
        # block -> (packed prefix, its count, values): changed since the last commit
        self._dirty: dict[int, tuple[bytes, int, list[Any]]] = {}
        self._recent: dict[int, list[Any]] = {}   # blocks of the latest reads, oldest first
        #: How many fetched blocks to keep (0: only those of the last read, which the MTAs'
        #: level caches read in runs; a stored FiBA's node reads alternate between a few).
        self.keep_blocks = 0

    def key(self, block: int) -> bytes:
        return b"%d:%d:%d" % (self.number, self.generation, block)

    def extend(self, values: list[Any]) -> None:
        size = self._store.block_size
        block = self.tail >> self._store.shift
        current = self._open
        done = 0
        while done < len(values):
            room = size - len(current)
            current += values[done:done + room]
            done += room
            self._dirty[block] = (*self._packed, current)
            if len(current) == size:
                block += 1
                current = []
                self._packed = (b"", 0)
        self._open = current
        self.tail += len(values)

    def read(self, start: int, stop: int) -> list[Any]:
        if not self.head <= start <= stop <= self.tail:
            raise IndexError(f"nodes [{start}, {stop}) are outside [{self.head}, {self.tail})")
        if start == stop:
            return []
        shift = self._store.shift
        first, last = start >> shift, (stop - 1) >> shift
        open_block = self.tail >> shift
        dirty, recent = self._dirty, self._recent
        wanted = range(first, last + 1)
        missing = self.missing(start, stop)
        if missing:
            fetched = self._store.fetch([self.key(b) for b in missing])
            recent.update(zip(missing, fetched))
            # Keep the blocks of this read and, up to ``keep_blocks`` in all, the latest others.
            for block in list(recent):
                if len(recent) <= max(self.keep_blocks, len(wanted)):
                    break
                if block not in wanted:
                    del recent[block]
        base = first << shift
        if first == last:  # one block (a stored FiBA reads one node at a time): slice, no copy of it
            block = dirty[first][2] if first in dirty else self._open if first == open_block else recent[first]
            return block[start - base:stop - base]
        out: list[Any] = []
        for b in wanted:
            if b in dirty:
                out += dirty[b][2]
            else:
                out += self._open if b == open_block else recent[b]
        return out[start - base:stop - base]

    def missing(self, start: int, stop: int) -> list[int]:
        """The blocks of nodes ``[start, stop)`` (not empty) that a read must fetch."""
        shift = self._store.shift
        open_block = self.tail >> shift
        dirty, recent = self._dirty, self._recent
        return [b for b in range(start >> shift, ((stop - 1) >> shift) + 1)
                if b not in dirty and b != open_block and b not in recent]

    def drop_until(self, index: int) -> None:
        if index > self.head:
            self.head = min(index, self.tail)

    def reset(self, index: int) -> None:
        if index < 0:
            raise ValueError(f"level index must be >= 0, got {index}")
        self._store.retire(self)
        self.generation = self._store.next_generation(self.number)
        self.head = self.tail = index
        self.purged = index >> self._store.shift
        self._open = [None] * (index & self._store.mask)
        self._packed = (b"", 0)
        self._dirty = {}
        self._recent = {}

    def collect(self, writes: dict[bytes, bytes], garbage: list[list[int]]) -> None:
        """Add this level's changed blocks to ``writes`` and its newly dropped ones to ``garbage``."""
        below = self.head >> self._store.shift
        if below > self.purged:
            garbage.append([self.number, self.generation, self.purged, below])
            self.purged = below
        for block, (prefix, count, values) in self._dirty.items():
            if block >= below:
                blob = prefix + pack(values[count:])
                writes[self.key(block)] = blob
                if values is self._open:
                    self._packed = (blob, len(values))

    def committed(self) -> None:
        self._dirty = {}

    def describe(self) -> list[int]:
        return [self.generation, self.head, self.tail, self.purged]


class BlockStore(LevelStore):
    """The levels of one window in a :class:`BlockBackend`, checkpointed by :meth:`commit`."""

    #: The tree algorithms commit a checkpoint after every buffer flush.
    durable = True

    def __init__(self, backend: BlockBackend, window_id: str, lease: Lease, *,
                 block_size: int = 512, delete_batch: int = 1024, background: bool = True) -> None:
        if block_size < 1 or block_size & (block_size - 1):
            raise ValueError(f"block_size must be a power of two, got {block_size}")
        if delete_batch < 1:
            raise ValueError(f"delete_batch must be >= 1, got {delete_batch}")
        self.backend = backend
        self.window_id = window_id
        self.lease = lease
        self.block_size = block_size
        self.shift = block_size.bit_length() - 1
        self.mask = block_size - 1
        self.delete_batch = delete_batch
        #: Send commits on the backend's writer thread (False: on the caller's thread).
        self.background = background
        self._levels: list[BlockLevel] = []
        self._generations: list[int] = []     # the newest generation of each level number
        self._garbage: list[list[int]] = []   # [level, generation, first block, end block) to delete
        self._lock = threading.Lock()         # guards the two below, shared with the writer thread
        self._outbox = _Outbox()
        self._inflight: dict[bytes, bytes] = {}  # blocks sent but not yet confirmed
        #: Why the last commit failed (None after a successful one); it stays queued.
        self.error: Exception | None = None
        #: Set once this store lost the window's lease: nothing it sends can land any more.
        self.fenced: WindowFenced | None = None

    # -- LevelStore ----------------------------------------------------------------

    def level(self, number: int) -> BlockLevel:
        while len(self._levels) <= number:
            n = len(self._levels)
            if n == len(self._generations):
                self._generations.append(0)
            self._levels.append(BlockLevel(self, n, self._generations[n]))
        return self._levels[number]

    def read_many(self, runs: list[tuple[int, int, int]]) -> list[list[Any]]:
        wanted: dict[bytes, tuple[BlockLevel, int]] = {}
        for n, start, stop in runs:
            level = self.level(n)
            if start < stop:
                for block in level.missing(start, stop):
                    wanted[level.key(block)] = (level, block)
        if wanted:
            for (level, block), values in zip(wanted.values(), self.fetch(list(wanted))):
                level._recent[block] = values
        return super().read_many(runs)

    def clear(self) -> None:
        for level in self._levels:
            self.retire(level)
            self.next_generation(level.number)
        self._levels = []

    # -- blocks --------------------------------------------------------------------

    def retire(self, level: BlockLevel) -> None:
        """Schedule every block of ``level``'s current generation for deletion."""
        end = (level.tail >> self.shift) + 1
        if end > level.purged:
            self._garbage.append([level.number, level.generation, level.purged, end])

    def next_generation(self, number: int) -> int:
        self._generations[number] += 1
        return self._generations[number]

    def fetch(self, keys: list[bytes]) -> list[list[Any]]:
        if self.fenced is not None:
            raise self.fenced
        inflight = self._inflight
        blobs = [inflight.get(k) for k in keys]
        absent = [k for k, blob in zip(keys, blobs) if blob is None]
        if absent:
            found = iter(self.backend.fetch(self.window_id, absent))
            blobs = [next(found) if blob is None else blob for blob in blobs]
        missing = [k.decode() for k, blob in zip(keys, blobs) if blob is None]
        if missing:
            self._check_lease()  # blocks go missing under a writer that lost the window
            raise StoreError(f"window {self.window_id!r}: blocks {', '.join(missing)} (level:generation:block) "
                             f"are missing from {self.backend.url}; the store was changed outside mta "
                             "or is corrupted")
        blocks = [unpack_chunks(blob) for blob in blobs]
        for key, values in zip(keys, blocks):
            if len(values) != self.block_size:
                raise StoreError(f"window {self.window_id!r}: block {key.decode()} holds {len(values)} "
                                 f"nodes, not {self.block_size}; the store is corrupted")
        return blocks

    # -- checkpoints ---------------------------------------------------------------

    def commit(self, state: Any, wait: bool = True) -> None:
        """Send the changed blocks with ``state`` (the algorithm's local part) as one
        atomic commit; with ``wait``, until it is durable (StoreError if it failed:
        it stays queued, and the next commit retries it)."""
        outbox = self._prepare(state)
        with self._lock:
            self._outbox.absorb(outbox)
            self._inflight.update(outbox.writes)
        if wait:
            self.drain()
        elif self.background:
            self.backend.writer.submit(self)
        else:
            self.push()

    def drain(self) -> None:
        """Wait until every commit is sent; raise StoreError if the last one failed."""
        if not self.background:
            self.push()
        else:
            writer = self.backend.writer
            if self._outbox.checkpoint is not None:
                writer.submit(self)
            writer.wait(self)
        if self.error is not None:
            raise self.error

    def push(self) -> None:
        """Send the outbox (on the writer thread, or the caller's without ``background``)."""
        with self._lock:
            outbox, self._outbox = self._outbox, _Outbox()
        if outbox.checkpoint is None:
            return
        try:
            if self.fenced is not None:
                raise self.fenced
            self.backend.commit(self.window_id, outbox.writes, outbox.deletes, outbox.checkpoint, self.lease)
        except Exception as error:  # kept for the caller; the commit stays queued
            with self._lock:
                outbox.absorb(self._outbox)
                self._outbox = outbox
            if isinstance(error, WindowFenced):
                self.fence(error)
            self.error = error if isinstance(error, StoreError) else StoreError(
                f"commit of window {self.window_id!r} failed: {type(error).__name__}: {error}")
            return
        self.backend.keeper.renewed(self.lease)
        with self._lock:
            inflight = self._inflight
            for key, blob in outbox.writes.items():
                if inflight.get(key) is blob:
                    del inflight[key]
        self.error = None

    # -- the lease ------------------------------------------------------------------

    def fence(self, error: WindowFenced) -> None:
        """This store lost the window (told by a commit, a read or the lease keeper):
        every later commit, load and read raises ``error``."""
        self.fenced = error
        self.backend.keeper.drop(self.lease)

    def _check_lease(self) -> None:
        """Raise WindowFenced if the window's lease is no longer this store's."""
        error = self.backend.renew([self.lease])[0]
        if error is not None:
            self.fence(error)
            raise error

    def release(self) -> None:
        """Send what is queued, then give up the lease (another writer may open the
        window at once). A commit made afterwards takes the lease again if no other
        writer has opened the window meanwhile, and is refused otherwise."""
        self.drain()
        self.backend.keeper.drop(self.lease)
        if self.fenced is None:
            self.backend.release(self.lease)

    def _prepare(self, state: Any) -> _Outbox:
        """Encode what changed since the last commit; the levels start afresh."""
        writes: dict[bytes, bytes] = {}
        for level in self._levels:
            level.collect(writes, self._garbage)
        deletes: list[bytes] = []
        rest: list[list[int]] = []
        for number, generation, first, end in self._garbage:
            take = max(0, min(end - first, self.delete_batch - len(deletes)))
            deletes += [b"%d:%d:%d" % (number, generation, b) for b in range(first, first + take)]
            if first + take < end:
                rest.append([number, generation, first + take, end])
        checkpoint = pack({
            "format": FORMAT,
            "block_size": self.block_size,
            "levels": [level.describe() for level in self._levels],
            "generations": self._generations,
            "garbage": rest,
            "state": state,
        })
        self._garbage = rest
        for level in self._levels:
            level.committed()
        return _Outbox(writes, deletes, checkpoint)

    def load(self) -> Any:
        """Restore the levels from the last checkpoint and return its ``state`` (None if never committed).

        Commits still queued are sent first (StoreError if they cannot be)."""
        self.drain()
        try:
            blob = self.backend.load(self.window_id, self.lease)
        except WindowFenced as error:
            self.fence(error)
            raise
        if blob is None:
            return None
        data = unpack(blob)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise StoreError(f"window {self.window_id!r} in {self.backend.url}: checkpoint is not {FORMAT}")
        if data["block_size"] != self.block_size:
            raise StoreError(f"window {self.window_id!r} was stored with block_size {data['block_size']}, "
                             f"not {self.block_size}")
        self._generations = list(data["generations"])
        self._garbage = [list(g) for g in data["garbage"]]
        described = data["levels"]
        # One round trip for the blocks being filled.
        keys = [b"%d:%d:%d" % (n, g, t >> self.shift) for n, (g, h, t, p) in enumerate(described)]
        blobs = self.backend.fetch(self.window_id, keys)
        self._levels = []
        for n, ((generation, head, tail, purged), blob) in enumerate(zip(described, blobs)):
            if blob is not None:
                open_block = unpack_chunks(blob)
                if len(open_block) != tail & self.mask:
                    raise StoreError(f"window {self.window_id!r}: block {keys[n].decode()} holds "
                                     f"{len(open_block)} nodes, the checkpoint says {tail & self.mask}")
            elif tail & self.mask and tail > head:
                raise StoreError(f"window {self.window_id!r}: block {keys[n].decode()} is missing "
                                 f"from {self.backend.url}; the store is corrupted")
            else:
                open_block = None
            level = BlockLevel(self, n, generation, head, tail, purged, open_block)
            if blob is not None:
                level._packed = (blob, len(open_block))
            self._levels.append(level)
        return data["state"]


_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-:")


def check_window_id(window_id: Any) -> None:
    """Window ids are 1-200 characters of letters, digits and ``_ . - :`` (no braces:
    the id is the Redis hash tag)."""
    if not isinstance(window_id, str) or not 0 < len(window_id) <= 200 or not _ID_CHARS.issuperset(window_id):
        raise ValueError(f"window id must be 1-200 letters, digits or '_.-:', got {window_id!r}")
