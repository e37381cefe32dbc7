"""``insert_many(timestamps, values)``: a batch in two columns (numpy, Arrow, buffers,
sequences) gives what the same batch in pairs gives, for Window and Stream: the same
evictions, results and errors, and a refused batch leaves the window as it was."""

from __future__ import annotations

import array
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta import (ArgMax, ArgMin, Count, First, Last, Max, MaxCount, MaxSize, Mean, Min, MinCount, Record, StdDev, Stream,
                 Sum, TimeRange, Variance, Window)
from mta.algorithms import ALGORITHMS, typed
from mta.arrays import as_list
from mta.policy import any_of
from mta.windows import Sliding

FORMS = ("list", "numpy", "arrow", "buffer", "generator")


def column(values: list, form: str, kind: str) -> object:
    """``values`` as a column of ``form``; ``kind``: "int" or "float"."""
    if form == "numpy":
        return np.array(values, dtype=np.int64 if kind == "int" else np.float64)
    if form == "arrow":
        return pa.array(values, pa.int64() if kind == "int" else pa.float64())
    if form == "buffer":
        return memoryview(array.array("q" if kind == "int" else "d", values))
    if form == "generator":
        return (v for v in values)
    return list(values)


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[list, list, str]]:
    """Batches of non-decreasing timestamps (across batches too) and values, each kind int or
    float; a column form per batch."""
    out, t = [], 0
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 12))
        kind = draw(st.sampled_from(["int", "float"]))
        steps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))  # 0: equal timestamps
        times = []
        for step in steps:
            t += step
            times.append(t if kind == "int" else t + 0.5)
        t += kind == "float"  # the next batch's ints stay at or after these floats
        values = draw(st.lists(st.integers(-10**6, 10**6), min_size=n, max_size=n))
        if kind == "float":
            values = [v / 8 for v in values]
        out.append((times, values, draw(st.sampled_from(FORMS))))
    return out


@hsettings(max_examples=60)
@given(batches=batches(), algorithm=st.sampled_from(sorted(ALGORITHMS)),
       monoid=st.sampled_from(["sum", "last"]), policy=st.sampled_from(["size", "time"]))
def test_window_columns_equal_pairs(batches, algorithm, monoid, policy) -> None:
    if monoid == "last" and algorithm == "subtract_on_evict":
        algorithm = "amta"  # SubtractOnEvict takes invertible monoids only

    def window() -> Window:
        return Window(Sum() if monoid == "sum" else Last(), MaxSize(5) if policy == "size" else TimeRange(4),
                      algorithm=algorithm)

    pairs, columns = window(), window()
    for times, values, form in batches:
        kind = "float" if any(isinstance(t, float) for t in times) else "int"
        evicted = pairs.insert_many(list(zip(times, values)))
        assert columns.insert_many(column(times, form, kind), column(values, form, kind)) == evicted
        assert columns.query() == pairs.query() and len(columns) == len(pairs)


@hsettings(max_examples=40)
@given(batches=batches())
def test_stream_columns_equal_pairs(batches) -> None:
    pairs, columns = Stream(Last()), Stream(Last())
    for s in (pairs, columns):
        s.add("w", Sliding(4, 2))
    for times, values, form in batches:
        kind = "float" if any(isinstance(t, float) for t in times) else "int"
        assert columns.insert_many(column(times, form, kind), column(values, form, kind)) == \
            pairs.insert_many(list(zip(times, values)))
        if times:
            assert [(r.start, r.end, r.value) for r in columns.advance(times[-1])] == \
                [(r.start, r.end, r.value) for r in pairs.advance(times[-1])]


def test_integers_stay_exact() -> None:
    big = 2**62 + 1
    w = Window(Sum(), MaxSize(10))
    w.insert_many(np.array([1, 2], dtype=np.int64), np.array([big, big], dtype=np.int64))
    assert w.query() == 2 * big  # beyond int64 and beyond a double's 53 bits: Python ints
    w.insert_many(np.array([3], dtype=np.uint64), np.array([2**64 - 1], dtype=np.uint64))
    assert w.query() == 2 * big + 2**64 - 1


BAD = [  # (timestamps, values, error type, words in the message)
    (np.array([5.0, math.nan]), np.array([1, 2]), ValueError, "update 1"),
    (np.array([5, 4]), np.array([1, 2]), ValueError, "update 1"),
    (np.array([5, 6]), pa.array([1, None]), ValueError, "update 1"),
    (np.array([5, 6]), np.array([1.0, math.inf]), ValueError, "update 1"),
    (np.array([5, 6, 7]), np.array([1, 2]), ValueError, "3 timestamps for 2 values"),
    (np.zeros((2, 2)), np.array([1, 2]), ValueError, "timestamps must be one-dimensional"),
    (np.array([5, 6]), "ab", TypeError, "values must be an array"),
    (np.array(5), np.array([1]), ValueError, "timestamps must be one-dimensional"),
    (5, [1], TypeError, "timestamps must be an array"),
]


@pytest.mark.parametrize("timestamps, values, error, words", BAD)
def test_window_refuses_bad_columns_and_stays_as_it_was(timestamps, values, error, words) -> None:
    w, twin = Window(Sum(), TimeRange(10)), Window(Sum(), TimeRange(10))
    for x in (w, twin):
        x.insert_many([(1, 10), (2, 20)])
    with pytest.raises(error) as raised:
        w.insert_many(timestamps, values)
    assert words in str(raised.value)
    assert w.query() == twin.query() == 30 and len(w) == len(twin)
    assert w.insert_many(np.array([12]), np.array([1])) == twin.insert_many([(12, 1)])
    assert w.query() == twin.query()


def test_window_errors_match_the_pairs_form() -> None:
    for timestamps, values, error, _ in BAD[:4]:
        w = Window(Sum(), TimeRange(10))
        pairs = list(zip(as_list(timestamps, "timestamps"), as_list(values, "values")))
        with pytest.raises(error) as by_columns:
            w.insert_many(timestamps, values)
        with pytest.raises(error) as by_pairs:
            w.insert_many(pairs)
        assert str(by_columns.value) == str(by_pairs.value)


def test_stream_errors_name_the_column_and_change_nothing() -> None:
    s = Stream(Sum())
    s.add("w", Sliding(4, 2))
    s.insert_many(np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"timestamps\[1\]"):
        s.insert_many(np.array([3.0, math.nan]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"values\[0\]"):
        s.insert_many(np.array([3, 4]), pa.array([None, 2]))
    with pytest.raises(ValueError, match="2 timestamps for 1 values"):
        s.insert_many([3, 4], [1])
    assert [(r.start, r.end, r.value) for r in s.advance(10)] == [(-2, 2, 1), (0, 4, 3), (2, 6, 2)]


@hsettings(max_examples=40)
@given(batches=batches(), keys=st.lists(st.sampled_from(["a", "b", 7]), min_size=40, max_size=40))
def test_keyed_stream_columns_equal_triples(batches, keys) -> None:
    from mta import KeyedStream

    triples, columns = KeyedStream(Sum()), KeyedStream(Sum())
    for s in (triples, columns):
        s.add("w", Sliding(4, 2))
    for times, values, form in batches:
        kind = "float" if any(isinstance(t, float) for t in times) else "int"
        ks = keys[:len(times)]
        assert columns.insert_many(np.array(ks, dtype=object), column(times, form, kind),
                                   column(values, form, kind)) == triples.insert_many(list(zip(ks, times, values)))
        if times:
            got = sorted((repr(r.key), r.start, r.end, r.value) for r in columns.advance(times[-1]))
            assert got == sorted((repr(r.key), r.start, r.end, r.value) for r in triples.advance(times[-1]))


def test_keyed_stream_errors_name_the_column_and_change_nothing() -> None:
    from mta import KeyedStream

    s = KeyedStream(Sum())
    s.add("w", Sliding(4, 2))
    s.insert_many(["a", "b"], np.array([1, 2]), np.array([1, 2]))
    with pytest.raises(ValueError, match=r"values\[2\]"):
        s.insert_many(["a", "c", "b"], np.array([3, 3, 3]), pa.array([1, 2, None]))
    with pytest.raises(TypeError, match=r"keys\[1\]"):
        s.insert_many(["a", ["unhashable"]], [3, 3], [1, 2])
    with pytest.raises(ValueError, match="2 keys, 2 timestamps and 1 values"):
        s.insert_many(["a", "b"], [3, 4], [1])
    assert sorted((r.key, r.start, r.end, r.value) for r in s.advance(10)) == \
        [("a", -2, 2, 1), ("a", 0, 4, 1), ("b", 0, 4, 2), ("b", 2, 6, 2)]


# -- out-of-order typed windows: numpy columns in the typed FiBA's C loops -------------------

OOO_STAMPS = {"int": st.integers(-5, 40), "int64": st.sampled_from([-2**63, -2**62, -1, 0, 3, 2**53 + 1, 2**63 - 1]),
              "relative": st.integers(0, 60).map(lambda t: 100.0 + t * 0.5),
              "epoch": st.integers(0, 60).map(lambda t: 1.7e9 + t * 997.25),
              "mixed": st.sampled_from([-1e300, -3.5, -5e-324, 0.0, 5e-324, 0.1, 100.5, 1.7e9, 1e300, 1e300])}
OOO_MONOIDS = {"count": Count, "sum": Sum, "mean": Mean, "min": Min, "max": Max, "mincount": MinCount,
               "maxcount": MaxCount, "first": First, "last": Last, "variance": Variance, "stddev": StdDev,
               "argmin": ArgMin, "argmax": ArgMax,
               "record": lambda: Record(n=Count(), s=Sum(), m=Mean(), v=StdDev(), lo=MinCount(), f=First(), z=Last()),
               "record_arg": lambda: Record(s=Sum(), a=ArgMax())}
#: Monoids that lift ``(key, value)`` pairs: their column is a structured array.
OOO_PAIRED = ("argmin", "argmax")
def unbatched(policy: MaxSize) -> MaxSize:
    """``policy`` enforced after every update (no typed policy is so: the window's general path)."""
    policy.batchable = False
    return policy


OOO_POLICIES = {"none": None, "size": MaxSize(6), "time": TimeRange(20), "time_f": TimeRange(2.5),
                "any": any_of(MaxSize(9), TimeRange(30)), "unbatched": unbatched(MaxSize(4))}


def ooo_window(monoid: str, policy: str, late: str, use_typed: bool = True) -> Window:
    saved = typed.USE
    typed.USE = use_typed
    try:
        return Window(OOO_MONOIDS[monoid](), OOO_POLICIES[policy], algorithm="fiba", late=late, min_arity=2)
    finally:
        typed.USE = saved


def ooo_state(w: Window) -> tuple:
    """What the window holds, floats bit for bit."""
    def norm(x: object) -> object:
        if isinstance(x, float):
            return x.hex()
        if isinstance(x, (tuple, list)):
            return type(x)(map(norm, x))
        return x
    return norm((len(w), w.query(), w.partial(), w.frontier, list(w)))


def outcome(call) -> tuple:
    try:
        return ("ok", call())
    except Exception as error:
        return ("error", type(error).__name__, str(error))


@hsettings(max_examples=150)
@given(stamps=st.sampled_from(sorted(OOO_STAMPS)), monoid=st.sampled_from(sorted(OOO_MONOIDS)),
       policy=st.sampled_from(sorted(OOO_POLICIES)), late=st.sampled_from(["refuse", "include"]),
       ints=st.booleans(), data=st.data())
def test_ooo_numpy_columns_equal_pairs_and_the_object_window(stamps, monoid, policy, late, ints, data) -> None:
    """Batches of numpy columns (timestamps in and out of order, of any span, equal ones,
    late ones under each ``late`` rule, NaN and infinite values or timestamps now and then)
    on an out-of-order typed window: the same evictions, errors and state as the pairs form
    on a typed window and on the object window; the typed window stays typed (the C path:
    no demotion) while every batch is one it holds; a refused batch changes nothing."""
    windows = {"columns": ooo_window(monoid, policy, late), "pairs": ooo_window(monoid, policy, late),
               "object": ooo_window(monoid, policy, late, False)}
    stamp = OOO_STAMPS[stamps]
    value = st.integers(-9, 9) if ints else st.sampled_from([0.5, -2.25, 3.0, 1e16, -1e16])
    key_kind = data.draw(st.sampled_from([np.int64, np.float64]))  # ArgMin / ArgMax's keys
    plain = True
    for _ in range(data.draw(st.integers(1, 6))):
        ts = data.draw(st.lists(stamp, min_size=1, max_size=8))
        vs = data.draw(st.lists(value, min_size=len(ts), max_size=len(ts)))
        odd = data.draw(st.sampled_from([None, None, None, "nan_ts", "nan_value", "inf_value", "evict", "big_int",
                                         "dtype"]))
        if odd == "nan_ts" and type(ts[0]) is float:
            ts[-1] = math.nan
        elif odd in ("nan_value", "inf_value") and not ints:
            vs[len(vs) // 2] = math.nan if odd == "nan_value" else math.inf
        elif odd == "big_int" and ints:  # beyond Variance's 2**25, or the sums' INT bound
            vs[len(vs) // 2] = data.draw(st.sampled_from([2**25 + 1, -2**25 - 1, 2**62, -2**63]))
        elif odd == "evict":  # a frontier: later batches may be late
            median = sorted(ts)[len(ts) // 2]
            for w in windows.values():
                w.evict_before(median)
        tcol = np.array(ts, dtype=np.float64 if type(ts[0]) is float else np.int64)
        vcol = np.array(vs, dtype=np.int64 if ints else np.float64)
        if odd == "dtype":  # another numeric dtype: numpy's view, the pairs form's numbers
            vcol = vcol.astype(np.int32 if ints else np.float32)
        if monoid in OOO_PAIRED:  # (key, value) records
            records = np.empty(len(vs), dtype=[("key", key_kind), ("value", vcol.dtype)])
            records["key"] = np.arange(len(vs)) * 3 - 5
            records["value"] = vcol
            vcol = records
        pairs = list(zip(tcol.tolist(), vcol.tolist()))
        before = ooo_state(windows["columns"])
        got = {"columns": outcome(lambda: windows["columns"].insert_many(tcol, vcol)),
               "pairs": outcome(lambda: windows["pairs"].insert_many(pairs)),
               "object": outcome(lambda: windows["object"].insert_many(pairs))}
        assert got["columns"] == got["pairs"] == got["object"]
        if got["columns"][0] == "error":
            assert ooo_state(windows["columns"]) == before
        states = {name: ooo_state(w) for name, w in windows.items()}
        assert states["columns"] == states["pairs"] == states["object"]
        assert windows["columns"]._typed == windows["pairs"]._typed
        plain = plain and (odd is None or (odd == "evict" and late == "include"))
        if plain and monoid != "record_arg" and policy != "unbatched":  # every batch so far one the typed tree holds
            assert windows["columns"]._typed, "demoted"


def ooo_values(monoid: str, values: list) -> np.ndarray:
    """The column of ``values`` for ``monoid``: float64, or (key, value) records (keys 0, 1, ...)."""
    column = np.array(values, dtype=np.float64)
    if monoid not in OOO_PAIRED:
        return column
    records = np.empty(len(values), dtype=[("key", np.int64), ("value", np.float64)])
    records["key"], records["value"] = np.arange(len(values)), column
    return records


@pytest.mark.parametrize("monoid", sorted(set(OOO_MONOIDS) - {"record_arg"}))
@pytest.mark.parametrize("late", ["refuse", "include"])
def test_ooo_numpy_columns_take_the_c_path(late, monoid, monkeypatch) -> None:
    """Every built-in monoid's columns (ArgMin's and ArgMax's records, a Record's numeric
    column) go to the typed FiBA's insert_arrays (not the pairs' per-update loop) and give
    the pairs form's state; a late batch the window refuses goes the general path, which
    names the update."""
    w, pairs = ooo_window(monoid, "size", late), ooo_window(monoid, "size", late)
    calls = []
    tree = w._algorithm.tree
    original = tree.insert_arrays
    monkeypatch.setattr(w._algorithm, "tree", type("Spy", (), {
        "__getattr__": lambda self, name: getattr(tree, name),
        "__len__": lambda self: len(tree),
        "insert_arrays": lambda self, *args: (calls.append(len(args[0])), original(*args))[1]})())
    ts, vs = np.array([5.0, 1.0, 3.0, 3.0]), ooo_values(monoid, [1.0, 2.0, 3.0, 4.0])
    assert w.insert_many(ts, vs) == pairs.insert_many(list(zip(ts.tolist(), vs.tolist()))) == 0
    assert calls == [4]
    w._algorithm.tree = tree
    assert ooo_state(w) == ooo_state(pairs)
    for window in (w, pairs):
        window.evict_before(2.0)
    before = ooo_state(w)
    late_batch = (np.array([4.0, 1.5]), ooo_values(monoid, [1.0, 1.0]))
    if late == "refuse":
        with pytest.raises(ValueError, match="update 1.*late"):
            w.insert_many(*late_batch)
        assert ooo_state(w) == before
    else:
        w.insert_many(*late_batch)
        pairs.insert_many(list(zip(late_batch[0].tolist(), late_batch[1].tolist())))
        assert ooo_state(w) == ooo_state(pairs)
    assert w._typed


@pytest.mark.parametrize("monoid", ["sum", "variance", "record"])
def test_ooo_policy_per_update_takes_what_becomes_late_within_the_batch(monoid) -> None:
    """A policy enforced after every update moves the frontier within a batch: an update
    older than it, not late before the batch, is taken as the object window takes it
    (the typed window goes on as the object one), in both forms."""
    ts, vs = [5.0, 1.0, 3.0, 2.0, 7.0, 0.5], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    expected = ooo_window(monoid, "unbatched", "refuse", False)
    want = outcome(lambda: expected.insert_many(list(zip(ts, vs))))
    assert want[0] == "ok"
    for form in ("pairs", "columns"):
        w = ooo_window(monoid, "unbatched", "refuse")
        assert w._typed
        got = outcome(lambda: w.insert_many(list(zip(ts, vs))) if form == "pairs"
                      else w.insert_many(np.array(ts), np.array(vs)))
        assert got == want and ooo_state(w) == ooo_state(expected)


OOO_BAD = [(np.array(["a", "b"]), np.array([1.0, 2.0])), (np.array([True, False]), np.array([1.0, 2.0])),
           (np.array([1.0, math.nan]), np.array([1.0, 2.0])), (np.array([1.0, math.inf]), np.array([1.0, 2.0])),
           (np.array([3, 2**64 - 1], dtype=np.uint64), np.array([1.0, 2.0])),
           (np.array([1.0, 2.0]), np.array(["x", "y"])), (np.array([1.0, 2.0]), np.array([1.0])),
           (np.array([1.0, 2.0], dtype=np.float32), np.array([1, 2], dtype=np.int8))]


@pytest.mark.parametrize("timestamps, values", OOO_BAD)
def test_ooo_bad_numpy_columns_fail_as_pairs_and_change_nothing(timestamps, values) -> None:
    """Wrong dtypes, NaN and infinite timestamps, lengths that differ: the columns form gives
    the pairs form's outcome (error type and message, or the same state) and a refused batch
    leaves the typed window as it was."""
    columns, pairs = ooo_window("mean", "size", "refuse"), ooo_window("mean", "size", "refuse")
    for w in (columns, pairs):
        w.insert_many(np.array([4.0, 2.0]), np.array([1.0, 2.0]))
    before = ooo_state(columns)
    got = outcome(lambda: columns.insert_many(timestamps, values))
    if len(timestamps) == len(values):
        expected = outcome(lambda: pairs.insert_many(list(zip(timestamps.tolist(), values.tolist()))))
    else:
        expected = outcome(lambda: pairs.insert_many(timestamps.tolist(), values.tolist()))
    assert got == expected
    if got[0] == "error":
        assert ooo_state(columns) == before
    assert ooo_state(columns) == ooo_state(pairs)
