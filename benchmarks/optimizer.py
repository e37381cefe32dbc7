"""The sharing optimizer (issue 18): F1 against the bit set, plan generation time, greedy against exhaustive.

- ``f1``: the edges of one composite slide of n queries (dissertation ch. 5), by F1
  (:func:`mta.optimizer.f1.f1`) and by the bit set (:func:`mta.optimizer.f1.bitset_edges`,
  marking with C-speed slice assignment: the strongest bit set Python has), alternating
  within rounds in one process, the counts checked equal. Queries as in ch. 7's
  generator: slides uniform over the divisors of S_max in [S_min, S_max], ranges an
  overlap factor (1..O_max) times the slide, plus, for the "fragments" workload, a
  random fragment with probability 1/2 (Pairs: two shifted progressions per query).
  Eq. 5.7 as printed (every subset) is timed too while the reduced set is small.
- ``plans``: WeaveShare and TriWeave (greedy) plan generation time and estimated cost
  at 10..200 queries, beside the no-share and the one-group plans.
- ``greedy``: on random sets of 6 queries, how often the greedy plan is the exhaustive
  optimum, and by how much it misses otherwise.
- ``omega``: each technique's estimated final-aggregation operations per tick against
  the combines and inverts counted running ``mta.algorithms.MULTI_QUERY`` as the engine
  does (:func:`counted_final_ops`), Sum and Max, on random groups.

    python -m benchmarks.optimizer [--quick]
"""

from __future__ import annotations

import random
import time
from typing import Any

from benchmarks.common import Run, gc_paused, median, parser
from mta.algorithms import MULTI_QUERY
from mta.counting import CountingMonoid
from mta.monoid import Max, Monoid, Sum
from mta.optimizer import METHODS, PeriodicQuery, optimize
from mta.optimizer.cost import FINALS, MODELS, allowed_finals, omegas, shape
from mta.optimizer.f1 import bitset_edges, edge_terms, f1, f1_subsets, reduce
from mta.optimizer.partials import composite_slide, progressions
from mta.optimizer.weave import Pricer

FLAGS = dict(invertible=True, selection=False, commutative=True)


def workload(n: int, seed: int, *, s_max: int, s_min: int = 1, o_max: int = 10,
             fragments: float = 0.5) -> list[PeriodicQuery]:
    """n queries: slides uniform over the divisors of ``s_max`` in ``[s_min, s_max]``, ranges ``o * slide``
    (``o`` uniform in 1..o_max) plus, with probability ``fragments``, a fragment in ``1..slide-1``."""
    rnd = random.Random(seed)
    divisors = _divisors(s_max, s_min)
    out = []
    for i in range(n):
        s = rnd.choice(divisors)
        r = s * rnd.randint(1, o_max) + (rnd.randrange(1, s) if s > 1 and rnd.random() < fragments else 0)
        out.append(PeriodicQuery(f"q{i}", r, s))
    return out


def _divisors(n: int, low: int) -> list[int]:
    small = [d for d in range(1, int(n ** 0.5) + 1) if n % d == 0]
    return sorted(d for d in {*small, *(n // d for d in small)} if d >= low)


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    with gc_paused():
        t = time.perf_counter_ns()
        out = fn(*args)
        return out, (time.perf_counter_ns() - t) / 1e9


def counted_final_ops(queries: list[PeriodicQuery], partial: str, final: str, monoid: Monoid,
                      laps: int = 4) -> float:
    """The final aggregation of one group as the engine runs it (MQ-SPEC: a partial per edge into
    ``MULTI_QUERY[final]``, ``query(c)`` at each window end, plus the open partial for Cutty), with the
    combines and inverts counted per tick over whole composite slides spanning at least ``laps`` longest
    windows (the aggregators' laps), after a warm-up."""
    sh = shape(queries, partial)
    period = sh.composite
    progs = [p for q in queries for p in progressions(q, partial)]
    edge = [any(x % m == a for m, a in progs) for x in range(period)]
    ends: dict[int, list[tuple[int, bool]]] = {}
    for q in queries:
        for start in range(q.offset, q.offset + period, q.slide):
            end = start + q.range
            opened = not edge[end % period]
            closed = sum(edge[x % period] for x in range(start, end)) - opened
            ends.setdefault(end % period, []).append((closed, opened))
    ranges = sorted({c for v in ends.values() for c, _ in v if c}) or [1]  # the ranges the estimate assumes
    counting = CountingMonoid(monoid)
    agg = MULTI_QUERY[final](counting, ranges)
    rnd = random.Random(1)
    longest = max(q.range for q in queries)
    warm = (longest // period + 2) * period
    span = period * max(laps, -(-laps * longest // period))  # whole composite slides, >= laps longest windows
    before = 0
    for t in range(warm + span):
        if t == warm:
            before = counting.calls + counting.inverts
        for closed, opened in ends.get(t % period, ()):
            if closed and opened:
                counting.combine(agg.query(closed), monoid.lift(1))  # the open partial's value does not matter here
            elif closed:
                agg.query(closed)
        if edge[t % period]:
            agg.insert(monoid.lift(rnd.randint(0, 1000)))
    return (counting.calls + counting.inverts - before) / span


def omega_experiment(run: Run, groups: int) -> dict[str, Any]:
    """Estimated (both cost models) against counted final-aggregation operations per tick."""
    rnd = random.Random(5)
    slides = (1, 2, 3, 4, 6, 12)
    errors: dict[tuple[str, str], list[float]] = {}
    for _ in range(groups):
        queries = [PeriodicQuery(f"q{i}", rnd.choice(slides) * rnd.randint(1, 6) + rnd.choice([0, 0, 1, 2]),
                                 rnd.choice(slides)) for i in range(rnd.randint(1, 4))]
        for monoid in (Sum(), Max()):
            finals = allowed_finals(invertible=monoid.invertible, selection=monoid.selection)
            for partial in ("panes", "pairs", "cutty"):
                sh = shape(queries, partial)
                om = {model: omegas(sh, finals, invertible=monoid.invertible, selection=monoid.selection,
                                    commutative=monoid.commutative, ordered_ties=monoid.ordered_ties, model=model)
                      for model in MODELS}
                for final in finals:
                    counted = counted_final_ops(queries, partial, final, monoid)
                    if counted:
                        for model in MODELS:
                            errors.setdefault((model, type(monoid).__name__, final), []).append(
                                sh.edge_rate * om[model][final] / counted - 1)
    rows, results = [], []
    for (model, monoid, final), errs in sorted(errors.items()):
        entry = {"model": model, "monoid": monoid, "final": final, "cases": len(errs),
                 "mean_error": sum(errs) / len(errs), "max_abs_error": max(map(abs, errs))}
        results.append(entry)
        rows.append([model, monoid, final, len(errs), round(100 * entry["mean_error"], 9),
                     round(100 * entry["max_abs_error"], 9)])  # exact estimates print 0, not float noise
    run.table(f"Omega: estimated against counted final-aggregation operations per tick ({groups} random groups "
              "x 3 partial techniques, mta.algorithms.MULTI_QUERY with a CountingMonoid)",
              ["model", "monoid", "final", "cases", "mean error %", "max |error| %"], rows,
              note="error = estimated / counted - 1. model counted: mta.optimizer.cost's default, derived from "
                   "our implementations; table11: the dissertation's formulas as printed, which count what the "
                   "dissertation counts (Eq. 7.7's nQ comparisons and deque traversal are not combines).")
    return {"results": results}


def f1_experiment(run: Run, sizes: list[int], rounds: int, s_max: int, s_min: int) -> dict[str, Any]:
    rows, results = [], []
    for name, fragments in (("no fragments", 0.0), ("fragments", 0.5)):
        for n in sizes:
            queries = workload(n, 7 + n, s_max=s_max, s_min=s_min, fragments=fragments)
            progs = [p for q in queries for p in progressions(q, "pairs")]
            period = composite_slide(queries)
            reduced = reduce(progs)
            times: dict[str, list[float]] = {"f1": [], "bitset": [], "subsets": []}
            counts = set()
            for k in range(rounds):
                order = ["f1", "bitset"] if k % 2 == 0 else ["bitset", "f1"]
                if len(reduced) <= 14:
                    order.append("subsets")
                for who in order:
                    fn = {"f1": f1, "bitset": bitset_edges, "subsets": f1_subsets}[who]
                    arg = reduced if who == "subsets" else progs  # Eq. 5.7 on the prepared set (Sec. 5.3)
                    count, secs = _timed(fn, arg, period)
                    counts.add(count)
                    times[who].append(secs)
            if len(counts) != 1:
                raise AssertionError(f"F1 and the bit set disagree on {name}, n={n}: {counts}")
            f1_s, bit_s = median(times["f1"]), median(times["bitset"])
            sub_s = median(times["subsets"]) if times["subsets"] else None
            entry = {"workload": name, "queries": n, "composite": period, "progressions": len(set(progs)),
                     "reduced": len(reduced), "terms": len(edge_terms(reduced)), "edges": counts.pop(),
                     "f1_s": f1_s, "bitset_s": bit_s, "subsets_s": sub_s, "ratio": bit_s / f1_s, "checked": True}
            results.append(entry)
            rows.append([name, n, period, entry["reduced"], entry["terms"], entry["edges"], f1_s * 1e3, bit_s * 1e3,
                         None if sub_s is None else sub_s * 1e3, entry["ratio"]])
    run.table(f"F1 vs bit set: edges of one composite slide of n queries (S_max {s_max}, slides >= {s_min}, "
              f"median of {rounds})",
              ["workload", "queries", "composite", "progressions (reduced)", "F1 terms", "edges", "F1 ms",
               "bit set ms", "Eq. 5.7 subsets ms", "bit set / F1"], rows,
              note="F1 (mta.optimizer.f1.f1) over a long period with many progressions counts the unshifted ones by "
                   "divisor classes and the shifted ones (fragments) by the cliques of their overlap graph, each "
                   "clique's meeting with the unshifted union again by divisor classes; otherwise it merges equal "
                   "inclusion-exclusion terms. 'F1 terms' is the merged term count (edge_terms), for scale. Both get "
                   "the preparation of Sec. 5.3 (duplicates and contained progressions removed).")
    return {"results": results}


def plans_experiment(run: Run, sizes: list[int], s_max: int) -> dict[str, Any]:
    rows, results = [], []
    for n in sizes:
        queries = workload(n, 11 + n, s_max=s_max)
        for method in METHODS:
            plan, secs = _timed(lambda: optimize(queries, 1.0, method=method, search="greedy", **FLAGS))
            pricer = Pricer(queries, method, 1.0, FINALS, True)
            no_share = pricer.cost([frozenset([i]) for i in range(n)])
            one = pricer.cost([frozenset(range(n))])
            entry = {"queries": n, "method": method, "seconds": secs, "groups": len(plan.groups), "cost": plan.cost,
                     "no_share_cost": no_share, "one_group_cost": one}
            results.append(entry)
            rows.append([n, method, secs, len(plan.groups), plan.cost, no_share, one, no_share / plan.cost])
    run.table(f"Plan generation (greedy), rate 1 tuple/tick, slides from the divisors of {s_max}, "
              "ranges 1..10 slides (+ a fragment half the time)",
              ["queries", "method", "seconds", "groups", "est. ops/tick", "no-share ops/tick", "one-group ops/tick",
               "no-share / plan"], rows)
    return {"results": results}


def greedy_experiment(run: Run, sets: int) -> dict[str, Any]:
    rows, results = [], []
    for method in METHODS:
        hits, excess = 0, []
        for seed in range(sets):
            queries = workload(6, 1000 + seed, s_max=60, o_max=6)
            rate = (0.1, 1.0, 10.0)[seed % 3]
            best = optimize(queries, rate, method=method, search="exhaustive", **FLAGS).cost
            got = optimize(queries, rate, method=method, search="greedy", **FLAGS).cost
            hits += got <= best + 1e-9
            excess.append(got / best - 1)
        entry = {"method": method, "sets": sets, "optimal": hits, "max_excess": max(excess),
                 "mean_excess": sum(excess) / sets}
        results.append(entry)
        rows.append([method, sets, hits, 100 * entry["mean_excess"], 100 * entry["max_excess"]])
    run.table("Greedy against exhaustive search (6 queries, slides | 60, rates 0.1/1/10)",
              ["method", "query sets", "greedy optimal", "mean excess %", "max excess %"], rows)
    return {"results": results}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    args = p.parse_args()
    if args.quick:
        params = dict(f1_sizes=[10, 50], rounds=1, s_max=720720, s_min=10, plan_sizes=[10, 25], plan_s_max=360,
                      greedy_sets=4, omega_groups=2)
    else:
        params = dict(f1_sizes=[10, 25, 50, 100, 200, 500], rounds=3, s_max=122522400, s_min=100,
                      plan_sizes=[10, 25, 50, 100, 200], plan_s_max=360, greedy_sets=30, omega_groups=20)
    run = Run("optimizer", args, params)
    run.data["experiments"] = {
        "f1": run.experiment("f1", lambda: f1_experiment(run, params["f1_sizes"], params["rounds"],
                                                         params["s_max"], params["s_min"])),
        "plans": run.experiment("plans", lambda: plans_experiment(run, params["plan_sizes"], params["plan_s_max"])),
        "greedy": run.experiment("greedy", lambda: greedy_experiment(run, params["greedy_sets"])),
        "omega": run.experiment("omega", lambda: omega_experiment(run, params["omega_groups"])),
    }
    f1_rows = run.data["experiments"]["f1"]["results"]
    run.finish(["workload", "queries", "f1_s", "bitset_s", "ratio"],
               [[r["workload"], r["queries"], r["f1_s"], r["bitset_s"], r["ratio"]] for r in f1_rows])


if __name__ == "__main__":
    main()
