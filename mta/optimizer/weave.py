"""Grouping queries: WeaveShare and TriWeave (greedy pair merging) and the exhaustive search they approximate.

Both greedy optimizers (dissertation Sec. 2.4.2; Alg. 5 is their core) start from the
no-share plan (one group per query), merge the pair of groups whose merge lowers the
plan cost the most, and stop when no merge lowers it. WeaveShare prices a plan with
Eq. 7.1 (each group slices the stream itself); TriWeave with one shared slicer
(:func:`mta.optimizer.cost.plan_cost`). The DESIGN.md defects of the distributed
variants are avoided here: pairs are ``i < j`` (Alg. 5 lets ``j = i``), the loop runs
while merges help (Alg. 4 runs ``T + 1`` times), every candidate is priced afresh
(Alg. 6 never resets ``WeaveCost``).

TriWeave prices a plan as the Stream engine runs it: its slicer cuts at every window start
and end of every query whatever the plan (``E_U`` is fixed by the queries), so both plan
costs are a sum over groups plus a constant: each group takes its cheapest technique
(:class:`Pricer`, cached per group), and a merge changes only its pair's terms.
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

from mta.optimizer.cost import (METHODS, MODELS, Option, allowed_finals, allowed_partials, candidates, group_cost,
                                slicer_edge_rate, slices_per_tick)
from mta.optimizer.f1 import Progression, f1, lcm, reduce
from mta.optimizer.partials import PARTIALS, PeriodicQuery, composite_slide, progressions
from mta.optimizer.plan import Group, Plan

#: optimize() searches every grouping up to this many queries (Bell(6) = 203), greedily above
EXACT_LIMIT = 6
#: greedy() prices every pair of groups up to this many groups, else each group's PARTNERS best by edges added
PRUNE_ABOVE = 24
PARTNERS = 3
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

    Each group runs one of its :func:`mta.optimizer.cost.candidates` (one per partial technique). Both plan
    costs are sums over groups plus a constant: WeaveShare's Eq. 7.1, and TriWeave's as the engine runs it
    (its slicer cuts at every query's window starts and ends whatever the plan, so ``E_U`` is fixed by the
    queries): each group takes its cheapest candidate, cached per group."""

    def __init__(self, queries: Sequence[PeriodicQuery], method: str, rate: float, finals: Sequence[str],
                 invertible: bool, selection: bool = False, *, commutative: bool = True, ordered_ties: bool = False,
                 partials: Sequence[str] = PARTIALS, model: str = "counted", max_edges: int | None = None) -> None:
        self.queries, self.method, self.rate, self.finals = queries, method, rate, finals
        self.max_edges = max_edges
        self.invertible, self.selection, self.commutative = invertible, selection, commutative
        self.ordered_ties = ordered_ties
        self.partials, self.model = tuple(partials), model
        self.slicer_rate = slicer_edge_rate(queries) if method == "triweave" else None
        self._best: dict[frozenset[int], tuple[Option, float]] = {}

    def candidates(self, group: frozenset[int]) -> tuple[Option, ...]:
        members = [self.queries[i] for i in sorted(group)]
        return candidates(members, self.finals, invertible=self.invertible, selection=self.selection,
                          commutative=self.commutative, ordered_ties=self.ordered_ties, partials=self.partials,
                          model=self.model)

    def best(self, group: frozenset[int]) -> tuple[Option, float]:
        """The group's cheapest candidate and its cost per tick (ties: the earlier partial), cached."""
        out = self._best.get(group)
        if out is None and self.max_edges is not None and len(group) > 1:
            members = [self.queries[i] for i in group]
            composite = composite_slide(members)
            if sum(2 * (composite // q.slide) for q in members) > self.max_edges:  # starts and ends
                out = self._best[group] = (self.candidates(frozenset([min(group)]))[0], math.inf)
        if out is None:
            e_u = self.slicer_rate or 0.0
            out = min(((o, group_cost(o, self.method, self.rate, e_u)) for o in self.candidates(group)),
                      key=lambda oc: oc[1])
            self._best[group] = out
        return out

    def constant(self) -> float:
        """The plan cost outside the groups: TriWeave's slicer, a combine per tuple but the first of a slice."""
        if self.method == "weaveshare":
            return 0.0
        return self.rate - slices_per_tick(self.rate, self.slicer_rate or 0.0)

    def assign(self, groups: Sequence[frozenset[int]]) -> tuple[Assignment, float]:
        """Each group's cheapest option, and the plan cost."""
        chosen = {g: self.best(g)[0] for g in groups}
        return chosen, self.constant() + sum(self.best(g)[1] for g in groups)

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
    the costs here that is not always cheaper: a range-1 query alone needs no final aggregation.) The plan
    cost is a sum over groups, so a merge changes only its pair's terms: each candidate pair is priced once,
    and after a merge only the pairs with the merged group are priced. With more than PRUNE_ABOVE groups,
    a group's candidate partners are the PARTNERS groups whose merge adds the fewest edges (F1 of their
    window starts and ends, microseconds against a pricing's milliseconds): merging queries that share
    edges is what saves partials; the others are not priced. A merged group ranks its partners by the
    larger of its two parts' unions with them (a lower bound of its own, from the cache: no F1)."""
    same: dict[tuple[int, int, int], set[int]] = {}
    for i, q in enumerate(pricer.queries):
        same.setdefault((q.range, q.slide, q.offset), set()).add(i)
    groups = [frozenset(g) for g in same.values()]
    cost = {g: pricer.best(g)[1] for g in groups}
    prune = len(groups) > PRUNE_ABOVE
    edges = _EdgeRates(pricer.queries)

    def delta(a: frozenset[int], b: frozenset[int]) -> float:
        return pricer.best(a | b)[1] - cost[a] - cost[b]

    def partners(g: frozenset[int], others: Sequence[frozenset[int]],
                 parts: tuple[frozenset[int], frozenset[int]] | None = None) -> list[frozenset[int]]:
        if not prune:
            return list(others)
        if parts is None:
            union = {o: edges.union(g, o) for o in others}
        else:
            union = {o: edges.note(g, o, max(edges.union(parts[0], o), edges.union(parts[1], o))) for o in others}
        return sorted(others, key=lambda o: (union[o] - max(edges(g), edges(o)), union[o]))[:PARTNERS]

    deltas: dict[tuple[frozenset[int], frozenset[int]], float] = {}
    for i, a in enumerate(groups):
        for b in partners(a, groups[:i] + groups[i + 1:]):
            if (b, a) not in deltas:
                deltas[(a, b)] = delta(a, b)
    while deltas:
        a, b = min(deltas, key=deltas.__getitem__)
        if deltas[(a, b)] >= -_EPS:
            break
        merged = a | b
        cost[merged] = pricer.best(merged)[1]
        groups = [g for g in groups if g != a and g != b]
        deltas = {p: d for p, d in deltas.items() if a not in p and b not in p}
        for g in partners(merged, groups, (a, b)):
            deltas[(g, merged)] = delta(g, merged)
        groups.append(merged)
    return pricer.assign(groups)[0]


class _EdgeRates:
    """Slicer edges per tick of a set of queries (their window starts and ends, F1), cached per set with
    the set's reduced progressions, from which a union is counted (or noted: :meth:`note`)."""

    def __init__(self, queries: Sequence[PeriodicQuery]) -> None:
        self.queries = queries
        self._groups: dict[frozenset[int], tuple[float, list[Progression], int]] = {}
        self._unions: dict[frozenset[int], float] = {}

    def _entry(self, group: frozenset[int]) -> tuple[float, list[Progression], int]:
        out = self._groups.get(group)
        if out is None:
            progs = reduce(p for i in group for p in progressions(self.queries[i], "pairs"))
            composite = composite_slide([self.queries[i] for i in group])
            out = self._groups[group] = (f1(progs, composite) / composite, progs, composite)
        return out

    def __call__(self, group: frozenset[int]) -> float:
        return self._entry(group)[0]

    def union(self, a: frozenset[int], b: frozenset[int]) -> float:
        """The edge rate of ``a | b``, from the two groups' progressions."""
        key = a | b
        out = self._unions.get(key)
        if out is None:
            _, pa, ca = self._entry(a)
            _, pb, cb = self._entry(b)
            composite = lcm(ca, cb)
            out = self._unions[key] = f1(pa + pb, composite) / composite
        return out

    def note(self, a: frozenset[int], b: frozenset[int], rate: float) -> float:
        """Record ``rate`` as the union edge rate of ``a | b`` (a merged group's bound); returns it."""
        self._unions[a | b] = rate
        return rate


def optimize(queries: Sequence[PeriodicQuery], rate: float, *, invertible: bool, selection: bool,
             commutative: bool, ordered_ties: bool = False, method: str = "triweave",
             techniques: Sequence[str] | None = None,
             search: str = "auto", partials: Sequence[str] | None = None, model: str = "counted",
             max_edges: int | None = None) -> Plan:
    """Group ``queries`` and choose each group's partial (panes/pairs/cutty) and final technique, minimising the
    estimated operations per tick at ``rate`` tuples per tick.

    ``invertible``/``selection`` say which final techniques the monoid allows (SlickDeque needs one of them);
    ``commutative``: FlatFAT answers the whole window from its root only then, and not for a selection
    or ``ordered_ties`` (:class:`mta.monoid.Monoid`; else by a cover when it wraps: a tie keeps the older
    operand). ``techniques`` restricts the final techniques (e.g. ``("flatfit",)``), ``partials`` the partial
    techniques (e.g. ``("cutty",)``). ``search``: "exhaustive" (every grouping, at most BRUTE_LIMIT queries),
    "greedy" (the method's pair merging) or "auto" (exhaustive up to EXACT_LIMIT queries). ``model``: the
    cost model, "counted" (our implementations) or "table11" (:mod:`mta.optimizer.cost`). ``max_edges``:
    no group whose window starts and ends in one composite slide outnumber it (the engine's table bound)."""
    queries = _check_queries(queries)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
        raise ValueError(f"rate must be a positive number of tuples per tick, got {rate!r}")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if search not in ("auto", "exhaustive", "greedy"):
        raise ValueError(f"unknown search {search!r}; choose from auto, exhaustive, greedy")
    if model not in MODELS:
        raise ValueError(f"unknown cost model {model!r}; choose from {', '.join(MODELS)}")
    finals = allowed_finals(invertible=invertible, selection=selection, techniques=techniques)
    pricer = Pricer(queries, method, float(rate), finals, invertible, selection, commutative=commutative,
                    ordered_ties=ordered_ties,
                    partials=allowed_partials(partials), model=model, max_edges=max_edges)
    if search == "auto":
        search = "exhaustive" if len(queries) <= EXACT_LIMIT else "greedy"
    chosen = brute_force(pricer) if search == "exhaustive" else greedy(pricer)
    order = sorted(chosen, key=min)
    groups = tuple(
        Group(queries=tuple(q.name for q in o.shape.queries), partial=o.shape.partial, final=o.final,
              composite=o.shape.composite, edges=o.shape.edges, ranges=o.shape.ranges(),
              cost=pricer.best(g)[1], omega=o.omega)
        for g, o in ((g, chosen[g]) for g in order))
    return Plan(groups, method, float(rate), pricer.cost(order), search, pricer.slicer_rate)


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
