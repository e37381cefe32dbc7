"""The Spark operator's per-key engine on micro-batches (issue #16), without Spark: the
held-back window (events held back until the watermark, stragglers folded per open
window: ``KeyWindow``) against windows whose events go into panes as they come
(``PaneWindow``: sorted pane lists and an in-order sweep), alternating in one process.

One key's stream: ``rate`` events per second over an hour of event time, random
values, micro-batches of 10 s of arrival time, watermark 10 s behind the newest
event. *In order*: events arrive at their event time. *Out of order*: each arrives
after a random lag of 0-30 s (some miss their windows and are late). Each
micro-batch does what ``MTAProcessor`` does with a key: unpack its state, catch up to
the previous watermark, add the batch's events, advance to the batch's watermark,
pack the state. The *batch* input is ``applyInPandas``'s run: every event at once,
then everything reported. Aggregations: sum, count, min, max, avg (commutative: the
operator's pane lists take commutative monoids only).

    python -m benchmarks.spark_out_of_order            # ~2 min
    python -m benchmarks.spark_out_of_order --quick    # smoke run
"""

from __future__ import annotations

import math
import random
import statistics
import sys
import time
from typing import Any, Callable

from benchmarks import common

SECOND = 1_000_000
BATCH, DELAY, LAG = 10 * SECOND, 10 * SECOND, 30 * SECOND
SHAPES = [(60, 60), (60, 10), (60, 1), (600, 10)]  # (size, slide) in seconds
AGGS = {"s": ("v", "sum"), "n": ("v", "count"), "lo": ("v", "min"), "hi": ("v", "max"), "a": ("v", "avg")}


def stream(rate: float, seconds: int, disorder: bool, seed: int = 7) -> list[list[tuple[int, int]]]:
    """Micro-batches of (event time µs, value), in arrival order."""
    rng = random.Random(seed)
    events = []
    for i in range(round(rate * seconds)):
        t = int(i / rate * SECOND) + rng.randrange(SECOND)
        arrival = t + (rng.randrange(LAG) if disorder else 0)
        events.append((arrival, t, rng.randrange(1000)))
    events.sort()
    batches: dict[int, list[tuple[int, int]]] = {}
    for arrival, t, v in events:
        batches.setdefault(arrival // BATCH, []).append((t, v))
    return [batches.get(n, []) for n in range(max(batches) + 1)]


def lifted(aggs: Any, values: list[int]) -> list[Any]:
    import pandas as pd

    return aggs.lift(pd.DataFrame({"mta_in_v": values, "mta_null_v": [False] * len(values)}))


def streaming(make: Callable[..., Any], monoid: Any, windowing: Any, batches: list[tuple[list, list]]
              ) -> tuple[float, list]:
    """Seconds for the micro-batches (each through a state round trip), and the rows."""
    from kvs import codec

    rows, saved, previous, newest = [], None, 0, -math.inf
    with common.gc_paused():
        started = time.perf_counter()
        for times, values in batches:
            watermark = max(previous, newest - DELAY)  # this batch's (Spark: from the batches before it)
            window = make(monoid, windowing, codec.unpack(saved) if saved else None)
            if previous > window.done:
                rows += window.advance(previous)
            if times:
                window.add(times, values)
                newest = max(newest, max(times))
            if watermark > window.done:
                rows += window.advance(watermark)
            window.next_report()
            saved = codec.pack(window.state())
            previous = watermark
        return time.perf_counter() - started, rows


def batch(make: Callable[..., Any], monoid: Any, windowing: Any, times: list[int], values: list[Any]
          ) -> tuple[float, list]:
    with common.gc_paused():
        started = time.perf_counter()
        window = make(monoid, windowing)
        window.add(times, values)
        rows = window.advance(math.inf)
        return time.perf_counter() - started, rows


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--rounds", type=int, default=None, help="alternating rounds (full: 3, quick: 1)")
    args = p.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    seconds = 600 if args.quick else 3600
    rates = [10.0] if args.quick else [1.0, 10.0]
    run_ = common.Run("spark_out_of_order", args, {"seconds": seconds, "rates": rates, "shapes": SHAPES,
                                                   "batch_s": BATCH / SECOND, "delay_s": DELAY / SECOND,
                                                   "lag_s": LAG / SECOND, "rounds": rounds})

    from mta.watermarked import KeyWindow, PaneWindow, Windowing
    from spark_integration.aggregations import parse

    paths = {"held back": KeyWindow, "pane lists": PaneWindow}
    aggs = parse(AGGS, {"v": "bigint"})
    table, data = [], []
    for rate in rates:
        inputs = {}
        for disorder in (False, True):
            pieces = stream(rate, seconds, disorder)
            inputs["out of order" if disorder else "in order"] = [
                ([t for t, _ in b], lifted(aggs, [v for _, v in b])) for b in pieces]
        everything = sorted((t, v) for b in stream(rate, seconds, False) for t, v in b)
        inputs["batch"] = ([t for t, _ in everything], lifted(aggs, [v for _, v in everything]))
        for size, slide in SHAPES:
            windowing = Windowing(size=size * SECOND, slide=slide * SECOND)
            for case, feed in inputs.items():
                times: dict[str, list[float]] = {name: [] for name in paths}
                results = {}
                for _ in range(rounds):
                    for name, make in paths.items():  # alternating
                        if case == "batch":
                            took, results[name] = batch(make, aggs.monoid, windowing, *feed)
                        else:
                            took, results[name] = streaming(make, aggs.monoid, windowing, feed)
                        times[name].append(took)
                held, lists = (statistics.median(times[name]) for name in paths)
                events = len(feed[0]) if case == "batch" else sum(len(t) for t, _ in feed)
                row = [rate, f"{size}/{slide}", case, events, held, lists, held / lists,
                       "yes" if results["held back"] == results["pane lists"] else "NO"]
                run_.log(" ".join(map(str, row)))
                table.append(row)
                data.append(dict(zip(["rate", "size_slide", "case", "events", "held_back_s", "lists_s", "speedup",
                                      "same_rows"], row)))
    headers = ["events/s/key", "size/slide (s)", "input", "events", "held back (s)", "pane lists (s)",
               "held back / lists", "same rows"]
    run_.table(f"One key, {seconds} s of events, micro-batches of {BATCH // SECOND} s, watermark {DELAY // SECOND} s, "
               f"out of order: lag 0-{LAG // SECOND} s; median of {rounds} alternating rounds",
               headers, table)
    run_.data["results"] = data
    run_.finish(headers, table)
    return 0 if all(r["same_rows"] == "yes" for r in data) else 1


if __name__ == "__main__":
    sys.exit(main())
