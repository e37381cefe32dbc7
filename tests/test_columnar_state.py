"""One key's streaming state of the columnar engine (mta.columnar.state.KeyState) against a
naive model of Spark's streaming late rule over events, for several sliding/tumbling queries
sharing one grid of panes: out-of-order and late events, equal times (first/last), batches
without events, int64 sums that overflow into Python ints, and a snapshot round trip before
every call giving the very same state as never snapshotting."""

from __future__ import annotations

import math
import statistics
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, strategies as st

from conftest import hsettings
from mta.columnar import KINDS, grid
from mta.columnar import state as state_module
from mta.columnar.state import KeyState

#: (name, kind, column): the aggregations every state holds; "i" ints (nullable, big ones
#: near 2**63 too), "f" floats (nullable, NaN/inf/-0.0).
AGGS = [("n", "count", "i"), ("s", "sum", "i"), ("hi", "max", "f"), ("lo", "min", "f"), ("first", "first", "i"),
        ("last", "last", "i"), ("lastv", "last_ignore_nulls", "i"), ("by", "max_by", "i"), ("avg", "mean", "f"),
        ("var", "var_samp", "f")]
KIND_LIST = [KINDS[kind] for _, kind, _ in AGGS]


# --------------------------------------------------------------------------- the naive model

def naive(kind: str, events: list[tuple]) -> tuple[object, bool]:
    """(value, null) of ``kind`` over ``events`` ((t, seq, i, f) with None for null), Spark's way."""
    events = sorted(events, key=lambda e: (e[0], e[1]))
    ints = [e[2] for e in events if e[2] is not None]
    floats = [e[3] for e in events if e[3] is not None]
    if kind == "count":
        return len(ints), False
    if kind == "sum":
        return (sum(ints), False) if ints else (None, True)
    if kind in ("max", "min"):
        if not floats:
            return None, True
        nan = [x for x in floats if math.isnan(x)]
        rest = [x for x in floats if not math.isnan(x)]
        if kind == "max":
            return (math.nan if nan else max(rest)), False
        return (min(rest) if rest else math.nan), False
    if kind == "first":
        return events[0][2], events[0][2] is None
    if kind == "last":
        return events[-1][2], events[-1][2] is None
    if kind == "last_ignore_nulls":
        return (ints[-1], False) if ints else (None, True)
    if kind in ("mean", "var_samp"):
        if len(floats) <= (kind == "var_samp"):
            return None, True
        if not all(map(math.isfinite, floats)):  # inf - inf is NaN, an inf alone stays in a mean
            return (sum(floats) if kind == "mean" else math.nan), False
        return (statistics.fmean(floats) if kind == "mean" else statistics.variance(floats)), False
    if kind == "max_by":  # the int at the largest float (NaN largest); ties: the oldest; null orders skipped
        taken = [e for e in events if e[3] is not None]
        if not taken:
            return None, True
        rank = lambda x: (1, 0.0) if math.isnan(x) else (0, x)  # noqa: E731
        best = max(rank(e[3]) for e in taken)
        winner = next(e for e in taken if rank(e[3]) == best)
        return winner[2], winner[2] is None
    raise AssertionError(kind)


class Model:
    """Spark's rule over raw events: an event joins each window of each query that holds it
    and ends after ``done``; late for a query when it has such windows and all are closed;
    ``advance(until)`` reports the windows with events ending by ``until``, once each."""

    def __init__(self, queries: list[tuple]) -> None:
        self.queries, self.done = queries, -math.inf
        self.open: dict[tuple[int, int], list[tuple]] = {}  # (query, start) -> events
        self.late = [0] * len(queries)

    def add(self, events: list[tuple]) -> list[bool]:
        mask = []
        for event in events:
            t, late_all = event[0], True
            for q, (_, size, slide, offset) in enumerate(self.queries):
                starts = range(t - (t - offset) % slide, t - size, -slide)
                taken = [s for s in starts if s + size > self.done]
                for s in taken:
                    self.open.setdefault((q, s), []).append(event)
                self.late[q] += not taken
                late_all &= not taken
            mask.append(late_all)
        return mask

    def advance(self, until: float) -> list[list[tuple]]:
        out: list[list[tuple]] = [[] for _ in self.queries]
        for q, s in sorted(self.open):
            end = s + self.queries[q][1]
            if end <= until:
                events = self.open.pop((q, s))
                out[q].append((s, end, [naive(kind, events) for _, kind, _ in AGGS]))
        self.done = max(self.done, until)
        return out

    def next_report(self) -> int | None:
        return min((s + self.queries[q][1] for q, s in self.open), default=None)


# --------------------------------------------------------------------------- the state under test

def lift(events: list[tuple]) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    times = np.array([e[0] for e in events], dtype=np.int64)
    seq = np.array([e[1] for e in events], dtype=np.int64)
    inulls = np.array([e[2] is None for e in events], dtype=bool)
    ints = np.array([0 if e[2] is None else e[2] for e in events], dtype=np.int64)
    fnulls = np.array([e[3] is None for e in events], dtype=bool)
    floats = np.array([0.0 if e[3] is None else e[3] for e in events], dtype=np.float64)
    cols = []
    for (_, kind, column), k in zip(AGGS, KIND_LIST):
        if kind == "max_by":
            cols.append(k.lift(ints, inulls, times, seq, order=floats, order_nulls=fnulls))
        elif column == "i":
            cols.append(k.lift(ints, inulls, times, seq))
        else:
            cols.append(k.lift(floats, fnulls, times, seq))
    return times, seq, cols


def rows(windows) -> list[list[tuple]]:
    """Each query's windows as (start, end, [(value, null) per aggregation]) in Python values."""
    out = []
    for w in windows:
        assert np.all(w.group == 0) and np.all(np.diff(w.start) > 0)
        lowered = []
        for k, c in zip(KIND_LIST, w.cols):
            values, nulls = k.lower(c)
            lowered.append([(None if null else value, bool(null)) for value, null in zip(values.tolist(),
                                                                                       nulls.tolist())])
        out.append([(s, e, [agg[i] for agg in lowered]) for i, (s, e) in enumerate(zip(w.start.tolist(),
                                                                                     w.end.tolist()))])
    return out


def close(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN, floats up to rounding (means and variances fold in other orders)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return type(a) is type(b) and a == b


def same(got: list[list[tuple]], expected: list[list[tuple]]) -> bool:
    """The same windows (start, end) of each query with close results and equal nulls."""
    return [[(s, e) for s, e, _ in q] for q in got] == [[(s, e) for s, e, _ in q] for q in expected] and all(
        null == want_null and close(value, want)
        for q, want_q in zip(got, expected) for (_, _, aggs), (_, _, wants) in zip(q, want_q)
        for (value, null), (want, want_null) in zip(aggs, wants))


# --------------------------------------------------------------------------- strategies

ints = st.one_of(st.none(), st.integers(-5, 5), st.integers(2**62, 2**63 - 1), st.integers(-2**63, -2**62))
floats = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, -2.0, math.nan, math.inf, -math.inf]),
                   st.floats(-10, 10))


@st.composite
def queries_strategy(draw) -> list[tuple]:
    """1-3 sliding/tumbling queries in a unit of 1-3 µs (so panes can be longer than 1 µs)."""
    unit = draw(st.integers(1, 3))
    out = []
    for _ in range(draw(st.integers(1, 3))):
        slide = draw(st.integers(1, 6))
        size = draw(st.sampled_from([slide, draw(st.integers(slide, 4 * slide))]))
        out.append(("sliding", size * unit, slide * unit, draw(st.integers(-6, 6)) * unit))
    return out


def event_lists(n: int = 8):
    times = st.one_of(st.integers(-15, 60), st.sampled_from([7, 8]))  # many equal times
    return st.lists(st.tuples(times, ints, floats), max_size=n)


@st.composite
def script_strategy(draw) -> list[tuple]:
    """Calls: ("add", [(t, i, f)]) (possibly empty) and ("advance", until), until in any order."""
    calls = draw(st.lists(st.one_of(st.tuples(st.just("add"), event_lists()),
                                    st.tuples(st.just("advance"), st.integers(-20, 70))), max_size=12))
    if draw(st.booleans()):
        calls += [("advance", math.inf), ("add", draw(event_lists(3)))]
    return calls


def numbered(events: list[tuple], seq: int) -> list[tuple]:
    """(t, seq, i, f): arrival numbers go on across batches."""
    return [(t, seq + n, i, f) for n, (t, i, f) in enumerate(events)]


# --------------------------------------------------------------------------- tests

#: KeyState reports windows by gathering their slices or by sliding(): never, by default, always.
GATHER = st.sampled_from([(0, 0), state_module._GATHER, (10**9, 10**9)])


@given(queries_strategy(), script_strategy(), st.randoms(), GATHER)
@hsettings(max_examples=500)
def test_key_state_follows_sparks_late_rule_and_survives_snapshots(queries, script, rng, gather) -> None:
    """Any sequence of add/advance: the reported windows (each once, with every event it took),
    the late masks and counts, next_report, as the model; a state restored from its snapshot
    before every call stays byte for byte the one that never was. Rows come in time order,
    in arrival order, or in any order (their ``seq`` says which arrived first)."""
    with mock.patch.object(state_module, "_GATHER", gather):
        run_script(queries, script, rng)


def run_script(queries, script, rng) -> None:
    pane, origin = grid(queries)
    kept, model, seq = KeyState(KIND_LIST, queries, pane, origin), Model(queries), 0
    restored = KeyState(KIND_LIST, queries, pane, origin)
    for call, argument in script:
        restored = KeyState(KIND_LIST, queries, pane, origin, restored.snapshot())
        if call == "add":
            arrival = rng.choice(["as drawn", "in time order", "rows shuffled"])
            events = numbered(sorted(argument, key=lambda e: e[0]) if arrival == "in time order" else argument, seq)
            if arrival == "rows shuffled":
                rng.shuffle(events)
            seq += len(events)
            expected = model.add(events)
            for state in (kept, restored):
                assert state.add(*lift(events)).tolist() == expected
        else:
            expected = model.advance(argument)
            for state in (kept, restored):
                got = rows(state.advance(argument))
                assert same(got, expected), (got, expected)
        for state in (kept, restored):
            assert state.late == model.late
            assert state.next_report() == model.next_report()
        assert restored.snapshot() == kept.snapshot()


@st.composite
def batches_strategy(draw) -> list[tuple[list[tuple], int]]:
    """Micro-batches: (events, the watermark), watermarks never going back; some batches empty."""
    out, watermark = [], 0
    for _ in range(draw(st.integers(1, 8))):
        watermark += draw(st.integers(0, 15))
        out.append((draw(st.one_of(st.just([]), event_lists(6))), watermark))
    return out


@given(queries_strategy(), batches_strategy(), GATHER)
@hsettings(max_examples=300)
def test_like_the_processor_each_window_in_sparks_batch(queries, batches, gather) -> None:
    """The adapter's use: a batch with events catches up to the previous watermark, adds them
    and advances to its own; a batch without advances only when the key's timer
    (next_report) has come. Every window comes out in the batch Spark reports it in."""
    with mock.patch.object(state_module, "_GATHER", gather):
        run_batches(queries, batches)


def run_batches(queries, batches) -> None:
    pane, origin = grid(queries)
    model, data, seq, previous = Model(queries), None, 0, 0
    model.advance(0)  # W[-1] = 0: windows ending by 1970-01-01 take nothing
    for n, (events, watermark) in enumerate(batches):
        state = KeyState(KIND_LIST, queries, pane, origin, data)
        events = numbered(events, seq)
        seq += len(events)
        model.add(events)
        expected = model.advance(watermark)
        got: list[list[tuple]] = [[] for _ in queries]
        if events:
            got = rows(state.advance(previous))
            state.add(*lift(events))
        wake = state.next_report()
        if events or (wake is not None and wake <= watermark):
            reported = rows(state.advance(watermark))
            got = [a + b for a, b in zip(got, reported)]
        assert same(got, expected), (n, got, expected)
        assert state.late == model.late
        data, previous = state.snapshot(), watermark


def test_snapshot_keeps_python_ints_and_strings() -> None:
    """Object arrays (a sum beyond int64, string values) come back as the same Python values."""
    kinds = [KINDS["sum"], KINDS["first"]]
    state = KeyState(kinds, [("sliding", 10, 10, 0)], 10, 0)
    times, seq = np.array([1, 2, 3]), np.array([0, 1, 2])
    big = np.array([2**63 - 1, 2**63 - 1, 5], dtype=np.int64)
    words = np.array(["b", None, "é"], dtype=object)
    state.add(times, seq, [kinds[0].lift(big, None, times, seq),
                           kinds[1].lift(words, np.array([False, True, False]), times, seq)])
    restored = KeyState(kinds, [("sliding", 10, 10, 0)], 10, 0, state.snapshot())
    assert restored.cols[0]["s"].dtype == object and restored.cols[0]["s"].tolist() == [2**64 + 3]
    (w,) = restored.advance(10)
    assert w.start.tolist() == [0] and w.end.tolist() == [10]
    assert kinds[0].lower(w.cols[0])[0].tolist() == [2**64 + 3]
    assert kinds[1].lower(w.cols[1])[0].tolist() == ["b"]


def test_snapshot_of_other_queries_is_refused() -> None:
    kinds = [KINDS["count"]]
    data = KeyState(kinds, [("sliding", 10, 5, 0)], 5, 0).snapshot()
    with pytest.raises(ValueError, match="other queries"):
        KeyState(kinds, [("sliding", 10, 10, 0)], 5, 0, data)
    with pytest.raises(ValueError, match="other queries"):
        KeyState([KINDS["sum"]], [("sliding", 10, 5, 0)], 5, 0, data)


def test_queries_off_the_grid_are_refused() -> None:
    with pytest.raises(ValueError, match="grid"):
        KeyState([KINDS["count"]], [("sliding", 10, 5, 1)], 5, 0)
    with pytest.raises(ValueError, match="slide > size"):
        KeyState([KINDS["count"]], [("sliding", 5, 10, 0)], 5, 0)
    with pytest.raises(ValueError, match="sliding"):
        KeyState([KINDS["count"]], [("session", 5)], 5, 0)
