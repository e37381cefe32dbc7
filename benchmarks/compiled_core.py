"""Issue 20: the typed (compiled) cores against the object algorithms, river and the per-event loop.

Four cells, each in one process; within a round every competitor runs once, the order
rotated every round; the tables give the median over rounds, absolute (ns per step or
event, steps per second) and as ratios. Values are halves (``k + 0.5``, k < 1000,
scrambled), so that every sum is exact in doubles and every competitor's result must be
equal (river's Mean, computed incrementally, within 1e-9); results are compared after
every round and recorded as ``equal``.

1. **Bare steps** ``insert(x); evict(); query()`` at the algorithm level on a full window
   of n (2^20; quick 2^12): for every typed core in ``mta.algorithms.TYPED_ALGORITHMS``,
   the core as imported (compiled when built), its pure-Python twin (the same source
   interpreted, ``mta._extensions.load_pure``) and the object algorithm of the same name,
   for Sum over floats, Sum over ints and Mean over floats. A run is n steps, a
   whole cycle (amortized work such as TwoStacks' flip counted once). Beside them, the
   C++ figures the issue quotes (IBM's sliding-window-aggregators on this machine; not
   re-measured here).
2. **Per event** ``Window.insert(t, x)`` + ``Window.query()``, ``MaxSize(n)`` for n = 1000
   and 2^16, Sum, Mean and Max, each typed core's algorithm with the typed core
   (``typed.USE`` True) and the object path (False), against river's
   ``utils.Rolling(stats.Sum | stats.Mean, window_size=n)`` and ``stats.RollingMax(n)``,
   each ``update(x)`` + ``get()``.
3. **Batches** ``Window.insert_many(timestamps, values)`` from numpy arrays, 1,000 a
   batch, Sum, against the per-event loop ``insert(t, x)`` (from lists) of the same kind
   of window: ``MaxSize(n)`` and ``TimeRange(n)`` (the issue's target), on the typed core
   and on the object path, for every typed core's algorithm.
4. **Memory**: tracemalloc (every allocation through Python's allocators: objects, lists
   and the typed cores' ``array.array`` columns) of a ``Window(Sum(), MaxSize(n))`` of
   n = 2^20 floats (quick 2^12), typed core against object path: after the fill, and
   after n/4 more updates (the window slides: evictions, TwoStacks' flip). The values are
   made while tracing, so the object path's float objects count.
5. **Monoids** (more monoids): per event as in 2, ``MaxSize(n)`` at the larger size, for
   MinCount, MaxCount, First, Last, Variance, StdDev, ArgMin and ArgMax (Mean beside them), on each
   typed core that serves it against the object path (values of 1,000 distinct floats: many
   ties, whose counts add; ArgMin / ArgMax take ``(j, x)``), and on the out-of-order
   ``"fiba"`` window (TypedFiBA), fed in order.
6. **Batches of more monoids** (``batch_monoids``): as 3, ``TimeRange(n)`` on the typed
   cores only, for Sum, Variance, MinCount, First, ArgMin (a numpy structured array of
   ``(key, value)`` records against ``insert(t, (key, x))``) and a Record of Count, Sum,
   Variance and Min (float64 columns against ``insert(t, x)``).

    python -m benchmarks.compiled_core            # full (1-1.5 minutes per typed core; --rounds 3 to shorten)
    python -m benchmarks.compiled_core --quick    # smoke run (seconds)
    python -m benchmarks.compiled_core --algorithms log_mta   # the cells of some typed cores only
    python -m benchmarks.compiled_core --cells batches         # some cells only (results: compiled_core_batches.*)
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import tracemalloc
from typing import Any, Callable

import numpy as np

import mta
from benchmarks.common import Run, gc_paused, label, median, now_ns, num, parser, pow2, ratio
from mta import (ArgMax, ArgMin, Count, First, Last, Max, MaxCount, MaxSize, Mean, Min, MinCount, Record, StdDev, Sum, TimeRange,
                 Variance, Window)
from mta._extensions import load_pure
from mta.algorithms import ALGORITHMS, TYPED_ALGORITHMS, typed
from mta.monoid import Monoid

NAME = "compiled_core"
#: ns per insert + evict + query step of the C++ reference implementations on this machine,
#: as issue 20 quotes them (IBM's sliding-window-aggregators); not re-measured by this script.
CPP_REFERENCE = {"amta": "17-30", "daba": "9", "fiba": "31-50 (FiBA(4))"}
#: bare-step kinds: name -> (monoid, values are ints)
KINDS: dict[str, tuple[Callable[[], Monoid], bool]] = {
    "Sum, float": (Sum, False), "Sum, int": (Sum, True), "Mean, float": (Mean, False)}
PER_EVENT_MONOIDS: dict[str, Callable[[], Monoid]] = {"Sum": Sum, "Mean": Mean, "Max": Max}
BATCH = 1000
CELLS = ("bare", "per_event", "batches", "memory", "monoids", "batch_monoids")
#: The monoids of the "batch_monoids" cell.
BATCH_MONOIDS: dict[str, Callable[[], Monoid]] = {
    "Sum": Sum, "Variance": Variance, "MinCount": MinCount, "First": First, "ArgMin": ArgMin,
    "Record(Count, Sum, Variance, Min)": lambda: Record(n=Count(), total=Sum(), var=Variance(), low=Min())}
#: The monoids of the "monoids" cell (Mean: the reference, served by every typed core).
MORE_MONOIDS: dict[str, Callable[[], Monoid]] = {"Mean": Mean, "MinCount": MinCount, "MaxCount": MaxCount,
                                               "First": First, "Last": Last, "Variance": Variance,
                                               "StdDev": StdDev, "ArgMin": ArgMin, "ArgMax": ArgMax}
#: Monoids of the "monoids" cell whose inputs are ``(key, value)`` pairs.
PAIRED = ("ArgMin", "ArgMax")
#: Typed out-of-order windows the "monoids" cell runs beside the typed cores (fed in order).
ORDERED_CORES = ("fiba",)
TARGETS = {"bare_steps_per_s": 5e6, "bare_speedup": 5.0, "vs_river": 3.0, "batch": 10.0, "memory": 1 / 3}


# --------------------------------------------------------------------------- shared

def values(count: int, ints: bool = False, start: int = 0) -> list[Any]:
    """Scrambled k + 0.5 (k < 1000), or k for ints: every sum of them is exact."""
    if ints:
        return [(i * 7919) % 1000 for i in range(start, start + count)]
    return [(i * 7919) % 1000 + 0.5 for i in range(start, start + count)]


def compiled(cls: type) -> bool:
    """Whether the typed core ``cls`` runs compiled (its module's COMPILED flag)."""
    return bool(getattr(sys.modules[cls.__module__], "COMPILED", False))


def pure_twin(cls: type) -> type:
    """The typed core ``cls`` as its module's pure-Python twin (interpreted, whatever is built)."""
    return getattr(load_pure(cls.__module__), cls.__name__)


def core_label(name: str) -> str:
    cls = TYPED_ALGORITHMS[name]
    return f"{cls.__name__} ({'compiled' if compiled(cls) else 'interpreted'})"


def window(monoid: Monoid, policy: Any, algorithm: str, typed_core: bool) -> Window:
    """A Window on the typed core or on the object algorithm (``typed.USE`` is read when a
    window is built); raises if the typed core was asked for and not given."""
    saved = typed.USE
    typed.USE = typed_core
    try:
        w = Window(monoid, policy, algorithm=algorithm)
    finally:
        typed.USE = saved
    if typed_core and not w._typed:
        raise AssertionError(f"{algorithm}: no typed core for {type(monoid).__name__}, {policy!r}")
    return w


def core_of(w: Window) -> str:
    """The class running a window, ``TypedTimed(<core>)`` for a timed typed window (after a
    run: a demoted window shows its object algorithm)."""
    algorithm = w._algorithm
    core = getattr(algorithm, "core", None)
    return type(algorithm).__name__ + (f"({type(core).__name__})" if core is not None else "")


def alternate(runners: dict[str, Callable[[int], tuple[int, Any]]], rounds: int
              ) -> tuple[dict[str, list[int]], list[dict[str, Any]]]:
    """Each runner (round -> (ns, result)) once per round, the order rotated every round;
    the ns of every runner and the results of every round."""
    names = list(runners)
    ns: dict[str, list[int]] = {name: [] for name in names}
    results: list[dict[str, Any]] = []
    for r in range(rounds):
        k = r % len(names)
        got = {}
        for name in names[k:] + names[:k]:
            elapsed, got[name] = runners[name](r)
            ns[name].append(elapsed)
        results.append(got)
    return ns, results


def agree(results: list[dict[str, Any]]) -> bool:
    """Every round's results equal (floats within 1e-9 relative: river's Mean is incremental)."""
    def same(a: Any, b: Any) -> bool:
        if isinstance(a, float) or isinstance(b, float):
            return math.isclose(a, b, rel_tol=1e-9)
        return a == b
    return all(same(x, next(iter(got.values()))) for got in results for x in got.values())


def close(a: Any, b: Any) -> bool:
    """Equal results, floats within 1e-9 relative (dicts and tuples item by item): a batch
    evicts after it, the loop after every event, so Variance's merges differ in order."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(close, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return type(a) is type(b) and a == b


def per(ns: list[int], count: int) -> float:
    """Median ns per step over rounds of ``count`` steps."""
    return median(ns) / count


# --------------------------------------------------------------------------- 1. bare steps

def step_run(agg: Any, partials: list[Any]) -> tuple[int, Any]:
    """Timed: insert, evict one, query, for every partial; ns and the last result."""
    ins, ev, q = agg.insert, agg.evict, agg.query
    result = None
    with gc_paused():
        start = now_ns()
        for p in partials:
            ins(p)
            ev()
            result = q()
        return now_ns() - start, result


def bare(run: Run, cores: list[str], n: int, rounds: int) -> dict[str, Any]:
    rows, results = [], []
    for name in cores:
        for kind, (make, ints) in KINDS.items():
            monoid = make()
            fill = monoid.lift_many(values(n, ints))
            steps = monoid.lift_many(values(n, ints, start=n))
            aggs = {"typed": TYPED_ALGORITHMS[name](monoid), "pure": pure_twin(TYPED_ALGORITHMS[name])(monoid),
                    "object": ALGORITHMS[name](monoid)}
            for agg in aggs.values():
                agg.insert_many(fill)
            # the pure twin is 50-100x slower: it runs the first n/16 steps of the cycle only
            pure_steps = steps[:max(len(steps) // 16, 1)]
            runs = {c: (lambda r, agg=agg, s=(pure_steps if c == "pure" else steps): step_run(agg, s))
                    for c, agg in aggs.items()}
            ns, got = alternate(runs, rounds)
            typed_ns, pure_ns, object_ns = per(ns["typed"], n), per(ns["pure"], len(pure_steps)), per(ns["object"], n)
            entry = {"algorithm": name, "kind": kind, "n": n, "typed_core": core_label(name),
                     "typed_ns": typed_ns, "pure_ns": pure_ns, "object_ns": object_ns,
                     "typed_steps_per_s": 1e9 / typed_ns, "pure_steps_per_s": 1e9 / pure_ns,
                     "object_steps_per_s": 1e9 / object_ns, "speedup": object_ns / typed_ns,
                     "speedup_over_pure": pure_ns / typed_ns,
                     "cpp_reference_ns": CPP_REFERENCE.get(name), "rounds": rounds,
                     # the pure twin ran fewer steps: its results are the tests' business
                     "equal": agree([{c: v for c, v in round_got.items() if c != "pure"} for round_got in got])}
            results.append(entry)
            rows.append([label(name), kind, entry["typed_core"], num(typed_ns), num(entry["typed_steps_per_s"]),
                         num(pure_ns), f"{entry['speedup_over_pure']:.1f}x",
                         num(object_ns), num(entry["object_steps_per_s"]), f"{entry['speedup']:.1f}x",
                         entry["cpp_reference_ns"] or "–", "yes" if entry["equal"] else "NO"])
            run.log(f"bare {name} {kind}: typed {typed_ns:.1f} ns, pure twin {pure_ns:.1f} ns, "
                    f"object {object_ns:.1f} ns")
    run.table(f"1. Bare insert + evict + query at the algorithm level, window {pow2(n)}, median of {rounds} rounds",
              ["algorithm", "kind", "typed core", "typed ns/step", "typed steps/s", "pure twin ns/step",
               "pure twin / typed", "object ns/step", "object steps/s", "typed speedup", "C++ ns/step (issue's)",
               "equal"], rows,
              f"Issue targets (AMTA, Sum): >= {TARGETS['bare_steps_per_s'] / 1e6:g} M steps/s and >= "
              f"{TARGETS['bare_speedup']:g}x the pure path. The pure twin is the typed core's own source interpreted (timed on the "
              "first n/16 steps of the cycle: amortized work past them, such as TwoStacks' flip, is left out); "
              "the typed speedup is over the object algorithm. The C++ column is the issue's figure for IBM's "
              "sliding-window-aggregators on this machine, not measured by this script (none quoted for TwoStacks).")
    return {"results": results}


# --------------------------------------------------------------------------- 2. per event

def river_model(monoid: str, n: int) -> Any:
    """river's rolling statistic over the last n values (river is in the ``peers`` extra)."""
    from river import stats, utils

    if monoid == "Max":
        return stats.RollingMax(window_size=n)
    return utils.Rolling(getattr(stats, monoid), window_size=n)


def river_run(model: Any, xs: list[float]) -> tuple[int, Any]:
    update, get = model.update, model.get
    result = None
    with gc_paused():
        start = now_ns()
        for x in xs:
            update(x)
            result = get()
        return now_ns() - start, result


def window_run(w: Window, ts: list[int], xs: list[float]) -> tuple[int, Any]:
    ins, q = w.insert, w.query
    result = None
    with gc_paused():
        start = now_ns()
        for t, x in zip(ts, xs):
            ins(t, x)
            result = q()
        return now_ns() - start, result


def per_event(run: Run, cores: list[str], sizes: list[int], steps_min: int, rounds: int) -> dict[str, Any]:
    rows, results = [], []
    for n in sizes:
        steps = max(n, steps_min)
        fill, xs = values(n), values(steps, start=n)
        for monoid_name, make in PER_EVENT_MONOIDS.items():
            model = river_model(monoid_name, n)
            for x in fill:
                model.update(x)
            windows: dict[str, Window] = {}
            for name in cores:
                for path, typed_core in (("typed", True), ("object", False)):
                    w = window(make(), MaxSize(n), name, typed_core)
                    w.insert_many(list(range(n)), fill)
                    windows[f"{name}/{path}"] = w
            runners: dict[str, Callable[[int], tuple[int, Any]]] = {"river": lambda r: river_run(model, xs)}
            for key, w in windows.items():
                runners[key] = lambda r, w=w: window_run(w, list(range(n + r * steps, n + (r + 1) * steps)), xs)
            ns, got = alternate(runners, rounds)
            river_ns = per(ns["river"], steps)
            equal = agree(got)
            for name in cores:
                typed_ns, object_ns = per(ns[f"{name}/typed"], steps), per(ns[f"{name}/object"], steps)
                entry = {"n": n, "monoid": monoid_name, "algorithm": name, "steps": steps, "river_ns": river_ns,
                         "typed_ns": typed_ns, "object_ns": object_ns,
                         "typed_core": core_of(windows[f"{name}/typed"]),
                         "object_core": core_of(windows[f"{name}/object"]),
                         "river_over_typed": river_ns / typed_ns, "river_over_object": river_ns / object_ns,
                         "equal": equal, "rounds": rounds}
                results.append(entry)
                rows.append([pow2(n), monoid_name, label(name), num(river_ns), num(typed_ns), num(object_ns),
                             f"{entry['river_over_typed']:.2f}x", f"{entry['river_over_object']:.2f}x",
                             entry["typed_core"], "yes" if equal else "NO"])
            run.log(f"per event n={n} {monoid_name}: river {river_ns:.0f} ns")
    run.table(f"2. Per event: Window.insert(t, x) + query(), MaxSize(n), against river, median of {rounds} rounds",
              ["n", "monoid", "algorithm", "river ns/event", "mta typed ns/event", "mta object ns/event",
               "river / typed", "river / object", "typed window's core", "equal"], rows,
              "river: utils.Rolling(stats.Sum | stats.Mean, window_size=n) and stats.RollingMax(window_size=n), "
              f"update(x) + get(). Issue target: mta >= {TARGETS['vs_river']:g}x river (river / mta) for each.")
    return {"results": results}


# --------------------------------------------------------------------------- 3. batches

def batch_run(w: Window, ts: np.ndarray, xs: np.ndarray) -> tuple[int, Any]:
    insert_many = w.insert_many
    with gc_paused():
        start = now_ns()
        for s in range(0, len(ts), BATCH):
            insert_many(ts[s:s + BATCH], xs[s:s + BATCH])
        return now_ns() - start, w.query()


def loop_run(w: Window, ts: list[int], xs: list[float]) -> tuple[int, Any]:
    ins = w.insert
    with gc_paused():
        start = now_ns()
        for t, x in zip(ts, xs):
            ins(t, x)
        return now_ns() - start, w.query()


def batches(run: Run, cores: list[str], n: int, events: int, rounds: int) -> dict[str, Any]:
    fill, xs = values(n), values(events, start=n)
    xs_array = np.array(xs, dtype=np.float64)
    kinds = [(f"{type(policy).__name__}(n), {label(name)}, {path}", policy, name, typed_core)
             for policy in (MaxSize(n), TimeRange(n)) for name in cores
             for path, typed_core in (("typed", True), ("object", False))]
    runners: dict[str, Callable[[int], tuple[int, Any]]] = {}
    cores: dict[str, Window] = {}
    first = lambda r: n + r * events  # the first timestamp of round r
    for kind, policy, name, typed_core in kinds:
        for mode in ("batch", "loop"):
            w = window(Sum(), policy, name, typed_core)
            w.insert_many(list(range(n)), fill)
            cores[f"{kind}/{mode}"] = w
        runners[f"{kind}/batch"] = lambda r, w=cores[f"{kind}/batch"]: batch_run(
            w, np.arange(first(r), first(r) + events, dtype=np.int64), xs_array)
        runners[f"{kind}/loop"] = lambda r, w=cores[f"{kind}/loop"]: loop_run(
            w, list(range(first(r), first(r) + events)), xs)
    ns, got = alternate(runners, rounds)
    equal = agree(got)
    rows, results = [], []
    for kind, policy, name, typed_core in kinds:
        batch_ns, loop_ns = per(ns[f"{kind}/batch"], events), per(ns[f"{kind}/loop"], events)
        entry = {"window": kind, "policy": type(policy).__name__, "algorithm": name,
                 "path": "typed" if typed_core else "object", "n": n, "events": events, "batch": BATCH, "batch_ns": batch_ns, "loop_ns": loop_ns,
                 "batch_events_per_s": 1e9 / batch_ns, "loop_events_per_s": 1e9 / loop_ns,
                 "speedup": loop_ns / batch_ns, "core": core_of(cores[f"{kind}/batch"]),
                 "loop_core": core_of(cores[f"{kind}/loop"]), "equal": equal,
                 "rounds": rounds}
        results.append(entry)
        rows.append([kind, entry["core"], num(batch_ns), num(entry["batch_events_per_s"]), num(loop_ns),
                     num(entry["loop_events_per_s"]), f"{entry['speedup']:.1f}x", "yes" if equal else "NO"])
    run.table(f"3. insert_many(timestamps, values) from numpy arrays, batches of {BATCH:,}, Sum, window n = {pow2(n)}, "
              f"{events:,} events a round, median of {rounds} rounds",
              ["window", "core", "batch ns/event", "batch events/s", "loop ns/event", "loop events/s",
               "batch / loop", "equal"], rows,
              f"The loop: insert(t, x) per event from Python lists. Issue target: insert_many >= "
              f"{TARGETS['batch']:g}x the per-event loop of the compiled path (Sum over TimeRange).")
    return {"results": results}


def batch_monoids(run: Run, cores: list[str], n: int, events: int, rounds: int) -> dict[str, Any]:
    fill, xs = values(n), values(events, start=n)
    xs_array = np.array(xs, dtype=np.float64)
    pairs = list(enumerate(xs))
    records = np.zeros(events, dtype=[("key", np.int64), ("value", np.float64)])
    records["key"], records["value"] = np.arange(events), xs_array
    kinds = [(f"{monoid}, {label(name)}", monoid, name) for monoid in BATCH_MONOIDS for name in cores]
    runners: dict[str, Callable[[int], tuple[int, Any]]] = {}
    windows: dict[str, Window] = {}
    first = lambda r: n + r * events  # the first timestamp of round r
    for kind, monoid, name in kinds:
        paired = monoid == "ArgMin"
        for mode in ("batch", "loop"):
            w = window(BATCH_MONOIDS[monoid](), TimeRange(n), name, True)
            w.insert_many(list(range(n)), list(enumerate(fill)) if paired else fill)
            windows[f"{kind}/{mode}"] = w
        runners[f"{kind}/batch"] = lambda r, w=windows[f"{kind}/batch"], column=records if paired else xs_array: batch_run(
            w, np.arange(first(r), first(r) + events, dtype=np.int64), column)
        runners[f"{kind}/loop"] = lambda r, w=windows[f"{kind}/loop"], column=pairs if paired else xs: loop_run(
            w, list(range(first(r), first(r) + events)), column)
    ns, got = alternate(runners, rounds)
    rows, results = [], []
    for kind, monoid, name in kinds:
        equal = all(close(g[f"{kind}/batch"], g[f"{kind}/loop"]) for g in got)
        batch_ns, loop_ns = per(ns[f"{kind}/batch"], events), per(ns[f"{kind}/loop"], events)
        entry = {"window": kind, "monoid": monoid, "algorithm": name, "n": n, "events": events, "batch": BATCH,
                 "batch_ns": batch_ns, "loop_ns": loop_ns, "speedup": loop_ns / batch_ns,
                 "core": core_of(windows[f"{kind}/batch"]), "loop_core": core_of(windows[f"{kind}/loop"]),
                 "equal": equal, "rounds": rounds}
        results.append(entry)
        rows.append([kind, entry["core"], num(batch_ns), num(1e9 / batch_ns), num(loop_ns), num(1e9 / loop_ns),
                     f"{entry['speedup']:.1f}x", "yes" if equal else "NO"])
    run.table(f"6. insert_many(timestamps, values) from numpy arrays of more monoids, batches of {BATCH:,}, "
              f"TimeRange(n), n = {pow2(n)}, typed cores, {events:,} events a round, median of {rounds} rounds",
              ["window", "core", "batch ns/event", "batch events/s", "loop ns/event", "loop events/s",
               "batch / loop", "equal"], rows,
              "The loop: insert(t, x) per event from Python lists (ArgMin: insert(t, (j, x)); its batch a "
              "structured array of (key, value) records).")
    return {"results": results}


# --------------------------------------------------------------------------- 4. memory

def traced(make: Callable[[], Window], n: int, chunk: int) -> dict[str, Any]:
    """tracemalloc bytes held by a window after n updates and after n/4 more (values made
    while tracing, in chunks), above the baseline before the window was made; peak too."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        w = make()
        out: dict[str, Any] = {}
        inserted = 0
        for stop, point in ((n, "filled"), (n + n // 4, "sliding")):
            for s in range(inserted, stop, chunk):
                e = min(stop, s + chunk)
                w.insert_many(list(range(s, e)), values(e - s, start=s))
            inserted = stop
            gc.collect()
            out[point] = tracemalloc.get_traced_memory()[0] - base
        out["peak"] = tracemalloc.get_traced_memory()[1] - base
        out["core"] = core_of(w)
        del w
    finally:
        tracemalloc.stop()
    return out


def memory(run: Run, cores: list[str], n: int) -> dict[str, Any]:
    rows, results = [], []
    chunk = min(n, 1 << 14)
    for name in cores:
        got = {path: traced(lambda: window(Sum(), MaxSize(n), name, typed_core), n, chunk)
               for path, typed_core in (("typed", True), ("object", False))}
        entry = {"algorithm": name, "n": n, "method": "tracemalloc",
                 "typed": got["typed"], "object": got["object"],
                 "typed_bytes_per_element": got["typed"]["filled"] / n,
                 "object_bytes_per_element": got["object"]["filled"] / n,
                 "ratio_filled": ratio(got["typed"]["filled"], got["object"]["filled"]),
                 "ratio_sliding": ratio(got["typed"]["sliding"], got["object"]["sliding"]),
                 "ratio_peak": ratio(got["typed"]["peak"], got["object"]["peak"])}
        results.append(entry)
        for point in ("filled", "sliding", "peak"):
            t, o = got["typed"][point], got["object"][point]
            rows.append([label(name), point, got["typed"]["core"], num(t / 2**20), num(t / n), got["object"]["core"],
                         num(o / 2**20), num(o / n), f"{t / o:.2f}"])
        run.log(f"memory {name}: typed {got['typed']}, object {got['object']}")
    run.table(f"4. Memory of Window(Sum(), MaxSize({pow2(n)})) over floats (tracemalloc)",
              ["algorithm", "when", "typed core", "typed MiB", "typed B/element", "object core", "object MiB",
               "object B/element", "typed / object"], rows,
              "tracemalloc: bytes held through Python's allocators above the empty process state (objects, lists, "
              "the typed cores' array.array columns), after gc.collect(); 'filled' = n updates, no eviction yet; "
              "'sliding' = n/4 more (evictions; TwoStacks has flipped); 'peak' = the most held during both. "
              f"B/element = bytes / n. Issue target: typed <= {TARGETS['memory']:.2g} of the object path.")
    return {"results": results}


# --------------------------------------------------------------------------- 5. more monoids

def more_monoids(run: Run, cores: list[str], n: int, steps_min: int, rounds: int) -> dict[str, Any]:
    rows, results = [], []
    steps = max(n, steps_min)
    for monoid_name, make in MORE_MONOIDS.items():
        fill, xs = values(n), values(steps, start=n)
        if monoid_name in PAIRED:
            fill, xs = list(enumerate(fill)), list(enumerate(xs, n))
        windows: dict[str, Window] = {}
        names = [name for name in [*cores, *ORDERED_CORES] if typed.serves(make())]
        for name in names:
            for path, typed_core in (("typed", True), ("object", False)):
                w = window(make(), MaxSize(n), name, typed_core)
                w.insert_many(list(range(n)), fill)
                windows[f"{name}/{path}"] = w
        runners = {key: (lambda r, w=w: window_run(w, list(range(n + r * steps, n + (r + 1) * steps)), xs))
                   for key, w in windows.items()}
        ns, got = alternate(runners, rounds)
        equal = agree(got)
        for name in names:
            typed_ns, object_ns = per(ns[f"{name}/typed"], steps), per(ns[f"{name}/object"], steps)
            entry = {"n": n, "monoid": monoid_name, "algorithm": name, "steps": steps, "typed_ns": typed_ns,
                     "object_ns": object_ns, "speedup": object_ns / typed_ns,
                     "typed_core": core_of(windows[f"{name}/typed"]),
                     "object_core": core_of(windows[f"{name}/object"]), "equal": equal, "rounds": rounds}
            results.append(entry)
            rows.append([pow2(n), monoid_name, label(name), num(typed_ns), num(object_ns), f"{entry['speedup']:.2f}x",
                         entry["typed_core"], "yes" if equal else "NO"])
        run.log(f"monoids n={n} {monoid_name}: {', '.join(names)}")
    run.table(f"5. More monoids, per event: Window.insert(t, x) + query(), MaxSize(n), median of {rounds} rounds",
              ["n", "monoid", "algorithm", "typed ns/event", "object ns/event", "object / typed",
               "typed window's core", "equal"], rows,
              "Only the typed cores that serve the monoid (typed.serves); the others run it on objects.")
    return {"results": results}


# --------------------------------------------------------------------------- main

def cell_list(text: str) -> list[str]:
    """Cell names, in the order of :data:`CELLS`."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in CELLS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown cell {', '.join(bad) or repr(text)}; choose from {', '.join(CELLS)}")
    return [n for n in CELLS if n in names]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=None, help="rounds per cell (default 7; quick 3)")
    p.add_argument("--cells", type=cell_list, default=list(CELLS),
                   help=f"comma-separated subset of: {', '.join(CELLS)} (results of a subset go to "
                        f"{NAME}_<cells>.*, not over the full run's)")
    args = p.parse_args(argv)
    if args.quick:
        params = {"bare_n": 2**12, "event_sizes": [1000, 2**12], "event_steps_min": 2**12, "batch_n": 2**12,
                  "batch_events": 8 * BATCH, "memory_n": 2**12, "rounds": 3}
    else:
        params = {"bare_n": 2**20, "event_sizes": [1000, 2**16], "event_steps_min": 2**14, "batch_n": 2**16,
                  "batch_events": 128 * BATCH, "memory_n": 2**20, "rounds": 7}
    if args.rounds:
        params["rounds"] = args.rounds
    cores = [name for name in TYPED_ALGORITHMS if not args.algorithms or name in args.algorithms]
    if not cores:
        p.error(f"no typed core among {', '.join(args.algorithms)}; typed cores: {', '.join(TYPED_ALGORITHMS)}")
    params["typed_algorithms"] = {name: core_label(name) for name in cores}
    params["mta_compiled"] = mta.COMPILED
    params["cells"] = args.cells
    run = Run(NAME if args.cells == list(CELLS) else "_".join([NAME, *args.cells]), args, params)
    rounds = params["rounds"]
    experiments = {
        "bare": lambda: bare(run, cores, params["bare_n"], rounds),
        "per_event": lambda: per_event(run, cores, params["event_sizes"], params["event_steps_min"], rounds),
        "batches": lambda: batches(run, cores, params["batch_n"], params["batch_events"], rounds),
        "memory": lambda: memory(run, cores, params["memory_n"]),
        "monoids": lambda: more_monoids(run, cores, params["event_sizes"][-1], params["event_steps_min"], rounds),
        "batch_monoids": lambda: batch_monoids(run, cores, params["batch_n"], params["batch_events"], rounds),
    }
    cells = {name: run.experiment(name, experiments[name]) for name in args.cells}
    run.data["cells"] = cells
    results = {name: cells[name]["results"] if name in cells else [] for name in CELLS}
    csv_rows = (
        [["bare", e["algorithm"], e["kind"], e["n"], e["typed_ns"], e["object_ns"], e["speedup"]]
         for e in results["bare"]]
        + [["per_event", e["algorithm"], f"{e['monoid']} vs river", e["n"], e["typed_ns"], e["object_ns"],
            e["river_over_typed"]] for e in results["per_event"]]
        + [["batches", e["window"], "batch vs loop", e["n"], e["batch_ns"], e["loop_ns"], e["speedup"]]
           for e in results["batches"]]
        + [["memory", e["algorithm"], "bytes/element filled", e["n"], e["typed_bytes_per_element"],
            e["object_bytes_per_element"], e["ratio_filled"]] for e in results["memory"]]
        + [["monoids", e["algorithm"], f"{e['monoid']} typed vs object", e["n"], e["typed_ns"], e["object_ns"],
            e["speedup"]] for e in results["monoids"]]
        + [["batch_monoids", e["window"], "batch vs loop", e["n"], e["batch_ns"], e["loop_ns"], e["speedup"]]
           for e in results["batch_monoids"]])
    run.finish(["cell", "competitor", "measure", "n", "typed_or_batch", "object_or_loop", "ratio"], csv_rows)
    run.write_markdown(f"mta.COMPILED = {params['mta_compiled']}; typed cores: "
                       + ", ".join(f"{label(k)}: {v}" for k, v in params["typed_algorithms"].items()) + ".")
    return run.data


if __name__ == "__main__":
    main()
