"""Periodic queries and their partial aggregation: Panes, Pairs and Cutty edges, partials per window.

A :class:`PeriodicQuery` has windows ``[offset + k*slide, offset + k*slide + range)`` in
integer ticks. Partial aggregation cuts the stream at *edges*; a window is assembled
from the partials between its edges (dissertation Sec. 2.3.1, Table 1):

- **panes**: an edge every ``gcd(range, slide)`` ticks (aligned on the offset): every
  window start and end is an edge; ``range / gcd`` partials per window.
- **pairs**: an edge at every window start and every window end: the slide is split
  into two fragments, ``slide - range % slide`` then ``range % slide``, counted from a
  window *end* (DESIGN.md: the text reverses them); ``2*floor(r/s) + 1`` partials.
- **cutty**: an edge at every window start only; a window whose end is not an edge is
  answered with the *open* partial (the one being filled) as its last element:
  ``ceil(r/s)`` partials, the open one included.

In a group the edges are the union of its queries' edges (one technique per group), so
a window can span more partials than Table 1 says; :func:`window_spans` counts them
for every window of one composite slide (the LCM of the slides; the pattern repeats).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd
from typing import Sequence

from mta.optimizer.f1 import Progression, Term, count_in, edge_terms, lcm_all

PARTIALS = ("panes", "pairs", "cutty")

#: at most this many windows of one query are enumerated per composite slide; a query with more windows in
#: its composite slide (a huge LCM) is sampled with an even stride over the composite slide, so its partial
#: counts (``Group.ranges``) may miss rare counts and the costs average the sample
MAX_WINDOWS = 512


@dataclass(frozen=True)
class PeriodicQuery:
    """A sliding-window query in integer ticks: windows ``[offset + k*slide, offset + k*slide + range)``."""

    name: str
    range: int
    slide: int
    offset: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a query's name must be a non-empty str, got {self.name!r}")
        for field, low in (("range", 1), ("slide", 1), ("offset", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"query {self.name!r}: {field} must be an int (ticks), got {type(value).__name__} "
                                f"{value!r}")
            if value < low:
                raise ValueError(f"query {self.name!r}: {field} must be at least {low}, got {value}")


def check_partial(technique: str) -> str:
    if technique not in PARTIALS:
        raise ValueError(f"unknown partial technique {technique!r}; choose from {', '.join(PARTIALS)}")
    return technique


def partials_per_window(range_: int, slide: int, technique: str) -> int:
    """Table 1: the partials of one window of a query alone (Cutty: the open partial included)."""
    check_partial(technique)
    if range_ % slide == 0:
        return range_ // slide
    if technique == "panes":
        return range_ // gcd(range_, slide)
    if technique == "pairs":
        return 2 * (range_ // slide) + 1
    return -(-range_ // slide)


def progressions(query: PeriodicQuery, technique: str) -> tuple[Progression, ...]:
    """The edges of ``query`` under ``technique`` as ``(modulus, residue)`` progressions (F1's shifts)."""
    check_partial(technique)
    r, s, o = query.range, query.slide, query.offset
    if technique == "panes":
        g = gcd(r, s)
        return ((g, o % g),)
    if technique == "pairs" and r % s:
        # window starts o (mod s) and window ends o + r (mod s): fragments s - r%s, then r%s from an end
        return ((s, o % s), (s, (o + r) % s))
    return ((s, o % s),)


def composite_slide(queries: Sequence[PeriodicQuery]) -> int:
    """The LCM of the slides: the period of every edge and window pattern of the group."""
    return lcm_all(q.slide for q in queries)


def group_terms(queries: Sequence[PeriodicQuery], technique: str) -> list[Term]:
    """The F1 terms of the union of the group's edges (:func:`mta.optimizer.f1.edge_terms`)."""
    return edge_terms(p for q in queries for p in progressions(q, technique))


def window_spans(query: PeriodicQuery, terms: Sequence[Term], composite: int,
                 max_windows: int = MAX_WINDOWS) -> list[tuple[int, bool]]:
    """``(partials, open)`` for each window of ``query`` starting in one composite slide, given the group's
    edges (``terms``): ``partials`` counts the edges in ``[start, end)`` (each starts one partial; the window
    start is always an edge), ``open`` says the end is not an edge, so the last partial is the open one
    (Cutty only). More than ``max_windows`` windows are sampled with an even stride."""
    n = composite // query.slide
    step = max(1, -(-n // max_windows))
    out = []
    for k in range(0, n, step):
        start = query.offset + k * query.slide
        end = start + query.range
        out.append((count_in(terms, start, end), count_in(terms, end, end + 1) == 0))
    return out
