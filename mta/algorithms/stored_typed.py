"""A stored window on the typed core (issue 20): one update at a time at the typed
in-memory window's speed, the store written in AmortizedMTA's format.

A new stored window of a built-in number monoid with no policy or one of ours (what
:class:`mta.Window` runs typed in memory) runs :class:`~mta.algorithms.typed.TypedTimed`
over :class:`~mta.algorithms.typed_amta.TypedAMTA` (or the bare TypedAMTA under MaxSize or no
policy): the compiled twin of the stored AmortizedMTA, whose results it gives bit for bit.
Only the commits differ, and only in who writes them: when AmortizedMTA would commit (its
leaf buffer moves: every 512 leaves on a durable store; :meth:`flush`), this writes what
AmortizedMTA's levels and checkpoint would hold then -- the leaves and nodes moved out of
its write buffers since the last commit, as the same ``(count, newest timestamp, partial)``
tuples, and the same checkpoint -- so that the window reopens as an AmortizedMTA on either
path with the results it would have had. Values AmortizedMTA keeps but never reads (evicted
leaves, nodes that straddle the head: the core never computes those) are written as the
identity.

The hot path reads nothing from the store, so nothing in it can fail: a commit is sent in
the background as AmortizedMTA's (a failed one stays queued and is retried by the next).
On a durable store an insertion evicts first and then inserts, as ``mta.Window`` drives the
AmortizedMTA there (the policy searched on the window with the update), so that both paths
give the same floats.

Local memory: the core holds the whole window, so a window stays on it only while it has
fewer than :data:`LOCAL_LIMIT` updates (columns of a few tens of kB, less than the
AmortizedMTA's own write buffers and level caches of 512 nodes): an insertion into a window
of that many, or a batch that would make it that many, first hands the window over to the
stored AmortizedMTA in the same state (:meth:`to_object`, exact), which keeps O(log n) of
it local from then on. A window reopened from its store with fewer updates goes on on the
typed core (:meth:`StoredTimed.over`, :meth:`StoredAMTA.over` with a checkpoint): its live
leaves are read from the store once and inserted into an empty core at the checkpoint's
head, which makes the same leaves and nodes wholly in the window, and R0, R1, the root
level and the leaf-buffer start are the checkpoint's, the stack stale, as AmortizedMTA's
``_restore`` leaves them. A larger window, or one the typed core cannot hold (a partial or
a timestamp of another kind), reopens as the AmortizedMTA.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable, Sequence

from kvs import LevelStore, StoreError
from mta.algorithms.amta import AmortizedMTA
from mta.algorithms.typed import TypedTimed, Untyped
from mta.algorithms.typed_amta import TypedAMTA
from mta.monoid import Monoid

__all__ = ["LOCAL_LIMIT", "StoredAMTA", "StoredTimed"]

#: A window of this many updates or more leaves the typed core at its next insertion.
LOCAL_LIMIT = 4096

#: AmortizedMTA.CHUNK_BITS: the levels below are folded from leaves, not stored.
_BITS = 5

_timed_push = TypedTimed.push
_timed_columns = TypedTimed.insert_columns
_timed_arrays = TypedTimed.insert_arrays
_bare_push = TypedAMTA.push
_bare_evict = TypedAMTA.evict


def _same(partial: Any) -> Any:
    return partial


def _resumable(state: dict[str, Any]) -> bool:
    """Whether the window of checkpoint ``state`` reopens on the typed core: a stored
    AmortizedMTA's, of fewer than :data:`LOCAL_LIMIT` updates."""
    return state.get("algorithm") == "amta" and state["tail"] - state["head"] < LOCAL_LIMIT


class _Stored:
    """The store side shared by :class:`StoredTimed` and :class:`StoredAMTA`: commits in
    AmortizedMTA's format. ``self._amta`` is the TypedAMTA, ``self._seen`` its ``moves``
    already committed."""

    uses_store = True
    store: LevelStore
    #: Extra checkpoint entries (``mta.Window`` sets it: its newest timestamp and notes).
    annotate: Callable[[], dict[str, Any]] | None

    def _attach(self, store: LevelStore, amta: TypedAMTA, fresh: bool = True) -> None:
        self.store = store
        self.annotate = None
        self._amta = amta
        self._seen = amta.moves
        amta.durable = store.durable
        if fresh:
            store.clear()  # as AmortizedMTA starts

    def _resume(self, state: dict[str, Any], elements: list[Any], insert: Callable[[list[Any]], None],
                part: Callable[[Any], Any]) -> None:
        """Continue from ``state``, a checkpoint of the store, whose live leaves are
        ``elements`` (AmortizedMTA's, read from the store): ``insert`` puts them in the
        empty core, ``part`` takes a result's partial out of its element."""
        amta = self._amta
        amta.start_at(state["head"])
        insert(elements)
        head, tail, root = state["head"], state["tail"], state["root_level"]
        if amta.layout()[1] != tail:
            raise StoreError(f"the store holds {len(elements)} live leaves, the checkpoint {tail - head}")
        r0 = part(state["r0"]) if head < tail else None
        r1 = part(state["r1"]) if ((head >> root) + 1) << root < tail else None  # R1 not empty
        amta.resume(state["bstart"][0], len(state["bufs"]), root, r0, r1)
        self._seen = amta.moves

    def _wrap(self, first: int, last: int, partial: Any, head: int) -> Any:
        """The object algorithm's element of leaves ``[first, last]`` (absolute indices;
        ``head`` the window's first)."""
        return partial

    def _buffer_moved(self) -> None:
        """The leaf buffer moved (AmortizedMTA flushed it): commit in the background, as it
        does on a durable store (a non-durable one commits on :meth:`flush` only)."""
        self._seen = self._amta.moves
        if self.store.durable:
            self._write_levels()
            self.store.commit(self.checkpoint(), wait=False)

    def flush(self, wait: bool = True) -> None:
        """AmortizedMTA.flush: move the leaf buffer, write what it moved to the store and,
        on a durable store, commit (``wait``: until durable, StoreError if that failed)."""
        TypedAMTA.flush(self._amta)
        self._seen = self._amta.moves
        self._write_levels()
        if self.store.durable:
            self.store.commit(self.checkpoint(), wait=wait)

    @property
    def commit_error(self) -> Exception | None:
        return getattr(self.store, "error", None)

    def _leaves(self, start: int, stop: int, head: int) -> list[Any]:
        """Leaves ``[start, stop)`` as AmortizedMTA stores them (the identity before ``head``)."""
        live = max(start, min(head, stop))
        dead = [self.monoid.identity] * (live - start)
        return dead + self._live_leaves(live, stop, head) if live < stop else dead

    def _live_leaves(self, start: int, stop: int, head: int) -> list[Any]:
        return self._amta.leaves(start, stop)

    def _element(self, number: int, index: int, head: int) -> Any:
        """Node ``(number, index)`` (a leaf for 0) as AmortizedMTA stores it."""
        partial = self._amta.part(number, index)
        if partial is None:
            return self.monoid.identity
        return self._wrap(index << number, ((index + 1) << number) - 1, partial, head)

    def _write_levels(self) -> None:
        """Extend the store's levels with what AmortizedMTA would have moved there by now:
        leaves up to its leaf-buffer start, on each stored level all nodes but the newest;
        then drop what lies before the head (as its ``_release``)."""
        head, tail, split, levels, _ = self._amta.layout()
        store = self.store
        leaves = store.level(0)
        if leaves.tail < split:
            leaves.extend(self._leaves(leaves.tail, split, head))
        for number in range(_BITS, levels):
            level = store.level(number)
            end = (tail >> number) - 1
            if level.tail < end:
                level.extend([self._element(number, j, head) for j in range(level.tail, end)])
        for number in range(levels):
            store.level(number).drop_until(head >> number)

    def checkpoint(self) -> dict[str, Any]:
        """AmortizedMTA.checkpoint() of the window in this state (after :meth:`_write_levels`)."""
        head, tail, split, levels, root = self._amta.layout()
        identity = self.monoid.identity
        store = self.store
        bstart = [split] + [store.level(n).tail for n in range(1, levels)]
        bufs: list[list[Any]] = [self._leaves(split, tail, head)]
        bufs += [[] for _ in range(1, min(_BITS, levels))]
        bufs += [[self._element(n, j, head) for j in range(bstart[n], tail >> n)] for n in range(_BITS, levels)]
        r0 = r1 = identity
        if head < tail:
            middle = ((head >> root) + 1) << root  # B: R0 = agg[head, B), R1 = agg[B, tail)
            first, second = self._amta.halves()
            r0 = self._wrap(head, middle - 1, first, head)
            if middle < tail:
                r1 = self._wrap(middle, tail - 1, second, head)
        return {"algorithm": "amta", "head": head, "tail": tail, "bstart": bstart, "bufs": bufs,
                "annotations": self.annotate() if self.annotate is not None else {},
                "r0": r0, "r1": r1, "root_level": root}

    def _finish_hold(self) -> bool:
        """After a batch: whether AmortizedMTA's leaf buffer moved during it (its commit is the
        caller's, :meth:`flush`)."""
        moved = self._amta.moves != self._seen
        self._seen = self._amta.moves
        return moved

    def _handover(self, obj: Any) -> Any:
        """``obj`` (the AmortizedMTA of :meth:`to_object`) with this window's annotations."""
        obj.annotate = self.annotate
        return obj


class StoredTimed(_Stored, TypedTimed):
    """A stored timed window (a policy that reads times) on the typed core."""

    name = "amta"

    def __init__(self, core: TypedAMTA, timed_monoid: Monoid, policy: Any, store: LevelStore,
                 fresh: bool = True) -> None:
        TypedTimed.__init__(self, core, timed_monoid, policy)
        self._attach(store, core, fresh)

    @staticmethod
    def over(make_core: Callable[[], TypedAMTA], timed_monoid: Monoid, policy: Any, store: LevelStore,
             state: dict[str, Any] | None = None) -> StoredTimed | AmortizedMTA:
        """A new window on the typed core; with ``state`` (a checkpoint of ``store``), the
        window reopened: on the typed core if it fits (:func:`_resumable`, every element
        typed), else as the stored AmortizedMTA."""
        if state is None:
            return StoredTimed(make_core(), timed_monoid, policy, store)
        obj = AmortizedMTA(timed_monoid, store, state=state)
        if not _resumable(state):
            return obj
        elements = list(obj)  # the live leaves, read from the store
        window = StoredTimed(make_core(), timed_monoid, policy, store, fresh=False)

        def insert(leaves: list[Any]) -> None:
            if any(leaf[0] != 1 for leaf in leaves):
                raise Untyped("a leaf of a timed window counts one update")
            _timed_columns(window, [leaf[1] for leaf in leaves], [leaf[2] for leaf in leaves])

        try:
            window._resume(state, elements, insert, lambda element: element[2])
        except Untyped:
            return obj
        return window

    def _wrap(self, first: int, last: int, partial: Any, head: int) -> Any:
        return (last - first + 1, self.timestamp(last - head), partial)

    def _live_leaves(self, start: int, stop: int, head: int) -> list[Any]:
        return list(zip(repeat(1), self.timestamps(start - head, stop - head), self._amta.leaves(start, stop)))

    def push(self, timestamp: Any, partial: Any) -> int:
        if len(self) >= LOCAL_LIMIT:
            raise Untyped("the window outgrew the typed core's local part")
        if not self.store.durable:
            k = _timed_push(self, timestamp, partial)
        else:  # search first, as the stored AmortizedMTA (mta.Window._apply_first_search)
            k = self.push_first(timestamp, partial)
        if self._amta.moves != self._seen and not self.hold:
            self._buffer_moved()
        return k

    def accepts(self, partials: Sequence[Any], timestamps: Sequence[Any]) -> bool:
        return len(self) + len(partials) < LOCAL_LIMIT and TypedTimed.accepts(self, partials, timestamps)

    def insert_columns(self, timestamps: Sequence[Any], partials: Sequence[Any]) -> None:
        _timed_columns(self, timestamps, partials)
        if self._amta.moves != self._seen and not self.hold:
            self._buffer_moved()

    def insert_arrays(self, timestamps: Any, values: Any, keys: Any = None) -> None:
        if len(self) + len(values) >= LOCAL_LIMIT:
            raise Untyped("the window outgrew the typed core's local part")
        _timed_arrays(self, timestamps, values, keys)
        if self._amta.moves != self._seen and not self.hold:
            self._buffer_moved()

    def end_hold(self) -> bool:
        TypedTimed.end_hold(self)
        return self._finish_hold()

    def clear(self) -> None:
        TypedTimed.clear(self)
        self.store.clear()

    def to_object(self, store: Any = None) -> Any:
        """The stored AmortizedMTA in this state, its levels rewritten to the store."""
        return self._handover(TypedTimed.to_object(self, self.store))


class StoredAMTA(_Stored, TypedAMTA):
    """A stored window on the bare typed core (no policy, or MaxSize)."""

    def __init__(self, monoid: Monoid, store: LevelStore, max_size: int | None = None, fresh: bool = True) -> None:
        TypedAMTA.__init__(self, monoid, max_size)
        self._attach(store, self, fresh)
        self._max = max_size

    @staticmethod
    def over(monoid: Monoid, store: LevelStore, max_size: int | None = None,
             state: dict[str, Any] | None = None) -> StoredAMTA | AmortizedMTA:
        """A new window on the typed core; with ``state`` (a checkpoint of ``store``), the
        window reopened: on the typed core if it fits (:func:`_resumable`, every partial
        typed), else as the stored AmortizedMTA."""
        if state is None:
            return StoredAMTA(monoid, store, max_size)
        obj = AmortizedMTA(monoid, store, state=state)
        if not _resumable(state):
            return obj
        elements = list(obj)  # the live leaves, read from the store
        window = StoredAMTA(monoid, store, max_size, fresh=False)
        try:
            window._resume(state, elements, lambda leaves: TypedAMTA.insert_many(window, leaves), _same)
        except Untyped:
            return obj
        return window

    def push(self, timestamp: Any, partial: Any) -> int:
        n = len(self)
        if n >= LOCAL_LIMIT:
            raise Untyped("the window outgrew the typed core's local part")
        k = 0 if self._max is None else n + 1 - self._max
        if not self.store.durable or k <= 0:
            k = _bare_push(self, timestamp, partial)
        else:  # evict first, as the stored AmortizedMTA (mta.Window._apply_first_search)
            if not self.fits(partial):
                raise Untyped(partial)
            if not self._max:  # MaxSize(0): the update goes too, never inserted
                if k > 1:
                    _bare_evict(self, k - 1)
                return k
            _bare_evict(self, k)
            _bare_push(self, timestamp, partial)  # evicts nothing more
        if self.moves != self._seen and not self.hold:
            self._buffer_moved()
        return k

    def accepts(self, partials: Sequence[Any]) -> bool:
        return len(self) + len(partials) < LOCAL_LIMIT and TypedAMTA.accepts(self, partials)

    def insert_many(self, partials: Sequence[Any]) -> None:
        TypedAMTA.insert_many(self, partials)
        if self.moves != self._seen and not self.hold:
            self._buffer_moved()

    def insert_array(self, values: Any, keys: Any = None) -> None:
        if len(self) + len(values) >= LOCAL_LIMIT:
            raise Untyped("the window outgrew the typed core's local part")
        TypedAMTA.insert_array(self, values, keys)
        if self.moves != self._seen and not self.hold:
            self._buffer_moved()

    def end_hold(self) -> bool:
        TypedAMTA.end_hold(self)
        return self._finish_hold()

    def clear(self) -> None:
        TypedAMTA.clear(self)
        self.store.clear()

    def to_object(self, monoid: Monoid | None = None, wrap: Any = None, store: Any = None) -> Any:
        """The stored AmortizedMTA in this state, its levels rewritten to the store."""
        return self._handover(TypedAMTA.to_object(self, monoid, wrap, self.store))
