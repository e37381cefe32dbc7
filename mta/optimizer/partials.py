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

import numpy as np

from mta.optimizer.f1 import Progression, Term, lcm_all

PARTIALS = ("panes", "pairs", "cutty")

#: composite slides up to this many ticks count partials per window with a prefix sum of the edges
PREFIX_LIMIT = 1 << 14
#: at most this many windows of one query are enumerated per composite slide; a query with more windows in
#: its composite slide (a huge LCM) is sampled with an even stride over the composite slide, so its partial
#: counts (``Group.ranges``) may miss rare counts and the costs average the sample
MAX_WINDOWS = 256


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


def _windows(queries: Sequence[PeriodicQuery], composite: int, max_windows: int):
    """Per query: the starts of its (sampled) windows in one composite slide, and the windows each stands for."""
    for q in queries:
        n = composite // q.slide
        step = max(1, -(-n // max_windows))
        starts = range(q.offset, q.offset + n * q.slide, step * q.slide)
        yield starts, n / len(starts)


def window_spans(queries: Sequence[PeriodicQuery], terms: Sequence[Term], composite: int,
                 prefix: np.ndarray | None = None, max_windows: int = MAX_WINDOWS
                 ) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """For each query, the windows starting in one composite slide, given the group's edges (``terms``):
    ``(partials, open, weight)``, arrays over the windows and the number of windows each one stands for.
    ``partials`` counts the edges in ``[start, end)`` (each starts one partial; the window start is always an
    edge), ``open`` says the end is not an edge, so the last partial is the open one (Cutty only). More than
    ``max_windows`` windows of a query are sampled with an even stride (``weight`` > 1). ``prefix`` (from
    :func:`edge_prefix`) counts the same edges as the terms, faster, on all the queries' windows at once."""
    windows = list(_windows(queries, composite, max_windows))
    if prefix is not None:
        starts = np.concatenate([np.arange(w.start, w.stop, w.step, dtype=np.int64) for w, _ in windows])
        ends = starts + np.repeat(np.array([q.range for q in queries], dtype=np.int64),
                                  [len(w) for w, _ in windows])
        e = ends % composite
        inside = (ends // composite - starts // composite) * prefix[composite] + prefix[e] - prefix[starts % composite]
        opened = prefix[e + 1] == prefix[e]
        cuts = np.cumsum([len(w) for w, _ in windows])[:-1]
        return [(k, o, weight) for k, o, (_, weight) in zip(np.split(inside, cuts), np.split(opened, cuts), windows)]
    out = []
    for q, (starts, weight) in zip(queries, windows):
        inside_l, opened_l = [], []
        for start in starts:
            end = start + q.range
            inside = at_end = 0
            for m, a, c in terms:  # count_in(terms, start, end) and count_in(terms, end, end + 1) in one pass
                before_end = (a - end) // m
                inside += c * ((a - start) // m - before_end)
                at_end += c * (before_end - (a - end - 1) // m)
            inside_l.append(inside)
            opened_l.append(at_end == 0)
        out.append((np.array(inside_l, dtype=np.int64), np.array(opened_l, dtype=bool), weight))
    return out


def edge_prefix(progs: Sequence[Progression], composite: int) -> np.ndarray:
    """``prefix[x]`` = the edges in ``[0, x)`` for ``0 <= x <= composite`` (a bit set: for small composites,
    where vector arithmetic beats F1's terms per window)."""
    bits = np.zeros(composite, dtype=np.int64)
    for m, a in progs:
        bits[a % m::m] = 1
    out = np.zeros(composite + 1, dtype=np.int64)
    np.cumsum(bits, out=out[1:])
    return out
