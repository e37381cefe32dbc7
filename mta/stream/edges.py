"""The slice edges of many context-free queries: the Stream Slicer's next edge (issue 20).

Every window start and end of ``Sliding(size, slide, offset)`` is one of two arithmetic
progressions of period ``slide``: ``offset + k * slide`` and ``offset + size + k * slide``.
Queries often share a slide (1,000 queries ``Sliding(k * 30 ms, 1 s)`` have one period and
100 distinct residues), so :class:`EdgeSet` merges the progressions of equal period into one
sorted list of residues (:class:`Progressions`): the edges around a time are then one
floor division and one bisection, however many queries there are. Between groups of
different periods the paper's cache of the next edge (section 5.3) stays: a heap of each
group's next edge, moved on past ``t`` for times in order.

A float spec's edges are the floats nearest ``n * p / q`` for integers ``n`` (``Sliding._exact``):
the groups work on those integers, and an edge is the same float as ``Sliding.start``/``end``
give (both are the correctly rounded ``n * p / q``). A subclass of ``Sliding`` that computes
its edges otherwise is asked through its own ``floor_edge``/``next_edge`` (:class:`SpecEdges`).
"""

from __future__ import annotations

import functools
import heapq
from bisect import bisect_right
from math import floor
from typing import Any, Iterable

from mta.windows import Sliding, first_above

_INF = float("inf")


class Progressions:
    """The integers ``r + m * period`` for ``r`` in ``residues`` (sorted, in ``[0, period)``),
    and the edges they stand for: ``n`` itself (``scale`` None: an integer spec) or the float
    ``n * p / q`` (``scale`` ``(p, q)``)."""

    __slots__ = ("scale", "period", "residues")

    def __init__(self, scale: tuple[int, int] | None, period: int, residues: Iterable[int]) -> None:
        self.scale = scale
        self.period = period
        self.residues = sorted(set(residues))

    def around(self, t: Any) -> tuple[Any, Any]:
        """The largest edge <= t and the smallest > t."""
        scale = self.scale
        if scale is None:
            u = t if type(t) is int else floor(t)
        else:  # the largest integer u with u * p / q <= t (as floats: the correctly rounded quotient)
            p, q = scale
            num, den = t.as_integer_ratio()
            u = num * q // (den * p)  # exact: u * p / q <= t < (u + 1) * p / q as reals
            if (u + 1) * p / q <= t:  # the quotient may round down onto t (by many units at a huge t)
                u = first_above(lambda n: n * p / q, t, u + 1) - 1
        period, residues = self.period, self.residues
        base = u - u % period
        i = bisect_right(residues, u - base)
        below = base + residues[i - 1] if i else base - period + residues[-1]
        above = base + residues[i] if i < len(residues) else base + period + residues[0]
        if scale is None:
            return below, above
        return below * p / q, above * p / q


class SpecEdges:
    """One spec's edges through its own methods (a ``Sliding`` subclass with its own arithmetic)."""

    __slots__ = ("spec",)

    def __init__(self, spec: Sliding) -> None:
        self.spec = spec

    def around(self, t: Any) -> tuple[Any, Any]:
        return self.spec.floor_edge(t), self.spec.next_edge(t)


def plain(spec: Sliding) -> bool:
    """Whether ``spec`` computes its windows with ``Sliding``'s own arithmetic."""
    return _plain_class(type(spec))


@functools.lru_cache(maxsize=64)
def _plain_class(cls: type) -> bool:
    return all(getattr(cls, name) is getattr(Sliding, name)
               for name in ("start", "end", "floor_edge", "next_edge", "first_starting_after", "first_ending_after"))


def first_needed(specs: Iterable[Sliding]) -> list[Sliding]:
    """The specs among ``specs`` whose first window ending after a time may start first: of
    those with one slide and offset (the same window starts), the longest (its window ending
    after a time starts earliest)."""
    longest: dict = {}
    for spec in specs:
        key = (spec._exact is None, spec.slide, spec.offset) if plain(spec) else id(spec)
        if key not in longest or spec.size > longest[key].size:
            longest[key] = spec
    return list(longest.values())


class EdgeSet:
    """The union of the edges of ``specs`` (context-free window specs): :meth:`around`.

    The groups are made at the first time asked (a stream reconfigures at every query added)."""

    def __init__(self, specs: Iterable[Sliding]) -> None:
        self.specs = specs
        self._groups: list | None = None
        self._heap: list | None = None  # (next edge, group index), once a time was asked
        self._at: Any = -_INF  # the time last asked (in order)
        self._floor: Any = -_INF  # the largest edge <= it

    @property
    def groups(self) -> list:
        """The progressions merged per period and scale (and the specs with their own arithmetic)."""
        if self._groups is None:
            self._groups = self._group()
        return self._groups

    def _group(self) -> list:
        residues: dict[tuple, set] = {}
        groups: list = []
        for spec in self.specs:
            if not plain(spec):
                groups.append(SpecEdges(spec))
                continue
            exact = spec._exact
            if exact is None:
                scale, size, slide, offset = None, spec.size, spec.slide, spec.offset
            else:
                p, q, size, slide, offset = exact
                scale = (p, q)
            residues.setdefault((scale, slide), set()).update((offset % slide, (offset + size) % slide))
        return groups + [Progressions(scale, period, rs) for (scale, period), rs in residues.items()]

    def around(self, t: Any) -> tuple[Any, Any]:
        """The largest edge <= t and the smallest > t (-inf and inf without specs).

        For times in order, the heap of each group's next edge is moved on past t, touching
        only the groups with an edge in between; an earlier time asks every group."""
        groups = self._groups
        if groups is None:
            groups = self.groups
        if len(groups) == 1:
            return groups[0].around(t)
        if not groups:
            return -_INF, _INF
        heap = self._heap
        if heap is None or t < self._at:
            edges = [g.around(t) for g in groups]
            floor_edge = max(e[0] for e in edges)
            if heap is None:
                self._heap = heap = [(e[1], n) for n, e in enumerate(edges)]
                heapq.heapify(heap)
                self._at, self._floor = t, floor_edge
            return floor_edge, (min(e[1] for e in edges) if t < self._at else heap[0][0])
        floor_edge = self._floor
        while heap[0][0] <= t:  # the groups with an edge in (last t, t]
            n = heap[0][1]
            below, above = groups[n].around(t)
            if below > floor_edge:
                floor_edge = below
            heapq.heapreplace(heap, (above, n))
        self._at, self._floor = t, floor_edge
        return floor_edge, heap[0][0]
