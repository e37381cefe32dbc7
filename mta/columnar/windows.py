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

from mta.columnar.kinds import Columns, Kind, Layout

__all__ = ["Windows", "sliding", "coarsen", "sessions", "grid"]


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


def _runs(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Start rows of the runs of equal (group, key) in rows sorted by them."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    change = (group[1:] != group[:-1]) | (key[1:] != key[:-1])
    return np.concatenate(([0], np.flatnonzero(change) + 1))


def _rows(cols: Columns, rows: np.ndarray) -> Columns:
    return {f: a[rows] for f, a in cols.items()}


def coarsen(
    kinds: Sequence[Kind], cols: list[Columns], group: np.ndarray, pane: np.ndarray, factor: int, phase: int = 0
) -> tuple[np.ndarray, np.ndarray, list[Columns]]:
    """Re-fold slices onto panes ``factor`` times longer: new pane = (pane - phase) // factor."""
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    coarse = (np.asarray(pane, dtype=np.int64) - phase) // factor
    starts = _runs(group, coarse)
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
    then each window merges the part of the stride after it. Dense cells are at most
    strides + k + 1 per cluster, so the cost is O(rows + windows) whatever size, step or the
    sparsity are. Tumbling (size == step) and step 1 are the cases k = 1, r = 0 and r = 0.
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
        starts = _runs(group, stride)
        g, q = group[starts], stride[starts]
        full = [kind.reduce(c, starts) for kind, c in zip(kinds, cols)]
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
    layout = Layout(pos=pos, cells=int(cells.sum()), size=k, first=offset[wc] + nth)
    out = [kind.slide(c, layout) for kind, c in zip(kinds, full)]
    keep = None
    if r:
        # the first r panes of each stride, merged into the window that ends inside it
        sel = np.flatnonzero(rel - stride * step < r)
        pstarts = _runs(group[sel], stride[sel])
        part = [kind.reduce(_rows(c, sel), pstarts) for kind, c in zip(kinds, cols)]
        stride_row = np.zeros(len(pane), dtype=np.int64)  # the stride row of each slice
        stride_row[starts[1:]] = 1
        stride_row = np.cumsum(stride_row)
        dense = np.full(layout.cells, -1, dtype=np.int64)
        dense[pos[stride_row[sel[pstarts]]]] = np.arange(len(pstarts))
        prow = dense[layout.first + k]
        out = [kind.merge(w, kind.take(p, prow)) for kind, w, p in zip(kinds, out, part)]
        # a window may touch its cluster only through panes of the next stride past r
        filled = np.zeros(layout.cells + 1, dtype=np.int64)
        filled[pos + 1] = 1
        filled = np.cumsum(filled)
        keep = (filled[layout.first + k] > filled[layout.first]) | (prow >= 0)
    start = phase + (lo[wc] + nth) * step
    wg = g[cstart][wc]
    if keep is not None:
        out = [_rows(c, keep) for c in out]
        start, wg = start[keep], wg[keep]
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
    share a session). start = first event time, end = last event time + gap.
    """
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
