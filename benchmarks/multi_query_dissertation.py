"""The dissertation's FlatFIT and SlickDeque experiments in Python (issue #18): Figs 16-18 and 23-26.

Shein, "Incremental window aggregation" dissertation (``../shared/papers/
incremental-window-aggregation-dissertation.txt``), sections 3.4 and 4.4. A slide is
one ``insert`` of a partial and one ``answers()`` of every range: the single-query
environment has the one range ``n``, the max-multi-query environment every range
``1..n``. Windows n = 2^1 .. 2^k; values are random ints (exact for Sum, so every
competitor's answers are compared after each round); slide 1, no partial aggregation.

Every competitor of a window size runs in the same process, alternated within each
round (the order rotates from round to round; the shared VM's speed swings); the
median of the rounds is reported as slides per second, with ratios. Combines (and
inverts) per slide are counted on a twin over :class:`mta.counting.CountingMonoid`
(one FlatFIT period of ``n + 1`` slides in the single-query environment, three slides
in the max-multi one, up to n = ``--max-count``), so the counts cost the timed
structures nothing.

Experiments (``--exp``, default all):

* ``fig16``: single query, Max: FlatFIT against FlatFAT. Target: FlatFIT >= 1.5x
  FlatFAT at every n >= 2^10.
* ``fig17`` (Fig. 18 is its ratio column): max-multi, Max: FlatFIT against FlatFAT.
  Target: FlatFIT >= 5x FlatFAT at every n >= 2^10.
* ``fig23`` / ``fig24``: single query, Sum / Max; ``fig25`` / ``fig26``: max-multi,
  Sum / Max: SlickDeque against every other competitor that takes the monoid (FlatFIT,
  FlatFAT, a naive Panes fold, and the replicated single-query baselines ``soe``,
  ``two_stacks``, ``amta`` where ``MULTI_QUERY`` has them); the second best is the
  fastest of the others at each n. SlideSide (a later paper) runs beside them and is
  reported in columns of its own, not as a candidate for the second best. Target
  (Fig. 26): SlickDeque (Alg. 3) >= 2x the second best at every n >= 2^10. Panes and
  the replicated baselines are O(n^2) in the max-multi environment (time, or memory:
  one window per range) and run there up to ``--max-multi-quadratic`` only.
* ``both``: SlickDeque's two variants on one monoid that allows both (Last given an
  inverse): why a selection monoid goes to Alg. 3 even when it is invertible.

    python -m benchmarks.multi_query_dissertation            # all (k = 14; ~8 min)
    python -m benchmarks.multi_query_dissertation --exp fig26
    python -m benchmarks.multi_query_dissertation --quick    # smoke run (seconds)
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from typing import Any, Callable

from benchmarks import common
from benchmarks.common import now_ns, pow2, ratio
from mta.algorithms import MULTI_QUERY, MultiQueryAggregator
from mta.algorithms.slickdeque import SlickDequeInv, SlickDequeNonInv
from mta.counting import CountingMonoid
from mta.monoid import Last, Max, Monoid, Sum

NAME = "multi_query_dissertation"
EXPERIMENTS = ["fig16", "fig17", "fig23", "fig24", "fig25", "fig26", "both"]
CSV_HEADERS = ["experiment", "n", "competitor", "slides_per_s", "ops_per_slide"]
#: the replicated single-query baselines, measured where registered and allowed
REPLICATED = ("soe", "two_stacks", "amta")
#: the competitors whose max-multi cost grows as n^2 (capped by --max-multi-quadratic)
QUADRATIC = ("panes", *REPLICATED)
#: the competitors whose cost per slide depends on the lookups before (see warm_up)
HISTORY = ("flatfit",)


class InvertibleLast(Last):
    """Last with an inverse (the newest of a total is the total): a selection monoid
    that is invertible too, so SlickDeque could run either algorithm on it."""

    invertible = True

    def invert(self, total: Any, front: Any) -> Any:
        return total


Factory = Callable[[Monoid, Any], MultiQueryAggregator]


def competitors(names: list[str], monoid: Monoid) -> dict[str, Factory]:
    """The named algorithms of ``MULTI_QUERY`` that take ``monoid``."""
    out: dict[str, Factory] = {}
    for name in names:
        cls = MULTI_QUERY.get(name)
        if cls is None:
            continue
        try:
            cls.check_monoid(monoid)
        except TypeError:
            continue
        out[name] = cls
    return out


# --------------------------------------------------------------------------- measurement

def measure(factories: dict[str, Factory], monoid: Monoid, n: int, multi: bool, args: Any) -> dict[str, Any]:
    """Slides per second (median of the rounds) and operations per slide of each competitor."""
    ranges = range(1, n + 1) if multi else (n,)
    # single query: whole FlatFIT periods of n + 1 slides per round
    steps = max(2, args.multi_queries // n) if multi else (n + 1) * math.ceil(args.single_steps / (n + 1))
    rng = random.Random(n)
    values = [rng.randint(0, 10 ** 6) for _ in range(2 * n + 1 + args.rounds * steps)]
    aggs = {name: make(monoid, ranges) for name, make in factories.items()}
    for name, agg in aggs.items():
        warm_up(agg, name, values, n)
    times: dict[str, list[int]] = {name: [] for name in aggs}
    names = list(aggs)
    offset = 2 * n + 1
    for rnd in range(args.rounds):
        batch = values[offset:offset + steps]
        offset += steps
        for name in names[rnd % len(names):] + names[:rnd % len(names)]:
            insert, answers = aggs[name].insert, aggs[name].answers
            start = now_ns()
            for x in batch:
                insert(x)
                answers()
            times[name].append(now_ns() - start)
        expected = None
        for name, agg in aggs.items():  # every competitor has seen the same partials
            got = agg.answers()
            if expected is None:
                expected = got
            elif got != expected:
                raise AssertionError(f"{name} disagrees with {names[0]} at n = {n}")
    return {name: {"slides_per_s": steps / (statistics.median(times[name]) / 1e9),
                   "ops_per_slide": count_ops(make, name, monoid, ranges, values, n, multi, args)}
            for name, make in factories.items()}


def warm_up(agg: MultiQueryAggregator, name: str, values: list[int], n: int) -> None:
    """Fill the window (n inserts), then n + 1 slides, answered only by the competitors
    whose cost depends on the lookups before: FlatFIT's pointers reach their steady state
    (about 1.5 combines per range with every range asked) after n slides. The others'
    costs depend on the inserts alone (and a max-multi slide costs FlatFAT 0.1 s at n = 2^14)."""
    insert, answers = agg.insert, agg.answers
    for x in values[:n]:
        insert(x)
    answer = name in HISTORY
    for x in values[n:2 * n + 1]:
        insert(x)
        if answer:
            answers()


def count_ops(make: Factory, name: str, monoid: Monoid, ranges: Any, values: list[int], n: int,
              multi: bool, args: Any) -> float | None:
    """Combines + inverts per slide on a counting twin, after the same warm-up as the timed
    structure: over n + 1 slides in the single-query environment (a FlatFIT period, a
    TwoStacks flip), three slides for Panes (n - 1 each) and in the max-multi one; None in
    max-multi beyond ``--max-count`` (the counting wrapper's Python call on every combine
    of a FlatFIT warm-up is n^2 calls)."""
    if multi and n > args.max_count:
        return None
    counted = CountingMonoid(monoid)
    agg = make(counted, ranges)
    warm_up(agg, name, values, n)
    counted.calls = counted.inverts = 0
    slides = values[2 * n + 1:2 * n + 1 + (3 if multi or name == "panes" else n + 1)]
    for x in slides:
        agg.insert(x)
        agg.answers()
    return (counted.calls + counted.inverts) / len(slides)


def sizes(args: Any) -> list[int]:
    return [2 ** k for k in range(1, args.k + 1)]


# --------------------------------------------------------------------------- experiments

def flatfit_vs_flatfat(run: common.Run, args: Any, exp: str) -> dict[str, Any]:
    """Figs 16-18: FlatFIT against FlatFAT on Max."""
    multi = exp == "fig17"
    monoid = Max()
    rows, results, csv = [], [], []
    for n in sizes(args):
        res = measure(competitors(["flatfit", "flatfat"], monoid), monoid, n, multi, args)
        r = ratio(res["flatfit"]["slides_per_s"], res["flatfat"]["slides_per_s"])
        results.append({"n": n, "competitors": res, "ratio": r})
        rows.append([pow2(n), res["flatfit"]["slides_per_s"], res["flatfat"]["slides_per_s"], r,
                     res["flatfit"]["ops_per_slide"], res["flatfat"]["ops_per_slide"]])
        csv += [[exp, n, name, c["slides_per_s"], c["ops_per_slide"]] for name, c in res.items()]
    env = "max-multi query (ranges 1..n)" if multi else "single query (range n)"
    goal = 5.0 if multi else 1.5
    big = [e["ratio"] for e in results if e["n"] >= 2 ** 10]
    targets = [{"target": f"FlatFIT >= {goal}x FlatFAT at every n >= 2^10",
                "measured": min(big) if big else None, "met": min(big) >= goal if big else None}]
    _plot(run, args, exp, results, f"{exp}: FlatFIT vs FlatFAT, {env}, Max")
    if multi and not args.no_plot:  # Fig. 18: the ratio
        common.plot_lines(run.path("_fig18.png"), {"FlatFIT / FlatFAT": ([e["n"] for e in results],
                                                                          [e["ratio"] for e in results])},
                          title="fig18: FlatFIT / FlatFAT, max-multi query, Max", xlabel="window n (partials)",
                          ylabel="throughput ratio", logy=False, hlines={"target 5x": 5.0})
    run.table(f"{exp}: FlatFIT vs FlatFAT, {env}, Max",
              ["n", "FlatFIT slides/s", "FlatFAT slides/s", "FlatFIT / FlatFAT", "FlatFIT ops/slide",
               "FlatFAT ops/slide"], rows,
              note=_targets_note(targets))
    return {"environment": env, "monoid": "Max", "results": results, "targets": targets, "csv": csv}


def slickdeque_vs_second_best(run: common.Run, args: Any, exp: str) -> dict[str, Any]:
    """Figs 23-26: SlickDeque against the best of the dissertation's others (SlideSide,
    which came later, is measured beside them and reported apart)."""
    multi = exp in ("fig25", "fig26")
    monoid = Sum() if exp in ("fig23", "fig25") else Max()
    names = ["slickdeque", "flatfit", "flatfat", "panes", *REPLICATED, "slideside"]
    rows, results, csv = [], [], []
    for n in sizes(args):
        chosen = [m for m in names if not (multi and m in QUADRATIC and n > args.max_multi_quadratic)]
        res = measure(competitors(chosen, monoid), monoid, n, multi, args)
        others = {k: v for k, v in res.items() if k not in ("slickdeque", "slideside")}
        second = max(others, key=lambda k: others[k]["slides_per_s"])
        mine = res["slickdeque"]["slides_per_s"]
        r = ratio(mine, others[second]["slides_per_s"])
        slideside = res.get("slideside", {}).get("slides_per_s")
        results.append({"n": n, "competitors": res, "second_best": second, "ratio": r,
                        "ratio_slideside": ratio(mine, slideside)})
        rows.append([pow2(n), mine, second, others[second]["slides_per_s"], r,
                     res["slickdeque"]["ops_per_slide"], others[second]["ops_per_slide"],
                     ", ".join(f"{k} {common.num(v['slides_per_s'])}" for k, v in others.items() if k != second),
                     slideside, ratio(mine, slideside)])
        csv += [[exp, n, name, c["slides_per_s"], c["ops_per_slide"]] for name, c in res.items()]
    env = "max-multi query (ranges 1..n)" if multi else "single query (range n)"
    variant = "Alg. 2 (inv)" if monoid.invertible and not monoid.selection else "Alg. 3 (non-inv)"
    targets = []
    if exp == "fig26":
        big = [e["ratio"] for e in results if e["n"] >= 2 ** 10]
        targets.append({"target": "SlickDeque >= 2x the second best at every n >= 2^10",
                        "measured": min(big) if big else None, "met": min(big) >= 2 if big else None})
    _plot(run, args, exp, results, f"{exp}: SlickDeque {variant}, {env}, {type(monoid).__name__}")
    run.table(f"{exp}: SlickDeque {variant} vs the second best, {env}, {type(monoid).__name__}",
              ["n", "SlickDeque slides/s", "second best", "its slides/s", "SlickDeque / second",
               "SlickDeque ops/slide", "second's ops/slide", "the others (slides/s)", "SlideSide slides/s",
               "SlickDeque / SlideSide"], rows,
              note=_targets_note(targets))
    return {"environment": env, "monoid": type(monoid).__name__, "variant": variant, "results": results,
            "targets": targets, "csv": csv}


def both(run: common.Run, args: Any, exp: str) -> dict[str, Any]:
    """SlickDeque Alg. 2 against Alg. 3 on a monoid that allows both."""
    monoid = InvertibleLast()
    factories: dict[str, Factory] = {"alg2_inv": SlickDequeInv, "alg3_non_inv": SlickDequeNonInv}
    rows, results, csv = [], [], []
    for n in sorted({2 ** min(6, args.k), 2 ** min(10, args.k)}):
        for multi in (False, True):
            res = measure(factories, monoid, n, multi, args)
            r = ratio(res["alg3_non_inv"]["slides_per_s"], res["alg2_inv"]["slides_per_s"])
            env = "max-multi" if multi else "single"
            results.append({"n": n, "environment": env, "competitors": res, "ratio": r})
            rows.append([pow2(n), env, res["alg2_inv"]["slides_per_s"], res["alg3_non_inv"]["slides_per_s"], r,
                         res["alg2_inv"]["ops_per_slide"], res["alg3_non_inv"]["ops_per_slide"]])
            csv += [[exp, n, f"{name} ({env})", c["slides_per_s"], c["ops_per_slide"]] for name, c in res.items()]
    run.table("both: SlickDeque Alg. 2 vs Alg. 3 on Last given an inverse",
              ["n", "environment", "Alg. 2 slides/s", "Alg. 3 slides/s", "Alg. 3 / Alg. 2", "Alg. 2 ops/slide",
               "Alg. 3 ops/slide"], rows)
    return {"monoid": "Last with invert(total, front) = total", "results": results, "csv": csv}


def _plot(run: common.Run, args: Any, exp: str, results: list[dict[str, Any]], title: str) -> None:
    """Slides per second against n, one line per competitor (NAME_figNN.png)."""
    if args.no_plot:
        return
    names = list(dict.fromkeys(name for e in results for name in e["competitors"]))
    series = {name: ([e["n"] for e in results if name in e["competitors"]],
                     [e["competitors"][name]["slides_per_s"] for e in results if name in e["competitors"]])
              for name in names}
    common.plot_lines(run.path(f"_{exp}.png"), series, title=title, xlabel="window n (partials)",
                      ylabel="slides per second")


def _targets_note(targets: list[dict[str, Any]]) -> str:
    return "\n".join(f"Target: {t['target']}: not measured (no such n in this run)." if t["measured"] is None
                     else f"Target: {t['target']}: measured {common.num(t['measured'])}x (the smallest ratio), "
                          f"{'met' if t['met'] else 'NOT met'}." for t in targets)


RUNS: dict[str, Callable[[common.Run, Any, str], dict[str, Any]]] = {
    "fig16": flatfit_vs_flatfat, "fig17": flatfit_vs_flatfat, "fig23": slickdeque_vs_second_best,
    "fig24": slickdeque_vs_second_best, "fig25": slickdeque_vs_second_best, "fig26": slickdeque_vs_second_best,
    "both": both}


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--exp", choices=EXPERIMENTS + ["all"], default="all")
    p.add_argument("--k", type=int, default=None, help="largest window 2^k (default 14, quick 6)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per competitor (default 5, quick 2)")
    p.add_argument("--single-steps", type=int, default=None,
                   help="slides per timed round, single query (rounded up to whole periods of n + 1; "
                        "default 20000, quick 300)")
    p.add_argument("--multi-queries", type=int, default=None,
                   help="queries answered per timed round, max-multi (default 2^16, quick 2^8; at least 2 slides)")
    p.add_argument("--max-count", type=common.power_of_two, default=2 ** 12,
                   help="largest n whose max-multi operations are counted")
    p.add_argument("--max-multi-quadratic", type=common.power_of_two, default=None,
                   help="largest n for Panes and the replicated baselines in max-multi (default 2^10, quick 2^4)")
    args = p.parse_args(argv)
    quick = args.quick
    args.k = args.k or (6 if quick else 14)
    args.rounds = args.rounds or (2 if quick else 5)
    args.single_steps = args.single_steps or (300 if quick else 20000)
    args.multi_queries = args.multi_queries or (2 ** 8 if quick else 2 ** 16)
    args.max_multi_quadratic = args.max_multi_quadratic or (2 ** 4 if quick else 2 ** 10)
    exps = EXPERIMENTS if args.exp == "all" else [args.exp]
    run = common.Run(NAME, args, {"experiments": exps, "k": args.k, "rounds": args.rounds,
                                  "single_steps": args.single_steps, "multi_queries": args.multi_queries,
                                  "max_multi_quadratic": args.max_multi_quadratic, "max_count": args.max_count,
                                  "multi_query": sorted(MULTI_QUERY)})
    done: dict[str, Any] = {}
    for exp in exps:
        with common.gc_paused():
            done[exp] = run.experiment(exp, lambda: RUNS[exp](run, args, exp))
    experiments = run.keep_experiments(done, EXPERIMENTS)
    run.finish(CSV_HEADERS, [row for e in experiments.values() for row in e["csv"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
