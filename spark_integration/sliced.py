"""The fast batch plan: Spark folds the events into slices, one Python stage per
partition makes every query's windows from them (see :mod:`spark_integration.slicing`
and :mod:`spark_integration.columnar`).

    events -> groupBy(keys, pane).agg(slice partials)   Spark, map-side combined
           -> repartition(keys).mapInArrow(Stage)        the windows of every query
           -> select(keys, window, aggregations)         Spark's schema

A lone tumbling window stops after the first line: its slices are its windows. With a
session among the queries the events are repartitioned by key first and the slices folded
after that one shuffle (see :func:`plan`).
"""

from __future__ import annotations

from typing import Any, Sequence

from spark_integration.columnar import END, NAME, START, Query, Stage
from spark_integration.slicing import (HIGH, PACKED, PANE, PART, PICKS, SEQ, Sliced, field, final, merged,
                                      merged_inputs, ordering, partials, remergeable, shared_columns, times)


#: A lone sliding window of at most this many windows per slice (size/slide) is aggregated again
#: by Spark from its slices; above it, the Python stage makes the windows. Which is faster depends
#: on the events per slice, which the plan cannot know: measured on 2M events, 100 keys (seconds,
#: re-aggregated / stage), at 10 and 0.5 events/s/key: 60 s/30 s 0.37/0.47 and 0.91/0.97; 60 s/10 s
#: 0.63/0.77 and 2.31/1.68; 5 s/1 s 1.28/1.22 and 10.2/3.78. The bound keeps the smaller worst case.
RESLICE = 2


def grid(queries: Sequence[Query]) -> tuple[int, int]:
    """The slices' length P and origin: every window edge is ``origin + k * P``."""
    from mta.columnar import grid as columnar_grid

    return columnar_grid([q.spec() for q in queries])


def plan(df: Any, keys: list[str], time: Any, sliced: list[Sliced], queries: list[Query], named: bool,
         late: bool) -> Any:
    """The stage's output: keys, [window_name], START, END (microseconds), the
    aggregations, [late]. ``time``: the event time in microseconds (a Column)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType, _parse_datatype_string

    P, origin = grid(queries)
    inputs = sorted({c for s in sliced for c in s.inputs} - set(keys))
    ordered = any(s.kind in PICKS for s in sliced)  # their ties go to the oldest: the input's row order
    # the row number before the filter: a filter below it could be pushed under the input's own
    # shuffle (a round-robin repartition) and deal the rows, so number them, differently
    events = df.select(*keys, time.alias("mta_time"), *inputs,
                       *([F.monotonically_increasing_id().alias(SEQ)] if ordered else [])).where("mta_time IS NOT NULL")
    t = F.col("mta_time")
    pane = F.expr(f"((mta_time - {origin}) - pmod(mta_time - {origin}, {P})) div {P}").alias(PANE)
    late_column = [F.lit(0).cast("bigint").alias("late")] if late else []
    lone = queries[0] if len(queries) == 1 else None
    packed = [i for i, s in enumerate(sliced) if s.kind in PACKED]
    if lone is not None and not lone.session and lone.size == lone.slide and not packed:
        # tumbling: Spark's own aggregates
        start = F.col(PANE) * P + origin
        return (events.groupBy(*keys, pane).agg(*[final(s, t) for s in sliced])
                .select(*keys, *([F.lit(lone.name).alias(NAME)] if named else []), start.alias(START),
                        (start + P).alias(END), *[s.name for s in sliced], *late_column))
    # Sessions: the events go to their key's partition first, and the slices are folded there,
    # so one shuffle serves both (no map-side combine): measured on 2M events, 100 keys, a 30 s
    # gap (seconds, this plan / slices shuffled twice / Spark's session_window): 2.06 / 3.29 /
    # 3.00 at 0.02 events/s/key (a slice is about one event), 1.23 / 1.49 / 3.20 at 0.5, and
    # 1.09 / 0.74 / 3.01 at 10: the smaller worst case. Time windows keep the map-side combine:
    # there the same trade loses at 10 events/s/key (BENCHMARKS.md, issue #19).
    sessions = any(q.session for q in queries)
    if sessions:
        events = events.repartition(*keys) if keys else events.repartition(1)
    columns = shared_columns(sliced)
    fields = [c for i, s in enumerate(sliced) for f, c in partials(s, i, t).items()
              if s.kind in PICKS or columns[(i, f)] == field(i, f)]  # each shared field once
    if sessions:
        fields += times(t)
    if packed:  # folded by ORDER per input partition: a hash aggregation (see slicing.ORDER)
        events = events.select("*", *ordering(t, P, origin))
        parts = [c for c in (PART, HIGH) if c in events.columns]
        slices = events.groupBy(*keys, pane, *parts).agg(*fields)  # the stage reads PART, HIGH, o, v
    else:
        slices = events.groupBy(*keys, pane).agg(*fields)
    if lone is not None and not lone.session and lone.size // lone.slide <= RESLICE and \
            all(map(remergeable, sliced)):
        # few windows per slice: each slice goes to its size/slide windows and Spark aggregates them
        # again (an Expand of slices, not of events), with no Python stage (measured faster)
        first = F.col(PANE) * P + origin - lone.size + P  # the earliest window start holding the slice
        first = first + F.pmod(F.lit(lone.offset) - first, F.lit(lone.slide))
        last = F.col(PANE) * P + origin
        starts = F.explode(F.sequence(first, last - F.pmod(last - F.lit(lone.offset), F.lit(lone.slide)),
                                      F.lit(lone.slide)))
        spread = slices.select(*keys, starts.alias(START), *[f for i in range(len(sliced))
                                                              for f in merged_inputs(sliced[i], i, columns)])
        start = F.try_add(F.col(START), F.lit(0))  # nullable, as the window() struct's fields are
        return (spread.groupBy(*keys, START).agg(*[merged[s.kind](s, i) for i, s in enumerate(sliced)])
                .select(*keys, *([F.lit(lone.name).alias(NAME)] if named else []), start.alias(START),
                        (start + lone.size).alias(END), *[s.name for s in sliced], *late_column))
    schema = StructType([df.schema[k] for k in keys]
                        + ([StructField(NAME, StringType(), False)] if named else [])
                        + [StructField(START, LongType()), StructField(END, LongType())]
                        + [StructField(s.name, _parse_datatype_string(s.result), s.kind != "count") for s in sliced]
                        + ([StructField("late", LongType())] if late else []))
    stage = Stage(keys, sliced, list(queries), P, origin, named, late)
    spread = slices if sessions else slices.repartition(*keys) if keys else slices.repartition(1)
    return spread.mapInArrow(stage, schema)
