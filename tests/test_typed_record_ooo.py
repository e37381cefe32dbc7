"""Out-of-order windows (``algorithm="fiba"``) over a Record of TypedFiBA's monoids, on
:class:`~mta.algorithms.typed_record_fiba.TypedRecordFiBA` (one TypedFiBA per field in
lockstep), against the same window on the object TimeOrdered + FiBA over the Record: the
same results (floats bit for bit), errors, frontier, iteration and tree node for node,
through inserts in and out of order, equal timestamps, late updates, evictions,
retractions, range queries, timestamps of any span and demotion mid-stream (one field's value of
another kind); and against a naive fold of the window's entries. The typed path is
switched on (``typed.USE``) on the compiled and the pure path alike."""

from __future__ import annotations

import copy
import pickle
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import assert_continues_on_pure_path, hsettings
from mta import Window
from mta.algorithms import typed
from mta.algorithms.typed_record_fiba import TypedRecordFiBA
from mta.monoid import (ArgMax, ArgMin, Collect, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev,
                        Sum, Variance)
from mta.policy import MaxSize, TimeRange, all_of, any_of
from test_typed_ordered import STAMPS, common_calls, norm, outcome, stamp, step_alike, tree_of

FIELDS = {"count": Count, "sum": Sum, "min": Min, "max": Max, "mean": Mean, "mincount": MinCount,
          "maxcount": MaxCount, "first": First, "last": Last, "variance": Variance, "stddev": lambda: StdDev(ddof=1),
          "argmin": ArgMin, "argmax": ArgMax}
#: Fields whose float results depend on the order of combines (the naive fold is approximate).
ROUNDING = ("variance", "stddev")
POLICIES = {"none": None, "size": MaxSize(5), "time": TimeRange(6), "any": any_of(MaxSize(7), TimeRange(9)),
            "all": all_of(MaxSize(3), TimeRange(4))}
#: Dyadic floats: sums of a few are exact in any order (the naive fold is exact on them).
FLOATS = st.sampled_from([0.0, 1.5, -2.25, 0.5, 3.0, -1.0])
INTS = st.integers(-20, 20)


def record(fields: list[str]) -> Record:
    return Record({f"f{j}_{name}": FIELDS[name]() for j, name in enumerate(fields)})


def make(fields: list[str], policy: str, late: str, min_arity: int, use_typed: bool) -> Window:
    saved = typed.USE
    typed.USE = use_typed
    try:
        return Window(record(fields), POLICIES[policy], algorithm="fiba", late=late, min_arity=min_arity)
    finally:
        typed.USE = saved


def naive(window: Window) -> Any:
    """The Record's result by a left fold of the window's entries (in timestamp order)."""
    monoid = window.monoid
    return monoid.lower(reduce(monoid.combine, list(window), monoid.identity))


TS = st.integers(0, 30)
OPS = st.one_of(
    st.tuples(st.just("insert"), TS),
    st.tuples(st.just("insert"), TS),
    st.tuples(st.just("insert"), TS),
    st.tuples(st.just("many"), st.lists(TS, max_size=5)),
    st.tuples(st.just("columns"), st.lists(TS, max_size=5)),
    st.tuples(st.just("bad_columns"), st.lists(TS, min_size=1, max_size=5)),
    st.tuples(st.just("evict"), st.integers(0, 3)),
    st.tuples(st.just("evict_before"), st.one_of(TS, st.just(4.5))),
    st.tuples(st.just("retract"), TS),
    st.tuples(st.just("range"), TS, TS),
    st.tuples(st.just("clear")),
    st.tuples(st.just("demote"), st.sampled_from(["kind", "string", "stamp"])),
)
CASES = dict(fields=st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=4),
             floats=st.lists(st.booleans(), min_size=4, max_size=4), policy=st.sampled_from(sorted(POLICIES)),
             late=st.sampled_from(["refuse", "include"]), min_arity=st.sampled_from([2, 3, 16]),
             stamps=st.sampled_from(sorted(STAMPS)), ops=st.lists(OPS, max_size=60), data=st.data())


def same_as_object(fields: list[str], floats: list[bool], policy: str, late: str, min_arity: int,
                   stamps: str, ops: list, data: Any) -> None:
    """Both windows through ``ops``, each field fed ints or floats (``floats``, by field: mixed
    int and float fields), as a dict of values (ArgMin / ArgMax: ``(key, value)``);
    timestamps of kind ``stamps`` (test_typed_ordered's); the typed window stays typed until
    an operation made to demote it runs."""

    def at(t: Any) -> Any:
        return stamp(stamps, t)

    typed_window = make(fields, policy, late, min_arity, True)
    object_window = make(fields, policy, late, min_arity, False)
    assert typed_window._typed and isinstance(typed_window._algorithm.tree, TypedRecordFiBA)
    assert not object_window._typed
    names = list(typed_window.monoid.fields)
    keys = iter(range(10 ** 6))

    def value(j: int, name: str, kind: Any = None) -> Any:
        kind = kind if kind is not None else (FLOATS if floats[j] and fields[j] != "count" else INTS)
        x = data.draw(kind)
        return (next(keys), x) if fields[j] in ("argmin", "argmax") else x

    def draw() -> dict:
        return {name: value(j, name) for j, name in enumerate(names)}

    demoted = False
    for op in ops:
        kind = op[0]
        calls = common_calls(op, at, draw)
        if kind == "bad_columns":
            times, column = list(map(at, op[1])), [draw() for _ in op[1]]
            # the last update's last field of the other kind: checked first
            last = len(names) - 1
            column[-1][names[last]] = value(last, names[last], INTS if floats[last] else FLOATS)
            calls = [lambda w: w.insert_many(times, column)]
            demoted = True
        elif calls is None:  # the last field only cannot hold it: every field is checked before any change
            update = draw()
            last = len(names) - 1
            if op[1] == "kind" and fields[last] != "count":
                update[names[last]] = value(last, names[last], INTS if floats[last] else FLOATS)
            elif op[1] == "string":
                update[names[last]] = value(last, names[last], st.just(2 ** 70))
            calls = [lambda w: w.insert((2 if type(at(0)) is float else 2.5) if op[1] == "stamp" else at(3), update)]
            demoted = True
        step_alike(typed_window, object_window, calls, op)
        assert typed_window._typed or demoted, op
        if not set(fields) & set(ROUNDING) and typed_window._typed:
            assert norm(typed_window.query()) == norm(naive(typed_window))
    assert tree_of(typed_window, False) == tree_of(object_window, False)


@hsettings(max_examples=200)
@given(**CASES)
def test_typed_record_ordered_window_is_the_object_one(fields: list, floats: list, policy: str, late: str,
                                                       min_arity: int, stamps: str, ops: list,
                                                       data: Any) -> None:
    same_as_object(fields, floats, policy, late, min_arity, stamps, ops, data)


MIXED = ["count", "sum", "first", "last", "argmin", "variance"]


def mixed_update(j: int) -> dict:
    """An update of :data:`MIXED` (ints in Sum, floats in the others)."""
    x = (j * 7) % 11 - 4.5
    return {"f0_count": j, "f1_sum": j % 5 - 2, "f2_first": x, "f3_last": x, "f4_argmin": (j, x), "f5_variance": x}


@pytest.mark.parametrize("bad", ["kind", "huge", "stamp"])
def test_demotion_mid_stream_keeps_the_state(bad: str) -> None:
    """A value the last field cannot hold (or a float timestamp) mid-stream: the typed
    window goes on as the object one, in the same state, and nothing else changed first."""
    typed_window = make(MIXED, "size", "include", 2, True)
    object_window = make(MIXED, "size", "include", 2, False)
    for j in range(40):
        for w in (typed_window, object_window):
            w.insert((j * 7) % 13 + j // 2, mixed_update(j))
    assert typed_window._typed
    assert tree_of(typed_window, False) == tree_of(object_window, False)
    update = mixed_update(99)
    update["f5_variance"] = {"kind": 2 ** 30, "huge": 2 ** 70, "stamp": 1.5}[bad]
    for w in (typed_window, object_window):
        w.insert(30.5 if bad == "stamp" else 30, update)
    assert not typed_window._typed
    assert tree_of(typed_window, False) == tree_of(object_window, False)
    for j in range(40):
        for w in (typed_window, object_window):
            w.insert(j % 9 + 25, mixed_update(j))
        assert norm(typed_window.query()) == norm(object_window.query())
        assert norm(typed_window.query(26, 30)) == norm(object_window.query(26, 30))
    assert tree_of(typed_window, False) == tree_of(object_window, False)


def test_late_updates_are_refused_the_same_way() -> None:
    typed_window = make(MIXED, "size", "refuse", 2, True)
    object_window = make(MIXED, "size", "refuse", 2, False)
    for w in (typed_window, object_window):
        for t in range(10):
            w.insert(t, mixed_update(t))
        w.evict_before(8.5)
    assert typed_window.frontier == object_window.frontier == 8.5
    assert outcome(lambda: typed_window.insert(8, mixed_update(8))) == outcome(
        lambda: object_window.insert(8, mixed_update(8)))
    assert outcome(lambda: typed_window.insert(8, mixed_update(8)))[0] == "error"
    assert typed_window._typed
    assert norm(typed_window.query()) == norm(object_window.query())


def test_typed_only_where_every_field_is_served() -> None:
    saved = typed.USE
    typed.USE = True
    try:
        assert Window(Record(n=Count(), s=Sum(), a=ArgMax()), MaxSize(3), algorithm="fiba")._typed
        assert not Window(Record(n=Count(), c=Collect()), MaxSize(3), algorithm="fiba")._typed
        assert not Window(Record(n=Count(), r=Record(s=Sum())), MaxSize(3), algorithm="fiba")._typed
        assert not Window(Record(n=Count()), MaxSize(3), algorithm="btree")._typed
    finally:
        typed.USE = saved
    assert Window(Record(n=Count(), s=Sum()), MaxSize(3), algorithm="fiba")._typed == typed.COMPILED


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_a_copied_typed_window_goes_on_as_the_original(copier: str) -> None:
    original = make(MIXED, "time", "refuse", 2, True)
    for j in range(30):
        original.insert((j * 5) % 11 + j, mixed_update(j))
    clone = pickle.loads(pickle.dumps(original)) if copier == "pickle" else copy.deepcopy(original)
    assert clone._typed and clone.frontier == original.frontier
    for j in range(30):
        for w in (original, clone):
            w.insert((j * 3) % 7 + 30 + j, mixed_update(100 + j))
            w.evict_before(j + 20)
        assert norm(clone.query()) == norm(original.query())
        assert norm(clone.tally(35, 50)) == norm(original.tally(35, 50))
    assert tree_of(clone, False) == tree_of(original, False)
    before = (len(original), norm(original.query()))
    clone.insert(100, mixed_update(7))  # the copy is independent
    assert (len(original), norm(original.query())) == before != (len(clone), norm(clone.query()))


def test_pickled_typed_window_continues_on_the_pure_path(tmp_path: Path) -> None:
    saved = typed.USE
    typed.USE = True
    try:
        window = Window(Record(n=Count(), s=Sum(), lo=Min(), f=First(), l=Last(), m=Mean()), TimeRange(50),
                        algorithm="fiba", late="include", min_arity=2)
    finally:
        typed.USE = saved
    for j in range(60):
        window.insert((j * 7) % 23 + j, j % 9 - 3.5)
    assert window._typed
    assert_continues_on_pure_path([window], tmp_path)


@pytest.mark.parametrize("policy", ["none", "size", "time"])
def test_a_batch_given_up_between_slices_leaves_every_field_as_it_was(policy: str) -> None:
    """insert_slices stopped after its first slice: the window is restored from the fields'
    undo journals, in lockstep (the same tree as before), and goes on typed as the object one."""
    typed_window = make(MIXED, policy, "include", 2, True)
    object_window = make(MIXED, policy, "include", 2, False)
    for j in range(30):
        for w in (typed_window, object_window):
            w.insert((j * 7) % 13 + j // 2, mixed_update(j))
    before = tree_of(typed_window, False)
    for w in (typed_window, object_window):
        slices = w.insert_slices(w.check([(j * 5) % 9 + 3 for j in range(8)], [mixed_update(50 + j) for j in range(8)]),
                                 2)
        next(slices)
        slices.close()
    assert typed_window._typed
    assert tree_of(typed_window, False) == before == tree_of(object_window, False)
    for j in range(20):
        for w in (typed_window, object_window):
            w.insert(j + 20, mixed_update(j))
        assert norm(typed_window.query()) == norm(object_window.query())
    assert tree_of(typed_window, False) == tree_of(object_window, False)


@pytest.mark.parametrize("bad", ["variance_int", "nan_for_sum", "argmax_field"])
def test_record_columns_refused_by_one_field_change_no_field(bad: str) -> None:
    """``TypedRecordFiBA.insert_arrays``: every field's tree checks the columns before any
    takes them; one that refuses (Variance's 2**25, Sum's NaN, an ArgMax field, which lifts
    pairs) leaves every tree as it was, and columns every field takes give the trees the
    pairs' insertions give."""
    fields = {"s": Sum(), "v": Variance(), "f": First()}
    if bad == "argmax_field":
        fields["a"] = ArgMax()
    monoid = Record(**fields)
    columns, pairs = TypedRecordFiBA(monoid, min_arity=2, pairs=True), TypedRecordFiBA(monoid, min_arity=2, pairs=True)
    ts = np.array([5, 1, 3, 3, 9], dtype=np.int64)
    good = np.array([2, -7, 4, 0, 11], dtype=np.float64 if bad == "nan_for_sum" else np.int64)
    if bad != "argmax_field":
        columns.insert_arrays(ts, good, 0)
        for j, (t, v) in enumerate(zip(ts.tolist(), good.tolist())):
            pairs.insert((t, j), monoid.lift(v))
        assert list(columns) == list(pairs) and columns.query() == pairs.query()
    before = (list(columns), columns.query())
    if bad == "variance_int":
        vs = np.array([1, 2**25 + 1], dtype=np.int64)
    elif bad == "nan_for_sum":
        vs = np.array([1.0, np.nan])
    else:
        vs = np.array([1, 2], dtype=np.int64)
    with pytest.raises(typed.Untyped):
        columns.insert_arrays(np.array([4, 6], dtype=np.int64), vs, 5)
    assert (list(columns), columns.query()) == before
