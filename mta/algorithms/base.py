"""The one interface every sliding-window algorithm implements.

Algorithms store *partials* of a monoid and know nothing of timestamps or of
the input values: :class:`mta.Window` lifts updates and wraps policies. A window
slide policy here is ``wsp(total, old) -> bool`` over partials: ``total`` is the
aggregate of the window when enforcement starts, ``old`` the aggregate of a
prefix (oldest elements). ``enforce`` evicts the longest prefix for which the
policy holds; the contract (prefix-monotone: true for a prefix implies true
for every shorter prefix) makes that prefix well defined, so every algorithm
evicts exactly the same elements.

The search (:meth:`Aggregator.condemned`) changes nothing and is the only place
that calls the policy, so a policy that raises leaves the window as it was.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections import deque
from typing import Any, Callable, ClassVar, Iterator, Sequence

from mta.monoid import Monoid

Policy = Callable[[Any, Any], bool]

_CONTAINERS = frozenset({list, dict, deque})


class _PicklesWithoutCombine:
    """Pickling of an algorithm that keeps ``_combine = monoid.combine``: a Record's combine
    is generated code, which pickle cannot name, so it is left out and taken back from the
    (pickled) monoid."""

    monoid: Monoid

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if "_combine" in state and state["_combine"] is self.monoid.combine:
            del state["_combine"]
            state["_combine_of_monoid"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        if state.pop("_combine_of_monoid", False):
            state["_combine"] = state["monoid"].combine
        self.__dict__.update(state)


class Aggregator(_PicklesWithoutCombine, ABC):
    """A FIFO window of partials with an incrementally maintained aggregate."""

    #: registry name used by ``mta.Window(algorithm=...)``
    name: ClassVar[str]
    #: True when the algorithm keeps its tree levels in a ``kvs.LevelStore``
    uses_store: ClassVar[bool] = False
    #: While True (a batch that :meth:`restore` may undo), the algorithm changes nothing
    #: outside its own attributes: the tree algorithms neither flush nor release stored nodes.
    hold: bool = False

    def __init__(self, monoid: Monoid) -> None:
        self.monoid = monoid

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        """Raise TypeError if this algorithm cannot serve ``monoid``."""

    @abstractmethod
    def insert(self, partial: Any) -> None:
        """Append one partial as the newest element."""

    def insert_many(self, partials: Sequence[Any]) -> None:
        """Append partials in order, as :meth:`insert` one by one would."""
        insert = self.insert
        for partial in partials:
            insert(partial)

    @abstractmethod
    def evict(self, k: int = 1) -> None:
        """Remove the ``k`` oldest elements (ValueError, and no change, if k > len)."""

    def enforce(self, wsp: Policy) -> int:
        """Evict the longest prefix P with ``wsp(query(), aggregate(P))``; return |P|."""
        k = self.condemned(wsp, self.query())
        if k:
            self.evict(k)
        return k

    def condemned(self, wsp: Policy, total: Any) -> int:
        """The length of the longest prefix P with ``wsp(total, aggregate(P))``, changing nothing.

        ``total`` is usually :meth:`query`; ``mta.Window`` passes the total the window
        will have after an insertion, to decide before it changes anything. This
        default checks the oldest elements one at a time, as the paper's evaluation
        does for algorithms without bulk eviction (section 5.1).
        """
        combine = self.monoid.combine
        acc = self.monoid.identity
        n = 0
        for partial in self:
            acc = combine(acc, partial)
            if not wsp(total, acc):
                break
            n += 1
        return n

    def condemned_in_order(self, wsp: Policy, total: Any) -> int:
        """:meth:`condemned` when the elements are ``(1, timestamp, partial)`` in timestamp
        order and ``wsp`` reads only counts and newest timestamps (``mta.Window``'s own
        policies): an algorithm that can find the prefix without combining partials
        overrides it."""
        return self.condemned(wsp, total)

    #: Attributes :meth:`snapshot` does not copy (a subclass saves them its own way).
    _SAVED_APART: ClassVar[frozenset[str]] = frozenset()

    def snapshot(self) -> Any:
        """The algorithm's state, for :meth:`restore` (copies its containers: O(n) here)."""
        state = self.__dict__.copy()
        apart = self._SAVED_APART
        for name, value in state.items():
            if type(value) in _CONTAINERS and name not in apart:
                state[name] = value.copy()
        return state

    def restore(self, snapshot: Any) -> None:
        """Go back to a :meth:`snapshot`, taken while nothing outside the algorithm changed
        (see :attr:`hold`); a snapshot is restored at most once (it becomes the state)."""
        self.__dict__.clear()
        self.__dict__.update(snapshot)

    def begin_hold(self) -> None:
        """Enter :attr:`hold`, for a batch that :meth:`restore` may undo."""
        self.hold = True

    def end_hold(self) -> bool:
        """Leave :attr:`hold`; return whether a flush came due meanwhile (the tree algorithms)."""
        self.hold = False
        return False

    def _oldest(self) -> Any:
        """The oldest partial (window not empty)."""
        raise NotImplementedError

    @abstractmethod
    def query(self) -> Any:
        """The aggregate of the whole window (``monoid.identity`` when empty)."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[Any]:
        """The partials, oldest to newest."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every element."""

    def _check_evict(self, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"evict count must be an int, got {type(k).__name__}")
        if k < 0 or k > len(self):
            raise ValueError(f"cannot evict {k} elements from a window of {len(self)}")


class OrderedAggregator(_PicklesWithoutCombine, ABC):
    """A window of ``(key, partial)`` entries kept in key order, inserted in any order.

    The out-of-order counterpart of :class:`Aggregator` (the FiBA paper's OoO SWAG,
    section 2): keys are timestamps or anything totally ordered (``mta.Window`` uses
    ``(timestamp, arrival number)``). An insert at an existing key combines into it
    (existing ⊕ new, Def. 2.1 with pre-aggregation); the aggregates are always in key
    order, so the monoid need not be commutative.
    """

    name: ClassVar[str]
    #: True when the algorithm can keep its nodes in a ``kvs.LevelStore``
    uses_store: ClassVar[bool] = False
    #: As for :class:`Aggregator`: while True, nothing outside the algorithm changes.
    hold: bool = False

    def __init__(self, monoid: Monoid) -> None:
        self.monoid = monoid

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        """Raise TypeError if this algorithm cannot serve ``monoid``."""

    @abstractmethod
    def insert(self, key: Any, partial: Any) -> bool:
        """Add ``partial`` at ``key`` (combined into an existing entry); True if the key is new."""

    @abstractmethod
    def evict(self, key: Any) -> bool:
        """Remove the entry at exactly ``key`` (a retraction); False, and no change, if absent."""

    @abstractmethod
    def evict_upto(self, key: Any) -> int:
        """Remove every entry with a key ``<= key`` (bulk eviction); return how many."""

    @abstractmethod
    def query(self) -> Any:
        """The aggregate of every entry in key order (``monoid.identity`` when empty)."""

    @abstractmethod
    def query_range(self, low: Any, high: Any) -> Any:
        """The aggregate of the entries with ``low <= key <= high``, in key order."""

    def entries(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        """The entries ``(key, partial)`` with ``low <= key <= high``, in key order (here
        by a full walk; the trees visit O(log n + k) nodes)."""
        return [(key, partial) for key, partial in self if low <= key <= high]

    @abstractmethod
    def search(self, pred: Callable[[Any], bool]) -> tuple[Any, Any] | None:
        """The longest prefix P (in key order) with ``pred(aggregate(P))``, as
        ``(last key of P, aggregate(P))``; None when P is empty. ``pred`` must be
        prefix-monotone (true for a prefix implies true for every shorter one); it
        is called on prefixes only, and the search changes nothing."""

    @abstractmethod
    def oldest(self) -> tuple[Any, Any] | None:
        """The entry with the smallest key, as ``(key, partial)`` (None when empty)."""

    @abstractmethod
    def newest(self) -> tuple[Any, Any] | None:
        """The entry with the largest key, as ``(key, partial)`` (None when empty)."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of entries (distinct keys)."""

    @abstractmethod
    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        """The entries ``(key, partial)`` in key order."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    def check(self) -> None:
        """Verify the structure's invariants (AssertionError naming the broken one);
        for tests, O(n)."""

    def snapshot(self) -> Any:
        """The state, for :meth:`restore` (O(n) here: a deep enough copy)."""
        return copy.deepcopy(self.__dict__, {id(self.monoid): self.monoid})

    def restore(self, snapshot: Any) -> None:
        """Go back to a :meth:`snapshot` (restored at most once: it becomes the state)."""
        self.__dict__.clear()
        self.__dict__.update(snapshot)

    def begin_hold(self) -> None:
        self.hold = True

    def end_hold(self) -> bool:
        self.hold = False
        return False
