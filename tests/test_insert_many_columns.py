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
from mta import Last, MaxSize, Stream, Sum, TimeRange, Window
from mta.algorithms import ALGORITHMS
from mta.arrays import as_list
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
