"""Replicated single-query baselines: one single-query Aggregator per distinct range.

The baselines of the SlideSide paper's multi-query experiments (section 4.2:
"TwoStacks and SoE can not be used to evaluate multiple queries, so we replicate
their data-structures for every single window definition", Table 1's ``q`` and
``qn`` columns). Every replica is fed every partial and evicts down to its range,
so each step costs one insert and (once full) one eviction per distinct range.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from mta.algorithms.amta import AmortizedMTA
from mta.algorithms.base import Aggregator
from mta.algorithms.multi_query import MultiQueryAggregator
from mta.algorithms.subtract_on_evict import SubtractOnEvict
from mta.algorithms.two_stacks import TwoStacks
from mta.monoid import Monoid


class Replicated(MultiQueryAggregator):
    """One ``single`` aggregator per distinct range, each holding the newest ``r`` partials."""

    #: the single-query algorithm replicated per range
    single: ClassVar[type[Aggregator]]

    def __init__(self, monoid: Monoid, ranges: Sequence[int]) -> None:
        super().__init__(monoid, ranges)
        self._distinct = sorted(set(self.ranges))
        self.clear()

    def clear(self) -> None:
        single = self.single
        self._replicas: dict[int, Aggregator] = {r: single(self.monoid) for r in self._distinct}
        # (insert, evict, range) per replica, bound once for the hot path
        self._hot = [(a.insert, a.evict, r) for r, a in self._replicas.items()]
        self._queries = [self._replicas[r].query for r in self.ranges]
        self._count = 0  # partials inserted since clear, capped at capacity

    def insert(self, partial: Any) -> None:
        held = self._count  # before this insert: a replica holding r must evict one
        for insert, evict, r in self._hot:
            insert(partial)
            if held >= r:
                evict(1)
        if held < self.capacity:
            self._count = held + 1

    def query(self, r: int) -> Any:
        replica = self._replicas.get(r) if r.__class__ is int else None
        if replica is None:
            raise self._unknown_range(r)
        return replica.query()

    def answers(self) -> list[Any]:
        return [query() for query in self._queries]

    def __len__(self) -> int:
        return self._count


class ReplicatedSoE(Replicated):
    """Subtract-on-Evict per range (invertible monoids only)."""

    name = "soe"
    single = SubtractOnEvict

    @classmethod
    def check_monoid(cls, monoid: Monoid) -> None:
        if not getattr(monoid, "invertible", False):
            raise TypeError(f"{cls.name} (replicated SubtractOnEvict) needs an invertible monoid; "
                            f"{monoid!r} is not invertible")


class ReplicatedTwoStacks(Replicated):
    """TwoStacks per range (any associative monoid)."""

    name = "two_stacks"
    single = TwoStacks


class ReplicatedAMTA(Replicated):
    """Amortized MTA per range (any associative monoid)."""

    name = "amta"
    single = AmortizedMTA
