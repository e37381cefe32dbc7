"""The Stream engine's typed ingest (issue 20) against the object engine.

Two ``mta.Stream`` of the same monoid and queries, one with the typed ingest
(``typed_ingest.USE`` True when it was made: compiled when built, the same source
interpreted on the pure path) and one on Python objects, get the same random operations:
inserts mostly in order (equal timestamps, some out of order or late), batches as pairs
and as numpy columns, bad inputs, watermark advances, snapshots. Every call must return
the same (results compared by ``repr``: ints stay ints, floats bit for bit), raise the
same error, and leave the same state."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mta import (ArgMax, ArgMin, Collect, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev,
                 Stream, Sum, Variance)
from mta.stream import typed_ingest
from mta.windows import Sliding, Tumbling

MONOIDS = {"Sum": Sum, "Count": Count, "Min": Min, "Max": Max, "Mean": Mean, "MinCount": MinCount,
           "MaxCount": MaxCount, "First": First, "Last": Last, "Variance": Variance, "StdDev": lambda: StdDev(1),
           "ArgMin": ArgMin, "ArgMax": ArgMax,
           "Record": lambda: Record(n=Count(), s=Sum(), lo=Min(), avg=Mean(), sd=StdDev(1), f=First(), hi=MaxCount()),
           "Record of any floats": lambda: Record(f=First(), n=Count(), last=Last()),
           "Record of ordered": lambda: Record(lo=Min(), hi=Max(), mc=MinCount())}
#: values First and Last take on the typed ingest that the others do not
ANY_FLOATS = {"First", "Last", "Record of any floats"}
#: monoids of (key, value) pairs
PAIRS = {"ArgMin", "ArgMax"}


def make(monoid, queries, typed: bool, lateness: float) -> Stream:
    saved = typed_ingest.USE
    typed_ingest.USE = typed
    try:
        stream = Stream(monoid, allowed_lateness=lateness)
    finally:
        typed_ingest.USE = saved
    for name, spec in queries:
        stream.add(name, spec)
    assert (stream._ingest is not None) == typed
    return stream


def outcome(call):
    try:
        got = call()
    except Exception as error:  # the error itself must be the same on both
        return ("error", type(error).__name__, str(error))
    if isinstance(got, list):
        return [(r.query, r.start, r.end, repr(r.value), r.count, r.final, r.replaces) for r in got]
    return repr(got)


ints = st.integers(-1000, 1000)
values = st.one_of(
    ints, ints, st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, -0.0, 0.5, -0.5, 1e300, -1e300]),
    st.integers(2 ** 60, 2 ** 64), st.integers(-(2 ** 64), -(2 ** 60)),  # beyond the INT bound / int64
    st.sampled_from([2 ** 25, -(2 ** 25), 2 ** 25 + 1, -(2 ** 25) - 1]),  # Variance's int bound
    st.integers(2 ** 25, 2 ** 45), st.integers(-(2 ** 45), -(2 ** 25)),  # beyond it, _chan's int math is not the doubles'
    st.sampled_from([math.inf, -math.inf, math.nan, "x", None, True]))
plain = st.one_of(ints, ints, ints,
                  st.sampled_from([0.0, -0.0, 0.1, 1e16, 2 ** 62, -(2 ** 62), 2 ** 25, -(2 ** 25)]))
#: ArgMin / ArgMax keys: ints and floats (the typed ingest's, one kind at a time), beyond int64
int_keys = st.one_of(st.integers(-3, 3), st.sampled_from([2 ** 63 - 1, -(2 ** 63)]))
float_keys = st.sampled_from([0.5, -0.0, 0.0, math.nan, math.inf, 1.0])
odd_keys = st.sampled_from(["k", None, True, (1, 2), 2 ** 63, -(2 ** 63) - 1])


@st.composite
def pairs(draw, v, clean: bool, float_key: bool):
    """An ArgMin / ArgMax input of value v: a (key, v) tuple, its key mostly of one kind; else
    of the other kind, not an int or a float, a list, or no pair."""
    if draw(st.integers(0, 9)):
        key = draw(float_keys if float_key else int_keys)
    else:
        key = draw(st.one_of(int_keys, float_keys, odd_keys))
    shape = draw(st.sampled_from(["tuple"] * 12 + ["list"] + ([] if clean else ["bare", "triple"])))
    return {"tuple": (key, v), "list": [key, v], "bare": v, "triple": (key, v, 1)}[shape]
ties = st.sampled_from([0, 1, 0.0, -0.0, 1.0, -1, -1.0])  # MinCount / MaxCount: equal values, both zeros
wild = st.sampled_from([math.nan, -math.nan, math.inf, -math.inf, -0.0])  # First / Last take them typed
queries = st.lists(
    st.one_of(st.builds(Tumbling, st.integers(1, 6)),
              st.builds(lambda size, slide: Sliding(size * slide, slide), st.integers(1, 4), st.integers(1, 3))),
    min_size=1, max_size=6)


@st.composite
def scenarios(draw, anything: bool = False, paired: bool = False):
    ops = []
    t = draw(st.integers(-5, 5))
    clean = draw(st.booleans())  # in order, plain values: the typed ingest's case
    floats = draw(st.booleans())  # clean: its ints as floats (one value kind: long runs in C)
    float_key = draw(st.booleans())  # ArgMin / ArgMax: the kind of most keys
    kinds = (["insert"] * 6 + ["many", "advance", "advance"] + ([] if clean and paired else ["columns"])
             + ([] if clean else ["bad", "snapshot"]))  # (numbers in columns are no pairs: refused)
    steps = [0, 0, 1, 1, 1, 2] + ([] if clean else [-3])
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("insert", "many", "columns"):
            rows = []
            for _ in range(1 if kind == "insert" else draw(st.integers(0, 8))):
                t += draw(st.sampled_from(steps))  # equal, in order, out of order
                ts = draw(st.sampled_from([t, t, float(t), t + 0.5] if not clean else [t]))
                pick = st.one_of(plain, ties, wild) if anything and clean else st.one_of(plain, ties)
                value = draw(pick if clean else st.one_of(values, ties))
                if clean and floats and type(value) is int:
                    value = float(value)
                rows.append((ts, draw(pairs(value, clean, float_key)) if paired else value))
            if kind == "columns":
                ints_only = draw(st.booleans())
                tcol = np.array([r[0] for r in rows], dtype=np.int64 if ints_only else np.float64)
                vkind = draw(st.sampled_from([np.int64, np.float64]))
                vcol = np.array([draw(st.integers(-10 ** 6, 10 ** 6)) for _ in rows], dtype=vkind)
                if vkind is np.float64 and len(rows) and draw(st.booleans()):
                    vcol[draw(st.integers(0, len(rows) - 1))] = draw(st.sampled_from([-0.0, math.nan, math.inf]))
                ops.append(("columns", tcol, vcol))
            else:
                ops.append((kind, rows))
        elif kind == "advance":
            ops.append(("advance", t - draw(st.integers(-2, 4) if not clean else st.integers(0, 4))))
        elif kind == "bad":
            ops.append(("insert", [(draw(st.sampled_from([math.nan, math.inf, "1", True, None])), 1)]))
        else:
            ops.append(("snapshot",))
    ops.append(("advance", math.inf))
    return ops


def apply(stream: Stream, op):
    if op[0] == "insert":
        (ts, value), = op[1]
        return outcome(lambda: stream.insert(ts, value))
    if op[0] == "many":
        return outcome(lambda: stream.insert_many(op[1]))
    if op[0] == "columns":
        return outcome(lambda: stream.insert_many(op[1].copy(), op[2].copy()))
    if op[0] == "advance":
        return outcome(lambda: stream.advance(op[1]))
    data = stream.snapshot()
    stream.restore(data)
    return "restored"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), specs=queries, lateness=st.sampled_from([0, 0, 2]),
       data=st.data())
def test_typed_stream_equals_object_stream(monoid, specs, lateness, data):
    same_stream(monoid, specs, lateness, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(["ArgMin", "ArgMax", "Variance", "StdDev", "Record", "Record of any floats",
                                "Record of ordered"]), specs=queries,
       lateness=st.sampled_from([0, 0, 2]), data=st.data())
def test_typed_stream_equals_object_stream_pairs_and_int_variance(monoid, specs, lateness, data):
    """The wide partials the typed ingest took last (ArgMin / ArgMax pairs, Variance of ints,
    Records) get more examples of their own."""
    same_stream(monoid, specs, lateness, data)


def same_stream(monoid, specs, lateness, data):
    # Records: NaN and infinities in order too (the fields that refuse them name themselves)
    ops = data.draw(scenarios(monoid in ANY_FLOATS or monoid.startswith("Record"), monoid in PAIRS))
    named = [(f"q{i}", spec) for i, spec in enumerate(specs)]
    typed = make(MONOIDS[monoid](), named, True, lateness)
    plain = make(MONOIDS[monoid](), named, False, lateness)
    for op in ops:
        if op[0] == "advance" and typed._ingest.n:
            event("advance with tuples in the C columns")
        assert apply(typed, op) == apply(plain, op), op
        assert typed.dropped == plain.dropped
    assert typed.idle() == plain.idle()


@pytest.mark.parametrize("monoid", sorted(MONOIDS) + ["Variance of ints", "StdDev of ints", "Record of ints"])
@pytest.mark.parametrize("form", ["insert", "columns"])
def test_in_order_stream_runs_typed(monoid, form):
    """A long in-order stream stays on the typed ingest (nothing waits the object way) and
    gives the object engine's results, floats bit for bit (ArgMin / ArgMax: pairs of an int
    key, of a float key, inserted one by one: columns of numbers are refused the same way)."""
    named = [("t3", Tumbling(3)), ("t7", Tumbling(7)), ("s", Sliding(6, 2)), ("t3b", Tumbling(3))]
    of_ints = monoid.endswith(" of ints")
    monoid = monoid[:-len(" of ints")] if of_ints else monoid
    typed = make(MONOIDS[monoid](), named, True, 0)
    plain = make(MONOIDS[monoid](), named, False, 0)
    rng = np.random.default_rng(5)
    t = 0
    for second in range(50):
        ts = np.sort(rng.integers(t, t + 5, size=40)).astype(np.int64)
        vs = rng.normal(0, 1e3, size=40)
        if monoid in ("MinCount", "MaxCount", "Record of ordered"):  # ties
            vs = np.round(vs / 400)
        elif monoid in ANY_FLOATS:
            vs[3::11] = [math.nan, math.inf, -math.inf, 0.0][second % 4]
        vs[::7] = -0.0
        if of_ints:
            vs = rng.integers(-2 ** 25, 2 ** 25 + 1, size=40)
            vs[::9] = [2 ** 25, -2 ** 25, 0, 1, -1][second % 5]
        t = int(ts[-1])
        if monoid in PAIRS:
            vs = np.round(vs / 400)  # ties: the oldest stays
            vs[5::13] = [math.inf, -math.inf][second % 2]
            if form == "columns":
                with pytest.raises(Exception) as refused:
                    typed.insert_many(ts, vs)
                with pytest.raises(type(refused.value), match=f"^{re.escape(str(refused.value))}$"):
                    plain.insert_many(ts, vs)
                assert typed._ingest.n == 0 and not typed._pending
                return
            keyed = [(k + second * 40 if monoid == "ArgMin" else (k + second) / 8, v)
                     for k, v in enumerate(vs.tolist())]
            for a, b in zip(ts.tolist(), keyed):
                assert typed.insert(a, b) is plain.insert(a, b) is True
        elif form == "columns":
            assert typed.insert_many(ts, vs) == plain.insert_many(ts, vs) == 40
        else:
            for a, b in zip(ts.tolist(), vs.tolist()):
                assert typed.insert(a, b) is plain.insert(a, b) is True
        assert typed._ingest.n > 0 and not typed._pending  # held in the C columns
        got, want = typed.advance(t - 2), plain.advance(t - 2)
        assert [(r.query, r.start, r.end, repr(r.value), r.count) for r in got] == \
            [(r.query, r.start, r.end, repr(r.value), r.count) for r in want]
    assert typed.snapshot() == plain.snapshot()


def test_flush_keeps_arrival_order_and_errors():
    """A tuple the ingest does not take (bad, out of order) sends the held ones the object way
    first, in arrival order; a bad one changes nothing else."""
    typed = make(Sum(), [("t", Tumbling(10))], True, 0)
    plain = make(Sum(), [("t", Tumbling(10))], False, 0)
    for s in (typed, plain):
        for ts in (1, 2, 2, 5):
            s.insert(ts, ts * 1.5)
    assert typed._ingest.n == 4
    for s in (typed, plain):
        with pytest.raises(ValueError, match="finite"):
            s.insert(math.nan, 1)
        with pytest.raises(ValueError, match=r"values\[1\]"):
            s.insert_many(np.array([6, 7]), np.array([1.0, math.nan]))
    assert typed.snapshot() == plain.snapshot()  # the held tuples went the object way, unchanged
    for s in (typed, plain):
        s.insert(3, -0.0)  # out of order: the held tuples go to pending first
    assert typed._ingest.n == 0 and len(typed._pending) == 5
    assert typed.snapshot() == plain.snapshot()
    got, want = typed.advance(20), plain.advance(20)
    assert [repr(r.value) for r in got] == [repr(r.value) for r in want] == [repr(sum([1.5, 3.0, 3.0, 7.5, -0.0]))]


@pytest.mark.parametrize("typed", [True, False])
def test_numpy_scalar_timestamps_are_taken_as_ints_and_floats(typed):
    """``Stream.insert`` (and the batches) take numpy integer and float scalar timestamps as
    ``Window.insert`` does, as the int or float they are; bools (numpy's too) stay refused,
    changing nothing, and a caller's list of timestamps is left as it was."""
    s = make(Sum(), [("t", Tumbling(10))], typed, 0)
    want = make(Sum(), [("t", Tumbling(10))], typed, 0)
    for scalar, ts in ((np.int64(1), 1), (np.int32(2), 2), (np.uint8(3), 3), (np.float64(4.5), 4.5),
                       (np.float32(5.5), 5.5)):
        assert s.insert(scalar, 1) is True and want.insert(ts, 1) is True
    assert s.insert_many([(np.int64(6), 2)]) == 1 and want.insert_many([(6, 2)]) == 1
    column = [np.int16(7), np.float64(8.0)]
    assert s.insert_many(column, [3, 4]) == 2 and want.insert_many([7, 8.0], [3, 4]) == 2
    assert [type(t) for t in column] == [np.int16, np.float64]
    for bad in (True, np.bool_(True)):
        with pytest.raises(TypeError, match="timestamp must be an int or a float"):
            s.insert(bad, 1)
        with pytest.raises(TypeError, match=r"updates\[1\]: timestamp must be"):
            s.insert_many([(9, 1), (bad, 1)])
    assert s.snapshot() == want.snapshot()  # the same ints and floats wait (numpy ones would not pack)
    got, expected = s.advance(20), want.advance(20)
    assert [(r.start, r.end, repr(r.value), r.count) for r in got] == \
           [(r.start, r.end, repr(r.value), r.count) for r in expected] == [(0, 10, "14", 8)]


@pytest.mark.parametrize("typed", [True, False])
def test_numpy_scalar_watermarks_are_taken_as_ints_and_floats(typed):
    """``advance`` takes a numpy integer or float watermark as the int or float it is (np.int64
    was refused, np.float64 was kept as numpy and leaked into results); bools and NaN stay
    refused, changing nothing."""
    s = make(Sum(), [("t", Tumbling(2))], typed, 1)
    for t in range(6):
        s.insert(t, t)
    for bad in (True, np.bool_(False), "3"):
        with pytest.raises(TypeError, match="watermark must be an int or a float"):
            s.advance(bad)
    for nan in (math.nan, np.float64("nan")):  # an outside-in tester: it said "must be a float"
        with pytest.raises(ValueError, match="watermark must not be NaN"):
            s.advance(nan)
    assert s.watermark == -math.inf
    got = s.advance(np.int64(2))
    assert type(s.watermark) is int and [(r.end, r.value, type(r.final)) for r in got] == [(2, 1, bool)]
    got = s.advance(np.float64(4.0))
    assert type(s.watermark) is float and type(s.horizon) is float
    assert [(r.end, r.value, type(r.final)) for r in got] == [(4, 5, bool)]


def test_fused_queries_get_their_own_nested_values():
    """A fused query's copy owns the lists and dicts of its value: a Record's dict and the
    Collect list inside it (the dict was copied, the list shared by every fused query)."""
    s = Stream(Record(c=Collect(), s=Sum()))
    for name in "abc":
        s.add(name, Tumbling(2))
    s.insert(0, 1)
    s.insert(1, 2)
    results = s.advance(2)
    results[0].value["c"].append("X")
    assert [r.value for r in results] == [{"c": [1, 2, "X"], "s": 3}, {"c": [1, 2], "s": 3}, {"c": [1, 2], "s": 3}]


def test_released_tuples_free_the_int_bound():
    """The int bound (the sum of |v| held below 2**63) counts the tuples held only: those an
    advance released make room, so a long stream of large ints stays typed; across many
    advances the columns move their tuples to the front or grow, in arrival order."""
    typed = make(Sum(), [("t", Tumbling(4))], True, 0)
    plain = make(Sum(), [("t", Tumbling(4))], False, 0)
    big = 2 ** 60
    for second in range(200):
        for k in range(3):
            value = big if k < 2 else second
            assert typed.insert(second, value) is plain.insert(second, value) is True
        # this second's and the previous one's, 4 * 2**60 + a little: held in C
        assert not typed._pending and typed._ingest.n == (6 if second else 3)
        got, want = typed.advance(second), plain.advance(second)
        assert [(r.start, r.end, repr(r.value), r.count) for r in got] == \
            [(r.start, r.end, repr(r.value), r.count) for r in want]
    for second in range(200, 260):  # many held at once: the columns grow
        for k in range(50):
            assert typed.insert(second, second * 50 + k) is plain.insert(second, second * 50 + k) is True
    assert not typed._pending and typed._ingest.n == 3003
    for wm in range(200, 262, 3):
        got, want = typed.advance(wm), plain.advance(wm)
        assert [(r.start, r.end, repr(r.value), r.count) for r in got] == \
            [(r.start, r.end, repr(r.value), r.count) for r in want]
    assert typed.snapshot() == plain.snapshot()


def test_fused_queries_copies_are_whole_results():
    """A fused query's copy (compiled: its slots written in place) is a Result like one its
    constructor makes: equal, same repr, pickled and replaced as one, garbage collected, and
    holding one reference to each field (none leaked, none missing)."""
    import gc
    import pickle
    import sys
    from dataclasses import fields, replace

    from mta import Result

    marker = 10 ** 30 + 7  # a value of its own: its reference count shows each result's
    s = Stream(Sum())
    for name in ("a", "b", "c", "d"):
        s.add(name, Tumbling(5))
    s.insert(1, marker)
    results = s.advance(5)
    assert [r.query for r in results] == ["a", "b", "c", "d"]
    for r in results:
        made = Result(r.query, 0, 5, marker, 1)
        assert type(r) is Result and r == made and repr(r) == repr(made)
        assert [getattr(r, f.name) for f in fields(Result)] == [r.query, 0, 5, marker, 1, True, (), None]
        assert pickle.loads(pickle.dumps(r)) == r
        assert replace(r, key="k") == Result(r.query, 0, 5, marker, 1, key="k")
    del r, made
    assert gc.is_tracked(results[1])
    held = sys.getrefcount(marker)
    results[1].value = 0
    assert held - sys.getrefcount(marker) == 1
    del results
    gc.collect()
    assert held - sys.getrefcount(marker) == 4  # the value of each of the 4 results, released


@pytest.mark.parametrize("typed", [True, False])
@pytest.mark.parametrize("key", [int, float])
def test_arg_ties_keep_the_oldest_against_an_oracle(typed, key):
    """ArgMin / ArgMax per tumbling window against a naive oracle: the (key, value) of the
    smallest (largest) value, a tie keeping the oldest pair (keys tell them apart, -0.0 from
    0.0 too); ints and floats, infinities taken."""
    rng = np.random.default_rng(7)
    ts = np.sort(rng.integers(0, 200, size=600)).tolist()
    for kind in (int, float):
        vs = [kind(v) for v in rng.integers(-3, 4, size=600)]
        if kind is float:
            vs[::17] = [-0.0] * len(vs[::17])
            vs[5::29] = [math.inf, -math.inf] * (len(vs[5::29]) // 2) + [math.inf] * (len(vs[5::29]) % 2)
        for monoid, better in ((ArgMin(), lambda a, b: a < b), (ArgMax(), lambda a, b: a > b)):
            s = make(monoid, [("t", Tumbling(10))], typed, 0)
            for k, (t, v) in enumerate(zip(ts, vs)):
                assert s.insert(t, (key(k), v)) is True
            assert not typed or s._ingest.n == 600
            want = {}
            for k, (t, v) in enumerate(zip(ts, vs)):
                start = t // 10 * 10
                if start not in want or better(v, want[start][1]):
                    want[start] = (key(k), v)
            got = s.advance(math.inf)
            assert [(r.start, repr(r.value)) for r in got] == [(w, repr(want[w])) for w in sorted(want)]


def test_variance_of_ints_beyond_the_bound_goes_the_object_way():
    """Variance of ints: those of magnitude at most 2**25 wait in the C columns, larger ones
    (whose deltas squared are no longer exact in doubles) the object way; the results are
    the object engine's either way, bit for bit."""
    rng = np.random.default_rng(11)
    for bound in (2 ** 25, 2 ** 45):
        typed = make(Variance(), [("t", Tumbling(5)), ("s", Sliding(10, 5))], True, 0)
        plain = make(Variance(), [("t", Tumbling(5)), ("s", Sliding(10, 5))], False, 0)
        vs = rng.integers(-bound, bound + 1, size=400).tolist()
        vs[::13] = [bound] * len(vs[::13])
        for t, v in enumerate(vs):
            assert typed.insert(t // 4, v) is plain.insert(t // 4, v) is True
            if t % 40 == 39:
                assert [repr(r.value) for r in typed.advance(t // 4)] == [repr(r.value) for r in plain.advance(t // 4)]
        assert (typed._ingest.n > 0) == (bound == 2 ** 25)
        assert [repr(r.value) for r in typed.advance(math.inf)] == [repr(r.value) for r in plain.advance(math.inf)]


def test_record_takes_numbers_typed_and_the_rest_the_object_way():
    """A Record of built-in monoids holds numbers in the C columns (each field lifts the
    number); a dict of its fields, a value one field refuses (inf for Sum: the pure path's
    error, naming the field) and a Record with an ArgMin field go the object way, with the
    object engine's results and errors, a refused call changing nothing."""
    assert typed_ingest.op_for(Record(a=ArgMin(), s=Sum())) is None
    assert typed_ingest.op_for(Record(r=Record(s=Sum()))) is None
    monoid = lambda: Record(s=Sum(), lo=Min(), v=Variance(), f=First())  # noqa: E731
    typed = make(monoid(), [("t", Tumbling(4))], True, 0)
    plain = make(monoid(), [("t", Tumbling(4))], False, 0)
    for t in range(6):
        assert typed.insert(t, t * 1.5) is plain.insert(t, t * 1.5) is True
    assert typed._ingest.n == 6
    for s in (typed, plain):
        with pytest.raises(ValueError, match="Record field 's'"):
            s.insert(7, math.inf)
    assert typed.snapshot() == plain.snapshot()
    row = {"s": 1, "lo": 2.5, "v": 3, "f": -0.0}
    assert typed.insert(7, row) is plain.insert(7, row) is True
    assert typed._ingest.n == 0 and len(typed._pending) == 7
    got, want = typed.advance(8), plain.advance(8)
    assert [repr(r.value) for r in got] == [repr(r.value) for r in want] and len(got) == 2
