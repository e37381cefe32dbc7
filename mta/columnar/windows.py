"""Windows over sorted slices, all groups at once: sliding/tumbling, sessions, coarsening, the grid.

Slices are partial rows (one ``Columns`` per aggregation) sorted by (group, pane), each
covering one pane of a grid of pane length P (see :func:`grid`). Every function is numpy
work proportional to rows + windows; no Python loop runs over rows or windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mta.columnar.kinds import Columns, Kind, Layout, segment_ids

__all__ = ["Windows", "sliding", "coarsen", "sessions", "grid", "runs"]


@dataclass
class Windows:
    """Windows of every group, sorted by (group, start).

    Sliding/tumbling: ``start``/``end`` are pane indexes (``[start, end)``); sessions: event
    times (start = first event, end = last event + gap). ``cols`` holds the partials of each
    aggregation (``kind.lower`` gives the results).
    """

    group: np.ndarray
    start: np.ndarray
    end: np.ndarray
    cols: list[Columns]


def runs(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Start rows of the runs of equal (group, key) in rows sorted by them."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    change = (group[1:] != group[:-1]) | (key[1:] != key[:-1])
    return np.concatenate(([0], np.flatnonzero(change) + 1))


def rows(cols: Columns, index: np.ndarray | slice) -> Columns:
    """The rows ``index`` of ``cols`` (an index array, a mask or a slice)."""
    return {name: array[index] for name, array in cols.items()}


def coarsen(
    kinds: Sequence[Kind], cols: list[Columns], group: np.ndarray, pane: np.ndarray, factor: int, phase: int = 0
) -> tuple[np.ndarray, np.ndarray, list[Columns]]:
    """Re-fold slices onto panes ``factor`` times longer: new pane = (pane - phase) // factor."""
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    coarse = (np.asarray(pane, dtype=np.int64) - phase) // factor
    starts = runs(group, coarse)
    return group[starts], coarse[starts], [k.reduce(c, starts) for k, c in zip(kinds, cols)]


def sliding(
    kinds: Sequence[Kind],
    cols: list[Columns],
    group: np.ndarray,
    pane: np.ndarray,
    size: int,
    step: int,
    phase: int = 0,
) -> Windows:
    """Windows ``[s, s + size)`` (in panes) for every s with ``s % step == phase`` that hold a slice.

    With ``size = k * step + r``, a window is k whole *strides* (the ``step`` panes from one
    window start to the next) plus the first r panes of the stride after them. The slices are
    folded onto strides (``full``) and onto the first r panes of each stride (``part``); the k
    strides slide by van Herk/Gil-Werman over the strides of *clusters* (runs of strides a
    window can join: a gap of at least k + (r > 0) strides splits them), laid out densely;
    then each window merges the part of the stride after it. A cluster has at least k windows
    and fewer than 2k dense cells more than windows, so the cost is O(rows + windows) whatever
    size, step or the sparsity are. Tumbling (size == step) is k = 1, r = 0; step 1 is r = 0
    (no strides to fold).
    """
    if not size >= step >= 1:
        raise ValueError(f"need size >= step >= 1, got size={size}, step={step}")
    group, pane = np.asarray(group, dtype=np.int64), np.asarray(pane, dtype=np.int64)
    phase %= step
    k, r = divmod(size, step)
    if len(pane) == 0:
        return _empty(kinds, cols)
    rel = pane - phase
    stride = rel // step
    if step == 1:
        g, q, full, starts = group, stride, cols, np.arange(len(pane))
    else:
        starts = runs(group, stride)
        g, q = group[starts], stride[starts]
        full = [kind.reduce(c, starts) for kind, c in zip(kinds, cols)]
    if size == step:  # tumbling: every stride is a window
        start = phase + q * step
        return Windows(group=g, start=start, end=start + size, cols=list(full))
    reach = k + (r > 0)  # strides one window touches

    # clusters of strides: a window touches strides j .. j + reach - 1
    cut = np.ones(len(q), dtype=bool)
    cut[1:] = (g[1:] != g[:-1]) | (q[1:] - q[:-1] >= reach)
    cstart = np.flatnonzero(cut)
    cend = np.append(cstart[1:], len(q)) - 1
    lo = q[cstart] - reach + 1  # first window start of each cluster (= its first cell)
    hi = q[cend]  # last window start
    cells = -(-(hi + reach - lo) // k) * k  # through the last cell read, in whole blocks of k
    offset = np.cumsum(cells) - cells
    cluster = np.cumsum(cut) - 1
    pos = offset[cluster] + (q - lo[cluster])

    per = hi - lo + 1
    wc = np.repeat(np.arange(len(cstart)), per)
    nth = np.arange(len(wc)) - np.repeat(np.cumsum(per) - per, per)
    first = offset[wc] + nth  # the cell of each window's first stride
    start = phase + (lo[wc] + nth) * step
    wg = g[cstart][wc]
    cells = int(cells.sum())
    if r:
        # the first r panes of each stride, to merge into the window that ends inside it
        sel = np.flatnonzero(rel - stride * step < r)
        pstarts = runs(group[sel], stride[sel])
        part = [kind.reduce(rows(c, sel), pstarts) for kind, c in zip(kinds, cols)]
        dense = np.full(cells, -1, dtype=np.int64)
        dense[pos[segment_ids(starts, len(pane))[sel[pstarts]]]] = np.arange(len(pstarts))
        prow = dense[first + k]
        # a window may touch its cluster only through panes of the next stride past r: drop it
        filled = np.zeros(cells + 1, dtype=np.int64)
        filled[pos + 1] = 1
        filled = np.cumsum(filled)
        keep = (filled[first + k] > filled[first]) | (prow >= 0)
        first, start, wg, prow = first[keep], start[keep], wg[keep], prow[keep]
    layout = Layout(pos=pos, cells=cells, size=k, first=first)
    out = [kind.slide(c, layout) for kind, c in zip(kinds, full)]
    if r:
        out = [kind.merge(w, kind.take(p, prow)) for kind, w, p in zip(kinds, out, part)]
    return Windows(group=wg, start=start, end=start + size, cols=out)


def _empty(kinds: Sequence[Kind], cols: list[Columns]) -> Windows:
    none = np.zeros(0, dtype=np.int64)
    return Windows(none, none.copy(), none.copy(), [k.identity(0, c) for k, c in zip(kinds, cols)])


def _running_max(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` within each run of equal ``group`` (log2(n) doubling steps)."""
    out = values.copy()
    same = group[1:] == group[:-1]
    if np.all((values[1:] >= values[:-1]) | ~same):
        return out  # already nondecreasing in every group: the common case of disjoint slices
    d = 1
    while d < len(out):
        joined = group[d:] == group[:-d]
        moved = joined & (out[:-d] > out[d:])
        if not moved.any():
            break
        out[d:] = np.where(moved, out[:-d], out[d:])
        d *= 2
    return out


def sessions(
    kinds: Sequence[Kind], cols: list[Columns], group: np.ndarray, lo: np.ndarray, hi: np.ndarray, gap: int
) -> Windows:
    """Spark's session windows over slices sorted by (group, lo), each slice at most one session.

    An event at t opens ``[t, t + gap)``; overlapping or touching ones merge, so a slice joins
    the session before it when its ``lo <= max(hi so far) + gap`` (events exactly gap apart
    share a session). start = first event time, end = last event time + gap. Slices of one
    group cover disjoint time ranges (panes), so index order is time order for first/last.
    """
    if gap <= 0:
        raise ValueError(f"gap must be > 0, got {gap}")
    group = np.asarray(group, dtype=np.int64)
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if len(lo) == 0:
        return _empty(kinds, cols)
    reach = _running_max(hi, group)
    cut = np.ones(len(lo), dtype=bool)
    cut[1:] = (group[1:] != group[:-1]) | (lo[1:] > reach[:-1] + gap)
    starts = np.flatnonzero(cut)
    ends = np.append(starts[1:], len(lo)) - 1
    return Windows(
        group=group[starts],
        start=lo[starts],
        end=reach[ends] + gap,
        cols=[k.reduce(c, starts) for k, c in zip(kinds, cols)],
    )


def grid(queries: Sequence[tuple]) -> tuple[int, int]:
    """The shared pane grid of many queries: (P, origin), in integer microseconds.

    ``queries``: ``("sliding", size, slide, offset)`` and ``("session", gap)``. P is the
    longest pane dividing every size, slide, difference of offsets and gap, so every window
    edge is ``origin + k * P`` (0 <= origin < P) and no pane is longer than a gap.
    """
    lengths: list[int] = []
    offsets: list[int] = []
    for q in queries:
        if q[0] == "sliding":
            _, size, slide, offset = q
            lengths += [int(size), int(slide)]
            offsets.append(int(offset))
        elif q[0] == "session":
            lengths.append(int(q[1]))
        else:
            raise ValueError(f"unknown query {q!r}")
    if not lengths or min(lengths) <= 0:
        raise ValueError(f"need queries with positive lengths, got {queries!r}")
    p = math.gcd(*lengths, *(o - offsets[0] for o in offsets))
    return p, (offsets[0] % p if offsets else 0)


def in_panes(query: tuple, pane: int, origin: int) -> tuple[int, int, int]:
    """A ``("sliding", size, slide, offset)`` query on the grid ``(pane, origin)`` of
    :func:`grid`: ``(size, step, phase)`` in panes, as :func:`sliding` takes them (its
    windows start at the panes ``s`` with ``s % step == phase``, at time ``origin + s * pane``)."""
    _, size, slide, offset = query
    if not 0 < slide <= size or size % pane or slide % pane or (offset - origin) % pane:
        raise ValueError(f"query {query!r} does not lie on the grid (pane {pane}, origin {origin}) "
                         "or has slide > size")
    step = slide // pane
    return size // pane, step, (offset - origin) // pane % step
