"""``mta.Window``: the one object users touch.

It binds a monoid, a slide policy, an algorithm and a level store::

    w = Window(Sum(), TimeRange(3600))
    w.insert(ts, reading)      # inserts, enforces the policy, returns how many left
    w.query()                  # the sum of the last hour

Updates are ``(timestamp, value)`` with non-decreasing timestamps. When the
policy needs more than a count (anything but :class:`~mta.policy.MaxSize`),
each element carries ``(count, newest timestamp, partial)`` so
that the policy can see counts and times of any run of updates; a count-only
policy or none at all stores the bare partials.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator

from kvs import LevelStore
from mta.algorithms import ALGORITHMS, Aggregator
from mta.monoid import Monoid, Record
from mta.policy import Agg

__all__ = ["Window"]

_INF = math.inf
_NEG_INF = -math.inf


def _timed(monoid: Monoid) -> tuple[Callable[[Any, Any], Any], tuple]:
    """Combine and identity of (count, newest timestamp, partial) tuples over ``monoid``."""
    inner = monoid.combine

    def combine(a: tuple, b: tuple) -> tuple:
        if not b[0]:
            return a
        return (a[0] + b[0], b[1], inner(a[2], b[2]))

    return combine, (0, None, monoid.identity)


class _Timed(Monoid):
    """The monoid the algorithm runs when the policy needs counts and timestamps."""

    def __init__(self, monoid: Monoid) -> None:
        self.combine, self.identity = _timed(monoid)
        self.inner = monoid
        self.commutative = False
        self.invertible = monoid.invertible
        self.selection = False

    def invert(self, total: tuple, front: tuple) -> tuple:
        count = total[0] - front[0]
        if not count:
            return self.identity
        return (count, total[1], self.inner.invert(total[2], front[2]))


class Window:
    """A sliding window: ``monoid`` aggregates, ``policy`` slides, ``algorithm`` computes.

    ``algorithm`` is a name from :data:`mta.algorithms.ALGORITHMS` (default
    ``"amta"``); ``store`` a :class:`kvs.LevelStore` for the tree algorithms
    (default: in memory); ``options`` go to the algorithm (``buffer_size``,
    ``cache_size`` for the MTAs). Bad arguments raise before anything is built.
    """

    def __init__(self, monoid: Monoid, policy: Callable[[Any, Any], bool] | None = None, *,
                 algorithm: str = "amta", store: LevelStore | None = None, **options: Any) -> None:
        if not isinstance(monoid, Monoid):
            raise TypeError(f"monoid must be an mta.monoid.Monoid, got {type(monoid).__name__}")
        if policy is not None and not callable(policy):
            raise TypeError(f"policy must be callable (total, old) -> bool, got {policy!r}")
        try:
            cls = ALGORITHMS[algorithm]
        except (KeyError, TypeError):
            raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}") from None
        if store is not None and not cls.uses_store:
            raise ValueError(f"algorithm {algorithm!r} keeps everything in memory and takes no store")
        cls.check_monoid(monoid)
        self.monoid = monoid
        self.policy = policy
        self._max_size = getattr(policy, "max_size", None)
        # Counts and timestamps ride along only when a policy reads them.
        self._timed = policy is not None and self._max_size is None
        inner = _Timed(monoid) if self._timed else monoid
        if store is not None:
            options["store"] = store
        self._algorithm: Aggregator = cls(inner, **options)
        self._wsp = self._policy_on_tuples(policy) if self._timed else None
        self._newest: Any = None

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

    def _check_timestamp(self, timestamp: Any, newest: Any) -> None:
        if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
            raise TypeError(f"timestamp must be an int or a float, got {type(timestamp).__name__} {timestamp!r}")
        if not math.isfinite(timestamp):
            raise ValueError(f"timestamp must be finite, got {timestamp!r}")
        if newest is not None and timestamp < newest:
            raise ValueError(f"timestamp {timestamp!r} is older than the newest update {newest!r}: "
                             "timestamps must be non-decreasing")

    def insert(self, timestamp: int | float, value: Any) -> int:
        """Add one update, then enforce the policy; return the number of updates evicted.

        A rejected update (bad timestamp, a value the monoid cannot lift) raises
        and leaves the window unchanged.
        """
        newest = self._newest
        kind = type(timestamp)
        # Fast path for plain finite ints and floats in order; anything else is checked in full.
        if not ((kind is int or (kind is float and _NEG_INF < timestamp < _INF))
                and (newest is None or timestamp >= newest)):
            self._check_timestamp(timestamp, newest)
        return self._apply(timestamp, self.monoid.lift(value))

    def insert_many(self, updates: Iterable[tuple[int | float, Any]]) -> int:
        """Insert ``(timestamp, value)`` pairs in order; return the total evicted.

        The whole batch is validated first: one bad update rejects the batch and
        nothing is inserted.
        """
        lift = self.monoid.lift
        newest = self._newest
        checked = []
        for position, update in enumerate(updates):
            try:
                timestamp, value = update
            except (TypeError, ValueError):
                raise TypeError(f"update {position} must be a (timestamp, value) pair, got {update!r}") from None
            try:
                self._check_timestamp(timestamp, newest)
                checked.append((timestamp, lift(value)))
            except (TypeError, ValueError) as error:
                raise type(error)(f"update {position}: {error}") from None
            newest = timestamp
        apply = self._apply
        return sum(apply(timestamp, partial) for timestamp, partial in checked)

    def _apply(self, timestamp: Any, partial: Any) -> int:
        """Insert a validated update and enforce the policy."""
        self._newest = timestamp
        algorithm = self._algorithm
        if self._timed:
            algorithm.insert((1, timestamp, partial))
            return algorithm.enforce(self._wsp)
        algorithm.insert(partial)
        if self._max_size is not None:
            k = len(algorithm) - self._max_size
            if k > 0:
                algorithm.evict(k)
                return k
        return 0

    def evict(self, k: int = 1) -> None:
        """Remove the ``k`` oldest updates regardless of the policy."""
        self._algorithm.evict(k)

    def clear(self) -> None:
        """Remove every update (the timestamp order restarts too)."""
        self._algorithm.clear()
        self._newest = None

    # -- results -------------------------------------------------------------------

    def partial(self) -> Any:
        """The monoid partial of the whole window (``monoid.identity`` when empty)."""
        total = self._algorithm.query()
        return total[2] if self._timed else total

    def query(self) -> Any:
        """The aggregate of the window: ``monoid.lower`` of its partial."""
        return self.monoid.lower(self.partial())

    def __len__(self) -> int:
        return len(self._algorithm)

    def __iter__(self) -> Iterator[Any]:
        """The lifted updates, oldest to newest."""
        if self._timed:
            return (element[2] for element in self._algorithm)
        return iter(self._algorithm)

    def __repr__(self) -> str:
        return (f"Window({self.monoid!r}, {self.policy!r}, algorithm={self.algorithm!r}, "
                f"len={len(self)})")
