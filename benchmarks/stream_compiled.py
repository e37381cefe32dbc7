"""Issue 20, Stream engine: ``mta.Stream`` with the typed ingest against the object engine.

The slicing benchmark's fig8 workload at its largest (:mod:`benchmarks.stream_slicing`):
1,000 concurrent tumbling windows of 1-20 s (whole seconds), a sensor stream of 1,000
tuples per second of event time, in order, integer readings, the watermark advanced every
second 2 s behind the arrival clock. Competitors, in one process, the order rotated every
round, results compared with the object engine's after every round (``equal``):

* ``object``: the pure path in this process: the engine on Python objects (``typed_ingest.USE``
  False) with the interpreted twin of the compiled window ends (``mta.stream.fanout``,
  loaded by ``mta._extensions.load_pure``), the code that ``MTA_NO_EXTENSIONS=1`` runs;
* ``typed``: the compiled path: the typed ingest and the compiled window ends, every tuple
  ``insert(ts, value)``;
* ``typed, columns``: the typed ingest, each second's tuples ``insert_many(ts, values)`` of
  int64 numpy columns (made before the clock starts).

For Sum and Mean (``--monoid NAME``, repeatable, picks others: MinCount, MaxCount, First,
Last, Variance, StdDev, ArgMin, ArgMax, Record: a Record of Count, Sum, Min, Max and Mean).
ArgMin and ArgMax take ``(key, value)`` pairs, the key the tuple's timestamp: no columns (a
column of numbers holds no pairs), ``typed, columns`` is left out for them. The table gives
tuples per second (median over rounds), the ratio to the object engine, and where an object-engine run spends its time: the per-tuple inserts, the
advances' slicing of the released tuples, and the rest of the advances (window ends:
final aggregation, one Result per window and query, sorting).

A second case (``--no-final`` skips it; ``--quick``: 100 queries, 2 s of stream) is one where
the final aggregation carries the load: 1,000 sliding queries ``Sliding(k * 30 ms, 1 s)`` for k = 1..1,000, whose
edges cut each second into about 34 slices, so that a window spans 1 to 1,000 slices (about
500 on average) and 1,000 windows end every second; the same sensor stream. For each final
(``auto``, the default, ``lazy``, ``fiba``, ``amta``) and monoid (Sum and Mean), the
``object`` engine (pure path: object FiBA / AMTAs and Python folds, ``typed.USE`` off) and
the ``typed`` one (compiled: TypedFiBA / TypedAMTA, the C fold of Sum and Mean) alternate
in one process; the table gives tuples per second, the ratio, and the milliseconds spent in
the final aggregation (``stream.final.aggregate``, timed in both runs alike).

``--instructions`` adds the same comparison in instructions per tuple, counted by valgrind's
cachegrind (:func:`benchmarks.common.cachegrind_instructions`), which the shared VM's load
does not move: each competitor runs in a child process over the first 10 and the first 40
seconds of the stream (the stream made in full in both), and the difference is divided
by the tuples between them (steady state: inserts, advances, window ends).

    python -m benchmarks.stream_compiled                  # 60 s of stream, 5 rounds
    python -m benchmarks.stream_compiled --instructions   # and instructions per tuple (~3 min)
    python -m benchmarks.stream_compiled --quick          # smoke run (seconds)
    python -m benchmarks.stream_compiled --monoid MinCount --monoid First
    python -m benchmarks.stream_compiled --no-tumbling          # only the long sliding windows
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from benchmarks.common import Run, cachegrind_instructions, gc_paused, median, now_ns, parser, ratio
from benchmarks.stream_baselines import Workload
from benchmarks.stream_slicing import tumbling_queries
from mta import (ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev, Stream, Sum,
                 Variance)
from mta._extensions import load_pure
from mta.algorithms import typed as typed_cores
from mta.monoid import Monoid
from mta.stream import engine, typed_ingest
from mta.windows import Sliding

NAME = "stream_compiled"
MONOIDS: dict[str, Callable[[], Monoid]] = {
    "Sum": Sum, "Mean": Mean, "MinCount": MinCount, "MaxCount": MaxCount, "First": First, "Last": Last,
    "Variance": Variance, "StdDev": StdDev, "ArgMin": ArgMin, "ArgMax": ArgMax,
    "Record": lambda: Record(n=Count(), total=Sum(), lo=Min(), hi=Max(), avg=Mean())}
#: monoids of (key, value) pairs: each tuple's value becomes (its timestamp, the value)
PAIRS = {"ArgMin", "ArgMax"}
DEFAULT = ["Sum", "Mean"]
COMPETITORS = ["object", "typed", "typed, columns"]
TARGET = 5.0
PURE_CLOSE_WINDOWS = load_pure("mta.stream.fanout").close_windows


def build(monoid: Monoid, queries: list, typed: bool, final: str = "auto") -> Stream:
    """A stream on the typed ingest and final aggregation (``typed``) or on Python objects."""
    saved = typed_ingest.USE, typed_cores.USE
    typed_ingest.USE = typed_cores.USE = typed
    try:
        stream = Stream(monoid, final=final)
    finally:
        typed_ingest.USE, typed_cores.USE = saved
    for name, spec in queries:
        stream.add(name, spec)
    return stream


def workload(seconds: float, rate: int, pairs: bool) -> tuple[list, list]:
    """The rounds (pairs: each value ``(ts, value)``) and each round's int64 columns."""
    rounds = Workload(seconds=seconds, rate=rate).rounds()
    columns = [(np.array([t for t, _ in b], dtype=np.int64), np.array([v for _, v in b], dtype=np.int64))
               for b, _ in rounds]
    if pairs:
        rounds = [([(t, (t, v)) for t, v in b], w) for b, w in rounds]
    return rounds, columns


def competitors(monoid: str) -> list[str]:
    return COMPETITORS[:2] if monoid in PAIRS else COMPETITORS


def run_once(competitor: str, monoid: Monoid, queries: list, rounds: list, columns: list,
             final: str = "auto") -> tuple[float, list, dict]:
    """Seconds of one run and its results ``(query, start, end, value, count)``, with the
    object engine's split of the time (inserts, slicing at advances, the rest)."""
    stream = build(monoid, queries, competitor != "object", final)
    compiled_close_windows = engine.close_windows
    if competitor == "object":
        engine.close_windows = PURE_CLOSE_WINDOWS
    try:
        return _run(competitor, stream, rounds, columns)
    finally:
        engine.close_windows = compiled_close_windows


def _run(competitor: str, stream: Stream, rounds: list, columns: list, rows: bool = True) -> tuple[float, list, dict]:
    out: list = []
    split = {"insert": 0, "release": 0, "windows": 0}
    timed = competitor == "object"
    if timed:
        release = stream._release

        def timed_release(watermark: Any) -> None:
            t0 = now_ns()
            release(watermark)
            split["release"] += now_ns() - t0
        stream._release = timed_release  # type: ignore[method-assign]
    insert, insert_many, advance = stream.insert, stream.insert_many, stream.advance
    with gc_paused():
        t0 = now_ns()
        for (batch, watermark), (ts, vs) in zip(rounds, columns):
            t1 = now_ns()
            if competitor == "typed, columns":
                insert_many(ts, vs)
            else:
                for t, v in batch:
                    insert(t, v)
            t2 = now_ns()
            out += advance(watermark)
            if timed:
                split["insert"] += t2 - t1
                split["windows"] += now_ns() - t2
        dt = now_ns() - t0
    split["windows"] -= split["release"]
    return dt / 1e9, [(r.query, r.start, r.end, repr(r.value), r.count) for r in out] if rows else [], split


def cell(run: Run, seconds: float, reps: int, rate: int = 1000, names: list[str] = DEFAULT) -> dict[str, Any]:
    queries = tumbling_queries(1000, 1000)
    results = []
    for mname in names:
        make = MONOIDS[mname]
        rounds, columns = workload(seconds, rate, mname in PAIRS)
        tuples = sum(len(b) for b, _ in rounds)
        cs = competitors(mname)
        tps: dict[str, list[float]] = {c: [] for c in cs}
        splits: list[dict] = []
        equal = True
        for rep in range(reps):
            order = cs[rep % len(cs):] + cs[:rep % len(cs)]
            got = {}
            for c in order:
                dt, rows, split = run_once(c, make(), queries, rounds, columns)
                tps[c].append(tuples / dt)
                got[c] = rows
                if c == "object":
                    splits.append(split)
            equal = equal and all(got[c] == got["object"] for c in cs)
        entry = {"monoid": mname, "tuples": tuples, "results": len(got["object"]), "equal": equal,
                 **{f"{c}_tps": median(tps[c]) if c in cs else None for c in COMPETITORS},
                 "object_split_ns_per_tuple": {k: median([s[k] for s in splits]) / tuples for k in splits[0]}}
        entry["typed_ratio"] = ratio(entry["typed_tps"], entry["object_tps"])
        entry["columns_ratio"] = ratio(entry["typed, columns_tps"], entry["object_tps"]) if len(cs) == 3 else None
        results.append(entry)
        run.log(f"{mname}: " + ", ".join(f"{c} {entry[f'{c}_tps']:,.0f} t/s" for c in cs))
    run.table("Stream engine, 1,000 tumbling windows: tuples/s",
              ["monoid", "object t/s", "typed t/s", "typed, columns t/s", "typed / object", "columns / object",
               "object: insert / slicing / window ends (ns per tuple)", "equal"],
              [[e["monoid"], round(e["object_tps"]), round(e["typed_tps"]),
                "-" if e["typed, columns_tps"] is None else round(e["typed, columns_tps"]),
                f"{e['typed_ratio']:.2f}x", "-" if e["columns_ratio"] is None else f"{e['columns_ratio']:.2f}x",
                " / ".join(f"{v:.0f}" for v in e["object_split_ns_per_tuple"].values()), e["equal"]]
               for e in results],
              note=f"Median of {reps} alternated rounds, {seconds:g} s of stream ({tuples:,} tuples, {rate:,} a "
                   f"second), compiled: {typed_ingest.COMPILED and engine.close_windows is not PURE_CLOSE_WINDOWS}. "
                   f"Target (issue 20): typed >= {TARGET:g}x object.")
    return {"results": results}


FINALS = ["auto", "lazy", "fiba", "amta"]
FINAL_COMPETITORS = ["object", "typed"]


def sliding_queries(n: int = 1000, unit: int = 30, slide: int = 1000) -> list:
    """``Sliding(k * unit, slide)`` for k = 1..n: windows of 1 to ``n * unit / slide`` seconds."""
    return [(f"s{k}", Sliding(k * unit, slide)) for k in range(1, n + 1)]


def timed_final(stream: Stream, spent: list) -> None:
    """Adds the nanoseconds of each ``stream.final.aggregate`` call to ``spent[0]``."""
    aggregate = stream.final.aggregate

    def timed(*args: Any) -> Any:
        t0 = now_ns()
        try:
            return aggregate(*args)
        finally:
            spent[0] += now_ns() - t0
    stream.final.aggregate = timed  # type: ignore[method-assign]


def final_cell(run: Run, seconds: float, reps: int, rate: int = 1000, names: list[str] = DEFAULT,
               n: int = 1000) -> dict[str, Any]:
    queries = sliding_queries(n)
    results = []
    for mname in names:
        rounds = workload(seconds, rate, mname in PAIRS)[0]
        tuples = sum(len(b) for b, _ in rounds)
        for final in FINALS:
            tps: dict[str, list[float]] = {c: [] for c in FINAL_COMPETITORS}
            spent_ms: dict[str, list[float]] = {c: [] for c in FINAL_COMPETITORS}
            equal, windows = True, 0
            for rep in range(reps):
                got = {}
                for c in (FINAL_COMPETITORS if rep % 2 == 0 else FINAL_COMPETITORS[::-1]):
                    stream = build(MONOIDS[mname](), queries, c == "typed", final)
                    spent = [0]
                    timed_final(stream, spent)
                    saved = engine.close_windows
                    if c == "object":
                        engine.close_windows = PURE_CLOSE_WINDOWS
                    try:
                        dt, rows, _ = _run(c, stream, rounds, [(None, None)] * len(rounds))
                    finally:
                        engine.close_windows = saved
                    tps[c].append(tuples / dt)
                    spent_ms[c].append(spent[0] / 1e6)
                    got[c] = rows
                equal = equal and got["typed"] == got["object"]
                windows = len(got["object"])
            entry = {"monoid": mname, "final": final, "tuples": tuples, "results": windows, "equal": equal,
                     **{f"{c}_tps": median(tps[c]) for c in FINAL_COMPETITORS},
                     **{f"{c}_final_ms": median(spent_ms[c]) for c in FINAL_COMPETITORS}}
            entry["ratio"] = ratio(entry["typed_tps"], entry["object_tps"])
            entry["final_ratio"] = ratio(entry["object_final_ms"], entry["typed_final_ms"])
            results.append(entry)
            run.log(f"{mname} {final}: object {entry['object_tps']:,.0f} t/s, typed {entry['typed_tps']:,.0f} t/s, "
                    f"final {entry['object_final_ms']:.0f} / {entry['typed_final_ms']:.0f} ms")
    run.table(f"Stream engine, {n:,} sliding windows of 1-{n:,} slices: tuples/s and final aggregation",
              ["monoid", "final", "object t/s", "typed t/s", "typed / object", "object final ms", "typed final ms",
               "final: object / typed", "equal"],
              [[e["monoid"], e["final"], round(e["object_tps"]), round(e["typed_tps"]), f"{e['ratio']:.2f}x",
                round(e["object_final_ms"]), round(e["typed_final_ms"]), f"{e['final_ratio']:.2f}x", e["equal"]]
               for e in results],
              note=f"Median of {reps} alternated rounds, {seconds:g} s of stream ({tuples:,} tuples, {rate:,} a "
                   f"second, then the watermark to infinity), {results[0]['results']:,} windows per run; queries "
                   f"Sliding(k * 30 ms, 1 s), k = 1..{n:,}. "
                   f"compiled: {typed_ingest.COMPILED}. 'final ms': time in stream.final.aggregate.")
    return {"results": results}


INSTRUCTION_SPAN = (10, 40)  # seconds of stream: the two prefixes the children run


def child(competitor: str, monoid: str, seconds: int) -> None:
    """One competitor over the first ``seconds`` rounds of the 40-second stream (a cachegrind
    child: everything but the run is the same for any ``seconds``)."""
    rounds, columns = workload(INSTRUCTION_SPAN[1], 1000, monoid in PAIRS)
    stream = build(MONOIDS[monoid](), tumbling_queries(1000, 1000), competitor != "object")
    if competitor == "object":
        engine.close_windows = PURE_CLOSE_WINDOWS
    _run(competitor, stream, rounds[:seconds], columns[:seconds], rows=False)


def instructions(run: Run, names: list[str] = DEFAULT) -> dict[str, Any]:
    rounds = Workload(seconds=INSTRUCTION_SPAN[1]).rounds()
    short, long = INSTRUCTION_SPAN
    tuples = sum(len(b) for b, _ in rounds[short:long])
    results = []
    for mname in names:
        entry: dict[str, Any] = {"monoid": mname, "tuples": tuples}
        for c in COMPETITORS:
            if c not in competitors(mname):
                entry[f"{c}_per_tuple"] = None
                continue
            counts = [cachegrind_instructions("benchmarks.stream_compiled", ["--child", c, mname, str(n)])
                      for n in (short, long)]
            entry[f"{c}_per_tuple"] = (counts[1] - counts[0]) / tuples
            run.log(f"{mname} {c}: {entry[f'{c}_per_tuple']:,.0f} instructions per tuple")
        entry["typed_ratio"] = ratio(entry["object_per_tuple"], entry["typed_per_tuple"])
        entry["columns_ratio"] = (None if entry["typed, columns_per_tuple"] is None
                                  else ratio(entry["object_per_tuple"], entry["typed, columns_per_tuple"]))
        results.append(entry)
    run.table("Stream engine, 1,000 tumbling windows: instructions per tuple (cachegrind)",
              ["monoid", "object", "typed", "typed, columns", "object / typed", "object / columns"],
              [[e["monoid"], round(e["object_per_tuple"]), round(e["typed_per_tuple"]),
                "-" if e["columns_ratio"] is None else round(e["typed, columns_per_tuple"]),
                f"{e['typed_ratio']:.2f}x", "-" if e["columns_ratio"] is None else f"{e['columns_ratio']:.2f}x"]
               for e in results],
              note=f"Seconds {short}-{long} of the stream ({tuples:,} tuples), each competitor in a child process "
                   "(the difference of its runs over the first 40 and the first 10 seconds).")
    return {"results": results}


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--child":
        child(argv[1], argv[2], int(argv[3]))
        return 0
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="seconds of stream (1,000 tuples each)")
    p.add_argument("--reps", type=int, default=5, help="alternated rounds")
    p.add_argument("--rate", type=int, default=1000,
                   help="tuples per second of stream (window ends do not grow with it)")
    p.add_argument("--instructions", action="store_true", help="also instructions per tuple (valgrind)")
    p.add_argument("--no-final", dest="final", action="store_false",
                   help="skip the long sliding windows (final aggregation) case")
    p.add_argument("--no-tumbling", dest="tumbling", action="store_false", help="skip the tumbling windows case")
    p.add_argument("--final-seconds", type=float, default=30.0, help="seconds of stream of the final case")
    p.add_argument("--monoid", action="append", choices=list(MONOIDS),
                   help="a monoid to run (repeatable; default: " + ", ".join(DEFAULT) + ")")
    args = p.parse_args(argv)
    names = args.monoid or DEFAULT
    seconds, reps = (4.0, 1) if args.quick else (args.seconds, args.reps)
    run = Run(NAME, args, {"seconds": seconds, "reps": reps, "rate": args.rate, "windows": 1000,
                           "compiled": typed_ingest.COMPILED, "monoids": names})
    rows: list = []
    if args.tumbling:
        out = run.experiment("stream", lambda: cell(run, seconds, reps, args.rate, names))
        run.data["results"] = out["results"]
        rows += [["tumbling", e["monoid"], c, round(e[f"{c}_tps"])] for e in out["results"] for c in competitors(e["monoid"])]
    if args.final:
        final_seconds, n = (2.0, 100) if args.quick else (args.final_seconds, 1000)
        out = run.experiment("final", lambda: final_cell(run, final_seconds, reps, args.rate, names, n))
        run.data["final"] = out["results"]
        rows += [[f"sliding, final {e['final']}", e["monoid"], c, round(e[f"{c}_tps"])]
                 for e in out["results"] for c in FINAL_COMPETITORS]
    if args.instructions:
        run.data["instructions"] = run.experiment("instructions", lambda: instructions(run, names))["results"]
    run.finish(["case", "monoid", "competitor", "tuples_per_s"], rows)
    run.write_markdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
