"""Estimated operations (combines + inverts) per tick of a group of queries and of a plan.

Execution model (MQ-SPEC, the Stream engine): the tuples are cut into slices; each group
closes a partial at each of its edges (``E`` edges per tick, F1) and inserts it into
``MULTI_QUERY[final](monoid, ranges)``; each window of a query is answered by
``query(c)`` over its ``c`` closed partials, combined with the open partial for Cutty.

Omega (final-aggregation operations per edge, dissertation Sec. 7.2, Table 11) is
``insert + sum_j w_j * mean_k answer_j(k)``: a per-insert term and a per-answer term
weighted by ``w_j``, the answers of query ``j`` per edge (``(composite/slide_j) / edges``).
Table 11 charges every query at every edge (``w_j = 1``: true when the group's edges are
its queries' common slide); the weights make the formulas hold for groups whose
queries are answered at different rates. ``nP`` is a window's number of closed
partials (:func:`mta.optimizer.partials.window_spans`), ``cap`` the largest one:

- ``panes`` (naive fold, Eq. 7.3 ``sum r_i/s_i`` counted exactly): insert 0; answer
  ``nP - 1`` combines (+1 for the open partial).
- ``flatfat`` (Eq. 7.4): insert ``L(cap)`` (the update from leaf to root; the root answers
  the longest range), answer ``L(nP)`` for ``nP < cap``, with
  ``L(n) = floor(log2(n - 1)) + (n - 1) / 2**floor(log2 n)`` (``L(1) = 0``).
- ``flatfit`` (Eq. 7.5, ``3 * nQ``): answer 3.
- ``slickdeque`` invertible (Eq. 7.6 with its omitted x2): insert ``2 * U``, ``U`` the
  number of distinct ``nP`` of the group (one running aggregate each: one combine, one
  invert); answers are read.
- ``slickdeque`` non-invertible, selection monoids (Eq. 7.7 as printed, its ``nQ`` per
  answer): insert ``2 - 2/cap + sum_{i=1..cap} 1/i!``, answer 1.
- ``slideside`` (not in Table 11; from the algorithm, mta/algorithms/slideside.py):
  insert ``SlideSide.combines_per_insert(ranges)``, amortised over a lap: invertible
  ``2(n-1)/n`` (one prefix combine, one suffix-scan combine per element), overlaid
  stacks (any monoid) ``sum_l (1 - 1/p_l) + (R_l - 1)(1/p_l - 1/p_(l+1))`` over its
  power-of-two levels ``l`` (period ``p_l``, largest range ``R_l``); answer 1.

Every technique but ``panes`` adds one combine per answer whose window ends inside the
open partial after at least one closed partial (Cutty). The partial aggregation costs (tuples into partials) are in
:func:`plan_cost`: WeaveShare (Eq. 7.1) slices the stream once per group, ``m * rate``;
TriWeave slices it once (``rate``) at the union of every group's edges (``E_U`` slices
per tick) and each group folds those slices into its partials, ``E_U - E_i`` combines.
The dissertation gives TriWeave's cost only in words ("combined partial aggregation
processing using a large composite slide that passes ready partials to the execution
trees", Sec. 2.4.2; and Sec. 6.5.2: separate trees pay the input rate once each); the
formula ``rate + sum_i((E_U - E_i) + E_i*Omega_i)`` is this package's reading of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial
from typing import Iterable, Sequence

import numpy as np

from mta.algorithms.slideside import SlideSide
from mta.optimizer.f1 import count_in, edge_terms, f1, reduce
from mta.optimizer.partials import (PARTIALS, PREFIX_LIMIT, PeriodicQuery, composite_slide, edge_prefix,
                                    progressions, window_spans)

FINALS = ("panes", "flatfat", "flatfit", "slideside", "slickdeque")
METHODS = ("triweave", "weaveshare")


def allowed_finals(*, invertible: bool, selection: bool, techniques: Iterable[str] | None = None) -> tuple[str, ...]:
    """The final techniques the monoid allows (SlickDeque needs an invertible or a selection monoid), restricted
    to ``techniques`` when given; ValueError for an unknown name or when nothing is left."""
    wanted = FINALS if techniques is None else tuple(techniques)
    if isinstance(techniques, str):
        raise TypeError("techniques must be a sequence of names, e.g. ('flatfit',), not a str")
    unknown = [t for t in wanted if t not in FINALS]
    if unknown:
        raise ValueError(f"unknown final technique {', '.join(map(repr, unknown))}; choose from {', '.join(FINALS)}")
    allowed = tuple(t for t in FINALS if t in wanted and (t != "slickdeque" or invertible or selection))
    if not allowed:
        raise ValueError(f"no final technique left: {', '.join(wanted)} need an invertible or a selection monoid")
    return allowed


def flatfat_lookup(n: int) -> float:
    """Eq. 7.4's term for one range of ``n`` partials: ``floor(log2(n-1)) + (n-1)/2**floor(log2 n)`` (0 for 1)."""
    return float(flatfat_lookups(np.array([n]))[0])


def slickdeque_noninv_insert(cap: int) -> float:
    """Eq. 7.7 without its ``nQ``: ``2 - 2/cap + sum_{i=1..cap} 1/i!`` (the sum stops changing at i = 20)."""
    return 2 - 2 / cap + sum(1 / factorial(i) for i in range(1, min(cap, 20) + 1))


@dataclass(frozen=True, eq=False)
class Shape:
    """A group of queries under one partial technique: its composite slide, its edges per composite slide
    and, per query, the partials and openness of its (sampled) windows, each standing for ``weights[j]``."""

    queries: tuple[PeriodicQuery, ...]
    partial: str
    composite: int
    edges: int
    spans: tuple[tuple[np.ndarray, np.ndarray], ...]
    weights: tuple[float, ...]

    @property
    def edge_rate(self) -> float:
        return self.edges / self.composite

    def ranges(self) -> dict[str, tuple[int, ...]]:
        """Each query's distinct partial counts (Cutty: the open partial counted), as :class:`Group` shows."""
        return {q.name: tuple(int(k) for k in np.unique(ks)) for q, (ks, _) in zip(self.queries, self.spans)}


def shape(queries: Sequence[PeriodicQuery], partial: str) -> Shape:
    """The :class:`Shape` of ``queries`` sharing one partial technique (edges by F1)."""
    progs = reduce(p for q in queries for p in progressions(q, partial))
    terms = edge_terms(progs)
    composite = composite_slide(queries)
    prefix = edge_prefix(progs, composite) if composite <= PREFIX_LIMIT else None
    spans = window_spans(queries, terms, composite, prefix)
    return Shape(tuple(queries), partial, composite, count_in(terms, 0, composite),
                 tuple((k, o) for k, o, _ in spans), tuple(w for _, _, w in spans))


def flatfat_lookups(n: np.ndarray) -> np.ndarray:
    """:func:`flatfat_lookup` over an array of ints >= 0 (0 for 0 and 1)."""
    n = np.maximum(n, 1).astype(np.float64)
    low = np.frexp(np.maximum(n - 1, 1))[1] - 1  # floor(log2(n - 1)), exact for ints < 2**53
    top = np.frexp(n)[1] - 1  # floor(log2 n)
    return np.where(n >= 2, low + (n - 1) / np.exp2(top), 0.0)


def omegas(sh: Shape, finals: Sequence[str], *, invertible: bool, selection: bool = False) -> dict[str, float]:
    """Estimated final-aggregation operations per edge of the group for each final technique (module docstring,
    Table 11). SlickDeque takes its selection variant when the monoid is a selection monoid, invertible or not
    (as ``mta.algorithms.slickdeque`` does)."""
    ks = np.concatenate([k for k, _ in sh.spans])
    opened = np.concatenate([o for _, o in sh.spans]).astype(np.int64)
    # answers per composite slide that each sampled window stands for
    w = np.repeat(np.array(sh.weights), [len(k) for k, _ in sh.spans])
    closed = ks - opened
    asked = closed[closed > 0]
    cap = int(asked.max()) if len(asked) else 1
    answers = float(w.sum())
    opens = float(w @ (opened * (closed > 0)))  # a window of the open partial alone needs no combine
    out = {}
    for final in finals:
        if final == "panes":
            per_composite = float(w @ (ks - 1))
        elif final == "flatfat":
            lookups = np.where(closed < cap, flatfat_lookups(closed), 0.0)
            per_composite = flatfat_lookup(cap) * sh.edges + float(w @ lookups) + opens
        elif final == "flatfit":
            per_composite = 3 * answers + opens
        elif final == "slideside":
            ranges = [int(k) for k in np.unique(asked)] or [1]
            per_composite = SlideSide.combines_per_insert(ranges, invertible=invertible) * sh.edges + answers + opens
        elif final == "slickdeque" and invertible and not selection:
            per_composite = 2.0 * len(np.unique(asked)) * sh.edges + opens
        elif final == "slickdeque":
            per_composite = slickdeque_noninv_insert(cap) * sh.edges + answers + opens
        else:
            raise ValueError(f"unknown final technique {final!r}; choose from {', '.join(FINALS)}")
        out[final] = per_composite / sh.edges
    return out


@dataclass(frozen=True)
class Option:
    """One way to run a group: partial and final technique, with its edge rate and final operations per tick."""

    shape: Shape
    final: str
    omega: float

    @property
    def final_cost(self) -> float:
        """Final-aggregation operations per tick: ``E * Omega``."""
        return self.shape.edge_rate * self.omega


def candidates(queries: Sequence[PeriodicQuery], finals: Sequence[str], *, invertible: bool,
               selection: bool = False) -> tuple[Option, ...]:
    """For each partial technique, the final technique with the least ``E*Omega`` (the partial fixes ``E``), in
    the order of PARTIALS; ties go to the earlier final of ``finals``. The plan picks one per group
    (:class:`mta.optimizer.weave.Pricer`)."""
    out = []
    for partial in PARTIALS:
        sh = shape(queries, partial)
        best = None
        for final, om in omegas(sh, finals, invertible=invertible, selection=selection).items():
            if best is None or om < best.omega - 1e-12:
                best = Option(sh, final, om)
        assert best is not None
        out.append(best)
    return tuple(out)


def slicer_edge_rate(options: Iterable[Option]) -> float:
    """``E_U``: the shared slicer's slices per tick, the union of every group's edges (F1)."""
    opts = list(options)
    queries = [q for o in opts for q in o.shape.queries]
    progs = [p for o in opts for q in o.shape.queries for p in progressions(q, o.shape.partial)]
    composite = composite_slide(queries)
    return f1(progs, composite) / composite


def group_cost(opt: Option, method: str, rate: float, slicer_rate: float) -> float:
    """A group's operations per tick: ``rate + E*Omega`` (WeaveShare, Eq. 7.1) or
    ``(E_U - E) + E*Omega`` (TriWeave: folding the shared slices, then the final aggregation)."""
    if method == "weaveshare":
        return rate + opt.final_cost
    return slicer_rate - opt.shape.edge_rate + opt.final_cost


def plan_cost(options: Sequence[Option], method: str, rate: float, slicer_rate: float | None = None) -> float:
    """Operations per tick of a plan: ``sum(rate + E_i*Omega_i)`` (WeaveShare, Eq. 7.1) or
    ``rate + sum((E_U - E_i) + E_i*Omega_i)`` (TriWeave, one shared slicer; ``slicer_rate`` is ``E_U`` if
    known)."""
    if method == "weaveshare":
        return sum(group_cost(o, method, rate, 0.0) for o in options)
    e_u = slicer_edge_rate(options) if slicer_rate is None else slicer_rate
    return rate + sum(group_cost(o, method, rate, e_u) for o in options)
