"""The operator's fast path, Python's half: one call per partition turns the slices
Spark folded (:mod:`spark_integration.slicing`) into the windows of every query,
with the array kernels of :mod:`mta.columnar`; Python runs per column and query,
not per event, slice or window.

The partition holds every slice of its keys (the slices are repartitioned by key).
Keys become integer groups, slices are ordered by (group, pane), each query's
windows come from :func:`mta.columnar.sliding` (tumbling and sliding windows, on
the query's own panes: :func:`mta.columnar.coarsen`) or
:func:`mta.columnar.sessions`, and the results go out as Arrow columns of Spark's
result types: values gathered from the slices (first, last, min_by, max_by) keep
the input's type exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from spark_integration.slicing import HIGH, PACKED, PANE, PART, PICKS, Sliced, field, shared_columns, unpacked

#: Columns of the stage's output besides the keys and the aggregations.
NAME, START, END = "window_name", "mta_start", "mta_end"


@dataclass(frozen=True)
class Query:
    """One window query in microseconds: sliding (tumbling when ``size == slide``) or a
    session (``gap``)."""

    name: str
    size: int = 0
    slide: int = 0
    offset: int = 0
    gap: int = 0

    @property
    def session(self) -> bool:
        return self.gap > 0

    def spec(self) -> tuple:
        return ("session", self.gap) if self.session else ("sliding", self.size, self.slide, self.offset)


@dataclass(frozen=True)
class Stage:
    """What the stage needs on an executor (pickled with the function)."""

    keys: list[str]
    sliced: list[Sliced]
    queries: list[Query]
    pane: int  # P: the slices' length
    origin: int  # slice k covers [origin + k * P, origin + (k + 1) * P)
    named: bool  # add the window_name column
    late: bool  # add a late column (0: a batch has no late events)

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from mta.columnar import KINDS
        from mta.columnar.windows import runs

        table = _table(batches)
        if table is None:
            return
        group = _groups(table, self.keys)
        pane = table[PANE].to_numpy()
        order = np.lexsort((pane, group))
        table, group, pane = table.take(pa.array(order)), group[order], pane[order]
        first = np.searchsorted(group, np.arange(group[-1] + 1))  # each group's first row
        columns = shared_columns(self.sliced)
        cols = [_partials(s, i, table, columns, pane, self.pane, self.origin) for i, s in enumerate(self.sliced)]
        spans = (table["mta_t_lo"].to_numpy(), table["mta_t_hi"].to_numpy()) if "mta_t_lo" in table.column_names \
            else None
        starts = runs(group, pane)
        if len(starts) < len(pane):  # first/last fold a pane per input partition (slicing.ORDER): one slice each
            cols = [_one_per_pane(KINDS[s.kind], c, starts) for s, c in zip(self.sliced, cols)]
            if spans is not None:
                spans = (np.minimum.reduceat(spans[0], starts), np.maximum.reduceat(spans[1], starts))
            group, pane = group[starts], pane[starts]
        for query in self.queries:
            windows, start, end = self._windows(query, cols, group, pane, spans)
            if not len(windows.group):
                continue
            rows = pa.array(first[windows.group])
            out = {k: table[k].take(rows) for k in self.keys}
            if self.named:
                out[NAME] = pa.array(np.full(len(start), query.name, dtype=object), pa.string())
            out[START], out[END] = pa.array(start, pa.int64()), pa.array(end, pa.int64())
            for i, s in enumerate(self.sliced):
                out[s.name] = _lowered(s, i, windows.cols[i], table)
            if self.late:
                out["late"] = pa.array(np.zeros(len(start), dtype=np.int64))
            yield from pa.table(out).to_batches(max_chunksize=1 << 16)

    def _windows(self, query: Query, cols: list[dict], group: np.ndarray, pane: np.ndarray,
                 spans: tuple[np.ndarray, np.ndarray] | None) -> tuple[Any, np.ndarray, np.ndarray]:
        """The query's windows and their start and end times (microseconds). ``spans``: each
        slice's first and last event times (sessions)."""
        from mta.columnar import KINDS, in_panes, sessions, sliding

        kinds = [KINDS[s.kind] for s in self.sliced]
        if query.session:  # no slice is longer than the gap: each lies in one session
            w = sessions(kinds, cols, group, *spans, query.gap)
            return w, w.start, w.end
        w = sliding(kinds, cols, group, pane, *in_panes(query.spec(), self.pane, self.origin))
        return w, self.origin + w.start * self.pane, self.origin + w.end * self.pane


def _one_per_pane(kind: Any, cols: dict[str, np.ndarray], starts: np.ndarray) -> dict[str, np.ndarray]:
    """The slices of each pane (runs from ``starts``) folded into one. A pick's rows are first
    put in its (time, seq) order within each pane, the order :meth:`Kind.reduce` expects."""
    from mta.columnar.kinds import segment_ids

    if "seq" in cols:
        order = np.lexsort((cols["seq"], cols["t"], segment_ids(starts, len(cols["seq"]))))
        cols = {f: c[order] for f, c in cols.items()}
    return kind.reduce(cols, starts)


def _table(batches: Iterator[Any]) -> Any:
    """A partition's batches as one Arrow table, or None when it has no row (an empty
    partition gets no batch at all)."""
    import pyarrow as pa

    batches = list(batches)
    if not batches or not any(b.num_rows for b in batches):
        return None
    return pa.Table.from_batches(batches)


def _groups(table: Any, keys: list[str]) -> np.ndarray:
    """A dense int64 group per row: rows with equal keys (nulls equal to nulls) share one."""
    if not keys:
        return np.zeros(table.num_rows, dtype=np.int64)
    codes = [table[k].combine_chunks().dictionary_encode().indices.fill_null(-1).to_numpy().astype(np.int64)
             for k in keys]
    if len(codes) == 1:
        _, group = np.unique(codes[0], return_inverse=True)
    else:
        _, group = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    return group.reshape(-1).astype(np.int64)


def _column(table: Any, name: str, fill: Any = 0) -> np.ndarray:
    """A numeric slice column as numpy, nulls (no value in the slice) as ``fill``."""
    column = table[name].combine_chunks()
    if column.null_count:
        column = column.fill_null(fill)
    return column.to_numpy(zero_copy_only=False)


def _partials(s: Sliced, i: int, table: Any, columns: dict[tuple[int, str], str], pane: np.ndarray, P: int,
              origin: int) -> dict[str, np.ndarray]:
    """Aggregation ``i``'s slice partials as the fields of its mta.columnar kind (``columns``:
    where each is, :func:`spark_integration.slicing.shared_columns`; ``pane``: each slice's, of
    ``P`` microseconds from ``origin``)."""
    from mta.columnar import KINDS

    kind = KINDS[s.kind]
    if s.kind in PACKED:  # ORDER's min (or max) and its value: the event's time and SEQ unpacked
        n = np.asarray(table[field(i, "o")].combine_chunks().is_valid()).astype(np.int64)
        high = _column(table, HIGH) if HIGH in table.column_names else None
        t, seq = unpacked(_column(table, field(i, "o")), _column(table, PART), high, pane, P, origin)
        return {"v": np.arange(len(n), dtype=np.int64), "t": t, "seq": seq, "n": n,
                "vnull": np.asarray(table[field(i, "v")].combine_chunks().is_null())}
    if s.kind in PICKS:
        r = table[field(i, "r")].combine_chunks()
        n = np.asarray(r.is_valid()).astype(np.int64)
        t, seq = _struct(r, "t"), _struct(r, "seq")
        sign = -1 if s.kind == "max_by" else 1  # max_by's struct negates (t, seq): ties go to the oldest
        cols = {"v": np.arange(len(r), dtype=np.int64), "vnull": np.asarray(r.field("v").is_null()),
                "t": sign * t, "seq": sign * seq, "n": n}
        if s.kind in ("min_by", "max_by"):
            cols["o"] = r.field("o").to_numpy(zero_copy_only=False)
        return cols
    n = _column(table, columns[(i, "n")])
    if s.kind == "count":
        return {"n": n}
    if s.kind in ("sum", "mean"):
        total = _column(table, columns[(i, "s")])
        if total.dtype.kind == "i" and float(np.abs(total.astype(np.float64)).sum()) >= 2.0 ** 62:
            total = np.array([int(v) for v in total.tolist()], dtype=object)  # no window sum may wrap
        return {"s": total, "n": n}
    if s.kind in ("min", "max"):
        m = _column(table, columns[(i, "m")])
        empty = n == 0
        if empty.any():
            m = np.where(empty, kind.identity(1, {"m": m, "n": n})["m"][0], m)
        return {"m": m, "n": n}
    return _moments(n, *(_column(table, columns[(i, f)], 0.0) for f in ("ref", "mean", "m2")),
                    s.source not in ("float", "double"))


def _moments(n: np.ndarray, ref: np.ndarray, total: np.ndarray, m2: np.ndarray, integral: bool
             ) -> dict[str, np.ndarray]:
    """A variance's slice partials from Spark's (count, ref, sum of the values less ref, m2)
    (:func:`spark_integration.slicing._moments`): the mean relative to ref is that sum over n.
    Integral ones move their ref by the whole part of that mean, so that the mean left is
    within 1/2 of it (a bucket's base is up to 2**16 away: its ulp would go into the merges):
    exact while the refs and sums are integers below 2**53."""
    safe = np.maximum(n, 1)
    if integral:
        with np.errstate(all="ignore"):
            shift = np.where(n > 0, np.round(total / safe), 0.0)
            moved = ref + shift
        fits = np.isfinite(moved) & (np.abs(moved) < 2.0**53) & (np.abs(total) < 2.0**53)
        ref = np.where(fits, moved, ref)
        total = np.where(fits, total - n * shift, total)  # exact: integers below 2**53
    with np.errstate(all="ignore"):
        mean = np.where(n > 0, total / safe, 0.0)
    return {"n": n, "ref": ref, "mean": mean, "m2": m2}


def _struct(r: Any, name: str) -> np.ndarray:
    child = r.field(name)
    return (child.fill_null(0) if child.null_count else child).to_numpy(zero_copy_only=False).astype(np.int64)


def _lowered(s: Sliced, i: int, cols: dict[str, np.ndarray], table: Any) -> Any:
    """The windows' results of aggregation ``i`` as an Arrow array of its Spark type."""
    import pyarrow as pa

    from mta.columnar import KINDS

    values, nulls = KINDS[s.kind].lower(cols)
    if s.kind in PICKS:  # the index of the slice holding the value
        source = table[field(i, "v")].combine_chunks() if s.kind in PACKED else \
            table[field(i, "r")].combine_chunks().field("v")
        return source.take(pa.array(np.where(nulls, 0, values).astype(np.int64), mask=nulls))
    return arrow_result(s, values, nulls)


def arrow_result(s: Sliced, values: np.ndarray, nulls: np.ndarray) -> Any:
    """Results (numbers; days or microseconds for times; Python objects in object arrays)
    as an Arrow array of aggregation ``s``'s Spark type. A bigint beyond 64 bits raises
    ArithmeticError, as Spark's ANSI mode fails the query."""
    import pyarrow as pa

    from spark_integration.aggregations import _arrow_type

    arrow = _arrow_type(s.result)
    try:
        if values.dtype == object:
            if s.result in ("date", "timestamp", "timestamp_ntz"):
                values = np.where(nulls, 0, values).astype(np.int64)
            else:
                return pa.array([None if z else v for v, z in zip(values.tolist(), nulls.tolist())], arrow)
        array = pa.array(values, mask=nulls)
        if array.type != arrow:
            array = array.cast(pa.int32()).cast(arrow) if s.result == "date" else array.cast(arrow, safe=False)
        return array
    except (OverflowError, pa.ArrowInvalid) as error:
        raise ArithmeticError(f"aggregations[{s.name!r}]: a {s.result} result overflows: {error} "
                              f"(Spark's ANSI mode fails the query too)") from None


class KeyColumns:
    """Streaming: one key's windows of every query over shared slices
    (:class:`mta.columnar.state.KeyState`), fed a micro-batch's pandas frame at a time:
    each event's values are lifted by column, never one by one."""

    def __init__(self, sliced: list[Sliced], queries: list[Query], saved: bytes | None) -> None:
        from mta.columnar import KINDS, grid
        from mta.columnar.state import KeyState

        self.sliced, self.queries = sliced, queries
        self.kinds = [KINDS[s.kind] for s in sliced]
        pane, origin = grid([q.spec() for q in queries])
        data, self.seq = (None, 0) if saved is None else _unpack(saved)
        self.state = KeyState(self.kinds, [q.spec() for q in queries], pane, origin, data)
        self.done = self.state.done

    def save(self) -> bytes:
        from kvs import codec

        return codec.pack([self.state.snapshot(), self.seq])

    def add(self, times: np.ndarray, read: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Events into their slices: their times and, per input column, (values, null mask);
        the mask of those late for every query."""
        seq = np.arange(self.seq, self.seq + len(times), dtype=np.int64)
        self.seq += len(times)
        cols = [kind.lift(*read[s.inputs[0]], times, seq, *(read[s.inputs[1]] if len(s.inputs) > 1 else ()))
                for kind, s in zip(self.kinds, self.sliced)]
        return self.state.add(times, seq, cols)

    def add_slices(self, times: np.ndarray, events: np.ndarray, cols: list[dict[str, np.ndarray]]) -> None:
        """Slices folded before the state (:class:`Fold`): a time in each one's pane, its event
        count and its partials."""
        seq = np.arange(self.seq, self.seq + len(times), dtype=np.int64)
        self.seq += len(times)
        self.state.add(times, seq, cols, events)

    def advance(self, until: float) -> list[tuple[Query, Any]]:
        out = [(q, w) for q, w in zip(self.queries, self.state.advance(until)) if len(w.start)]
        self.done = self.state.done
        return out

    def next_report(self) -> int | None:
        return self.state.next_report()

    @property
    def late(self) -> list[int]:
        """The events late so far, per query."""
        return list(self.state.late)


def _unpack(saved: bytes) -> tuple[bytes, int]:
    from kvs import codec

    data, seq = codec.unpack(saved)
    return data, seq


def _widened(values: np.ndarray) -> np.ndarray:
    """Numbers as the kernels take them: float64 or int64 (times are integers already)."""
    return values.astype(np.float64 if values.dtype.kind == "f" else np.int64, copy=False)


def _values(frame: Any, column: str) -> tuple[np.ndarray, np.ndarray]:
    """An input column of the frame as (values, null mask): numbers and times come as a
    null-free value column and a mask (see aggregations._Reader); others as objects."""
    value, mask = f"mta_in_{column}", f"mta_null_{column}"
    if value in frame:
        return _widened(frame[value].to_numpy()), frame[mask].to_numpy(dtype=bool)
    values = frame[column].to_numpy(dtype=object)
    return values, np.asarray(frame[column].isna().to_numpy(), dtype=bool)


#: Kinds a stream folds into slices before its state (:class:`Fold`): those that need no
#: arrival order (first/last/min_by/max_by break ties by it, across micro-batches).
ORDER_FREE = frozenset({"count", "sum", "mean", "min", "max", "var_samp", "var_pop", "stddev_samp", "stddev_pop"})
#: Folded slices' event counts (the late counts weigh each slice by it).
EVENTS = "mta_events"


@dataclass(frozen=True)
class Fold:
    """Streaming, before the state: each micro-batch partition's events folded into one
    slice per key and pane (``mapInArrow``), so ``transformWithStateInPandas``, whose cost
    is per row (Arrow to pandas, grouping), takes slices, not events (BENCHMARKS.md,
    issue #19). Only for :data:`ORDER_FREE` kinds. Lateness is unchanged: it depends on an
    event's pane only (every window edge is a pane edge), and :data:`EVENTS` keeps the
    late counts per event. An integer sum that int64 cannot hold goes on as its events."""

    keys: list[str]  # the grouping columns, kept as they are
    time: str
    sliced: list[Sliced]
    pane: int
    origin: int

    def schema(self, prepared: Any) -> Any:
        """The output's Spark schema: the grouping columns, the time, :data:`EVENTS`, the partials."""
        from pyspark.sql.types import DoubleType, LongType, StructField, StructType

        out = [prepared.schema[k] for k in self.keys] + [StructField(self.time, LongType()),
                                                          StructField(EVENTS, LongType(), False)]
        columns = shared_columns(self.sliced)
        for i, s in enumerate(self.sliced):
            for name, array in self._lift(s, 0, {}).items():
                if columns[(i, name)] == field(i, name):  # its column's first field
                    out.append(StructField(field(i, name), DoubleType() if array.dtype.kind == "f" else LongType(),
                                           False))
        return StructType(out)

    def _lift(self, s: Sliced, n: int, read: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
        from mta.columnar import KINDS

        values, nulls = read.get(s.inputs[0]) or \
            (np.zeros(n, np.float64 if s.source in ("float", "double") else np.int64), np.zeros(n, bool))
        return KINDS[s.kind].lift(values, nulls, np.zeros(n, np.int64), np.zeros(n, np.int64))

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from mta.columnar import KINDS
        from mta.columnar.kinds import segment_ids
        from mta.columnar.windows import runs

        table = _table(batches)
        if table is None:
            return
        group = _groups(table, self.keys)
        times = table[self.time].to_numpy()
        pane = (times - self.origin) // self.pane
        order = np.lexsort((pane, group))
        table, group, pane, times = table.take(pa.array(order)), group[order], pane[order], times[order]
        read = {c: _arrow_values(table, c) for c in {s.inputs[0] for s in self.sliced}}
        kinds = [KINDS[s.kind] for s in self.sliced]
        lifted = [self._lift(s, table.num_rows, read) for s in self.sliced]
        starts = runs(group, pane)  # one slice per (key, pane)
        cols = [kind.reduce(c, starts) for kind, c in zip(kinds, lifted)]
        events = np.diff(np.append(starts, table.num_rows))
        wide = np.zeros(len(starts), bool)  # slices whose integer sum int64 cannot hold
        for c in cols:
            for array in c.values():
                if array.dtype == object:  # Python ints: the sums a bound could not prove exact in int64
                    wide |= ~((array >= -2 ** 63) & (array < 2 ** 63))
        if wide.any():  # those slices go on as their events (each fits)
            raw = wide[segment_ids(starts, table.num_rows)]
            rows = np.concatenate([starts[~wide], np.flatnonzero(raw)])
            events = np.concatenate([events[~wide], np.ones(int(raw.sum()), np.int64)])
            cols = [{f: np.concatenate([c[f][~wide], lift[f][raw]]) for f in c} for c, lift in zip(cols, lifted)]
        else:
            rows = starts
        out = {k: table[k].take(pa.array(rows)) for k in self.keys}
        out[self.time] = pa.array(times[rows], pa.int64())
        out[EVENTS] = pa.array(events, pa.int64())
        columns = shared_columns(self.sliced)
        for i, c in enumerate(cols):
            for name, array in c.items():
                if columns[(i, name)] == field(i, name):
                    out[field(i, name)] = pa.array(array.astype(np.float64 if array.dtype.kind == "f" else np.int64))
        yield from pa.table(out).to_batches(max_chunksize=1 << 16)


def _arrow_values(table: Any, column: str) -> tuple[np.ndarray, np.ndarray]:
    """An input column of the Arrow table as (values, null mask), as :func:`_values` reads a frame."""
    value, mask = f"mta_in_{column}", f"mta_null_{column}"
    if value in table.column_names:
        return _widened(table[value].to_numpy()), table[mask].to_numpy()
    data = table[column]
    return np.zeros(len(data), np.int64), np.asarray(data.is_null().to_numpy(zero_copy_only=False), dtype=bool)


class Bucket:
    """Streaming: the keys of one bucket (``pmod(xxhash64(keys), buckets)``), each a
    :class:`KeyColumns`, under one state value and one timer. Every state access of
    ``transformWithStateInPandas`` is a round trip to the JVM, and each call of it costs
    a pandas frame: a call per bucket and micro-batch, not per key, is what keeps a
    stream of many keys cheap (measured: BENCHMARKS.md, issue #19). Every key of the
    bucket moves with the watermark at every call."""

    def __init__(self, sliced: list[Sliced], queries: list[Query], keys: list[str], buckets: int,
                 saved: bytes | None) -> None:
        from kvs import codec

        self.sliced, self.queries, self.key_columns, self.buckets = sliced, queries, keys, buckets
        self.keys: dict[tuple, KeyColumns] = {}
        self.reached: float = -np.inf  # the last until
        self.frames: list[Any] = []  # the call's input, split by key once (advance)
        if saved is not None:
            entries, self.reached, written = codec.unpack(saved)
            if written != buckets:
                raise ValueError(f"this query's state was written with its keys in {written} buckets (its "
                                 f"spark.sql.shuffle.partitions then), now {buckets}: restart it with "
                                 f"spark.sql.shuffle.partitions={written}, or from a new checkpoint")
            self.keys = {tuple(key): KeyColumns(sliced, queries, data) for key, data in entries}

    def save(self) -> bytes:
        from kvs import codec

        return codec.pack([[[list(key), window.save()] for key, window in self.keys.items()], self.reached,
                           self.buckets])

    @property
    def done(self) -> float:
        """The last ``until``; -inf while frames wait to be taken in, so that the next
        :meth:`advance` takes them whatever its ``until``."""
        return -np.inf if self.frames else self.reached

    def add(self, frame: Any) -> None:
        """A frame of the bucket's events, of any of its keys (taken in by :meth:`advance`)."""
        self.frames.append(frame)

    def _take_in(self, time: str) -> None:
        """The frames' events into their keys' slices: one split by key for all of them."""
        import pandas as pd

        frame = self.frames[0] if len(self.frames) == 1 else pd.concat(self.frames, ignore_index=True)
        self.frames = []
        codes, uniques = pd.MultiIndex.from_frame(frame[self.key_columns]).factorize() \
            if len(self.key_columns) > 1 else pd.factorize(frame[self.key_columns[0]], use_na_sentinel=False)
        order = np.argsort(codes, kind="stable")  # each key's rows together, in arrival order
        bounds = np.flatnonzero(np.diff(codes[order])) + 1
        times = frame[time].to_numpy(dtype=np.int64)[order]
        folded = EVENTS in frame
        if folded:
            columns = shared_columns(self.sliced)
            events = frame[EVENTS].to_numpy(dtype=np.int64)[order]
            read = {c: frame[c].to_numpy()[order] for c in set(columns.values())}
            parts = [{f: read[c] for (j, f), c in columns.items() if j == i} for i in range(len(self.sliced))]
        else:
            read = {c: tuple(a[order] for a in _values(frame, c)) for c in {c for s in self.sliced for c in s.inputs}}
        for rows in np.split(np.arange(len(order)), bounds):
            key = uniques[codes[order[rows[0]]]]
            key = key if isinstance(key, tuple) else (key,)
            key = tuple(None if k is None or k != k else k for k in key)  # pandas reads a null key as NaN
            window = self.keys.get(key)
            if window is None:
                window = self.keys[key] = KeyColumns(self.sliced, self.queries, None)
                if self.reached > -np.inf:  # a new key starts where the others are (Spark's late rule)
                    window.advance(self.reached)
            lo, hi = rows[0], rows[-1] + 1
            if folded:
                window.add_slices(times[lo:hi], events[lo:hi], [{f: a[lo:hi] for f, a in p.items()} for p in parts])
            else:
                window.add(times[lo:hi], {c: (v[lo:hi], z[lo:hi]) for c, (v, z) in read.items()})

    def advance(self, until: float, time: str = "") -> list[tuple[tuple, Query, Any]]:
        if self.frames:
            self._take_in(time)
        out = [(key, query, w) for key, window in self.keys.items() for query, w in window.advance(until)]
        self.reached = max(self.reached, until)
        return out

    def next_report(self) -> int | None:
        return min((w for w in (window.next_report() for window in self.keys.values()) if w is not None),
                   default=None)

    @property
    def late(self) -> dict[tuple, list[int]]:
        """Per key, its events late so far, per query."""
        return {key: window.late for key, window in self.keys.items()}


def frame(keys: list[str], sliced: list[Sliced], windows: list[tuple[tuple, Query, Any]],
          late: dict[tuple, list[int]], named: bool, queries: list[Query]) -> Any:
    """Streaming output rows: keys, [window_name], START, END, aggregations, and ``late``
    (per key and query, the key's late events so far). Each column is built once, from
    all the windows (one Arrow array per aggregation: pyspark takes no chunked ones)."""
    import pandas as pd
    import pyarrow as pa

    from mta.columnar import KINDS

    counts = [len(w.start) for _, _, w in windows]
    data: dict[str, Any] = {k: [v for (key, _, _), n in zip(windows, counts) for v in [key[i]] * n]
                            for i, k in enumerate(keys)}
    if named:
        data[NAME] = [query.name for (_, query, _), n in zip(windows, counts) for _ in range(n)]
    data[START] = np.concatenate([w.start for _, _, w in windows]).astype(np.int64)
    data[END] = np.concatenate([w.end for _, _, w in windows]).astype(np.int64)
    for i, s in enumerate(sliced):
        array = pa.concat_arrays([arrow_result(s, *KINDS[s.kind].lower(w.cols[i])) for _, _, w in windows])
        data[s.name] = pd.Series(array.to_pandas(types_mapper=pd.ArrowDtype), copy=False)
    data["late"] = np.repeat([late[key][queries.index(query)] for key, query, _ in windows], counts).astype(np.int64)
    return pd.DataFrame(data)
