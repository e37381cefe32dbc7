"""Records of the built-in numeric monoids on typed cores (mta.algorithms.typed_record, issue 20):
a Record window on K typed cores in lockstep against the object algorithm (results bit for
bit: compared by repr) and a naive fold, on this run's path (``typed.USE`` set: the pure
cores when MTA_NO_EXTENSIONS=1)."""

from __future__ import annotations

import pickle
from fractions import Fraction
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import assert_continues_on_pure_path

from mta import Window
from mta.algorithms import TYPED_ALGORITHMS, typed
from mta.algorithms.typed_record import TypedRecord, serves
from mta.monoid import (ArgMin, Count, First, GeometricMean, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev, Sum,
                        Variance)
from mta.policy import MaxSize, TimeRange, any_of

FIELDS = {"n": Count(), "total": Sum(), "low": Min(), "high": Max(), "avg": Mean()}
POLICIES = [None, MaxSize(1), MaxSize(4), TimeRange(1), TimeRange(3), TimeRange(2.5), any_of(TimeRange(4), MaxSize(3))]


def _pair(monoid, policy, algorithm):
    """The window on typed cores and the same window on the object algorithm."""
    use = typed.USE
    try:
        typed.USE = False
        ref = Window(monoid, policy, algorithm=algorithm)
        typed.USE = True
        window = Window(monoid, policy, algorithm=algorithm)
    finally:
        typed.USE = use
    assert isinstance(getattr(window._algorithm, "core", window._algorithm), TypedRecord)
    assert not isinstance(getattr(ref._algorithm, "core", ref._algorithm), TypedRecord)
    return window, ref


def _call(window, kind, t, arg):
    """One operation: its result, or the error it raised (type and message)."""
    try:
        if kind == "insert":
            return window.insert(t, arg)
        if kind == "many":
            return window.insert_many([(t, v) for v in arg])
        if kind == "arrays":
            return window.insert_many(t, arg)
        if kind == "evict":
            return window.evict(arg)
        return window.query()
    except Exception as error:  # noqa: BLE001 -- compared between the paths
        return type(error), str(error)


def _naive(monoid, window):
    """The fold of the window's lifted updates, lowered."""
    return monoid.lower(reduce(monoid.combine, list(window), monoid.identity))


# quarters in a small range: every sum is exact, so the naive fold's order does not matter
_quarter = st.integers(-400, 400).map(lambda q: q / 4)
_small = st.integers(-1000, 1000)
_bad = st.sampled_from([2 ** 70, -(2 ** 64), Fraction(1, 3), float("nan"), "x"])


#: the monoids typed on AMTA, Two-Stacks, DABA and Log MTA (not FiBA)
WIDE_FIELDS = {"few": MinCount(), "most": MaxCount(), "first": First(), "last": Last()}


@st.composite
def _scenarios(draw, fields=FIELDS):
    names = draw(st.lists(st.sampled_from(list(fields)), min_size=1, max_size=5, unique=True))
    monoid = Record({name: fields[name] for name in names})
    kinds = {name: draw(st.sampled_from([_quarter, _small])) for name in names}  # int and float fields

    def value():
        if draw(st.integers(0, 30)) == 0:  # a value some field (or every path) refuses
            return {name: draw(st.one_of(kinds[name], _bad)) for name in names}
        return {name: draw(kinds[name]) for name in names}

    ops = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["insert", "insert", "insert", "many", "evict", "query", "pickle"]))
        dt = draw(st.sampled_from([0, 0, 1, 2]))
        if kind == "many":
            arg = [value() for _ in range(draw(st.integers(0, 6)))]
        elif kind == "evict":
            arg = draw(st.integers(0, 3))
        else:
            arg = value()
        ops.append((kind, dt, arg))
    return monoid, ops


@settings(max_examples=60, deadline=None)
@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@given(scenario=_scenarios())
def test_record_window_matches_object_algorithm_and_naive_fold(algorithm, policy, scenario):
    monoid, ops = scenario
    window, ref = _pair(monoid, policy, algorithm)
    t = 0
    for kind, dt, arg in ops:
        t += dt
        if kind == "pickle":
            window = pickle.loads(pickle.dumps(window))
            continue
        before = (len(window), repr(window.query()))
        got, want = _call(window, kind, t, arg), _call(ref, kind, t, arg)
        assert repr(got) == repr(want), (kind, arg)
        if isinstance(got, tuple):  # refused: nothing changed
            assert (len(window), repr(window.query())) == before
        assert repr(window.query()) == repr(ref.query())
        assert len(window) == len(ref)
        assert repr(list(window)) == repr(list(ref))
        if all(type(v) in (int, float) for p in window for v in (p if isinstance(p, tuple) else (p,))):
            assert repr(window.query()) == repr(_naive(monoid, window))  # repr: First's NaN is itself


@settings(max_examples=60, deadline=None)
@pytest.mark.parametrize("algorithm", ["amta", "two_stacks", "daba", "log_mta"])
@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@given(scenario=_scenarios({**FIELDS, **WIDE_FIELDS}))
def test_records_of_minmaxcount_first_last(algorithm, policy, scenario):
    """Records with MinCount, MaxCount, First and Last fields (typed on all but FiBA) as above."""
    test_record_window_matches_object_algorithm_and_naive_fold.hypothesis.inner_test(algorithm, policy, scenario)


@settings(max_examples=40, deadline=None)
@pytest.mark.parametrize("algorithm", ["two_stacks", "daba", "log_mta"])
@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@given(scenario=_scenarios({**FIELDS, **WIDE_FIELDS, "var": Variance(), "sd": StdDev(ddof=1)}))
def test_records_of_variance_fields(algorithm, policy, scenario):
    """Records with Variance and StdDev fields too (typed on Two-Stacks, DABA, Log MTA) as above."""
    test_record_window_matches_object_algorithm_and_naive_fold.hypothesis.inner_test(algorithm, policy, scenario)


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("policy", [None, MaxSize(50), TimeRange(40)], ids=repr)
def test_random_floats_bit_for_bit_through_demotion(algorithm, policy):
    """Random floats (rounding matters), evictions of every size, then a value that does not
    fit one field mid-stream: the window goes on with the object algorithm, still bit for bit."""
    monoid = Record(n=Count(), total=Sum(), high=Max(), avg=Mean(), low=Min())
    window, ref = _pair(monoid, policy, algorithm)
    rng = np.random.default_rng(7)
    for i, x in enumerate(rng.standard_normal(700) * 1e3):
        for w in (window, ref):
            w.insert(i // 3, float(x))
            if i % 97 == 0:
                w.evict(len(w))  # evict all: the empty window
            elif i % 13 == 0:
                w.evict(min(len(w), 5))
        assert repr(window.query()) == repr(ref.query())
    assert window._typed
    assert window.insert(300, {"n": 0, "total": 1.0, "high": 2 ** 70, "avg": 1.0, "low": 1.0}) == \
        ref.insert(300, {"n": 0, "total": 1.0, "high": 2 ** 70, "avg": 1.0, "low": 1.0})
    assert not window._typed  # demoted: the Max field's float core cannot hold 2**70
    for i, x in enumerate(rng.standard_normal(200)):
        assert window.insert(301 + i // 2, float(x)) == ref.insert(301 + i // 2, float(x))
        assert repr(window.query()) == repr(ref.query())
    assert repr(list(window)) == repr(list(ref))


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
def test_empty_window_and_evict_all(algorithm):
    monoid = Record(n=Count(), total=Sum(), avg=Mean(), low=Min(), high=Max())
    window, ref = _pair(monoid, None, algorithm)
    assert window.query() == ref.query() == {"n": 0, "total": 0, "avg": None, "low": float("inf"),
                                             "high": float("-inf")}
    window.insert_many([(i, float(i)) for i in range(40)])
    window.evict(40)
    assert len(window) == 0 and window.query() == ref.query()
    assert window._typed


@pytest.mark.parametrize("field", ["total", "low"])
@pytest.mark.parametrize("bad", [2 ** 64, Fraction(1, 3), "abc"])
def test_refused_field_demotes_before_any_change(field, bad):
    """A field value no core holds: the window demotes, nothing half inserted (each field's
    results stay the object algorithm's); a value no field lifts (a string: Min and Sum take
    real numbers) is refused by both paths alike, the window unchanged and still typed."""
    monoid = Record(total=Sum(), low=Min())
    window, ref = _pair(monoid, MaxSize(4), "amta")
    for i in range(6):
        window.insert(i, i)
        ref.insert(i, i)
    value = {"total": 1, "low": 1, field: bad}
    got, want = _call(window, "insert", 6, value), _call(ref, "insert", 6, value)
    assert repr(got) == repr(want)
    assert window._typed is isinstance(bad, str)
    assert repr(window.query()) == repr(ref.query()) and repr(list(window)) == repr(list(ref))
    for i in range(7, 12):
        assert window.insert(i, i) == ref.insert(i, i)
        assert repr(window.query()) == repr(ref.query())


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
def test_bad_input_same_errors_state_unchanged(algorithm):
    monoid = Record(total=Sum(), avg=Mean())
    window, ref = _pair(monoid, TimeRange(10), algorithm)
    for w in (window, ref):
        w.insert_many([(0, 1.5), (1, 2.5)])
    for args in [(2, {"total": 1.0}), (2, float("inf")), (-1, 1.0), (2, {"total": 1.0, "avg": 1.0, "x": 1}),
                 (float("nan"), 1.0)]:
        got, want = _call(window, "insert", *args), _call(ref, "insert", *args)
        assert isinstance(got, tuple) and repr(got) == repr(want)
    got = _call(window, "many", 3, [1.0, {"total": 1.0}])
    assert isinstance(got, tuple) and repr(got) == repr(_call(ref, "many", 3, [1.0, {"total": 1.0}]))
    for k in (-1, 3, 1.5):
        assert repr(_call(window, "evict", 0, k)) == repr(_call(ref, "evict", 0, k))
    assert window._typed and len(window) == 2 and repr(window.query()) == repr(ref.query())


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
def test_numpy_columns_and_pickled_copy(algorithm):
    monoid = Record(n=Count(), total=Sum(), high=Max(), avg=Mean())
    window, ref = _pair(monoid, TimeRange(100), algorithm)
    ts, vs = np.arange(500) // 2, np.random.default_rng(3).standard_normal(500)
    assert window.insert_many(ts, vs) == ref.insert_many(ts, vs)
    assert repr(window.query()) == repr(ref.query())
    copy = pickle.loads(pickle.dumps(window))
    assert copy._typed
    for w in (window, copy, ref):
        w.insert_many(np.arange(250, 260), np.ones(10, dtype=np.int64))  # an int Sum into floats: demotes
    assert not window._typed and not copy._typed
    assert repr(window.query()) == repr(copy.query()) == repr(ref.query())


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
def test_to_object_zips_the_cores_state(algorithm):
    """TypedRecord.to_object() is the object algorithm in the same state: its updates, total
    and every later result match the object algorithm that ran all along."""
    monoid = Record(n=Count(), total=Sum(), avg=Mean(), low=Min())
    rng = np.random.default_rng(11)
    core = TypedRecord(monoid, TYPED_ALGORITHMS[algorithm])
    use = typed.USE
    try:
        typed.USE = False
        ref = Window(monoid, algorithm=algorithm)._algorithm
    finally:
        typed.USE = use
    for i in range(300):
        partial = monoid.lift(float(rng.standard_normal()))
        core.insert(partial)
        ref.insert(partial)
        if i % 7 == 0:
            core.evict(3 if len(core) > 3 else 0)
            ref.evict(3 if len(ref) > 3 else 0)
    twin = core.to_object()
    assert type(twin) is type(ref)
    assert repr(list(twin)) == repr(list(ref)) and repr(twin.query()) == repr(ref.query())
    for i in range(100):
        partial = monoid.lift(float(rng.standard_normal()))
        twin.insert(partial)
        ref.insert(partial)
        twin.evict(1)
        ref.evict(1)
        assert repr(twin.query()) == repr(ref.query())


def test_serves_records_of_typed_fields_only():
    assert serves(Record(a=Sum(), b=Count()))
    assert not serves(Sum())
    assert not serves(Record(a=Sum(), b=Record(c=Sum())))
    assert serves(Record(a=Sum(), b=MinCount(), c=First(), d=Variance(), e=ArgMin()))
    assert not serves(Record(a=Sum(), b=GeometricMean()))
    with pytest.raises(TypeError):
        TypedRecord(Record(a=Sum(), b=Record(c=Sum())), TYPED_ALGORITHMS["amta"])


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("policy", [None, MaxSize(30), TimeRange(7.5)], ids=repr)
def test_numpy_float_columns_in_c_loops(algorithm, policy):
    """Float64 columns go into each field's core in C loops; what they cannot take (NaN,
    a field's core of the int kind, timestamps out of order) goes the general way, with
    the object path's results and errors."""
    monoid = Record(n=Count(), total=Sum(), low=Min(), avg=Mean())
    window, ref = _pair(monoid, policy, algorithm)
    rng = np.random.default_rng(5)
    t = 0.0
    for step in range(12):
        vs = rng.standard_normal(40) * 100
        ts = t + np.sort(rng.integers(0, 4, 40)).astype(np.float64)
        if step == 5:
            vs[3] = np.nan
        if step == 7:
            ts[2], ts[3] = ts[3] + 1, ts[2]
        got, want = _call(window, "arrays", ts, vs), _call(ref, "arrays", ts, vs)
        assert repr(got) == repr(want)
        assert repr(window.query()) == repr(ref.query()) and len(window) == len(ref)
        assert window._typed
        t = float(ts.max())
    assert repr(list(window)) == repr(list(ref))
    fresh, fresh_ref = _pair(monoid, policy, algorithm)
    for w in (fresh, fresh_ref):
        w.insert(0, {"n": 0, "total": 3, "low": 1.0, "avg": 2.0})  # the Sum field's core holds ints
        w.insert_many(np.arange(1.0, 5.0), np.ones(4))  # floats: the general path, which demotes
    assert not fresh._typed and repr(fresh.query()) == repr(fresh_ref.query())


def test_pickle_loads_on_the_pure_path(tmp_path):
    """Record windows on typed cores pickled here (compiled when built) load under
    MTA_NO_EXTENSIONS=1 and go on with the same results."""
    monoid = Record(n=Count(), total=Sum(), high=Max(), avg=Mean())
    windows = []
    for name in TYPED_ALGORITHMS:
        for policy in (MaxSize(5), TimeRange(5)):
            window, _ = _pair(monoid, policy, name)
            for t in range(100):
                window.insert(t, t * 0.5)
            windows.append(window)
    assert_continues_on_pure_path(windows, tmp_path)
    assert all(window._typed for window in windows)


@given(value=st.one_of(st.floats(), st.integers(), st.integers(-2 ** 64, 2 ** 64), st.booleans(), st.none(),
                       st.fractions(), st.text(max_size=2), st.sampled_from([-0.0, 2 ** 63 - 1, -(2 ** 63), 2 ** 63,
                                                                              np.float32(1.5), np.int64(7)]),
                       st.dictionaries(st.sampled_from(list(FIELDS)), st.floats(), max_size=5)))
@settings(max_examples=300, deadline=None)
def test_core_lift_is_the_monoids(value):
    """TypedRecord.lift (Window.insert's, on a typed Record window) gives Record.lift's partial
    or error, for plain numbers built in the core and anything else."""
    monoid = Record(FIELDS)
    core = TypedRecord(monoid, TYPED_ALGORITHMS["amta"])

    def lifted(lift):
        try:
            return lift(value)
        except Exception as error:  # noqa: BLE001 -- compared
            return type(error), str(error)
    assert repr(lifted(core.lift)) == repr(lifted(monoid.lift))


def test_a_field_without_a_plain_lift_goes_the_monoids_way(monkeypatch):
    """A field the core does not know how a plain number lifts (an op added to the cores
    later): the monoid's lift builds the partial, numpy columns go the general path."""
    from mta.algorithms import typed_record
    monkeypatch.setattr(typed_record, "_PLAIN_LIFTS", {Count: 1, Mean: 2})
    monkeypatch.setattr(typed_record, "_ARRAY_LIFTS", {Count: (1, 0), Mean: (2, 2)})
    monoid = Record(n=Count(), total=Sum(), avg=Mean())
    core = TypedRecord(monoid, TYPED_ALGORITHMS["two_stacks"])
    assert repr(core.lift(2.5)) == repr(monoid.lift(2.5)) == repr((1, 2.5, (2.5, 1)))
    with pytest.raises(typed.Untyped):
        core.insert_array(np.ones(3))
    assert len(core) == 0
    core.insert_many([monoid.lift(1.5)] * 3)
    assert core.query() == (3, 4.5, (4.5, 3))


#: Every field the typed cores serve; ArgMin lifts pairs, not numbers: with it a numeric
#: column is the general path's to refuse.
ARRAY_FIELDS = {"n": Count(), "total": Sum(), "low": Min(), "high": Max(), "avg": Mean(), "few": MinCount(),
                "most": MaxCount(), "first": First(), "last": Last(), "var": Variance(), "sd": StdDev(ddof=1),
                "arg": ArgMin()}
_ARRAY_VALUES = {"f8": st.sampled_from([0.5, -0.0, 0.0, 1e16, -3.25, 7.0, 2.0 ** 60]),
                 "i8": st.integers(-2 ** 25, 2 ** 25), "i4": st.integers(-5, 5), "f4": st.sampled_from([0.5, -2.0]),
                 "u8": st.just(2 ** 64 - 1), "?": st.booleans()}
_ODD_VALUES = {"f8": st.sampled_from([float("nan"), float("inf"), -float("inf")]),
               "i8": st.sampled_from([2 ** 25 + 1, 2 ** 62, -2 ** 63, 2 ** 63 - 1])}


@settings(max_examples=40, deadline=None)
@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("policy", [None, MaxSize(20), TimeRange(6)], ids=repr)
@given(data=st.data())
def test_numpy_columns_of_every_field_match_the_object_window(algorithm, policy, data):
    """Records of any typed fields take int64 and float64 columns in C loops: against the
    object window given the same columns (the general path, the pairs' checks): the same
    evictions, results bit for bit, errors (NaN or inf where a field refuses it, out-of-order
    timestamps, lengths, ArgMin fields), the window unchanged on an error, and demotion (ints
    beyond 2**25 for Variance, the Sum bound, bool or object columns) with the object results."""
    names = data.draw(st.lists(st.sampled_from(list(ARRAY_FIELDS)), min_size=1, max_size=4, unique=True))
    window, ref = _pair(Record({name: ARRAY_FIELDS[name] for name in names}), policy, algorithm)
    t = 0
    for _ in range(data.draw(st.integers(1, 5))):
        n = data.draw(st.integers(0, 30))
        dtype = data.draw(st.sampled_from(["f8", "f8", "i8", "i8", "i4", "f4", "u8", "?", "O"]))
        element = _ARRAY_VALUES.get(dtype, _ARRAY_VALUES["i8"])
        if dtype in _ODD_VALUES and data.draw(st.booleans()):
            element = element | _ODD_VALUES[dtype]
        values = np.array(data.draw(st.lists(element, min_size=n, max_size=n)), dtype=dtype)
        late = data.draw(st.booleans())
        times = np.array(sorted(data.draw(st.lists(st.integers(-1 if late else 0, 2), min_size=n, max_size=n))),
                         dtype=np.int64) + t
        if late and n > 1:
            times[0] = t - 1
        if data.draw(st.integers(0, 5)) == 0:
            times = times[:-1]
        t = int(times.max()) if len(times) else t
        before = (len(window), repr(window.query()), repr(list(window)))
        got, want = _call(window, "arrays", times, values), _call(ref, "arrays", times, values)
        assert repr(got) == repr(want), (got, want)
        if isinstance(got, tuple):
            assert (len(window), repr(window.query()), repr(list(window))) == before
        assert repr(window.query()) == repr(ref.query()) and len(window) == len(ref)
        assert repr(list(window)) == repr(list(ref))


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_numpy_columns_of_every_numeric_field_take_no_python_per_event(monkeypatch, algorithm, dtype):
    """int64 and float64 columns into a Record of every field that lifts numbers: no field's
    lift is called (the C loops), the window stays typed and gives the object window's results."""
    from unittest import mock
    monoid = Record({name: m for name, m in ARRAY_FIELDS.items() if name != "arg"})
    window, ref = _pair(monoid, TimeRange(50), algorithm)
    ts, vs = np.arange(400) // 3, (np.arange(400) % 17 - 8).astype(dtype)
    lifts = [mock.patch.object(type(m), "lift", side_effect=AssertionError("general path"))
             for m in monoid.fields.values()]
    for patch in lifts:
        patch.start()
    try:
        got = window.insert_many(ts, vs)
    finally:
        for patch in lifts:
            patch.stop()
    assert got == ref.insert_many(list(zip(ts.tolist(), vs.tolist()))) and window._typed
    assert repr(window.query()) == repr(ref.query()) and repr(list(window)) == repr(list(ref))


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("policy", [MaxSize(5), TimeRange(3)], ids=repr)
def test_insert_is_one_call_into_the_core(algorithm, policy):
    """A typed Record window's insert and query are its typed.Events' (plain numbers lifted
    by the core in C), with the object window's results and errors; a value a field's core
    does not hold demotes it, and a method saved before goes on the checked way."""
    monoid = Record(n=Count(), total=Sum(), few=MinCount(), var=Variance())
    window, ref = _pair(monoid, policy, algorithm)
    insert = window.insert
    assert insert.__self__ is window._events and window.query.__self__ is window._events
    for t, value in enumerate([1.5, 0.25, -0.0, float("nan"), "x", 3.0, {"n": 1, "total": 2.0, "few": 3.0, "var": 4.0},
                               2.5, float("inf"), 9.0, 7, 1.0]):
        got, want = _call(window, "insert", t, value), _call(ref, "insert", t, value)
        assert repr(got) == repr(want)
        assert repr(window.query()) == repr(ref.query()) and repr(list(window)) == repr(list(ref))
        assert window._typed is (t < 10)  # 7: an int for the float cores
    assert window._events is None
    assert insert(20, 1.0) == ref.insert(20, 1.0) and repr(window.query()) == repr(ref.query())


@pytest.mark.parametrize("algorithm", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("monoid", [Sum(), Mean()], ids=repr)
def test_core_bounds_an_int_column_by_the_callers_abs_total(algorithm, monoid):
    """A core's insert_array given an int64 column's sum of |v| (TypedRecord sums a column
    once for every field) checks that sum against its INT bound: beyond it Untyped, unchanged."""
    core = TYPED_ALGORITHMS[algorithm](monoid)
    core.insert_array(np.array([2 ** 62], dtype=np.int64), None, 2 ** 62)
    before = core.query()
    with pytest.raises(typed.Untyped):  # the column alone fits: the given sum is what is checked
        core.insert_array(np.array([1], dtype=np.int64), None, 2 ** 63 - 1 - 2 ** 62 + 1)
    assert core.query() == before and len(core) == 1
    core.insert_array(np.array([-5], dtype=np.int64), None, 5)
    assert len(core) == 2 and core.query() == (before - 5 if type(monoid) is Sum else (2 ** 62 - 5, 2))
