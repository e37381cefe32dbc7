"""Estimated operations (combines + inverts) per tick of a group of queries and of a plan.

Execution model (the Stream engine, ``mta.stream.shared``): one slicer cuts the stream at every
window start and end of EVERY query, whatever the plan (``E_U`` slices per tick: F1 of the Pairs
progressions of all the queries); a tuple costs one combine but the first of its slice. Each
group closes a partial at each of its edges (``E`` per tick, F1): it folds every slicer slice
into its open partial (one combine, but the partial's first slice), inserts the partial into
``MULTI_QUERY[final](monoid, ranges)`` (a Panes edge that is not a slicer edge inserts an
identity partial: no fold), and answers each window by ``query(c)`` over its ``c`` closed
partials, combined with the open partial for Cutty.

Omega (final-aggregation operations per edge, dissertation Sec. 7.2, Table 11) is
``insert + sum_j w_j * mean_k answer_j(k)``: a per-insert term and a per-answer term
weighted by ``w_j``, the answers of query ``j`` per edge (``(composite/slide_j) / edges``).
Table 11 charges every query at every edge (``w_j = 1``: true when the group's edges are its
queries' common slide); the weights make the formulas hold for groups whose queries are
answered at different rates. ``c`` is a window's number of closed partials
(:func:`mta.optimizer.partials.window_spans`), ``cap`` the largest one. Two models
(``omegas(..., model=)``), per insert / per answer:

=================  ==========================================  ============================================
final              ``model="table11"`` (as printed)            ``model="counted"`` (default: our code)
=================  ==========================================  ============================================
panes (fold)       Eq. 7.3 counted exactly: 0 / ``c - 1``      the same (mta/algorithms/panes.py)
flatfat            Eq. 7.4: ``L(cap)`` / ``L(c)`` for          ``log2 N`` (``cap == N``) or ``2 log2 N``
                   ``c < cap``, ``L(n) = floor(log2(n-1))``    (evict + insert paths; ``N`` the leaves,
                   ``+ (n-1)/2**floor(log2 n)``                max(16, 2**ceil(log2 cap))) / the mean
                                                               minimum cover of ``c`` leaves over the
                                                               ``N`` positions, minus 1
                                                               (:func:`flatfat_cover`); ``c == cap``: 0
                                                               (the root), a wrapped cover if not
                                                               commutative or with ordered ties
flatfit            Eq. 7.5: 0 / 3                              Alg. 1's pointer table replayed on the
                                                               group's inserts and lookups
                                                               (:func:`flatfit_combines`: path
                                                               compression has no closed form);
                                                               ``FLATFIT_PER_LOOKUP`` per answer when the
                                                               windows are sampled or the replay too long
slickdeque (inv.)  Eq. 7.6 with its omitted x2: ``2U`` / 0     the same (``U`` distinct ``c``, at least 1)
slickdeque (sel.)  Eq. 7.7: ``2 - 2/cap + sum_{i<=cap} 1/i!``  ``2 - 2/cap`` / 0: Alg. 3's dominance
                   / 1 (its ``nQ``: comparisons, deque walk)   tests (a combine each; each partial popped
                                                               once, no failing test or no expiry with
                                                               chance ``1/cap`` each); answers are read
slideside          not in Table 11: ``SlideSide.combines_``    the same insert / ``1 - free(c)``: free
                   ``per_insert(ranges)`` / 1                  when ``c`` is this lap's prefix
                                                               (invertible, ``1/cap``) or a level's back
                                                               part (overlaid, ``sum 1/p`` over levels
                                                               of period ``p >= c``; range 1 always)
=================  ==========================================  ============================================

Every technique but ``panes`` adds one combine per answer whose window ends inside the open
partial after at least one closed partial (Cutty). The partial aggregation costs (tuples into
partials) are in :func:`plan_cost`: WeaveShare (Eq. 7.1) slices the stream once per group,
``m * rate``; TriWeave, as the engine runs it: ``(rate - S) + sum_i((S - F_i) + E_i*Omega_i)``
with ``S = min(rate, E_U)`` slices per tick and ``F_i`` the group's partials per tick that
receive a slice (all of them for Pairs and Cutty; for Panes those at a window start or end of
the group's queries). ``E_U`` does not depend on the plan, so the plan cost is a sum over
groups plus a constant. The dissertation gives TriWeave's cost only in words ("combined
partial aggregation processing using a large composite slide that passes ready partials to
the execution trees", Sec. 2.4.2); the formula is this package's reading of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from math import factorial, inf
from typing import Iterable, Sequence

import numpy as np

from mta.algorithms import flatfit
from mta.algorithms.flatfat import FlatFAT
from mta.algorithms.slideside import SlideSide
from mta.optimizer.f1 import Progression, count_in, edge_terms, f1, reduce
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
    and, per query, the partials and openness of its (sampled) windows, each standing for ``weights[j]``.
    ``prefix`` (composite slides up to PREFIX_LIMIT ticks) counts the edges before each tick: it places
    every window's answer between two inserts (:func:`lookup_pattern`)."""

    queries: tuple[PeriodicQuery, ...]
    partial: str
    composite: int
    edges: int
    spans: tuple[tuple[np.ndarray, np.ndarray], ...]
    weights: tuple[float, ...]
    prefix: np.ndarray | None = None
    #: partials per composite slide that receive a slice of the engine's slicer (which cuts at every window
    #: start and end): all of them for Pairs and Cutty; for Panes the panes at a window start or end of the
    #: group's queries (the others are identity partials: inserted, nothing folded)
    filled: int = 0

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
    edges = count_in(terms, 0, composite)
    filled = f1([p for q in queries for p in progressions(q, "pairs")], composite) if partial == "panes" else edges
    return Shape(tuple(queries), partial, composite, edges, tuple((k, o) for k, o, _ in spans),
                 tuple(w for _, _, w in spans), prefix, filled)


def flatfat_lookups(n: np.ndarray) -> np.ndarray:
    """:func:`flatfat_lookup` over an array of ints >= 0 (0 for 0 and 1)."""
    n = np.maximum(n, 1).astype(np.float64)
    low = np.frexp(np.maximum(n - 1, 1))[1] - 1  # floor(log2(n - 1)), exact for ints < 2**53
    top = np.frexp(n)[1] - 1  # floor(log2 n)
    return np.where(n >= 2, low + (n - 1) / np.exp2(top), 0.0)


def flatfat_leaves(cap: int) -> int:
    """The leaves of ``mta.algorithms.flatfat.FlatFAT`` holding ``cap`` partials: the least power of two
    >= cap, at least its minimum capacity (16)."""
    return max(FlatFAT._MIN_CAPACITY, 1 << max(cap - 1, 0).bit_length())


@lru_cache(maxsize=4096)
def flatfat_cover(leaves: int, k: int, wrapped_only: bool = False) -> float:
    """Mean combines of ``FlatFAT.newest(k)`` over the ``leaves`` positions of the circular window: the
    nodes of the minimum cover of ``k`` leaves from each position (two covers when the range wraps past
    the last leaf), minus one. ``wrapped_only``: the non-wrapped ranges are free (the root answers them:
    ``FlatFAT.query`` of the whole window on a non-commutative monoid)."""
    lo = np.arange(leaves, dtype=np.int64)
    hi = lo + k
    nodes = _cover_nodes(lo, np.minimum(hi, leaves), leaves) + _cover_nodes(
        np.zeros_like(lo), np.maximum(hi - leaves, 0), leaves)
    cost = nodes - 1
    if wrapped_only:
        cost = np.where(hi > leaves, cost, 0)
    return float(cost.mean())


def _cover_nodes(lo: np.ndarray, hi: np.ndarray, leaves: int) -> np.ndarray:
    """``FlatFAT._cover``'s node count for the leaf ranges ``[lo, hi)`` (0 for empty ranges), vectorised."""
    lo, hi = lo + leaves, hi + leaves
    nodes = np.zeros_like(lo)
    while True:
        live = lo < hi
        if not live.any():
            return nodes
        odd = live & (lo & 1 == 1)
        nodes += odd
        lo = lo + odd
        odd = live & (hi & 1 == 1)
        nodes += odd
        hi = hi - odd
        lo >>= 1
        hi >>= 1


def lookup_pattern(sh: Shape) -> tuple[bytes, bytes] | None:
    """The lookups of one composite slide between its inserts, in the engine's order (by window end, then
    query): per insert (in time order) how many lookups follow it, and the closed partial counts looked up,
    as int64 bytes (hashable: :func:`flatfit_combines` is cached); None when the windows are sampled or the
    composite slide is too long for a prefix (:func:`window_spans`)."""
    if sh.prefix is None or any(w != 1 for w in sh.weights):
        return None
    prefix, composite, edges = sh.prefix, sh.composite, sh.edges
    ends = np.concatenate([(q.offset + q.range + q.slide * np.arange(len(ks), dtype=np.int64)) % composite
                           for q, (ks, _) in zip(sh.queries, sh.spans)])
    closed = np.concatenate([ks - o for ks, o in sh.spans])
    order = np.concatenate([np.full(len(ks), j) for j, (ks, _) in enumerate(sh.spans)])
    first = int(np.searchsorted(prefix, 1)) - 1  # the first edge of the composite slide
    # a window is asked once every partial starting before its end is in: after the insert of the last
    # one (ends in (edge k, edge k+1] follow insert k), in time order from the first edge
    at = (prefix[ends] - 1) % edges
    when = (ends - first - 1) % composite
    keep = closed > 0
    at, when, closed, order = at[keep], when[keep], closed[keep], order[keep]
    idx = np.lexsort((order, when))
    counts = np.bincount(at[idx], minlength=edges)
    return counts.astype(np.int64).tobytes(), closed[idx].astype(np.int64).tobytes()


@lru_cache(maxsize=4096)
def flatfit_combines(cap: int, counts: bytes, ranges: bytes) -> float:
    """Combines per composite slide of ``mta.algorithms.flatfit.FlatFIT`` (capacity ``cap``) inserting once
    per entry of ``counts``, each insert followed by that many lookups of ``ranges`` (:func:`lookup_pattern`):
    Alg. 1's pointer table replayed without values (a lookup of ``h`` hops costs ``h - 1`` combines and
    points the slots between its first and last hop at ``cur``), after a warm-up of a window, averaged over
    the laps of the next window (path compression's cost depends on the order of the lookups: no closed
    form)."""
    per_insert = np.frombuffer(counts, dtype=np.int64).tolist()
    asked = np.frombuffer(ranges, dtype=np.int64).tolist()
    edges = len(per_insert)
    laps = warm = -(-cap // edges)
    pointers = list(range(1, cap)) + [0]
    cur = cap - 1
    combines = 0
    for lap in range(warm + laps):
        if lap == warm:
            combines = 0
        k = 0
        for n in per_insert:
            prev = cur
            cur = prev + 1 if prev + 1 < cap else 0
            pointers[prev] = cur
            for r in asked[k:k + n]:
                hop = pointers[cur - r]  # a negative index wraps around, as the slot does
                if hop == cur:  # a single hop: no combine
                    continue
                nxt = pointers[hop]
                combines += 1
                while nxt != cur:  # lines 36-41: every visited slot but the last now points at cur
                    pointers[hop] = cur
                    hop = nxt
                    nxt = pointers[hop]
                    combines += 1
            k += n
    return combines / laps


def slideside_free(ranges: Sequence[int], *, invertible: bool) -> dict[int, float]:
    """Per range, the share of SlideSide's answers that cost no combine (phases uniform). Invertible: the
    range is this lap's prefix (``start == 0``), once per lap of ``max(ranges)`` inserts. Overlaid: the range
    equals a level's back part (``r == b``), once per period of each level of period ``>= r`` (a range of 1
    always)."""
    if invertible:
        return {r: 1 / max(ranges) for r in ranges}
    periods = {1 << (r.bit_length() - 1) for r in ranges}
    return {r: min(1.0, sum(1 / p for p in periods if p >= r)) for r in ranges}


#: Table 11 as printed ("table11") or our implementations counted ("counted", the default)
MODELS = ("counted", "table11")


def omegas(sh: Shape, finals: Sequence[str], *, invertible: bool, selection: bool = False,
           commutative: bool = True, ordered_ties: bool = False, model: str = "counted") -> dict[str, float]:
    """Estimated final-aggregation operations per edge of the group for each final technique (module
    docstring: ``model="counted"`` our implementations, ``model="table11"`` the dissertation's formulas as
    printed). SlickDeque takes its selection variant when the monoid is a selection monoid, invertible or
    not (as ``mta.algorithms.slickdeque`` does). FlatFAT reads a wrapped window's root only for a
    commutative monoid without ``ordered_ties`` (:class:`mta.monoid.Monoid`); every selection has them."""
    if model not in MODELS:
        raise ValueError(f"unknown cost model {model!r}; choose from {', '.join(MODELS)}")
    ks = np.concatenate([k for k, _ in sh.spans])
    opened = np.concatenate([o for _, o in sh.spans]).astype(np.int64)
    # answers per composite slide that each sampled window stands for
    w = np.repeat(np.array(sh.weights), [len(k) for k, _ in sh.spans])
    closed = ks - opened
    asked = closed[closed > 0]
    cap = int(asked.max()) if len(asked) else 1
    answers = float(w.sum())
    opens = float(w @ (opened * (closed > 0)))  # a window of the open partial alone needs no combine
    counted = model == "counted"
    out = {}
    for final in finals:
        if final == "panes":
            per_composite = float(w @ (ks - 1))
        elif final == "flatfat" and counted and cap <= FLATFAT_COVER_LIMIT:
            leaves = flatfat_leaves(cap)
            levels = leaves.bit_length() - 1
            # a full window slides: one leaf-to-root path when the partials fill the leaves, else two
            insert = levels if cap == leaves else 2 * levels
            whole = flatfat_cover(leaves, cap, True) if not commutative or selection or ordered_ties else 0.0
            lookups = {k: flatfat_cover(leaves, k) for k in np.unique(asked).tolist() if k < cap}
            per_k = np.array([lookups.get(k, whole) for k in asked.tolist()])
            per_composite = insert * sh.edges + float(w[closed > 0] @ per_k) + opens
        elif final == "flatfat":
            lookups = np.where(closed < cap, flatfat_lookups(closed), 0.0)
            per_composite = flatfat_lookup(cap) * sh.edges + float(w @ lookups) + opens
        elif final == "flatfit" and cap > flatfit.MAX_CAPACITY:
            per_composite = inf  # refused: it allocates for the range
        elif final == "flatfit" and counted:
            pattern = lookup_pattern(sh)
            if pattern is not None and 2 * -(-cap // sh.edges) * (sh.edges + len(asked)) > FLATFIT_REPLAY_LIMIT:
                pattern = None  # a replay too long (windows of many partials, few edges): the mean instead
            if pattern is None:  # sampled windows: about 2.3 per lookup (the counted mean, benchmarks/optimizer)
                per_composite = FLATFIT_PER_LOOKUP * float(w @ (closed > 0)) + opens
            else:
                per_composite = flatfit_combines(cap, *pattern) + opens
        elif final == "flatfit":
            per_composite = 3 * answers + opens
        elif final == "slideside" and counted:
            ranges = [int(k) for k in np.unique(asked)] or [1]
            free = slideside_free(ranges, invertible=invertible)
            per_answer = np.array([1 - free[k] for k in asked.tolist()])
            per_composite = (SlideSide.combines_per_insert(ranges, invertible=invertible) * sh.edges
                             + float(w[closed > 0] @ per_answer) + opens)
        elif final == "slideside":
            ranges = [int(k) for k in np.unique(asked)] or [1]
            per_composite = SlideSide.combines_per_insert(ranges, invertible=invertible) * sh.edges + answers + opens
        elif final == "slickdeque" and invertible and not selection:
            per_composite = 2.0 * max(1, len(np.unique(asked))) * sh.edges + opens  # ranges [1] when none
        elif final == "slickdeque" and counted:
            # Alg. 3 counts its dominance tests (a combine each): the pops plus the failing test; on
            # unordered values each partial is popped once (by a newer one, or it expires), and the deque
            # empties (no failing test) or the front expires with chance 1/cap each: 2 - 2/cap. Answers read.
            per_composite = (2 - 2 / cap) * sh.edges + opens
        elif final == "slickdeque":
            per_composite = slickdeque_noninv_insert(cap) * sh.edges + answers + opens
        else:
            raise ValueError(f"unknown final technique {final!r}; choose from {', '.join(FINALS)}")
        out[final] = per_composite / sh.edges
    return out


#: the most leaves :func:`flatfat_cover` counts over (arrays of the leaves): above, the closed-form estimate
FLATFAT_COVER_LIMIT = 1 << 20
#: FlatFIT's combines per lookup when the lookups are not replayed (the mean counted on random groups)
FLATFIT_PER_LOOKUP = 2.3
#: the most inserts + lookups :func:`flatfit_combines` replays for one estimate
FLATFIT_REPLAY_LIMIT = 200_000


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
               selection: bool = False, commutative: bool = True, ordered_ties: bool = False,
               partials: Sequence[str] = PARTIALS, model: str = "counted") -> tuple[Option, ...]:
    """For each partial technique of ``partials``, the final technique with the least ``E*Omega`` (the
    partial fixes ``E``), in the order of ``partials``; ties go to the earlier final of ``finals``. The
    plan picks one per group (:class:`mta.optimizer.weave.Pricer`)."""
    out = []
    seen: dict[tuple[Progression, ...], Option] = {}
    for partial in partials:
        edges = tuple(reduce(p for q in queries for p in progressions(q, partial)))
        same = seen.get(edges)
        if same is not None:  # the same edges (e.g. ranges multiple of the slides): the same windows and costs
            out.append(Option(replace(same.shape, partial=partial), same.final, same.omega))
            continue
        sh = shape(queries, partial)
        best = None
        for final, om in omegas(sh, finals, invertible=invertible, selection=selection, commutative=commutative,
                                ordered_ties=ordered_ties, model=model).items():
            if best is None or om < best.omega - 1e-12:
                best = Option(sh, final, om)
        assert best is not None
        out.append(seen.setdefault(edges, best))
    return tuple(out)


def allowed_partials(partials: Iterable[str] | None = None) -> tuple[str, ...]:
    """The partial techniques ``optimize`` may choose: PARTIALS, restricted to ``partials`` when given;
    ValueError for an unknown name or an empty restriction."""
    if isinstance(partials, str):
        raise TypeError("partials must be a sequence of names, e.g. ('cutty',), not a str")
    if partials is None:
        return PARTIALS
    wanted = tuple(partials)
    unknown = [t for t in wanted if t not in PARTIALS]
    if unknown:
        raise ValueError(f"unknown partial technique {', '.join(map(repr, unknown))}; choose from "
                         f"{', '.join(PARTIALS)}")
    if not wanted:
        raise ValueError(f"no partial technique left; choose from {', '.join(PARTIALS)}")
    return tuple(t for t in PARTIALS if t in wanted)


def slicer_edge_rate(queries: Iterable[PeriodicQuery]) -> float:
    """``E_U``: the engine's slices per tick. Its slicer cuts at every window start and end of every query,
    whatever the plan (``mta.stream.shared``): F1 of all the queries' Pairs edges."""
    queries = list(queries)
    composite = composite_slide(queries)
    return f1([p for q in queries for p in progressions(q, "pairs")], composite) / composite


def slices_per_tick(rate: float, slicer_rate: float) -> float:
    """Slices holding a tuple per tick: at most one per slicer edge, at most one per tuple."""
    return min(rate, slicer_rate)


def group_cost(opt: Option, method: str, rate: float, slicer_rate: float) -> float:
    """A group's operations per tick: ``rate + E*Omega`` (WeaveShare, Eq. 7.1: the group slices the stream
    itself) or ``(S - F) + E*Omega`` (TriWeave as the engine runs it: each of the ``S`` slices per tick is
    folded into the group's open partial by one combine, but the first slice of each of its ``F`` filled
    partials per tick; every partial, filled or identity, is inserted into the final aggregator)."""
    if method == "weaveshare":
        return rate + opt.final_cost
    slices = slices_per_tick(rate, slicer_rate)
    filled = min(opt.shape.filled / opt.shape.composite, slices)
    return slices - filled + opt.final_cost


def plan_cost(options: Sequence[Option], method: str, rate: float, slicer_rate: float | None = None) -> float:
    """Operations per tick of a plan: ``sum(rate + E_i*Omega_i)`` (WeaveShare, Eq. 7.1) or
    ``(rate - S) + sum((S - F_i) + E_i*Omega_i)`` (TriWeave, the engine's one slicer: a combine per tuple
    but the first of each of its ``S = min(rate, E_U)`` slices per tick; ``slicer_rate`` is ``E_U``,
    computed from the options' queries if not given)."""
    if method == "weaveshare":
        return sum(group_cost(o, method, rate, 0.0) for o in options)
    e_u = slicer_edge_rate(q for o in options for q in o.shape.queries) if slicer_rate is None else slicer_rate
    return rate - slices_per_tick(rate, e_u) + sum(group_cost(o, method, rate, e_u) for o in options)
