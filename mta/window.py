"""``mta.Window``: the one object users touch.

It binds a monoid, a slide policy, an algorithm and a level store::

    w = Window(Sum(), TimeRange(3600))
    w.insert(ts, reading)      # inserts, enforces the policy, returns how many left
    w.query()                  # the sum of the last hour

Updates are ``(timestamp, value)`` with non-decreasing timestamps, or in any order
with an out-of-order algorithm (``"fiba"``, ``"btree"``, ``"sorted"``: see
:mod:`mta.ordered_window`). When the policy needs more than a count (anything but
:class:`~mta.policy.MaxSize`), or the window is out of order, each element carries
``(count, newest timestamp, partial)`` so that the policy can see counts and times
of any run of updates; an in-order window with a count-only policy or none at all
stores the bare partials.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import sys
import uuid
from itertools import islice, repeat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from kvs import Backend, LevelStore, StoreError, connect
from mta.algorithms import ALGORITHMS, ORDERED_ALGORITHMS, TYPED_ALGORITHMS, Aggregator, OrderedAggregator, typed
from mta.algorithms import typed_record
from mta.algorithms.stored_typed import StoredAMTA, StoredTimed
from mta.arrays import as_list, numeric_array
from mta.monoid import Count, Monoid, Record, plain_finite
from mta.ordered_window import TimeOrdered
from mta.typed_ordered import TypedTimeOrdered
from mta.policy import Agg, AllOf, AnyOf, MaxSize, Policy, TimeRange

__all__ = ["Window"]

_INF = math.inf
_NEG_INF = -math.inf
_COUNT = operator.itemgetter(0)
_PARTIAL = operator.itemgetter(2)


def _timed_combine(inner: Callable[[Any, Any], Any], a: tuple, b: tuple) -> tuple:
    if not b[0]:
        return a
    return (a[0] + b[0], b[1], inner(a[2], b[2]))


def _timed(monoid: Monoid) -> tuple[Callable[[Any, Any], Any], tuple]:
    """Combine and identity of (count, newest timestamp, partial) tuples over ``monoid``
    (a partial, not a closure: it pickles where ``monoid.combine`` does)."""
    return functools.partial(_timed_combine, monoid.combine), (0, None, monoid.identity)


class _Timed(Monoid):
    """The monoid the algorithm runs when the policy needs counts and timestamps."""

    def __reduce__(self) -> Any:  # rebuilt from the monoid (a Record's combine does not pickle)
        return (_Timed, (self.inner,))

    def __init__(self, monoid: Monoid) -> None:
        self.combine, self.identity = _timed(monoid)
        self.inner = monoid
        self.commutative = False
        self.invertible = monoid.invertible
        self.selection = False

    def fold(self, acc: tuple, partials: Sequence[tuple]) -> tuple:
        count = sum(map(_COUNT, partials))
        if not count:
            return acc
        last = partials[-1]
        newest = last[1] if last[0] else next(p[1] for p in reversed(partials) if p[0])
        return (acc[0] + count, newest, self.inner.fold(acc[2], list(map(_PARTIAL, partials))))

    def invert(self, total: tuple, front: tuple) -> tuple:
        count = total[0] - front[0]
        if not count:
            return self.identity
        return (count, total[1], self.inner.invert(total[2], front[2]))


def _plain_in_order(timestamps: Sequence[Any]) -> bool:
    """Whether the timestamps are finite ints or floats in order, checked in C loops
    (False may also mean "check them one by one")."""
    return plain_finite(timestamps) and all(map(operator.le, timestamps, islice(timestamps, 1, None)))


def _where(index: int, positions: Sequence[int] | None) -> int:
    return positions[index] if positions is not None else index


def _bad_update(error: Exception, position: int, part: str) -> Exception:
    """``error`` of the update at ``position`` of a batch, of the same type, its message
    naming the update; ``position``, ``part`` ("timestamp" or "value") and ``reason``
    (the message alone) let a caller name the field in its own terms (the gRPC server)."""
    bad = type(error)(f"update {position}: {error}")
    bad.position, bad.part, bad.reason = position, part, str(error)  # type: ignore[attr-defined]
    return bad


#: Options of the level store rather than of the algorithm.
_STORE_OPTIONS = ("block_size", "delete_batch", "background")


def _backend(store: Any) -> Backend | None:
    if isinstance(store, Backend):
        return store
    if isinstance(store, (str, Path)):
        return connect(store)
    return None


def _is_timed(policy: Any) -> bool:
    return policy is not None and getattr(policy, "max_size", None) is None


def _policy_name(policy: Any) -> str:
    if policy is None:
        return "None"
    if isinstance(policy, Policy):
        return repr(policy)
    return getattr(policy, "__qualname__", type(policy).__qualname__)


def _trusted(policy: Any) -> bool:
    """Whether ``policy`` is none or built from this module's own policies, which never raise."""
    if policy is None or type(policy) in (MaxSize, TimeRange):
        return True
    return type(policy) in (AnyOf, AllOf) and all(map(_trusted, policy.policies))


def _unchanged(error: StoreError) -> StoreError:
    return StoreError(f"{error}; the window is unchanged (retry once the store is back)")


def _typed_ordered(monoid: Monoid, policy: Any, cls: type, in_memory: bool, options: dict[str, Any]) -> bool:
    """Whether an out-of-order window runs on a typed FiBA (:mod:`mta.typed_ordered`):
    compiled, FiBA in memory, a built-in number monoid or a Record of them, no policy or one of ours, options
    it takes (``late``; ``min_arity`` up to 16; a bad one is left for TimeOrdered to name)."""
    min_arity = options.get("min_arity", 16)
    return (typed.USE and cls.name == "fiba" and in_memory and set(options) <= {"late", "min_arity"}
            and options.get("late", "refuse") in ("refuse", "include")
            and type(min_arity) is int and 2 <= min_arity <= 16
            and (typed.serves(monoid) or typed_record.serves(monoid))
            and (policy is None or typed.plan(policy) is not None))


def _describe(monoid: Monoid) -> Any:
    """What a stored window records of its monoid, to refuse reopening it with another."""
    name = f"{type(monoid).__module__}.{type(monoid).__qualname__}"
    if isinstance(monoid, Record):
        return (name, tuple((field, _describe(m)) for field, m in monoid.fields.items()))
    return name


class Window(typed.WindowFields):
    """A sliding window: ``monoid`` aggregates, ``policy`` slides, ``algorithm`` computes.

    ``algorithm`` is a name from :data:`mta.algorithms.ALGORITHMS` (default
    ``"amta"``), whose updates come in timestamp order, or from
    :data:`mta.algorithms.ORDERED_ALGORITHMS` (``"fiba"``, ``"btree"``, ``"sorted"``),
    which take them in any order: the policy then judges updates by timestamp (the
    k oldest are the k first in timestamp order), :meth:`query` takes a time range
    and :meth:`retract` removes a timestamp. An update older than what has left such
    a window (its :attr:`frontier`) is late: refused (``ValueError`` naming both
    timestamps) unless ``late="include"``, which inserts it for the policy to judge.
    ``options`` go to the algorithm (``buffer_size``, ``cache_size`` for the MTAs
    and the stored FiBA, ``min_arity`` for the trees). Bad arguments raise before
    anything is built.

    ``store`` (tree algorithms only) is where the levels live: ``None`` (in
    memory), a URL or :class:`kvs.Backend` (``memory://``, a file path,
    ``redis://``, ``redis+cluster://``; the window is then created there as
    ``window_id``, a new uuid by default, and can be reopened with :meth:`open`;
    ``block_size``, ``delete_batch`` and ``background`` go to its level store), or a
    :class:`kvs.LevelStore` instance. A stored window has one writer: this one, until
    :meth:`close`; ``take_over=True`` replaces a window of the same id that exists
    (its writer, if any, is fenced: its commits fail with :class:`kvs.WindowFenced`).

    Every call is all or nothing: a call that raises (bad input, a policy that
    raises, a store that fails) leaves the window as it was before it, and every
    read shows that state (see :meth:`flush`).
    """

    def __init__(self, monoid: Monoid, policy: Callable[[Any, Any], bool] | None = None, *,
                 algorithm: str = "amta", store: LevelStore | Backend | str | Path | None = None,
                 window_id: str | None = None, labels: dict[str, Any] | None = None, take_over: bool = False,
                 **options: Any) -> None:
        cls = self._check(monoid, policy, algorithm, store)
        backend = _backend(store)
        level_store = store if isinstance(store, LevelStore) else None
        if backend is not None:
            window_id = window_id if window_id is not None else uuid.uuid4().hex
            store_options = {k: options.pop(k) for k in _STORE_OPTIONS if k in options}
            meta = {"algorithm": algorithm, "monoid": _describe(monoid),
                    "timed": _is_timed(policy), "policy": _policy_name(policy),
                    "options": options, "store_options": store_options, "labels": labels or {}}
            lease = backend.create(window_id, meta, replace=take_over)
            level_store = backend.store(window_id, lease, **store_options)
        elif window_id is not None or take_over:
            raise ValueError(f"{'window_id' if window_id is not None else 'take_over'} needs a store URL or "
                             "backend to name the window in")
        try:
            self._build(monoid, policy, cls, level_store, None, options)
            if backend is not None:
                self._algorithm.flush()  # a new window can be reopened at once
        except Exception:
            if backend is not None:
                backend.delete(window_id)
            raise
        self.id = window_id
        self.backend = backend
        self.labels = labels or {}

    @classmethod
    def open(cls, store: Backend | str | Path, window_id: str, monoid: Monoid,
             policy: Callable[[Any, Any], bool] | None = None, *, take_over: bool = False,
             **options: Any) -> "Window":
        """Reopen window ``window_id`` of ``store`` (after a restart, in another process).

        ``monoid`` and ``policy`` are Python objects and are not stored (no code is
        ever read from a store): pass the ones the window was created with. The
        monoid and whether the policy needs timestamps are checked against the
        stored record. The window continues from its last flush; the policy is
        enforced once on reopening.

        The window must not have a live writer (:class:`kvs.WindowBusy` names it and
        when its lease expires) unless ``take_over``: then the other writer's commits
        fail from now on (:class:`kvs.WindowFenced`) and none of them lands.
        """
        backend = _backend(store)
        if backend is None:
            raise TypeError(f"store must be a URL or a kvs.Backend, got {type(store).__name__}")
        meta = backend.meta(window_id)
        if meta["monoid"] != _describe(monoid):
            raise ValueError(f"window {window_id!r} aggregates {meta['monoid']}, not {_describe(monoid)}")
        if meta["timed"] != _is_timed(policy):
            raise ValueError(f"window {window_id!r} was created with policy {meta['policy']}, which "
                             f"{'needs' if meta['timed'] else 'does not need'} timestamps; "
                             f"{_policy_name(policy)} does not match")
        window_cls = cls._check(monoid, policy, meta["algorithm"], backend)
        level_store = backend.store(window_id, take_over=take_over, **meta["store_options"])
        self = cls.__new__(cls)
        try:
            self._build(monoid, policy, window_cls, level_store, level_store.load(), {**meta["options"], **options})
        except BaseException:
            level_store.release()  # the next writer need not wait for the lease to expire
            raise
        self.id = window_id
        self.backend = backend
        self.labels = meta.get("labels", {})
        self._enforce()
        return self

    @staticmethod
    def _check(monoid: Monoid, policy: Any, algorithm: str, store: Any) -> type[Aggregator]:
        if not isinstance(monoid, Monoid):
            raise TypeError(f"monoid must be an mta.monoid.Monoid, got {type(monoid).__name__}")
        if policy is not None and not callable(policy):
            raise TypeError(f"policy must be callable (total, old) -> bool, got {policy!r}")
        try:
            cls = ALGORITHMS.get(algorithm) or ORDERED_ALGORITHMS[algorithm]
        except (KeyError, TypeError):
            raise ValueError(f"unknown algorithm {algorithm!r}; choose one of "
                             f"{', '.join([*ALGORITHMS, *ORDERED_ALGORITHMS])}") from None
        if store is not None and not cls.uses_store:
            raise ValueError(f"algorithm {algorithm!r} keeps everything in memory and takes no store")
        if store is not None and not isinstance(store, (LevelStore, Backend, str, Path)):
            raise TypeError(f"store must be a URL, a kvs.Backend or a kvs.LevelStore, got {type(store).__name__}")
        cls.check_monoid(monoid)
        return cls

    def _build(self, monoid: Monoid, policy: Any, cls: type[Aggregator | OrderedAggregator],
               store: LevelStore | None, state: Any, options: dict[str, Any]) -> None:
        self.monoid = monoid
        self.policy = policy
        self._max_size = getattr(policy, "max_size", None)
        self._ordered = issubclass(cls, OrderedAggregator)
        if "late" in options and not self._ordered:
            raise ValueError(f"late= is an option of the out-of-order algorithms ({', '.join(ORDERED_ALGORITHMS)}); "
                             f"{cls.name!r} takes updates in timestamp order only")
        # Counts and timestamps ride along only when a policy reads them, or out of order
        # (where the k oldest are found by their counts).
        self._timed = _is_timed(policy) or self._ordered
        inner = _Timed(monoid) if self._timed else monoid
        if store is not None:
            options = {**options, "store": store}
        self._wsp = self._policy_on_tuples(policy) if self._timed and policy is not None else None
        self._store = store
        self._safe = self._object_path_safe()
        # A typed core (compiled, a built-in numeric monoid or a Record of them, in memory, a policy of ours) until a
        # partial or a timestamp it cannot hold comes: then the window goes on with the object
        # algorithm, in the same state.
        self._typed = (typed.USE and cls.name in TYPED_ALGORITHMS and self._safe and store is None and not options
                       and (typed.serves(monoid) or typed_record.serves(monoid))
                       and (typed.plan(policy) is not None if self._timed else (self._max_size or 0) <= sys.maxsize))
        if self._stored_typed(monoid, policy, cls, store, options):
            # Its insertions read nothing from the store: nothing in them can fail.
            self._typed = self._safe = True
            core = functools.partial(TYPED_ALGORITHMS[cls.name], monoid)
            self._make = (functools.partial(StoredTimed.over, core, inner, policy, store) if self._timed
                          else functools.partial(StoredAMTA.over, monoid, store, self._max_size))
        elif self._ordered:
            self._typed = _typed_ordered(monoid, policy, cls, self._safe and store is None, options)
            self._make = (functools.partial(TypedTimeOrdered, monoid, inner, policy, **options) if self._typed
                          else functools.partial(TimeOrdered, cls, inner, **options))
        elif self._typed:
            core = (functools.partial(typed_record.TypedRecord, monoid, TYPED_ALGORITHMS[cls.name])
                    if isinstance(monoid, Record) else functools.partial(TYPED_ALGORITHMS[cls.name], monoid))
            self._make = (functools.partial(typed.TypedTimed.over, core, inner, policy) if self._timed
                          else functools.partial(core, max_size=self._max_size))
        else:
            self._make = functools.partial(cls, inner, **options)
        #: Set by insert_slices: a commit came due during its batch (insert_many sends it).
        self._flush_due = False
        # Our policies read the count and the newest timestamp of ``total``, never its value.
        self._counts_and_times = _trusted(policy)
        self._restart(state)
        self.id = None
        self.backend = None
        self.labels: dict[str, Any] = {}

    def _object_path_safe(self) -> bool:
        """Whether the object path may insert, then enforce: a policy of ours cannot raise
        and a store in memory cannot fail. Otherwise the policy is searched first."""
        return _trusted(self.policy) and not (self._store is not None and self._store.durable)

    def _stored_typed(self, monoid: Monoid, policy: Any, cls: type, store: LevelStore | None,
                      options: dict[str, Any]) -> bool:
        """Whether a stored window runs the typed core (:mod:`mta.algorithms.stored_typed`):
        compiled, an AMTA window with the default options, a built-in number monoid, no
        policy or one of ours (as a typed window in memory). A reopened one may still go on
        as the stored AmortizedMTA (:meth:`_restart`)."""
        return (typed.USE and store is not None and cls.name == "amta" and set(options) == {"store"}
                and typed.serves(monoid) and _trusted(policy)
                and (typed.plan(policy) is not None if self._timed else (self._max_size or 0) <= sys.maxsize))

    def _restart(self, state: Any) -> None:
        """Build the algorithm, empty or from a checkpoint of the store."""
        self._algorithm: Aggregator = self._make(state=state) if state is not None else self._make()
        if self._typed and self._store is not None and not isinstance(self._algorithm, (StoredTimed, StoredAMTA)):
            # reopened as the stored AmortizedMTA (too large or untyped for the typed core)
            self._typed = False
            self._safe = self._object_path_safe()
        annotations = state["annotations"] if state is not None else {}
        #: The newest timestamp (in order; out of order, the last one inserted).
        self._newest: Any = annotations.get("newest")
        #: A small dict of the caller's, kept with every checkpoint (e.g. the ids of applied batches).
        self.notes: dict[str, Any] = dict(annotations.get("notes", {}))
        if self._store is not None:
            self._algorithm.annotate = lambda: {"newest": self._newest, "notes": self.notes}
        self._install_events()

    def _install_events(self) -> None:
        """On a typed core, :meth:`insert` and :meth:`query` are one C call each
        (:class:`typed.Events`, handed out by :class:`typed.PerEvent`: the plain case there,
        the rest through the methods below; in order, a Record's plain numbers lifted by its
        core; out of order, a Record's core goes the methods' way)."""
        self._events = (typed.Events(self, self._algorithm, self.monoid, _INSERT, _QUERY)
                        if self._typed and not (self._ordered and isinstance(self.monoid, Record)) else None)
        core = getattr(self._algorithm, "core", self._algorithm)
        #: The monoid's lift (a typed Record's core builds the partials of plain numbers).
        self._lift = core.lift if self._typed and isinstance(core, typed_record.TypedRecord) else self.monoid.lift

    def __getstate__(self) -> dict[str, Any]:
        if self._store is not None:
            raise TypeError(f"a stored window does not pickle (its state is in its store, which has one "
                            f"writer): reopen it with Window.open(store, {self.id!r}, monoid, policy)")
        # the Events are bound to this window's core: a copy gets its own; the policy on
        # tuples is a closure: rebuilt
        state = self.__dict__.copy()
        state["_newest"] = self._newest  # a C field of the compiled base, not in __dict__
        state.pop("_events", None)
        state.pop("_lift", None)
        state.pop("_wsp", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        self._newest = state.pop("_newest")
        self.__dict__.update(state)
        self._wsp = self._policy_on_tuples(self.policy) if self._timed and self.policy is not None else None
        self._install_events()

    def _policy_on_tuples(self, policy: Callable[[Any, Any], bool]) -> Callable[[tuple, tuple], bool]:
        if getattr(policy, "on_tuples", False):
            return policy
        view = self.monoid.view if isinstance(self.monoid, Record) else None
        if view is None:
            def wsp(total: tuple, old: tuple) -> bool:
                return bool(policy(Agg._make(total), Agg._make(old)))
        else:
            def wsp(total: tuple, old: tuple) -> bool:
                return bool(policy(Agg(total[0], total[1], view(total[2])), Agg(old[0], old[1], view(old[2]))))
        return wsp

    @property
    def algorithm(self) -> str:
        return self._algorithm.name

    # -- updates -----------------------------------------------------------------

    def _check_timestamp(self, timestamp: Any, newest: Any, what: str = "timestamp") -> int | float:
        """``timestamp`` as an int (any size) or a finite float (a numpy integer or float scalar
        becomes one, as values do), checked against ``newest``; ``what`` names it in errors."""
        cls = timestamp.__class__
        if cls is not int and cls is not float:
            if isinstance(timestamp, bool) or not isinstance(timestamp, (numbers.Integral, float, np.floating)):
                raise TypeError(f"{what} must be an int or a float, got {cls.__name__} {timestamp!r}")
            timestamp = int(timestamp) if isinstance(timestamp, numbers.Integral) else float(timestamp)
        if timestamp.__class__ is float and not math.isfinite(timestamp):  # ints are finite (isfinite overflows on a big one)
            raise ValueError(f"{what} must be finite, got {timestamp!r}")
        if newest is not None and timestamp < newest:
            if self._ordered:
                raise ValueError(f"timestamp {timestamp!r} is late: older than {newest!r}, the window's frontier "
                                 "(what is older has left the window); late='include' counts late updates in")
            raise ValueError(f"timestamp {timestamp!r} is older than the newest update {newest!r}: "
                             "timestamps must be non-decreasing")
        return timestamp

    @typed.PerEvent
    def insert(self, timestamp: int | float, value: Any) -> int:
        """Add one update, then enforce the policy; return the number of updates evicted.

        A rejected update (bad timestamp, a value the monoid cannot lift), a policy
        that raises and a StoreError all leave the window unchanged.
        """
        if self._ordered:
            return self._insert_ordered(timestamp, value)
        newest = self._newest
        kind = type(timestamp)
        # Fast path for plain finite ints and floats in order; anything else is checked in full.
        if not ((kind is int or (kind is float and _NEG_INF < timestamp < _INF))
                and (newest is None or timestamp >= newest)):
            timestamp = self._check_timestamp(timestamp, newest)
        partial = self._lift(value)
        try:
            if self._safe:
                return self._apply(timestamp, partial)
            return self._apply_first_search(timestamp, partial)
        except StoreError as error:
            raise _unchanged(error) from error
        except typed.Untyped:  # raised by the typed core before it changed anything
            self._demote()
        try:  # a stored window on the typed core goes on with the stored AmortizedMTA
            if self._safe:
                return self._apply(timestamp, partial)
            return self._apply_first_search(timestamp, partial)
        except StoreError as error:
            raise _unchanged(error) from error

    def _demote(self) -> None:
        """Go on with the object algorithm, in the typed core's state (a stored one's levels
        rewritten to its store)."""
        self._algorithm = self._algorithm.to_object()
        self._typed = False
        self._safe = self._object_path_safe()
        if self._events is not None:
            self._events.retire()  # a method saved from it goes the checked way from now on
            self._events = None
        self._lift = self.monoid.lift

    def _insert_ordered(self, timestamp: int | float, value: Any) -> int:
        timestamp = self._check_timestamp(timestamp, self._algorithm.bound())
        partial = self.monoid.lift(value)
        if self._safe:  # nothing can fail
            try:
                return self._apply(timestamp, partial)
            except typed.Untyped:  # raised by the typed core before it changed anything
                self._demote()
                return self._apply(timestamp, partial)
        # The policy or the store may raise after the insertion: a batch of one, undone then.
        evicted = self.insert_checked(([timestamp], [partial]))
        if self._flush_due:
            self._algorithm.flush(wait=False)
        return evicted

    def insert_many(self, updates: Iterable[tuple[int | float, Any]] | Any, values: Any = None) -> int:
        """Insert ``(timestamp, value)`` pairs in order; return the total evicted.
        ``insert_many(timestamps, values)`` takes the same batch as two columns: numpy or
        Arrow arrays, buffers or sequences (:func:`mta.arrays.as_list`), with the same
        checks and results.

        The whole batch is validated first: one bad update rejects the batch and
        nothing is inserted. With a policy that is ``batchable`` (counts, times and
        their combinations) it is enforced once, after the batch, which leaves the
        same window as enforcing after every update.

        A batch is all or nothing: if the policy or the store raises, the window is
        as it was before the call. A durable store is never sent half a batch: a
        commit that comes due during the batch (a write buffer filled up) is sent
        right after it, so a crash loses at most what :meth:`insert` would.
        """
        if values is not None:
            if self._events is not None and not self._ordered and not isinstance(self.monoid, Record):
                evicted = self._events.insert_arrays(updates, values)  # plain numeric columns: C loops check and insert them
                if evicted is not None:
                    return evicted
            elif self._typed and not self._ordered:  # a Record's cores: C loops insert numeric columns
                evicted = self._record_arrays(updates, values)
                if evicted is not None:
                    return evicted
            elif self._typed:  # out of order: the typed FiBA's C loops insert the columns
                evicted = self._ordered_arrays(updates, values)
                if evicted is not None:
                    return evicted
            timestamps, values = as_list(updates, "timestamps"), as_list(values, "values")
        else:
            updates = updates if isinstance(updates, list) else list(updates)
            try:
                if set(map(len, updates)) - {2}:
                    raise ValueError
                timestamps, values = zip(*updates) if updates else ((), ())
            except (TypeError, ValueError):
                for position, update in enumerate(updates):
                    if not isinstance(update, (tuple, list)) or len(update) != 2:
                        raise TypeError(f"update {position} must be a (timestamp, value) pair, "
                                        f"got {update!r}") from None
                raise
        evicted = self.insert_checked(self.check(timestamps, values))
        if self._flush_due:  # a write buffer filled up during the batch: its commit follows it
            self._algorithm.flush(wait=False)
        return evicted

    def _record_arrays(self, timestamps: Any, values: Any) -> int | None:
        """``insert_many`` of numeric columns on a Record's typed cores: timestamps finite and
        in order (:meth:`_arrays_in_order`), values int64 or float64 that every field lifts
        (checked by the Record's core: ``TypedRecord.insert_array``), each field's core
        taking the column in a C loop. Returns how many were evicted; None, with nothing
        changed, where the general path must decide."""
        arrays = self._arrays_in_order(timestamps, values)
        if arrays is None:
            return None
        ts, vs = arrays
        newest, self._newest = self._newest, ts[-1].item()  # before the insertion, as Events'
        try:
            if self._timed:
                self._algorithm.insert_arrays(ts, vs)
            else:
                self._algorithm.insert_array(vs)
        except BaseException as error:
            self._newest = newest
            if isinstance(error, typed.Untyped):
                return None
            raise
        return self._enforce()

    def _ordered_arrays(self, timestamps: Any, values: Any) -> int | None:
        """``insert_many`` of columns on an out-of-order typed window, with a policy enforced
        once per batch (none, or ``batchable``): timestamps numeric and finite (checked in
        numpy; in any order, late ones as the window's ``late`` rule takes them: refused ones
        go the general path, which names them), values as the in-order cores take them
        (:func:`typed.value_columns`: a numeric column, ArgMin's and ArgMax's a structured
        array of ``(key, value)`` records; a Record's a numeric column every field lifts,
        checked by its trees), then the typed FiBA's C loops
        (:meth:`TypedTimeOrdered.insert_arrays`). Returns how many were evicted; None, with
        nothing changed, where the general path must decide."""
        if self.policy is not None and not getattr(self.policy, "batchable", False):
            return None
        ts = numeric_array(timestamps)
        if ts is None or not len(ts) or (ts.dtype.kind == "f" and not np.isfinite(ts).all()):
            return None
        monoid = self.monoid
        if isinstance(monoid, Record):
            vs, keys = numeric_array(values), None
            if vs is None or len(vs) != len(ts):
                return None
        else:
            columns = typed.value_columns(values, typed.wide_op_of(monoid), type(monoid) is Count, len(ts))
            if columns is None:
                return None
            vs, keys = columns
        if not self._algorithm.insert_arrays(ts, vs, keys):
            return None
        self._newest = ts[-1].item()
        return self._enforce()

    def _arrays_in_order(self, timestamps: Any, values: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """Both columns as int64 or float64 numpy arrays, when they are numeric columns of
        one length (:func:`numeric_array`) and the timestamps are finite, in order and not
        older than the window's newest: checked in numpy. None where the general path
        must decide (and name the update at fault); values are not checked here."""
        ts = numeric_array(timestamps)
        vs = None if ts is None else numeric_array(values)
        if vs is None or len(ts) != len(vs) or not len(ts):
            return None
        newest = self._newest
        if ((ts.dtype.kind == "f" and not np.isfinite(ts).all()) or not (ts[1:] >= ts[:-1]).all()
                or (newest is not None and ts[0].item() < newest)):
            return None
        return ts, vs

    def check(self, timestamps: Sequence[Any], values: Sequence[Any],
              positions: Sequence[int] | None = None) -> tuple[Sequence[Any], list[Any]]:
        """Validate and lift a batch given in columns without changing the window, for
        :meth:`insert_checked` (which must come before any other insertion). Errors
        name the update by its index, or by ``positions[index]`` (its place in a
        larger request). Batches of plain numbers are checked in C loops; numeric numpy
        columns (what the gRPC server decodes) in numpy, and come back as lists."""
        if len(timestamps) != len(values):
            raise ValueError(f"{len(timestamps)} timestamps for {len(values)} values")
        arrays = None if self._ordered else self._arrays_in_order(timestamps, values)
        if arrays is not None:
            timestamps, values = arrays[0].tolist(), arrays[1].tolist()
            fast = True
        elif not isinstance(timestamps, (list, tuple)) or not isinstance(values, (list, tuple)):
            # arrays the general path takes: as Python values (never numpy scalars)
            return self.check(as_list(timestamps, "timestamps"), as_list(values, "values"), positions)
        elif self._ordered:
            newest = self._algorithm.bound()
            fast = plain_finite(timestamps) and (newest is None or not timestamps or min(timestamps) >= newest)
        else:
            newest = self._newest
            fast = _plain_in_order(timestamps) and (newest is None or not timestamps or timestamps[0] >= newest)
        if not fast:
            checked = []
            for index, timestamp in enumerate(timestamps):
                try:
                    timestamp = self._check_timestamp(timestamp, newest)
                except (TypeError, ValueError) as error:
                    raise _bad_update(error, _where(index, positions), "timestamp") from None
                checked.append(timestamp)
                if not self._ordered:
                    newest = timestamp
            timestamps = checked
        try:
            partials = self.monoid.lift_many(values)
        except (TypeError, ValueError):
            lift = self.monoid.lift
            for index, value in enumerate(values):
                try:
                    lift(value)
                except (TypeError, ValueError) as error:
                    raise _bad_update(error, _where(index, positions), "value") from None
            raise
        return timestamps, partials

    def insert_checked(self, checked: tuple[Sequence[Any], list[Any]], enforce: bool = True) -> int:
        """Insert a batch returned by :meth:`check`; return the total evicted.

        All or nothing, as :meth:`insert_many`, but a step of the caller's unit of
        work, which the caller ends with :meth:`flush` (``wait=False`` is enough): it
        never commits, so that the caller can first note the unit in :attr:`notes`
        (the server notes batch ids, the Spark operator its step) and a checkpoint
        has the unit and its note, or neither. Until that flush the window holds the
        unit's updates in memory.

        ``enforce=False`` leaves a ``batchable`` policy to the next call that enforces
        (until then the window may hold updates the policy would evict): a batch
        inserted in slices then pays one O(log n) policy search, not one per slice.
        Other policies are enforced after every update regardless."""
        return sum(self.insert_slices(checked, len(checked[1]) or 1, enforce))

    def insert_slices(self, checked: tuple[Sequence[Any], list[Any]], size: int,
                      enforce: bool = True) -> Iterator[int]:
        """Insert a batch returned by :meth:`check` ``size`` updates at a time, yielding the
        number evicted by each slice, so that a caller can let others in between (the
        server lets queries in; they read its last complete results). A ``batchable``
        policy is enforced once, after the last slice (``enforce=False``: left to the next
        call that enforces, as for :meth:`insert_checked`).

        The whole batch is one unit, as for :meth:`insert_checked`: if a slice raises (the
        store, the policy), or the caller stops before the last slice, the window is as
        it was before the first. Nothing commits: end the unit with :meth:`flush`."""
        timestamps, partials = checked
        n = len(partials)
        self._flush_due = False
        if not n:
            return
        per_update = self.policy is not None and not getattr(self.policy, "batchable", False)
        # out of order, a policy enforced after every update moves the frontier within a
        # batch of more than one, and the typed core refuses what is then late (the object
        # window, checked against the frontier before the batch, takes it)
        frontier_moves = per_update and n > 1 and self._ordered and getattr(self._algorithm, "late", None) == "refuse"
        if self._typed and (frontier_moves
                            or not (self._algorithm.accepts(partials, timestamps) if self._timed
                                    else self._algorithm.accepts(partials))):
            self._demote()
        algorithm = self._algorithm
        # Undo needs a snapshot if something can fail (a user's policy, the store) or the
        # caller can stop between slices.
        snapshot = None if self._safe and size >= n else algorithm.snapshot()
        newest = self._newest
        algorithm.begin_hold()  # nothing reaches the store until the batch is whole
        try:
            for start in range(0, n, size):
                stop = start + size
                ts, ps = (timestamps, partials) if size >= n else (timestamps[start:stop], partials[start:stop])
                if per_update:
                    evicted = sum(map(self._apply, ts, ps))
                else:
                    self._newest = ts[-1]
                    if self._typed and self._timed:
                        algorithm.insert_columns(ts, ps)
                    elif self._timed:
                        algorithm.insert_many(list(zip(repeat(1), ts, ps)))
                    else:
                        algorithm.insert_many(ps)
                    evicted = self._enforce() if enforce and stop >= n else 0
                yield evicted
        except BaseException as error:  # GeneratorExit too: the caller gave up on the batch
            if snapshot is not None:
                algorithm.restore(snapshot)
            self._newest = newest
            algorithm.hold = False
            if isinstance(error, StoreError):
                raise _unchanged(error) from error
            raise
        self._flush_due = algorithm.end_hold() and self.durable

    def _apply(self, timestamp: Any, partial: Any) -> int:
        """Insert a validated update and enforce the policy."""
        self._newest = timestamp
        if self._typed:  # insertion and policy in one call into the compiled core
            return self._algorithm.push(timestamp, partial)
        if self._timed:
            self._algorithm.insert((1, timestamp, partial))
        else:
            self._algorithm.insert(partial)
        return self._enforce()

    def _apply_first_search(self, timestamp: Any, partial: Any) -> int:
        """As :meth:`_apply`, but the window changes only once nothing can fail any more:
        the policy is searched on the window as it will be after the insertion (its
        total includes the update), then evictions (atomic) come before the insertion
        (which reads nothing from the store)."""
        algorithm = self._algorithm
        if self._timed:
            new = (1, timestamp, partial)
            wsp = self._wsp
            if self._counts_and_times:  # not the value: combine nothing
                total = (len(algorithm) + 1, timestamp, None)
                k = algorithm.condemned_in_order(wsp, total)
            else:
                total = algorithm.monoid.combine(algorithm.query(), new)
                k = algorithm.condemned(wsp, total)
            if k == len(algorithm) and wsp(total, total):  # the new update goes too
                if k:
                    algorithm.evict(k)
                self._newest = timestamp
                return k + 1
        else:
            new = partial
            max_size = self._max_size
            k = 0 if max_size is None else len(algorithm) + 1 - max_size
            if k <= 0:
                k = 0
            elif not max_size:  # MaxSize(0): the new update goes too
                if k > 1:
                    algorithm.evict(k - 1)
                self._newest = timestamp
                return k
        if k:
            algorithm.evict(k)
        self._newest = timestamp
        algorithm.insert(new)
        return k

    def _enforce(self) -> int:
        algorithm = self._algorithm
        if self._timed:
            wsp = self._wsp
            if wsp is None:
                return 0
            newest = self._newest  # None: empty, or a checkpoint that did not record it
            if self._counts_and_times and newest is not None and not (self._typed or self._ordered):
                # the window's total as the policy reads it: its count and newest timestamp
                k = algorithm.condemned_in_order(wsp, (len(algorithm), newest, None))
                if k:
                    algorithm.evict(k)
                return k
            return algorithm.enforce(wsp)
        if self._max_size is not None:
            k = len(algorithm) - self._max_size
            if k > 0:
                algorithm.evict(k)
                return k
        return 0

    def evict_before(self, timestamp: int | float) -> int:
        """Evict every update older than ``timestamp`` in one bulk eviction (O(log n)
        node reads, paper section 4.2.4); return how many. For a window whose policy
        reads timestamps (a moving horizon the caller keeps, such as a watermark).

        Out of order, ``timestamp`` becomes the window's :attr:`frontier` (if newer):
        an update older than it is late. ``timestamp`` is checked as :meth:`insert` checks
        one (an int or a finite float), before any change."""
        if not self._ordered and not self._timed:
            raise TypeError(f"evict_before needs a window that keeps timestamps: policy {_policy_name(self.policy)} "
                            "does not read them (use e.g. TimeRange)")
        timestamp = self._check_timestamp(timestamp, None, "evict_before's bound")
        if self._ordered:
            try:
                try:
                    return self._algorithm.evict_before(timestamp)
                except typed.Untyped:  # a bound the typed core does not compare: before any change
                    self._demote()
                    return self._algorithm.evict_before(timestamp)
            except StoreError as error:
                raise _unchanged(error) from error
        try:
            if self._typed:
                return self._algorithm.evict_before(timestamp)
            algorithm = self._algorithm
            k = algorithm.condemned_in_order(lambda total, old: old[1] < timestamp, None)
            if k:
                algorithm.evict(k)
            return k
        except StoreError as error:
            raise _unchanged(error) from error

    def oldest_timestamp(self) -> Any:
        """The timestamp of the oldest update (None when empty); for a window that keeps
        timestamps, like :meth:`evict_before`."""
        if not self._timed:
            raise TypeError(f"oldest_timestamp needs a window that keeps timestamps: policy "
                            f"{_policy_name(self.policy)} does not read them")
        if not len(self._algorithm):
            return None
        try:
            return self._algorithm._oldest()[1]
        except StoreError as error:
            raise _unchanged(error) from error

    def retract(self, timestamp: int | float) -> int:
        """Remove every update at ``timestamp`` (out of order only); return how many.

        A retraction undoes updates: it does not move the :attr:`frontier`, and the
        policy is not enforced again (a window that shrinks keeps what it kept)."""
        self._need_ordered("retract")
        timestamp = self._check_timestamp(timestamp, None)
        try:
            return self._algorithm.retract(timestamp)
        except StoreError as error:
            raise _unchanged(error) from error

    @property
    def frontier(self) -> Any:
        """Out of order: the newest timestamp that has left the window, or the latest
        :meth:`evict_before` bound (None before either); an update older than it is late."""
        self._need_ordered("frontier")
        return self._algorithm.frontier

    def _need_ordered(self, what: str) -> None:
        if not self._ordered:
            raise TypeError(f"{what} needs an out-of-order window (algorithm one of {', '.join(ORDERED_ALGORITHMS)}); "
                            f"this one is {self.algorithm!r}")

    def evict(self, k: int = 1) -> None:
        """Remove the ``k`` oldest updates regardless of the policy."""
        try:
            self._algorithm.evict(k)
        except StoreError as error:
            raise _unchanged(error) from error

    def clear(self) -> None:
        """Remove every update (the timestamp order restarts too)."""
        self._algorithm.clear()
        self._newest = None

    # -- durability -------------------------------------------------------------------

    def flush(self, wait: bool = True) -> None:
        """Make every update inserted so far durable in the window's store
        (``wait=False``: send the commit and return; :meth:`wait_durable` waits for it).

        Between flushes the algorithms commit on their own after every write
        buffer (``buffer_size`` updates), so a crash loses at most the updates
        since the last commit (batches: see :meth:`insert_many`). While the store
        is unreachable, insertions go on in memory (their commits fail and are
        retried by the next ones) and ``flush`` raises StoreError, changing
        nothing: retry it later.

        Every call is all or nothing: one that fails, whether the store failed (a
        cache miss while it is down), the policy raised or the input was bad,
        leaves the window exactly as it was before the call, and every read
        (``len``, :meth:`query`, :meth:`partial`, iteration, :meth:`oldest_timestamp`,
        :attr:`notes`) describes that state, before and after the store comes back.
        Nothing is thrown away: the updates not yet flushed stay in memory, and the
        call can be retried.
        """
        store = self._store
        if store is None:
            return
        self._algorithm.flush(wait=wait)
        if not store.durable:
            store.commit(self._algorithm.checkpoint())

    @property
    def durable(self) -> bool:
        """Whether the window's updates reach a durable store (a file, Redis)."""
        return self._store is not None and self._store.durable

    def wait_durable(self) -> None:
        """Wait until the commits sent so far are durable (StoreError if one failed).

        Only waits: safe to call from another thread while this one goes on inserting."""
        if self._store is not None:
            self._store.drain()

    def close(self) -> None:
        """Flush and give up the window's lease: it can then be reopened with :meth:`open`,
        in any process, at once."""
        self.flush()
        if self._store is not None:
            self._store.release()

    def __enter__(self) -> "Window":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- results -------------------------------------------------------------------

    def partial(self, t_from: int | float | None = None, t_to: int | float | None = None) -> Any:
        """The monoid partial of the whole window (``monoid.identity`` when empty), or,
        out of order, of its updates with ``t_from <= timestamp <= t_to`` (a bound left
        out is open): a range query, O(log) in the range and in the distance of each
        end to the window's ends (FiBA section 4)."""
        if t_from is None and t_to is None:
            total = self._algorithm.query()
        else:
            total = self._range(t_from, t_to)
        return total[2] if self._timed else total

    def tally(self, t_from: int | float | None = None, t_to: int | float | None = None) -> tuple[int, Any]:
        """``(how many updates, query())`` of the window or, out of order, of its updates
        with ``t_from <= timestamp <= t_to`` (as :meth:`partial`), from one range query:
        the server's results."""
        if t_from is None and t_to is None:
            return len(self), self.query()
        total = self._range(t_from, t_to)
        return total[0], self.monoid.lower(total[2])

    def _range(self, t_from: int | float | None, t_to: int | float | None) -> tuple:
        """The timed total (count, newest timestamp, partial) of a time range (out of order)."""
        self._need_ordered("a query over a time range")
        low = _NEG_INF if t_from is None else t_from
        high = _INF if t_to is None else t_to
        for name, bound in (("t_from", low), ("t_to", high)):
            if isinstance(bound, bool) or not isinstance(bound, (int, float)) or math.isnan(bound):
                raise TypeError(f"{name} must be an int or a float, got {bound!r}")
        try:
            return self._algorithm.query_range(low, high)
        except StoreError as error:
            raise _unchanged(error) from error

    @typed.PerEvent
    def query(self, t_from: int | float | None = None, t_to: int | float | None = None) -> Any:
        """The aggregate of the window: ``monoid.lower`` of its partial (of a time range:
        see :meth:`partial`; a typed window's whole-window query is typed.Events', or, for a
        Record, its core's result)."""
        if self._typed and t_from is None and t_to is None:
            return self._algorithm.result()
        return self.monoid.lower(self.partial(t_from, t_to))

    def __len__(self) -> int:
        return len(self._algorithm)

    def __iter__(self) -> Iterator[Any]:
        """The lifted updates, oldest to newest."""
        if self._timed:
            return (element[2] for element in self._algorithm)
        return iter(self._algorithm)

    def __repr__(self) -> str:
        where = f", id={self.id!r}, store={self.backend.url!r}" if self.backend is not None else ""
        return (f"Window({self.monoid!r}, {self.policy!r}, algorithm={self.algorithm!r}, "
                f"len={len(self)}{where})")


#: The checked insertion and query, for typed.Events (taken once: a later patch of the class
#: does not reach into the Events of windows built meanwhile).
_INSERT, _QUERY = Window.insert, Window.query
