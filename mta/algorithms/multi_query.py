"""The one interface of the multi-query aggregators: many ranges answered over one FIFO window.

A multi-query aggregator holds the newest ``max(ranges)`` partials of a stream (each
:meth:`MultiQueryAggregator.insert` appends one and, once the window is full, the
oldest falls out: a slide of one partial) and answers, after every insert, the
aggregate of the newest ``r`` partials for every ``r`` in ``ranges`` (SlideSide,
SlickDeque, FlatFIT; the dissertation's "max-multi-query" environment when ``ranges``
is ``1..n``). Answers combine partials in stream order, oldest first, so the monoid
need not be commutative unless the algorithm says so.

An algorithm that needs a property of the monoid (an inverse, or a selection
combine) refuses any other monoid at construction with a ``TypeError`` naming the
missing property: never a wrong answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Sequence

from mta.monoid import Monoid


def check_ranges(ranges: Sequence[int]) -> tuple[int, ...]:
    """``ranges`` as a tuple of positive ints (duplicates allowed, order kept); ValueError/TypeError otherwise."""
    if isinstance(ranges, (str, bytes)) or not hasattr(ranges, "__iter__"):
        raise TypeError(f"ranges must be a sequence of positive ints, got {type(ranges).__name__}")
    out = tuple(ranges)
    if not out:
        raise ValueError("ranges must name at least one range")
    for k, r in enumerate(out):
        if isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"ranges[{k}] must be an int, got {type(r).__name__}")
        if r < 1:
            raise ValueError(f"ranges[{k}] must be at least 1, got {r}")
    return out


class MultiQueryAggregator(ABC):
    """The newest ``max(ranges)`` partials, with the aggregate of the newest ``r`` for each range."""

    #: registry name in ``mta.algorithms.MULTI_QUERY``
    name: ClassVar[str]
    #: True when :meth:`query` answers every ``1 <= r <= capacity``, not only the given ranges
    #: (SlideSide, FlatFAT, FlatFIT, SlickDeque for selection monoids keep nothing per range)
    any_range: ClassVar[bool] = False

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        self.check_monoid(monoid)
        self.monoid = monoid
        self.ranges = check_ranges(ranges)
        self.capacity = max(self.ranges)

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        """Raise TypeError, naming the missing property, if this algorithm cannot serve ``monoid``."""

    @abstractmethod
    def insert(self, partial: Any) -> None:
        """Append ``partial`` as the newest element (the oldest falls out once ``capacity`` are held)."""

    @abstractmethod
    def query(self, r: int) -> Any:
        """The aggregate of the newest ``r`` elements (of all held, if fewer), oldest first;
        ``r`` must be one of ``ranges``, or any ``1 <= r <= capacity`` when :attr:`any_range`
        (ValueError otherwise, from :meth:`_unknown_range`); ``monoid.identity`` when empty."""

    def answers(self) -> list[Any]:
        """:meth:`query` for every range, in the order of ``ranges``."""
        query = self.query
        return [query(r) for r in self.ranges]

    @abstractmethod
    def __len__(self) -> int:
        """How many elements are held: ``min(inserted since clear, capacity)``."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every element (the ranges stay)."""

    def _unknown_range(self, r: Any) -> ValueError:
        if self.any_range:
            return ValueError(f"{self.name} answers ranges 1..{self.capacity}, not {r!r}")
        return ValueError(f"{self.name} answers the ranges {sorted(set(self.ranges))}, not {r!r}")
