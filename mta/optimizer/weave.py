"""Grouping queries: WeaveShare and TriWeave (greedy pair merging) and the exhaustive search they approximate.

Both greedy optimizers (dissertation Sec. 2.4.2; Alg. 5 is their core) start from the
no-share plan (one group per query), merge the pair of groups whose merge lowers the
plan cost the most, and stop when no merge lowers it. WeaveShare prices a plan with
Eq. 7.1 (each group slices the stream itself); TriWeave with one shared slicer
(:func:`mta.optimizer.cost.plan_cost`). The DESIGN.md defects of the distributed
variants are avoided here: pairs are ``i < j`` (Alg. 5 lets ``j = i``), the loop runs
while merges help (Alg. 4 runs ``T + 1`` times), every candidate is priced afresh
(Alg. 6 never resets ``WeaveCost``).

TriWeave's plan cost is not a sum over groups (the slicer's ``E_U`` is the union of every
group's edges), so candidate merges are ranked by the change of the group terms with
``E_U`` held fixed, and the best ``RANKED_PAIRS`` of them (all of them while there are at
most ``EXACT_PAIRS``) are priced exactly; the merge that lowers the exact cost most is
taken. Each group's technique is chosen by :class:`Pricer`.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from mta.optimizer.cost import METHODS, Option, allowed_finals, candidates, group_cost, plan_cost, slicer_edge_rate
from mta.optimizer.partials import PeriodicQuery
from mta.optimizer.plan import Group, Plan

#: optimize() searches every grouping up to this many queries (Bell(6) = 203), greedily above
EXACT_LIMIT = 6
#: TriWeave prices every candidate merge exactly while there are at most this many, else the best ranked
EXACT_PAIRS = 120
RANKED_PAIRS = 8
#: brute_force() refuses more queries than this (Bell(10) = 115975 groupings)
BRUTE_LIMIT = 10
_EPS = 1e-9


def set_partitions(n: int) -> Iterator[list[list[int]]]:
    """Every partition of ``range(n)`` into non-empty blocks (restricted growth strings), each once."""
    if n == 0:
        yield []
        return
    for part in set_partitions(n - 1):
        for block in part:
            block.append(n - 1)
            yield [list(b) for b in part]
            block.pop()
        yield [list(b) for b in part] + [[n - 1]]


Assignment = dict[frozenset[int], Option]


class Pricer:
    """Prices groupings of ``queries`` (lists of frozensets of their indices) by ``method``'s plan cost.

    Each group runs one of its :func:`mta.optimizer.cost.candidates` (one per partial technique). WeaveShare's
    cost is a sum over groups, so each group takes its cheapest. TriWeave's slicer cuts at the union of the
    groups' edges (``E_U``), so a group's choice moves every group's folding cost: the choice starts from
    each group's least ``E*Omega - E`` (``E_U`` held fixed) and then changes one group at a time while the
    exact plan cost drops (coordinate descent; a local optimum over the 3^m assignments)."""

    def __init__(self, queries: Sequence[PeriodicQuery], method: str, rate: float, finals: Sequence[str],
                 invertible: bool, selection: bool = False) -> None:
        self.queries, self.method, self.rate, self.finals = queries, method, rate, finals
        self.invertible, self.selection = invertible, selection
        self._candidates: dict[frozenset[int], tuple[Option, ...]] = {}
        self._slicer: dict[frozenset[tuple[frozenset[int], str]], float] = {}

    def candidates(self, group: frozenset[int]) -> tuple[Option, ...]:
        out = self._candidates.get(group)
        if out is None:
            members = [self.queries[i] for i in sorted(group)]
            out = self._candidates[group] = candidates(members, self.finals, invertible=self.invertible,
                                                       selection=self.selection)
        return out

    def separable(self, opt: Option) -> float:
        """A group's cost with the slicer's ``E_U`` left out (all of it for WeaveShare)."""
        if self.method == "weaveshare":
            return self.rate + opt.final_cost
        return opt.final_cost - opt.shape.edge_rate

    def first(self, group: frozenset[int]) -> Option:
        """The group's candidate with the least separable cost (ties: the earlier partial)."""
        return min(self.candidates(group), key=self.separable)

    def slicer_rate(self, assign: Assignment) -> float:
        key = frozenset((g, o.shape.partial) for g, o in assign.items())
        e_u = self._slicer.get(key)
        if e_u is None:
            e_u = self._slicer[key] = slicer_edge_rate(assign.values())
        return e_u

    def plan_cost(self, assign: Assignment) -> float:
        e_u = self.slicer_rate(assign) if self.method == "triweave" else None
        return plan_cost(list(assign.values()), self.method, self.rate, e_u)

    def assign(self, groups: Sequence[frozenset[int]], start: Assignment | None = None,
               free: Sequence[frozenset[int]] | None = None) -> tuple[Assignment, float]:
        """The groups' options and the plan cost. WeaveShare: each group's :meth:`first`. TriWeave: from
        ``start`` (completed by :meth:`first`), one group of ``free`` (default: all) at a time changes its
        option while the plan cost drops; without ``start``, the better of two descents, from every group's
        :meth:`first` (fine partials: ``E_U`` held fixed rewards them) and from every group's least
        ``E*Omega`` (coarse partials: ``E_U`` shrinks with them)."""
        if self.method == "weaveshare":
            chosen = {g: self.first(g) for g in groups}
            return chosen, self.plan_cost(chosen)
        if start is None:
            coarse = {g: min(self.candidates(g), key=lambda o: o.final_cost) for g in groups}
            return min((self.assign(groups, {}, free), self.assign(groups, coarse, free)), key=lambda ac: ac[1])
        chosen = {g: start.get(g) or self.first(g) for g in groups}
        cost = self.plan_cost(chosen)
        improved = True
        while improved:
            improved = False
            for g in (groups if free is None else free):
                for opt in self.candidates(g):
                    if opt is chosen[g]:
                        continue
                    trial = {**chosen, g: opt}
                    c = self.plan_cost(trial)
                    if c < cost - _EPS:
                        chosen, cost, improved = trial, c, True
        return chosen, cost

    def cost(self, groups: Sequence[frozenset[int]]) -> float:
        return self.assign(groups)[1]


def brute_force(pricer: Pricer) -> Assignment:
    """The cheapest grouping of all set partitions (ties: the first enumerated)."""
    n = len(pricer.queries)
    if n > BRUTE_LIMIT:
        raise ValueError(f"brute force over {n} queries: at most {BRUTE_LIMIT} (the groupings grow as Bell(n))")
    best, best_cost = None, None
    for part in set_partitions(n):
        chosen, c = pricer.assign([frozenset(b) for b in part])
        if best_cost is None or c < best_cost - _EPS:
            best, best_cost = chosen, c
    assert best is not None
    return best


def greedy(pricer: Pricer) -> Assignment:
    """WeaveShare / TriWeave: merge the pair of groups that lowers the plan cost most, while one does.

    The start is the no-share plan with equal queries (range, slide and offset) already together: their
    windows are the same, sharing costs nothing. (Sec. 6.5.3's Note also merges equal slides first; with
    Table 11's costs that is not always cheaper: a range-1 query alone needs no final aggregation.)"""
    same: dict[tuple[int, int, int], set[int]] = {}
    for i, q in enumerate(pricer.queries):
        same.setdefault((q.range, q.slide, q.offset), set()).add(i)
    groups = [frozenset(g) for g in same.values()]
    chosen, current = pricer.assign(groups)
    triweave = pricer.method == "triweave"
    # TriWeave: a merge also drops one group's E_U term (the slicer's slices that group folded)
    e_u = pricer.slicer_rate(chosen) if triweave else 0.0
    sep = pricer.separable

    def delta(a: frozenset[int], b: frozenset[int]) -> float:
        return sep(pricer.first(a | b)) - sep(chosen[a]) - sep(chosen[b]) - e_u

    deltas = {(a, b): delta(a, b) for i, a in enumerate(groups) for b in groups[i + 1:]}
    while deltas:
        if triweave:
            # the ranking holds E_U fixed; price the best-ranked merges exactly (all of them while few)
            ranked = sorted(deltas, key=deltas.__getitem__)
            best = None
            for a, b in (ranked if len(ranked) <= EXACT_PAIRS else ranked[:RANKED_PAIRS]):
                rest = {g: o for g, o in chosen.items() if g != a and g != b}
                trial, cost = pricer.assign([*rest, a | b], start=rest, free=[a | b])
                if cost < current - _EPS and (best is None or cost < best[2]):
                    best = ((a, b), trial, cost)
            if best is None:
                break
            (a, b), chosen, current = best
            e_u = pricer.slicer_rate(chosen)
        else:
            a, b = min(deltas, key=deltas.__getitem__)
            if deltas[(a, b)] >= -_EPS:
                break
            chosen = {g: o for g, o in chosen.items() if g != a and g != b}
            chosen[a | b] = pricer.first(a | b)
        groups = [g for g in groups if g != a and g != b] + [a | b]
        deltas = {p: d for p, d in deltas.items() if a not in p and b not in p}
        for g in groups[:-1]:
            deltas[(g, a | b)] = delta(g, a | b)
    return min((pricer.assign(groups, start=chosen), pricer.assign(groups)), key=lambda ac: ac[1])[0]


def optimize(queries: Sequence[PeriodicQuery], rate: float, *, invertible: bool, selection: bool,
             commutative: bool, method: str = "triweave", techniques: Sequence[str] | None = None,
             search: str = "auto") -> Plan:
    """Group ``queries`` and choose each group's partial (panes/pairs/cutty) and final technique, minimising the
    estimated operations per tick at ``rate`` tuples per tick.

    ``invertible``/``selection`` say which final techniques the monoid allows (SlickDeque needs one of them);
    ``commutative`` is accepted for the record: every technique here combines in stream order.
    ``techniques`` restricts the final techniques (e.g. ``("flatfit",)``). ``search``: "exhaustive" (every
    grouping, at most BRUTE_LIMIT queries), "greedy" (the method's pair merging) or "auto" (exhaustive up to
    EXACT_LIMIT queries)."""
    del commutative  # no technique here needs it (mta.algorithms: SlideSide, FlatFAT, FlatFIT keep order)
    queries = _check_queries(queries)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
        raise ValueError(f"rate must be a positive number of tuples per tick, got {rate!r}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if search not in ("auto", "exhaustive", "greedy"):
        raise ValueError(f"unknown search {search!r}; choose from auto, exhaustive, greedy")
    finals = allowed_finals(invertible=invertible, selection=selection, techniques=techniques)
    pricer = Pricer(queries, method, float(rate), finals, invertible, selection)
    if search == "auto":
        search = "exhaustive" if len(queries) <= EXACT_LIMIT else "greedy"
    chosen = brute_force(pricer) if search == "exhaustive" else greedy(pricer)
    options = [chosen[g] for g in sorted(chosen, key=min)]
    e_u = pricer.slicer_rate(chosen) if method == "triweave" else None
    groups = tuple(
        Group(queries=tuple(q.name for q in o.shape.queries), partial=o.shape.partial, final=o.final,
              composite=o.shape.composite, edges=o.shape.edges, ranges=o.shape.ranges(),
              cost=group_cost(o, method, float(rate), e_u or 0.0), omega=o.omega)
        for o in options)
    return Plan(groups, method, float(rate), pricer.plan_cost(chosen), search, e_u)


def _check_queries(queries: Sequence[PeriodicQuery]) -> list[PeriodicQuery]:
    if isinstance(queries, PeriodicQuery) or not hasattr(queries, "__iter__"):
        raise TypeError("queries must be a sequence of PeriodicQuery")
    out = list(queries)
    if not out:
        raise ValueError("optimize needs at least one query")
    seen: set[str] = set()
    for k, q in enumerate(out):
        if not isinstance(q, PeriodicQuery):
            raise TypeError(f"queries[{k}] must be a PeriodicQuery, got {type(q).__name__}")
        if q.name in seen:
            raise ValueError(f"two queries are named {q.name!r}")
        seen.add(q.name)
    return out
