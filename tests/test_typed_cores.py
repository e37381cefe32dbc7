"""The typed cores (mta.algorithms.typed, issue 20) against the object algorithms they mirror.

Every core runs twice in this process: as imported (compiled when the install had a C
compiler) and as its pure-Python twin (``load_pure``). Both must give the object
algorithm's results on random operation sequences: the same values and types, floats
included (the values mix magnitudes so that a different order of additions shows), and a
partial a core cannot hold must raise ``Untyped`` without changing it, after which its
``to_object()`` goes on exactly as the object algorithm would have.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, strategies as st

from conftest import hsettings

from mta import (ArgMax, ArgMin, Count, First, GeometricMean, Last, Max, MaxCount, MaxSize, Mean, Min, MinCount, StdDev, Sum,
                 TimeRange, Variance, Window, all_of, any_of)
from mta._extensions import load_pure
from mta.algorithms import ALGORITHMS, TYPED_ALGORITHMS, LogMTA, typed

MONOIDS = [Sum, Count, Min, Max, Mean]
#: What windows take typed beyond MONOIDS (ArgMin and ArgMax, whose inputs are pairs:
#: test_arg_windows_match_object_windows).
WINDOW_MONOIDS = [*MONOIDS, MinCount, MaxCount, First, Last, Variance, StdDev]
TWINS = {"imported": typed, "pure": load_pure("mta.algorithms.typed")}
_PURE_MODULES = {"mta.algorithms.typed": TWINS["pure"]}
# A pure twin raises its own module's Untyped, or the imported one (modules that import it).
UNTYPED = {"imported": (typed.Untyped,), "pure": (TWINS["pure"].Untyped, typed.Untyped)}


def _twin(path: str, cls: type) -> type:
    """``cls`` as imported, or the class of the same name in its module's pure twin."""
    if path == "imported":
        return cls
    if cls.__module__ not in _PURE_MODULES:
        _PURE_MODULES[cls.__module__] = load_pure(cls.__module__)
    return getattr(_PURE_MODULES[cls.__module__], cls.__name__)

# Magnitudes far apart: a sum in another order rounds differently.
floats = st.sampled_from([1e16, -1e16, 1.0, 0.5, -3.25, 1e-3, 7.0, 2.0 ** 60, -0.0, -0.0, 0.0])
ints = st.one_of(st.integers(-10**6, 10**6), st.sampled_from([2**62, -2**62, 2**63 - 1, -2**63, 2**63, -2**64]))
values = st.one_of(floats, ints)


def _values_for(monoid_cls):
    """Ints, floats or both, and infinities where the monoid takes them."""
    extra = st.sampled_from([math.inf, -math.inf]) if monoid_cls in (Min, Max) else st.nothing()
    return st.one_of(st.deferred(lambda: floats), st.deferred(lambda: ints), extra)


def _op(monoid_cls):
    vals = _values_for(monoid_cls)
    return st.one_of(
        st.tuples(st.just("insert"), vals),
        st.tuples(st.just("insert"), vals),
        st.tuples(st.just("many"), st.lists(vals, max_size=6)),
        st.tuples(st.just("evict"), st.integers(0, 4)),
        st.tuples(st.just("evict"), st.integers(0, 4)),
        st.tuples(st.just("clear"), st.none()),
        st.tuples(st.just("snapshot"), st.none()),
        st.tuples(st.just("restore"), st.none()),
    )


def _same(a, b) -> bool:
    """Equal values of the same types (tuples element by element; floats bit for bit, so
    that -0.0 is not 0.0)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(map(_same, a, b))
    if type(a) is float and type(b) is float:
        return a.hex() == b.hex() or (a != a and b != b)
    return type(a) is type(b) and a == b


def _assert_same_state(core, ref) -> None:
    assert len(core) == len(ref)
    assert _same(core.query(), ref.query()), (core.query(), ref.query())
    assert all(map(_same, core, ref))


def _state(algorithm) -> tuple:
    return len(algorithm), algorithm.query(), list(algorithm)


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("name", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("monoid_cls", MONOIDS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_core_matches_object_algorithm(path, name, monoid_cls, data):
    monoid = monoid_cls()
    core = _twin(path, TYPED_ALGORITHMS[name])(monoid)
    ref = ALGORITHMS[name](monoid)
    untyped = UNTYPED[path]
    demoted = False
    saved = None
    for kind, arg in data.draw(st.lists(_op(monoid_cls), max_size=60)):
        if kind in ("insert", "many"):
            partials = monoid.lift(arg) if kind == "insert" else [monoid.lift(v) for v in arg]
            before = _state(core)
            try:
                core.insert(partials) if kind == "insert" else core.insert_many(partials)
            except untyped:
                assert not demoted, "an object algorithm raised Untyped"
                state = _state(core)
                assert _same(state[1], before[1]) and state[0] == before[0] and state[2] == before[2]
                assert kind == "insert" or not core.accepts(partials)
                core, demoted, saved = core.to_object(), True, None
                core.insert(partials) if kind == "insert" else core.insert_many(partials)
            ref.insert(partials) if kind == "insert" else ref.insert_many(partials)
        elif kind == "evict":
            k = arg if arg <= len(ref) else len(ref) + 1
            if k > len(ref):
                for window in (core, ref):
                    with pytest.raises(ValueError, match=f"cannot evict {k} elements from a window of {len(ref)}"):
                        window.evict(k)
            else:
                core.evict(k)
                ref.evict(k)
        elif kind == "clear":
            core.clear()
            ref.clear()
        elif kind == "snapshot":
            saved = (core.snapshot(), ref.snapshot())
        elif saved is not None:  # restore, once per snapshot (it becomes the state)
            core.restore(saved[0])
            ref.restore(saved[1])
            saved = None
        _assert_same_state(core, ref)


#: The cores of mta.algorithms.typed (TypedAMTA's own tests: tests/test_typed_amta.py).
CORES = ["two_stacks", "daba", "log_mta"]
WIDE_MONOIDS = [MinCount, MaxCount, First, Last, Variance, StdDev, ArgMin, ArgMax]
# ties of either sign and int64's ends, so that a combine in another order or keeping the
# other operand shows
tie_floats = st.sampled_from([0.0, -0.0, 0.0, -0.0, 1.5, -2.0, 1e16])
tie_ints = st.sampled_from([0, 0, 1, -1, 7, 2**63 - 1, -2**63])
#: Values the object algorithms combine but the typed cores refuse (bool, beyond int64),
#: MinCount and MaxCount refuse non-finite values too (First and Last take them).
odd_values = st.sampled_from([True, 2**63, -2**64, math.nan, math.inf, -math.inf])


def _wide_partial(monoid_cls, ints):
    """Partials of the window's kind; one in eight of another kind, an odd value or count."""
    value = tie_ints if ints else tie_floats
    odd_value = st.one_of(tie_floats if ints else tie_ints, odd_values)
    if monoid_cls in (Variance, StdDev):
        # lifted values (ints up to 2**25), merged partials, and what the cores refuse: a
        # larger int, a count of 0 or a bool, M2 a float for one value, an int mean of two
        lifted = st.builds(lambda v: (1, v, 0), st.sampled_from([0, 1, -1, 7, 2**25, -2**25]) if ints
                           else st.sampled_from([0.0, -0.0, 1.5, -2.0, 1e16, 0.1]))
        merged = st.sampled_from([(2, 1.5, 0.5), (3, -0.0, 0.0), (5, 1e16, 2.5e31)])
        odd = st.sampled_from([(1, 2**25 + 1, 0), (0, 0.0, 0.0), (True, 1.0, 0), (1, 2.5, 0.0), (2, 1, 0.5),
                               (2, 1.5, 0), (1, math.nan, 0), (1, math.inf, 0), (1, 1.0 if ints else 1, 0)])
        return st.one_of(*[lifted] * 6, merged, odd)
    if monoid_cls in (ArgMin, ArgMax):
        keys = st.sampled_from([0, 1, -5, 2**63 - 1]) if ints else st.sampled_from([0.5, -0.0, math.nan, math.inf])
        odd_key = st.sampled_from([None, "k", True, 2**63, 1.5 if ints else 1])
        values = st.one_of(value, value, st.sampled_from([math.inf, -math.inf]) if not ints else value)
        odd = st.one_of(st.tuples(odd_value, keys), st.tuples(value, odd_key), st.sampled_from([None, (1.0,)]))
        return st.one_of(*[st.tuples(values, keys)] * 7, odd)
    if monoid_cls in (First, Last):
        return st.one_of(*[value] * 7, odd_value, st.sampled_from([None, "x", (1, 2)]))
    count = st.sampled_from([0, 1, 1, 1, 2, 3])
    odd_count = st.sampled_from([2**32 - 1, 2**32, -1, 1.0, True])  # all but the first refused
    return st.one_of(*[st.tuples(value, count)] * 7, st.tuples(odd_value, count), st.tuples(value, odd_count))


def _wide_ops(monoid_cls, ints):
    partial = _wide_partial(monoid_cls, ints)
    return st.one_of(
        st.tuples(st.just("insert"), partial),
        st.tuples(st.just("insert"), partial),
        st.tuples(st.just("insert"), partial),
        st.tuples(st.just("many"), st.lists(partial, max_size=6)),
        st.tuples(st.just("evict"), st.integers(0, 4)),
        st.tuples(st.just("evict"), st.integers(0, 4)),
        st.tuples(st.just("evict_all"), st.none()),
        st.tuples(st.just("clear"), st.none()),
        st.tuples(st.just("snapshot"), st.none()),
        st.tuples(st.just("restore"), st.none()),
        st.tuples(st.just("copy"), st.none()),
        st.tuples(st.just("demote"), st.none()),
    )


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("name", CORES)
@pytest.mark.parametrize("monoid_cls", WIDE_MONOIDS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_wide_core_matches_object_algorithm(path, name, monoid_cls, data):
    """MinCount, MaxCount, First, Last, Variance, StdDev, ArgMin and ArgMax on TypedTwoStacks,
    TypedDABA and TypedLogMTA against the object algorithm: partials of either kind with ties
    (0.0 and -0.0: which operand won shows), zero counts, NaN and infinities (First, Last;
    ArgMin's keys), merged Variance partials; bulk evictions and evicting all;
    copies (pickle compiled, deepcopy pure). A partial a core refuses raises Untyped as
    ``fits`` / ``accepts`` predicted, leaving it as it was; ``to_object()`` then (or at any
    point: "demote") goes on as the object algorithm."""
    import copy
    import pickle
    monoid = monoid_cls()
    core = _twin(path, TYPED_ALGORITHMS[name])(monoid)
    ref = ALGORITHMS[name](monoid)
    untyped = UNTYPED[path]
    demoted = False
    saved = None
    ints = data.draw(st.booleans())
    for kind, arg in data.draw(st.lists(_wide_ops(monoid_cls, ints), max_size=60)):
        if kind in ("insert", "many"):
            before = _state(core)
            expected = demoted or (core.fits(arg) if kind == "insert" else core.accepts(arg))
            try:
                core.insert(arg) if kind == "insert" else core.insert_many(arg)
                assert expected
            except untyped:
                assert not expected
                state = _state(core)
                assert state[0] == before[0] and _same(state[1], before[1]) and all(map(_same, state[2], before[2]))
                core, demoted, saved = core.to_object(), True, None
                core.insert(arg) if kind == "insert" else core.insert_many(arg)
            ref.insert(arg) if kind == "insert" else ref.insert_many(arg)
        elif kind in ("evict", "evict_all"):
            k = len(ref) if kind == "evict_all" else min(arg, len(ref))
            core.evict(k)
            ref.evict(k)
        elif kind == "clear":
            core.clear()
            ref.clear()
        elif kind == "snapshot":
            saved = (core.snapshot(), ref.snapshot())
        elif kind == "restore" and saved is not None:  # once per snapshot (it becomes the state)
            core.restore(saved[0])
            ref.restore(saved[1])
            saved = None
        elif kind == "copy":
            core = pickle.loads(pickle.dumps(core)) if path == "imported" else copy.deepcopy(core)
        elif kind == "demote" and not demoted:
            core, demoted, saved = core.to_object(), True, None
        _assert_same_state(core, ref)
        if not demoted:
            assert repr(core.result()) == repr(monoid.lower(ref.query()))  # repr: NaN is itself
            if len(ref):
                assert _same(core.oldest(), next(iter(ref)))


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("name", CORES)
def test_wide_cores_refuse_what_they_cannot_hold(path, name):
    """What the wide ops' cores refuse (Untyped, nothing changed): a partial not shaped as
    the monoid's, a count outside [0, 2**32) or not an int, MinCount / MaxCount of a
    non-finite value, a bool, an int beyond int64, the other kind in a window not empty,
    First / Last of their own identity; Variance's count 0, an int beyond 2**25, a merged
    partial of ints; ArgMin's identity None, NaN, keys neither int64 nor float, or of the
    other kind."""
    from mta.monoid import _EMPTY
    untyped = UNTYPED[path]
    cls = _twin(path, TYPED_ALGORITHMS[name])
    cases = {MinCount: [1.0, (1.0,), [1.0, 1], (1.0, 1, 1), (1.0, -1), (1.0, 2**32), (1.0, 1.0), (1.0, True),
                        (math.inf, 1), (math.nan, 1), (True, 1), (2**63, 1), (2, 1), ("x", 1)],
             First: [_EMPTY, True, 2**63, -2**63 - 1, 2, None, "x", (1.5, 1)],
             Variance: [(0, 0.0, 0.0), (1, 2, 0), (1, 2.0, 0.0), (1, math.nan, 0), (1, math.inf, 0), (2, 1, 0.5),
                        (2, 1.5, 0), (2, 1.5, math.inf), (True, 1.0, 0), (2**32, 1.0, 0.5), (1, 1.0), None, 1.0],
             ArgMin: [None, (1.0,), (math.nan, 1), (1, 1), (True, 1), (1.0, None), (1.0, 1.5), (1.0, True),
                      (1.0, 2**63), 1.0]}
    cases[MaxCount], cases[Last], cases[StdDev], cases[ArgMax] = (cases[MinCount], cases[First], cases[Variance],
                                                                  cases[ArgMin])
    goods = {MinCount: (1.5, 2), MaxCount: (1.5, 2), Variance: (1, 1.5, 0), StdDev: (1, 1.5, 0), ArgMin: (1.5, 3),
             ArgMax: (1.5, 3)}
    others = {MinCount: (2, 1), MaxCount: (2, 1), Variance: (1, 2, 0), StdDev: (1, 2, 0), ArgMin: (2, 2.5),
              ArgMax: (2, 2.5)}
    for monoid_cls, bad in cases.items():
        core = cls(monoid_cls())
        good = goods.get(monoid_cls, 1.5)
        core.insert_many([good, good])
        before = _state(core)
        for partial in bad:
            assert not core.fits(partial) and not core.accepts([good, partial])
            with pytest.raises(untyped):
                core.insert(partial)
            with pytest.raises(untyped):
                core.insert_many([good, partial])
            assert _state(core) == before
        core.evict(2)
        other = others.get(monoid_cls, 2)
        core.insert(other)  # an empty window takes the other kind
        assert _same(core.query(), other)


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("name", CORES)
@pytest.mark.parametrize("monoid_cls", WIDE_MONOIDS, ids=lambda c: c.__name__)
def test_wide_cores_on_long_windows(path, name, monoid_cls):
    """Hundreds of partials with many ties (the rings grow, flip and shrink; LogMTA climbs
    several levels), evicted one by one and in bulk, against the object algorithm."""
    rng = random.Random(20)
    monoid = monoid_cls()
    core = _twin(path, TYPED_ALGORITHMS[name])(monoid)
    ref = ALGORITHMS[name](monoid)
    pool = ([math.nan, -0.0, 0.0, 1.0, math.inf] if monoid_cls in (First, Last)
            else [0.1, 1e16, -3.25, 7.0, 1e-3] if monoid_cls in (Variance, StdDev) else [0.0, -0.0, 1.0, -1.0, 0.5])
    for _ in range(6):
        batch = [rng.choice(pool) for _ in range(rng.randrange(400))]
        if monoid_cls in (MinCount, MaxCount):
            batch = [(v, rng.randrange(3)) for v in batch]
        elif monoid_cls in (ArgMin, ArgMax):
            batch = [(v, rng.randrange(5)) for v in batch]
        elif monoid_cls in (Variance, StdDev):
            batch = [monoid.lift(v) for v in batch]
        core.insert_many(batch[: len(batch) // 2])
        ref.insert_many(batch[: len(batch) // 2])
        for p in batch[len(batch) // 2:]:
            core.insert(p)
            ref.insert(p)
        _assert_same_state(core, ref)
        while len(ref) > 50:
            k = rng.choice([1, 1, 2, 17, len(ref) // 3])
            core.evict(k)
            ref.evict(k)
            _assert_same_state(core, ref)
    twin = core.to_object()
    for algorithm in (twin, ref):
        algorithm.insert_many(batch[:20])
        algorithm.evict(len(algorithm) - 3)
    _assert_same_state(twin, ref)


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("name", list(TYPED_ALGORITHMS))
def test_core_errors_are_the_object_algorithms(path, name):
    core = _twin(path, TYPED_ALGORITHMS[name])(Sum())
    ref = ALGORITHMS[name](Sum())
    for window in (core, ref):
        window.insert_many([1.0, 2.0])
    for bad, error in (("1", TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError), (3, ValueError),
                       (2**70, ValueError)):
        messages = []
        for window in (core, ref):
            with pytest.raises(error) as raised:
                window.evict(bad)
            messages.append(str(raised.value))
        assert messages[0] == messages[1]
        assert _same(core.query(), 3.0) and len(core) == 2


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("name", list(TYPED_ALGORITHMS))
def test_int_bound_refuses_what_could_overflow(path, name):
    """INT kind: the sum of |v| over the window stays below 2**63, so no partial sum overflows."""
    core = _twin(path, TYPED_ALGORITHMS[name])(Sum())
    core.insert(2**62)
    core.insert(2**62 - 1)  # |v| sums to 2**63 - 1: still held
    with pytest.raises(UNTYPED[path]):
        core.insert(-1)  # the sum would be exact, but |v| no longer bounds every partial sum
    assert not core.accepts([1]) and core.accepts([])
    core.evict(1)
    core.insert(-5)  # room again once the big value left
    assert _same(core.query(), 2**62 - 6)
    twin = core.to_object()
    twin.insert(2**80)
    assert _same(twin.query(), 2**62 - 6 + 2**80)
    core.clear()
    core.insert(1.5)  # an empty window takes either kind
    assert _same(core.query(), 1.5)


FLOAT_POOL = [1e16, -1e16, 1.0, 0.5, -3.25, 1e-3, 7.0, 2.0 ** 60, -0.0]


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("monoid_cls", MONOIDS, ids=lambda c: c.__name__)
@hsettings(max_examples=12)
@given(data=st.data())
def test_log_mta_bulk_evictions_across_levels(path, monoid_cls, data):
    """TypedLogMTA on windows of up to a few thousand leaves (its rings double; the object's
    nodes go through its store), evicted in bulk by any number, emptied (head = tail > 0) and
    refilled: against LogMTA, and LogMTA with one-node buffers and caches (every node read
    back from its store); demoted midway, the object twin goes on as LogMTA."""
    monoid = monoid_cls()
    core = _twin(path, typed.TypedLogMTA)(monoid)
    refs = [LogMTA(monoid), LogMTA(monoid, buffer_size=1, cache_size=1)]
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    ints, ties = data.draw(st.booleans()), data.draw(st.booleans())
    # ties: the extreme is a zero of either sign, so that Min and Max show which operand won
    pool = [0.0, -0.0, 0.0, -0.0, -1.0 if monoid_cls is Max else 1.0] if ties else [x * rng.random() for x in FLOAT_POOL]
    demote_at = data.draw(st.integers(0, 8))
    steps = data.draw(st.lists(st.tuples(st.integers(0, 1500), st.integers(0, 2**11),
                                         st.sampled_from([False, False, False, True])), min_size=1, max_size=6))
    for step, (grow, evict, everything) in enumerate(steps):
        batch = [monoid.lift(rng.randint(-10**6, 10**6) if ints else rng.choice(pool)) for _ in range(grow)]
        for algorithm in (core, *refs):
            algorithm.insert_many(batch)
        _assert_same_state(core, refs[0])
        k = len(refs[0]) if everything else min(evict, len(refs[0]))
        for k in (k, *[1] * min(rng.randint(0, 8), len(refs[0]) - k)):  # then a few single ones
            for algorithm in (core, *refs):
                algorithm.evict(k)
            _assert_same_state(core, refs[0])
        if step == demote_at:
            core = core.to_object()
        for ref in refs:
            _assert_same_state(core, ref)
        if len(refs[0]):
            assert _same(core._oldest() if step >= demote_at else core.oldest(), refs[0]._oldest())


@pytest.mark.parametrize("path", list(TWINS))
def test_log_mta_empty_windows(path):
    """Empty at leaf 0, emptied at any leaf (the tree goes on from there), cleared (back to
    leaf 0): the identity, nothing to iterate, and the object algorithm's results after."""
    core = _twin(path, typed.TypedLogMTA)(Mean())
    ref = LogMTA(Mean())
    _assert_same_state(core, ref)
    assert core.query() == (0, 0) and list(core) == []
    for n in (1, 2, 3, 7, 8, 9, 100):
        for algorithm in (core, ref):
            algorithm.insert_many([(1e16, 1), (0.5, 1), (-1e16, 2)] * n)
            algorithm.evict(len(algorithm))
        _assert_same_state(core, ref)
        assert _same(core.to_object().query(), (0, 0))
        for algorithm in (core, ref):
            algorithm.insert((2.5, 1))
        _assert_same_state(core, ref)
    for algorithm in (core, ref):
        algorithm.clear()
        algorithm.insert_many([(3, 1), (-3, 1)])  # the other kind, once empty
    _assert_same_state(core, ref)
    assert core.to_object()._head == 0


def test_unserved_monoids_are_refused():
    from mta.monoid import Collect, GeometricMean
    for cls in (typed.TypedTwoStacks, typed.TypedDABA, typed.TypedLogMTA):
        for monoid in (GeometricMean(), Collect(), type("MyVariance", (Variance,), {})()):
            with pytest.raises(TypeError, match="typed cores do not serve"):
                cls(monoid)
    assert typed.op_of(type("MySum", (Sum,), {})()) is None  # a subclass may combine otherwise


# -- mta.Window with a typed core -----------------------------------------------------------


@pytest.fixture
def use_typed(monkeypatch):
    """Windows pick the typed cores on whichever path this run is on (compiled or pure)."""
    monkeypatch.setattr(typed, "USE", True)


def _is_typed(window) -> bool:
    return isinstance(window._algorithm, (*TYPED_ALGORITHMS.values(), typed.TypedTimed))


def test_window_picks_a_typed_core_only_where_it_applies(use_typed):
    for name, cls in TYPED_ALGORITHMS.items():
        assert isinstance(Window(Sum(), MaxSize(5), algorithm=name)._algorithm, cls)
        assert isinstance(Window(Mean(), algorithm=name)._algorithm, cls)
        assert isinstance(Window(Sum(), TimeRange(5), algorithm=name)._algorithm.core, cls)
    assert _is_typed(Window(Count(), any_of(TimeRange(5), MaxSize(2))))  # the default algorithm, amta
    for window in (Window(Sum(), TimeRange(2**60)),  # a width a double does not hold
                   Window(Sum(), lambda total, old: False),  # a policy of the user's
                   Window(type("MySum", (Sum,), {})()),  # a subclass may combine otherwise
                   Window(GeometricMean()),
                   Window(Sum(), store="memory://", buffer_size=512),  # options: the object AMTA's
                   Window(Sum(), buffer_size=8),
                   Window(Sum(), algorithm="fiba")):
        assert not _is_typed(window)
    assert _is_typed(Window(Sum(), store="memory://")) and _is_typed(Window(Mean(), TimeRange(3), store="memory://"))
    assert _is_typed(Window(MinCount(), MaxSize(3))) and _is_typed(Window(MaxCount(), TimeRange(3)))
    assert _is_typed(Window(First(), MaxSize(3))) and _is_typed(Window(Last(), TimeRange(3)))
    for monoid in (Variance(), Variance(ddof=1), StdDev(), ArgMin(), ArgMax()):
        assert _is_typed(Window(monoid, MaxSize(3))) and _is_typed(Window(monoid, TimeRange(3)))
        assert _is_typed(Window(monoid)) and Window(monoid).algorithm == "amta"
    for name in CORES:
        for monoid_cls in WIDE_MONOIDS:
            assert isinstance(Window(monoid_cls(), MaxSize(3), algorithm=name)._algorithm, TYPED_ALGORITHMS[name])
            assert isinstance(Window(monoid_cls(), TimeRange(3), algorithm=name)._algorithm.core, TYPED_ALGORITHMS[name])


def test_window_uses_typed_cores_when_compiled():
    assert _is_typed(Window(Sum(), MaxSize(5))) is typed.COMPILED


POLICIES = [None, MaxSize(0), MaxSize(3), TimeRange(3), TimeRange(2.5), TimeRange(1),
            any_of(TimeRange(4), MaxSize(3)), all_of(TimeRange(2), MaxSize(2))]


def _windows(monoid_cls, policy):
    """The window on each typed core that serves the monoid (on this run's path), and the same
    windows on objects."""
    use = typed.USE
    names = [name for name in TYPED_ALGORITHMS if typed.serves(monoid_cls())]
    try:
        typed.USE = False
        refs = [Window(monoid_cls(), policy, algorithm=name) for name in names]
        typed.USE = True
        windows = [Window(monoid_cls(), policy, algorithm=name) for name in names]
    finally:
        typed.USE = use
    assert all(isinstance(w._algorithm, (TYPED_ALGORITHMS[w.algorithm], typed.TypedTimed)) for w in windows)
    return windows, refs


def _call(window, kind, t, arg):
    """One operation on a window: its result, or the error it raised (type and message)."""
    try:
        if kind == "insert":
            return window.insert(t, arg[0] if arg else 1.0)
        if kind == "pairs":
            return window.insert_many([(t, v) for v in arg])
        if kind == "arrays":  # numpy columns, whatever dtype numpy makes of them
            times = np.array([t] * len(arg))
            try:
                values = np.array(arg)
            except (OverflowError, ValueError):
                values = np.array(arg, dtype=object)
            return window.insert_many(times, values)
        if kind == "evict":
            return window.evict(min(len(arg), len(window)))
        if kind == "evict_before":
            return window.evict_before(t - 1)
        return window.oldest_timestamp()
    except (TypeError, ValueError) as error:
        return (type(error), str(error))


@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@pytest.mark.parametrize("monoid_cls", WINDOW_MONOIDS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_window_with_typed_core_matches_object_window(monoid_cls, policy, data):
    """Windows on typed cores against the same algorithms on objects: results, evictions,
    errors, and demotion on a value or a timestamp of another kind, through every way in
    (insert, pairs, numpy columns of any dtype) and out (query, iteration, evict_before)."""
    windows, refs = _windows(monoid_cls, policy)
    kinds = ["insert", "insert", "pairs", "arrays", "arrays", "evict"]
    if policy is not None and policy.max_size is None:
        kinds += ["evict_before", "oldest"]
    t = data.draw(st.sampled_from([0, 0.0, -2**61]))
    steps = st.tuples(st.sampled_from(kinds), st.lists(values | st.just("x") | st.just(math.nan), max_size=4),
                      st.sampled_from([0, 0, 1, 2, 0.5]))
    for kind, arg, dt in data.draw(st.lists(steps, max_size=30)):
        t += dt
        results = [_call(window, kind, t, arg) for window in (*windows, *refs)]
        assert all(r == results[-1] for r in results), results
        for window, ref in zip(windows, refs):
            assert len(window) == len(ref)
            assert _same(window.query(), ref.query()), (window.query(), ref.query())
            assert all(map(_same, window, ref))


@pytest.mark.parametrize("policy", [None, MaxSize(3), TimeRange(2.5), any_of(TimeRange(4), MaxSize(3))], ids=repr)
@pytest.mark.parametrize("monoid_cls", [ArgMin, ArgMax], ids=lambda c: c.__name__)
@given(data=st.data())
def test_arg_windows_match_object_windows(monoid_cls, policy, data):
    """ArgMin and ArgMax windows on the typed cores that serve them against object windows:
    ``(key, value)`` updates with int or float keys and values (ties: the oldest wins),
    then and again keys or values the cores refuse (demotion), evictions; the same
    results, errors and iteration."""
    windows, refs = _windows(monoid_cls, policy)
    assert {w.algorithm for w in windows} >= set(CORES)
    key = st.one_of(*[st.sampled_from([0, 1, 2]) if data.draw(st.booleans()) else st.sampled_from([0.5, -0.0])] * 8,
                    st.sampled_from([None, "k", math.nan, 1.5, 3, 2**64]))
    value = st.one_of(*[st.sampled_from([0.0, -0.0, 1.5, -math.inf])] * 8, st.sampled_from([1, math.nan, "x", 2**64]))
    t = 0
    for kind, dt, update in data.draw(st.lists(st.tuples(st.sampled_from(["insert", "insert", "pairs", "evict"]),
                                                         st.sampled_from([0, 1, 2]), st.tuples(key, value)),
                                               max_size=30)):
        t += dt
        results = [_call(window, kind, t, [update]) if kind != "insert" else _call_arg(window, t, update)
                   for window in (*windows, *refs)]
        assert all(repr(r) == repr(results[-1]) for r in results), results
        for window, ref in zip(windows, refs):
            assert len(window) == len(ref)
            assert repr(window.query()) == repr(ref.query())
            assert repr(list(window)) == repr(list(ref))


def _call_arg(window, t, update):
    try:
        return window.insert(t, update)
    except (TypeError, ValueError) as error:
        return (type(error), str(error))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint32", "uint64", "float64", "float32", "bool", "object"])
def test_numpy_columns_of_every_dtype(dtype):
    """The typed core's array path takes what it holds exactly; everything else goes the general
    way, with its results and errors."""
    values = np.array([3, 1, 2, 5, 4], dtype=dtype)
    times = np.array([1, 2, 2, 3, 7])
    for monoid_cls in WINDOW_MONOIDS:
        windows, refs = _windows(monoid_cls, TimeRange(3))
        for pair in zip(windows, refs):
            outcomes = []
            for window in pair:
                try:
                    outcomes.append((window.insert_many(times, values), window.query(), tuple(window)))
                except (TypeError, ValueError) as error:
                    outcomes.append((type(error), str(error)))
            assert _same(*outcomes), (dtype, monoid_cls, outcomes)


def test_array_path_takes_no_python_per_event_when_it_applies():
    """Counted, not timed: the column path never calls the monoid's lift (the general path
    calls lift_many once per batch at least)."""
    from unittest import mock
    window = _windows(Sum, TimeRange(10))[0][0]
    with mock.patch.object(Sum, "lift_many", side_effect=AssertionError("general path")):
        window.insert_many(np.arange(100), np.arange(100.0))
    assert window.query() == sum(range(90, 100))
    with pytest.raises(AssertionError, match="general path"), mock.patch.object(
            Sum, "lift_many", side_effect=AssertionError("general path")):
        window.insert_many(np.arange(100, 200), np.array([math.nan] * 100))  # NaN: the general path names it


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("policy", [TimeRange(3), TimeRange(1.5), any_of(TimeRange(2), MaxSize(2)),
                                    all_of(TimeRange(1), MaxSize(1))], ids=repr)
@given(data=st.data())
def test_timed_core_matches_object_algorithm(path, policy, data):
    """TypedTimed against the object algorithm over the timed monoid, as mta.Window drives
    both: elements (1, t, partial), the window's own policy (native) and another one
    (evict_before's), snapshots, and demotion on a timestamp of another kind."""
    from mta.window import _Timed
    module = TWINS[path]
    monoid = Mean()
    timed = _Timed(monoid)
    name = data.draw(st.sampled_from(list(TYPED_ALGORITHMS)))
    core = module.TypedTimed(_twin(path, TYPED_ALGORITHMS[name])(monoid), timed, policy)
    ref = ALGORITHMS[name](timed)
    t, saved = data.draw(st.sampled_from([0, 0.0])), None
    for kind, dt, value in data.draw(st.lists(st.tuples(
            st.sampled_from(["push", "push", "columns", "before", "snapshot", "restore", "evict"]),
            st.sampled_from([0, 1, 2, 0.5]), floats), max_size=40)):
        t += dt
        element = (1, t, monoid.lift(value))
        if kind in ("push", "columns"):
            try:
                if isinstance(core, module.TypedTimed) and kind == "push":
                    evicted = core.push(t, element[2])
                elif isinstance(core, module.TypedTimed):
                    core.insert_columns([t, t], [element[2]] * 2)
                    evicted = core.enforce(policy)
                else:  # demoted
                    core.insert(element) if kind == "push" else core.insert_many([element] * 2)
                    evicted = core.enforce(policy)
            except UNTYPED[path]:
                core, saved = core.to_object(), None
                core.insert(element) if kind == "push" else core.insert_many([element] * 2)
                evicted = core.enforce(policy)
            ref.insert(element) if kind == "push" else ref.insert_many([element] * 2)
            assert evicted == ref.enforce(policy)
        elif kind == "before":
            assert core.enforce(lambda total, old: old[1] < t - 1) == ref.enforce(lambda total, old: old[1] < t - 1)
        elif kind == "evict":
            k = min(1, len(ref))
            core.evict(k)
            ref.evict(k)
        elif kind == "snapshot":
            saved = (core.snapshot(), ref.snapshot())
        elif saved is not None:
            core.restore(saved[0])
            ref.restore(saved[1])
            saved = None
        _assert_same_state(core, ref)
        if len(ref):
            assert _same(core._oldest()[1], ref._oldest()[1])


#: Updates the per-event call (typed.Events) hands to the window's checked insertion: every
#: way in which the plain case can fail, and plain ones.
AWKWARD = [(3, 1.0), (3, 2), (3, True), (True, 3.0), (3, None), (3, "x"), (3, math.nan), (3, math.inf),
           (3, -math.inf), (math.nan, 1.0), (math.inf, 1.0), (-math.inf, 1.0), (1, 1.0), (2.5, -0.0),
           (3, np.float64(1.5)), (3, np.int64(4)), (3, 2**63), (3, -2**63 - 1), (3.0, 7), (5.0, 1.25),
           ("5", 1.0), (None, 1.0), (2**62, 1.0), (2**70, 1.0), (2**70 + 1, 3)]


@pytest.mark.parametrize("policy", [None, MaxSize(2), TimeRange(3), any_of(TimeRange(2), MaxSize(2))], ids=repr)
@pytest.mark.parametrize("monoid_cls", WINDOW_MONOIDS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("first", [(0, 0.5), (0, 1)], ids=["floats", "ints"])
def test_per_event_calls_give_the_checked_paths_results_and_errors(monoid_cls, policy, first):
    """``insert`` and ``query`` of a typed window are one call into the core (typed.Events);
    whatever is not the plain case goes to the window's checked insertion. Each update of
    AWKWARD, on typed windows holding floats or ints, against object windows: the same
    result or error, then the same window and result, also after one more update."""
    for t, v in AWKWARD:
        windows, refs = _windows(monoid_cls, policy)
        for w in windows:
            assert isinstance(w.insert.__self__, typed.Events)
        for update in (first, (2, first[1] * 3), (t, v), (2**71, first[1])):
            outcomes = []
            for window in (*windows, *refs):
                try:
                    outcomes.append(window.insert(*update))
                except (TypeError, ValueError, OverflowError) as error:
                    outcomes.append((type(error), str(error)))
            assert all(_same(o, outcomes[-1]) for o in outcomes), (update, outcomes)
            for window, ref in zip(windows, refs):
                assert len(window) == len(ref) and window._newest == ref._newest
                assert _same(window.query(), ref.query()), (update, window.query(), ref.query())
                assert all(map(_same, window, ref))
                if not window._typed:  # demoted: the window's own methods again
                    assert window.insert.__func__ is Window.insert and window.query.__func__ is Window.query


@pytest.mark.parametrize("policy", [MaxSize(3), TimeRange(3)], ids=repr)
def test_mean_of_large_ints_is_pythons_division(use_typed, policy):
    """A typed Mean's result divides as Mean.lower does: a sum beyond 2**53 is not rounded
    to a double before the division (found by the window property test)."""
    for name in TYPED_ALGORITHMS:
        window = Window(Mean(), policy, algorithm=name)
        updates = [-64, -64, -2**62, 2**53 + 1]
        for v in updates:
            window.insert(0, v)
            assert _same(window.query(), Mean().lower(window.partial())), (name, v)
        kept = updates[-len(window):]
        assert window._typed and _same(window.query(), sum(kept) / len(kept))


def test_per_event_calls_are_installed_and_removed(use_typed):
    """A typed window's insert and query are its Events' (this run's path: the pure pass of
    scripts/test.sh runs it interpreted); demotion, a copy and a pickle each leave the window
    with calls of its own core."""
    import copy
    import pickle
    window = Window(Mean(), MaxSize(3))
    events = window.insert.__self__
    assert isinstance(events, typed.Events) and window.query.__self__ is events
    for t in range(5):
        window.insert(t, float(t))
    assert _same(window.query(), 3.0)
    with pytest.raises(TypeError, match="needs an out-of-order window"):  # a time range: the checked path
        window.query(0, 10)
    for twin in (copy.deepcopy(window), pickle.loads(pickle.dumps(window))):
        assert twin.insert.__self__ is not events and twin._algorithm is not window._algorithm
        assert twin.insert.__self__ is twin.query.__self__
        twin.insert(9, 30.0)
        assert _same(twin.query(), (3.0 + 4.0 + 30.0) / 3)
    assert _same(window.query(), 3.0)
    import gc
    import weakref
    dropped = Window(Sum(), MaxSize(3))
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()  # the window and its Events refer to each other: the cycle collector frees them
    assert gone() is None
    window.insert(10, 2**70)  # beyond int64: the window demotes and goes on
    assert not window._typed and window._events is None and window.insert.__func__ is Window.insert
    assert window.query() == (3.0 + 4.0 + 2**70) / 3


@pytest.mark.parametrize("name", list(TYPED_ALGORITHMS))
@pytest.mark.parametrize("policy", [MaxSize(4), TimeRange(4)], ids=repr)
def test_typed_windows_copy_and_pickle(use_typed, policy, name):
    """The Stream engine deep-copies windows; windows pickle, timed ones too (their timed
    monoid and their policy on tuples are rebuilt), and go on as the original."""
    import copy
    import pickle
    window = Window(Mean(), policy, algorithm=name)
    for t in range(10):
        window.insert(t, t * 1.5)
    twin = copy.deepcopy(window)
    assert _same(twin.query(), window.query()) and list(twin) == list(window)
    twin.insert(20, 1.0)
    assert len(window) == 4 and _same(window.query(), sum(t * 1.5 for t in range(6, 10)) / 4)
    again = pickle.loads(pickle.dumps(window))
    assert _same(again.query(), window.query()) and list(again) == list(window)
    assert again._typed and again.insert(30, 3.0) == window.insert(30, 3.0) > 0
    assert _same(again.query(), window.query()) and len(again) == len(window)


def typed_and_object(monoid, policy) -> list[Window]:
    """Two windows of ``monoid()`` under ``policy``: on the typed core and on the object path."""
    windows, use = [], typed.USE
    try:
        for typed.USE in (True, False):
            windows.append(Window(monoid(), policy))
    finally:
        typed.USE = use
    return windows


@pytest.mark.parametrize("monoid", [Sum, Mean, Variance], ids=lambda m: m.__name__)
def test_a_batch_that_evicts_past_the_leaf_buffer_gives_the_object_floats(monoid):
    """A batch is held (``begin_hold``): AmortizedMTA moves its leaf buffer only at the
    batch's end, so a bulk eviction within the batch still finds the leaves and folds R1
    from them. The typed core under a policy on times held too late (TypedTimed kept the
    hold to itself): at leaf 544 it moved the buffer mid-batch, rebuilt R1 from nodes,
    ``(x544 + ... + x547) + (x548 + x549)``, and the floats differed from the object's
    left fold. Here: 521 updates one at a time, then 29 whose last 10 jump ahead, so that
    the window keeps leaves 540-549 (R1: 544-549, 1e16 then ones)."""
    windows = typed_and_object(monoid, TimeRange(10))
    for w in windows:
        for t in range(521):
            w.insert(t, 1.0)
    batch = [(t, 1.0) for t in range(521, 540)] + [(10_000 + j, 1e16 if j == 4 else 1.0) for j in range(10)]
    assert windows[0].insert_many(batch) == windows[1].insert_many(batch) == 29
    for w in windows:
        w.insert(10_009, 1.0)
    got, want = windows[0].query(), windows[1].query()
    assert _same(got, want), (got, want)
    assert _is_typed(windows[0]) and len(windows[0]) == len(windows[1]) == 11


@pytest.mark.parametrize("monoid", [Sum, Mean, Variance], ids=lambda m: m.__name__)
@given(seed=st.integers(0, 2**32 - 1))
@hsettings(max_examples=20)
def test_batches_with_jumps_in_time_give_the_object_floats(monoid, seed):
    """Random batches, some of whose updates jump past the window's range (it then evicts
    in bulk within the batch): the typed window answers as the object window, bit for bit."""
    rng = random.Random(seed)
    windows = typed_and_object(monoid, TimeRange(10))
    t = 0
    for _ in range(150):
        batch = []
        for _ in range(rng.choice([1, 1, 5, 29])):
            t += rng.choice([0, 1, 1, 2]) + (100 if rng.random() < 0.03 else 0)
            batch.append((t, rng.uniform(0.1, 100) * rng.choice([1, 1e-8, 1e8])))
        assert windows[0].insert_many(batch) == windows[1].insert_many(batch)
        got, want = windows[0].query(), windows[1].query()
        assert _same(got, want), (got, want)
    assert _is_typed(windows[0])


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_copies_keep_the_newest_timestamp(use_typed, protocol):
    """The newest timestamp is a C field of the window's compiled base (typed.WindowFields),
    outside its ``__dict__``: pickles and deep copies carry it all the same, so a copy
    refuses what the original refuses."""
    import copy
    import pickle
    window = Window(Sum(), MaxSize(4))
    window.insert(7, 1.0)
    for twin in (pickle.loads(pickle.dumps(window, protocol)), copy.deepcopy(window)):
        assert twin._newest == 7
        with pytest.raises(ValueError, match="older than the newest update 7"):
            twin.insert(6, 1.0)
        assert twin.insert(7, 2.0) == 0 and twin.query() == 3.0 and twin._newest == 7
    assert window.query() == 1.0


@pytest.mark.parametrize("typed_core", [True, False])
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_timed_windows_pickle(typed_core, name):
    """A window whose policy reads times pickles on the object path too (it did not: the
    timed monoid's combine and the policy on tuples are closures)."""
    import pickle
    use = typed.USE
    typed.USE = typed_core
    try:
        window = Window(Sum(), any_of(TimeRange(5), MaxSize(4)), algorithm=name)
    finally:
        typed.USE = use
    for t in range(8):
        window.insert(t, t + 0.5)
    again = pickle.loads(pickle.dumps(window))
    for w in (window, again):
        assert w.insert(9, 1.0) == 1 and w.query() == 5.5 + 6.5 + 7.5 + 1.0
    assert list(again) == list(window)


@pytest.mark.parametrize("policy", [MaxSize(5), TimeRange(5)], ids=repr)
def test_a_batch_given_up_between_slices_leaves_the_typed_window_as_it_was(use_typed, policy):
    """insert_slices (the server's) snapshots the typed core and restores it."""
    window = Window(Sum(), policy, algorithm="two_stacks")
    window.insert_many([(t, float(t)) for t in range(8)])
    before = (len(window), window.query(), list(window))
    slices = window.insert_slices(window.check(list(range(8, 20)), [1.0] * 12), 3)
    next(slices)
    slices.close()  # the caller gives up: the window is as it was
    assert (len(window), window.query(), list(window)) == before
    assert sum(window.insert_slices(window.check(list(range(8, 20)), [1.0] * 12), 3)) == 12
    assert window.query() == 5.0


@pytest.mark.parametrize("name", list(TYPED_ALGORITHMS))
def test_read_only_and_arrow_columns(use_typed, name):
    """numpy arrays may be read-only and Arrow's are: the C loops read them as they are."""
    import pyarrow as pa
    times, values = np.arange(6), np.array([1.5, 2.5, -1.0, 4.0, 0.5, 3.0])
    times.flags.writeable = values.flags.writeable = False
    for policy in (MaxSize(4), TimeRange(4)):
        window = Window(Sum(), policy, algorithm=name)
        assert window.insert_many(times, values) == 2
        assert window.insert_many(pa.array(np.arange(6, 8)), pa.array([1.0, 2.0])) == 2
        assert isinstance(window._algorithm, (TYPED_ALGORITHMS[name], typed.TypedTimed))  # not demoted
        assert window.query() == 0.5 + 3.0 + 1.0 + 2.0  # t = 4 .. 7 either way


def test_arrow_columns_that_are_not_numbers_go_the_general_way(use_typed):
    """Strings, bools, dates and nulls: what the pairs form does with them (no ArrowInvalid)."""
    import datetime

    import pyarrow as pa
    count = Window(Count(), TimeRange(60))
    assert count.insert_many(np.array([1, 2, 3]), pa.array(["GET", "POST", "GET"])) == 0
    assert count.query() == 3 and _is_typed(count)
    cases = [(pa.array([True, False]), "Sum takes a real number, got bool True"),
             (pa.array([1.0, None]), "Sum takes a real number, got NoneType None")]
    for values, message in cases:
        window = Window(Sum(), TimeRange(60))
        with pytest.raises(ValueError, match=message):
            window.insert_many(np.array([1, 2]), values)
        assert len(window) == 0
    window = Window(Sum(), TimeRange(60))
    with pytest.raises(TypeError, match="timestamp must be an int or a float"):
        window.insert_many(pa.array([datetime.date(2026, 1, 1)]), np.array([1.0]))


def test_policies_at_the_edges_of_what_the_cores_hold(use_typed):
    """Sizes beyond a C ssize_t and widths a double would round take the object path; numpy
    and int-subclass widths compare as Python compares them."""
    class Wide(int):
        pass

    cases = [(MaxSize(2**64), [(1, 5), (2, 6)]),
             (any_of(MaxSize(2**64), TimeRange(10)), [(1, 5), (20, 6)]),
             (TimeRange(Wide(2**53 + 1)), [(0.0, 1), (float(2**53), 1)]),
             (TimeRange(np.float64(2.5)), [(0, 1), (2, 1), (3, 1)]),
             (TimeRange(np.float64(2.5)), [(0.0, 1), (2.5, 1), (3.0, 1)])]
    for policy, updates in cases:
        use = typed.USE
        typed.USE = False
        ref = Window(Sum(), policy)
        typed.USE = use
        window = Window(Sum(), policy)
        for t, v in updates:
            assert window.insert(t, v) == ref.insert(t, v), policy
            assert (len(window), window.query()) == (len(ref), ref.query()), policy


def test_numpy_scalars_are_taken_as_python_numbers(use_typed):
    """np.int64 values lift to int (exact sums: numpy's int64 would wrap, or raise against a
    huge int), np.float64 ones to float; the typed window stays typed, the object one agrees."""
    for use in (True, False):
        typed.USE = use
        window = Window(Sum(), MaxSize(3))
        window.insert(0, np.int64(2**62))
        window.insert(1, np.int64(2**62))
        assert window._typed is False and type(window.query()) is int and window.query() == 2**63
        window.insert(2, 2**100)  # no OverflowError from np.int64 + int
        assert window.query() == 2**63 + 2**100
        floats = Window(Mean(), TimeRange(5))
        floats.insert(0, np.float64(1.5))
        floats.insert(1, 2.5)
        assert floats._typed is use and _same(floats.query(), 2.0) and [type(v[0]) for v in floats] == [float, float]
        assert Sum().lift(np.int32(-3)) == -3 and type(Sum().lift(np.int32(-3))) is int
        assert type(Max().lift(np.float64(math.inf))) is float


def test_a_subclass_overriding_insert_or_query_keeps_its_methods(use_typed):
    """A subclass's own insert runs, and its super().insert is the typed one."""
    seen = []

    class Logged(Window):
        def insert(self, timestamp, value):
            seen.append(value)
            return super().insert(timestamp, value)

    window = Logged(Sum(), MaxSize(2))
    for t in range(3):
        window.insert(t, float(t))
    assert seen == [0.0, 1.0, 2.0] and window._typed and window.query() == 3.0
    window.insert(3, 2**70)  # demotes through the subclass's method
    assert seen[-1] == 2**70 and not window._typed and window.query() == 2.0 + 2**70


@pytest.mark.parametrize("policy", [MaxSize(10), TimeRange(100)], ids=repr)
@pytest.mark.parametrize("how", ["insert", "pairs", "columns"])
def test_a_saved_insert_or_query_outlives_demotion(use_typed, policy, how):
    """``insert = w.insert`` taken while the window is typed stays right after the window
    demotes (found from outside: the saved call went on into the old core, losing updates)."""
    for name in TYPED_ALGORITHMS:
        window = Window(Max(), policy, algorithm=name)
        insert, query = window.insert, window.query
        insert(1, 1)
        if how == "insert":
            insert(2, 0.5)  # a float into an int core: demotes
        elif how == "pairs":
            window.insert_many([(2, 0.5)])
        else:
            window.insert_many(np.array([2]), np.array([0.5]))
        assert not window._typed
        assert insert(3, 7) == 0 and len(window) == 3 and query() == window.query() == 7
        assert list(window) == [1, 0.5, 7]


def test_patches_and_wrappers_of_a_typed_window_work_as_on_any_method(use_typed):
    """insert and query are a descriptor on the class: a mock on a window, a patch of the
    class, and a window built while the class was patched all behave as on the object path."""
    from unittest import mock
    window = Window(Sum(), MaxSize(10))
    with mock.patch.object(window, "insert", wraps=window.insert) as spy:
        window.insert(1, 1)
        window.insert(2, 0.5)  # demotes under the spy
        window.insert(3, 2)
    window.insert(4, 5)
    assert spy.call_count == 3 and len(window) == 4 and window.query() == 8.5
    typed_window = Window(Sum(), MaxSize(10))
    with mock.patch.object(Window, "query", return_value="patched"):
        assert typed_window.query() == "patched"
    with mock.patch.object(Window, "insert", return_value=0):
        built = Window(Sum(), MaxSize(10))
    from fractions import Fraction
    built.insert(1, 1)
    built.insert(2, Fraction(1, 2))  # the checked path: Window.insert itself, not the mock
    assert len(built) == 2 and built.query() == Fraction(3, 2)


@pytest.mark.parametrize("policy", [MaxSize(50), TimeRange(40), None], ids=repr)
@pytest.mark.parametrize("monoid_cls", WINDOW_MONOIDS, ids=lambda c: c.__name__)
@given(data=st.data())
def test_long_numpy_batches_match_the_object_window(monoid_cls, policy, data):
    """Batches of numpy columns long enough for whole runs of leaves (AMTA's quiet runs, the
    stacks' flips), floats or ints, against the object window: results bit for bit."""
    windows, refs = _windows(monoid_cls, policy)
    ints = data.draw(st.booleans())
    element = st.integers(-10**6, 10**6) if ints else st.floats(-1e6, 1e6, allow_nan=False)
    if monoid_cls in (MinCount, MaxCount):  # ties add their counts
        element = st.integers(-3, 3) if ints else st.sampled_from([0.0, -0.0, 1.5, -2.0])
    t = 0
    for size in data.draw(st.lists(st.integers(1, 150), min_size=1, max_size=5)):
        times = np.array(sorted(data.draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)))) + t
        values = np.array(data.draw(st.lists(element, min_size=size, max_size=size)),
                          dtype=np.int64 if ints else np.float64)
        t = int(times[-1])
        evicted = [window.insert_many(times, values) for window in (*windows, *refs)]
        assert len(set(evicted)) == 1, evicted
        for window, ref in zip(windows, refs):
            assert _is_typed(window)
            assert _same(window.query(), ref.query()), (window.query(), ref.query())
            assert all(map(_same, window, ref))


_BAD_COLUMNS = [  # (what, timestamps, values) of 1,000 updates with one fault at position 617
    ("NaN value", None, ("value", math.nan)), ("inf value", None, ("value", math.inf)),
    ("out of order", ("time", 5.0), None), ("NaN timestamp", ("time", math.nan), None),
    ("inf timestamp", ("time", math.inf), None)]


@pytest.mark.parametrize("what,fault_t,fault_v", _BAD_COLUMNS, ids=[c[0] for c in _BAD_COLUMNS])
@pytest.mark.parametrize("policy", [MaxSize(300), TimeRange(300)], ids=repr)
@pytest.mark.parametrize("name", list(TYPED_ALGORITHMS))
def test_a_bad_update_in_numpy_columns_is_refused_and_named(use_typed, name, policy, what, fault_t, fault_v):
    """The C checks of the column path let the general path name the fault: the same error as
    the object window's, at the same position, and the window unchanged."""
    monoid_cls = Min if what == "inf value" else Sum  # inf: refused by Sum, taken by Min
    window = Window(monoid_cls(), policy, algorithm=name)
    use = typed.USE
    typed.USE = False
    ref = Window(monoid_cls(), policy, algorithm=name)
    typed.USE = use
    for w in (window, ref):
        w.insert_many(np.arange(100.0), np.arange(100.0) + 0.5)
    times, values = np.arange(100.0, 1100.0), np.arange(1000.0) + 0.25
    if fault_t:
        times[617] = fault_t[1]
    if fault_v:
        values[617] = fault_v[1]
    before = (len(window), window.query(), list(window))
    outcomes = []
    for w in (window, ref):
        try:
            outcomes.append(w.insert_many(times, values))
        except (TypeError, ValueError) as error:
            outcomes.append((type(error), str(error)))
    assert outcomes[0] == outcomes[1], outcomes
    if what == "inf value":  # Min takes it: the general path inserted the batch
        assert outcomes[0] == 800 if policy.max_size else isinstance(outcomes[0], int)
        assert _same(window.query(), ref.query())
        return
    assert issubclass(outcomes[0][0], ValueError) and outcomes[0][1].startswith("update 617: "), outcomes
    assert (len(window), window.query(), list(window)) == before
    assert _is_typed(window)


def test_numpy_columns_older_than_the_window_are_refused(use_typed):
    """A batch whose first timestamp is older than the window's newest: the general path's
    error, nothing changed; int and float columns against int and float newest."""
    for newest, first in ((10, 9.5), (10.5, 10), (10, 9), (10.5, 10.25)):
        window = Window(Sum(), TimeRange(100))
        window.insert(newest, 1.0)
        with pytest.raises(ValueError, match="update 0: timestamp .* is older than the newest update"):
            window.insert_many(np.array([first, 20], dtype=type(first)), np.array([1.0, 2.0]))
        assert (len(window), window.query(), window._newest) == (1, 1.0, newest)
        assert window.insert_many(np.array([newest, 20], dtype=type(newest)), np.array([1.0, 2.0])) == 0
        assert window.query() == 4.0 and window._newest == 20 and _is_typed(window)


@pytest.mark.parametrize("name", ["amta", "two_stacks", "daba", "log_mta"])
@pytest.mark.parametrize("column", ["timestamps", "values"])
def test_masked_numpy_columns_go_the_general_way(name, column):
    """A masked array's hidden values were inserted by the C loops; as a list they are
    None, which the checks refuse (naming the update), the window unchanged."""
    window = Window(Sum(), TimeRange(10), algorithm=name)
    window.insert(0, 5)
    ts, values = np.array([1, 2, 3]), np.array([10, 20, 30])
    masked = np.ma.array(ts if column == "timestamps" else values, mask=[0, 1, 0])
    with pytest.raises((TypeError, ValueError), match="update 1"):
        window.insert_many(*((masked, values) if column == "timestamps" else (ts, masked)))
    assert (len(window), window.query()) == (1, 5)


_KEYS = {"int": st.integers(-5, 5) | st.sampled_from([2**63 - 1, -2**63]),
         "float": st.sampled_from([0.0, -0.0, 1.5, math.inf, math.nan, -2.0])}
#: Values that tie often (ties keep the oldest), with 0.0 / -0.0 told apart by the left operand rule.
_ARG_VALUES = {"int": st.integers(-3, 3) | st.sampled_from([2**63 - 1, -2**63]),
               "float": st.sampled_from([0.0, -0.0, 1.0, 1.0, -2.5, math.inf, -math.inf])}
_ODD = st.sampled_from([("key", 1.0), (None, 2.0), (2**63, 1.0), (True, 1.0), ((1, 2), 0.5),  # keys it does not hold
                        (1, math.nan), (1, 2**64), (1, True), (1, "x"), 1.0, [3, 1.0]])  # values refused or demoted


@pytest.mark.parametrize("policy", [None, MaxSize(4), TimeRange(3), any_of(TimeRange(2), MaxSize(3))], ids=repr)
@pytest.mark.parametrize("monoid_cls", [ArgMin, ArgMax], ids=lambda c: c.__name__)
@pytest.mark.parametrize("keys", ["int", "float"])
@hsettings(max_examples=40)
@given(data=st.data())
def test_arg_windows_match_the_object_window(monoid_cls, policy, keys, data):
    """ArgMin / ArgMax windows on typed cores (int or float keys, int or float values) against
    object windows: results, errors, and demotion on a key or value the core does not hold
    (strings, None, the other kind), after which the window gives the object results."""
    windows, refs = _windows(monoid_cls, policy)
    assert windows
    kind = data.draw(st.sampled_from(["int", "float"]))
    pair = st.tuples(_KEYS[keys], _ARG_VALUES[kind])
    update = pair | pair | pair | _ODD if data.draw(st.booleans()) else pair
    t = 0
    for step, arg, dt in data.draw(st.lists(st.tuples(st.sampled_from(["insert", "insert", "pairs", "evict"]),
                                                      st.lists(update, max_size=4), st.sampled_from([0, 1, 2])),
                                            max_size=30)):
        t += dt
        outcomes = []
        for window in (*windows, *refs):
            try:
                if step == "insert":
                    outcomes.append(window.insert(t, arg[0] if arg else (0, 1.0)))
                elif step == "pairs":
                    outcomes.append(window.insert_many([(t, v) for v in arg]))
                else:
                    outcomes.append(window.evict(min(len(arg), len(window))))
            except (TypeError, ValueError) as error:
                outcomes.append((type(error), str(error)))
        assert all(_same(o, outcomes[-1]) for o in outcomes), outcomes
        for window, ref in zip(windows, refs):
            assert len(window) == len(ref)
            assert _same(window.query(), ref.query()), (window.query(), ref.query())
            assert all(map(_same, window, ref))


def test_arg_windows_demote_on_keys_they_do_not_hold(use_typed):
    """A string key (or a float key in a window of int keys) demotes the window mid-stream;
    it goes on with the object algorithm's results."""
    for odd in (("sensor-7", -5.0), (2.5, -5.0), (2**64, -5.0), (None, -5.0)):
        window = Window(ArgMin(), MaxSize(3))
        for t in range(5):
            window.insert(t, (t, float(t % 3)))
        assert _is_typed(window) and window.query() == (3, 0.0)
        window.insert(5, odd)
        assert not _is_typed(window) and window.query() == (odd[0], odd[1])
        for t in range(6, 9):
            window.insert(t, (t, 1.0))
        assert window.query() == (6, 1.0) and len(window) == 3
    window = Window(ArgMax(), TimeRange(2))
    window.insert(0, (0.5, 7))
    window.insert(1, (-0.0, 7))  # a tie keeps the oldest
    assert _is_typed(window) and _same(window.query(), (0.5, 7))
    window.insert(2, (3, 9))  # an int key among float keys
    assert not _is_typed(window) and window.query() == (3, 9)


@pytest.mark.parametrize("policy", [MaxSize(5), TimeRange(4)], ids=repr)
@pytest.mark.parametrize("monoid", [Variance(ddof=1), StdDev(), StdDev(ddof=1)], ids=repr)
@hsettings(max_examples=30)
@given(data=st.data())
def test_variance_windows_match_the_object_window(monoid, policy, data):
    """Variance(ddof=1) and StdDev windows, per event and in numpy batches, against object
    windows bit for bit; ints beyond 2**25 demote the window mid-stream (their squares are
    not exact as doubles), which then gives the object results."""
    use = typed.USE
    try:
        typed.USE = True
        window = Window(monoid, policy)
        typed.USE = False
        ref = Window(monoid, policy)
    finally:
        typed.USE = use
    assert _is_typed(window)
    ints = data.draw(st.booleans())
    element = (st.integers(-2**25, 2**25) | st.sampled_from([2**25 + 1, -2**26, 2**40]) if ints
               else st.sampled_from([1e16, -1e16, 1.0, 0.5, -3.25, 0.0, -0.0, 2.0 ** 60]))
    t = 0
    demoted = False
    for step, arg, dt in data.draw(st.lists(st.tuples(st.sampled_from(["insert", "insert", "arrays", "evict"]),
                                                      st.lists(element, max_size=5), st.sampled_from([0, 1, 2])),
                                            max_size=30)):
        t += dt
        fits = all(abs(v) <= 2**25 for v in arg) if ints else True
        for w in (window, ref):
            if step == "insert":
                w.insert(t, arg[0] if arg else (1 if ints else 1.0))
            elif step == "arrays":
                w.insert_many(np.array([t] * len(arg)), np.array(arg, dtype=np.int64 if ints else np.float64))
            else:
                w.evict(min(len(arg), len(w)))
        if step != "evict" and not fits and (step == "arrays" or abs(arg[0]) > 2**25):
            demoted = True
        assert _is_typed(window) is not demoted
        assert _same(window.query(), ref.query()), (window.query(), ref.query())
        assert all(map(_same, window, ref))


@pytest.mark.parametrize("policy", [MaxSize(40), TimeRange(30)], ids=repr)
def test_records_with_variance_and_argmin_fields(use_typed, policy):
    """Records whose fields include Variance, StdDev and ArgMin run on typed AMTA cores, one
    per field, bit for bit against the object window; a value one field's core does not hold
    (an int beyond 2**25 for Variance) demotes the window, which goes on with the object
    results."""
    from mta import Record
    monoid = Record(var=Variance(), sd=StdDev(ddof=1), low=ArgMin(), total=Sum())
    window = Window(monoid, policy)
    typed.USE = False
    ref = Window(monoid, policy)
    typed.USE = True
    assert window._typed
    rng = random.Random(5)
    for i in range(400):
        x = rng.choice([1e16, -3.25, 0.5, 7.0, -0.0]) * rng.choice([1, 3])
        value = {"var": x, "sd": x, "low": (i, x), "total": x}
        if i == 300:
            value = {"var": 2**25 + 1, "sd": 1, "low": (i, 1), "total": 1}
        for w in (window, ref):
            w.insert(i // 2, value)
        assert window._typed is (i < 300)
        got, want = window.query(), ref.query()
        assert set(got) == set(want) and all(_same(got[k], want[k]) for k in want), (i, got, want)


#: Key and value dtypes of (key, value) structured columns: the ones the C loops take (held
#: exactly by int64 / float64), and others the general path decides (bool, uint64, objects).
_KEY_DTYPES = ["i8", "f8", "i4", "f4", ">i8", "u8", "?", "O"]
_VALUE_DTYPES = ["f8", "i8", "i4", "f4", ">f8", "u8", "?", "O"]
_ARG_ELEMENTS = {"i": st.integers(-3, 3) | st.sampled_from([2**31 - 1, -2**31]),
                 "f": st.sampled_from([0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan, 0.1]),
                 "u": st.integers(0, 3) | st.just(2**64 - 1), "b": st.booleans(),
                 "O": st.sampled_from([1, 2.5, "x", None])}


def _structured(keys: list, values: list, key_dtype: str, value_dtype: str) -> np.ndarray:
    column = np.zeros(len(keys), dtype=[("key", key_dtype), ("value", value_dtype)])
    column["key"], column["value"] = keys, values
    return column


@pytest.mark.parametrize("policy", [None, MaxSize(6), TimeRange(3)], ids=repr)
@pytest.mark.parametrize("monoid_cls", [ArgMin, ArgMax], ids=lambda c: c.__name__)
@hsettings(max_examples=15)
@given(data=st.data())
def test_arg_structured_numpy_columns_match_the_pairs(monoid_cls, policy, data):
    """ArgMin / ArgMax take a numpy structured array of (key, value) records as the values
    column (what the general path takes: its tolist gives the pairs): on every typed core the
    same evictions, results, errors (NaN values, out-of-order timestamps, lengths) and unchanged
    state on error as the pairs form on the object window, keys and values of every dtype."""
    windows, refs = _windows(monoid_cls, policy)
    t = 0
    for _ in range(data.draw(st.integers(1, 5))):
        n = data.draw(st.integers(0, 25))
        kd, vd = data.draw(st.sampled_from(_KEY_DTYPES)), data.draw(st.sampled_from(_VALUE_DTYPES))
        keys = data.draw(st.lists(_ARG_ELEMENTS[np.dtype(kd).kind], min_size=n, max_size=n))
        vals = data.draw(st.lists(_ARG_ELEMENTS[np.dtype(vd).kind], min_size=n, max_size=n))
        steps = data.draw(st.lists(st.integers(-1 if data.draw(st.booleans()) else 0, 2), min_size=n, max_size=n))
        times = np.array([t + sum(steps[:j + 1]) for j in range(n)], dtype=np.int64)
        t = max(t, int(times.max())) if n else t
        column = _structured(keys, vals, kd, vd)
        extra = data.draw(st.sampled_from([0, 0, 0, 1]))  # a timestamp too many
        if extra:
            times = np.append(times, t)
        outcomes, states = [], []
        for window in (*windows, *refs):
            before = (len(window), window.query(), tuple(window))
            try:
                if window in refs:
                    if extra:
                        raise ValueError(f"{len(times)} timestamps for {len(column)} values")
                    outcomes.append(window.insert_many(list(zip(times.tolist(), column.tolist()))))
                else:
                    outcomes.append(window.insert_many(times, column))
            except (TypeError, ValueError) as error:
                outcomes.append((type(error), str(error)))
                states.append(_same(before, (len(window), window.query(), tuple(window))))
        assert all(_same(o, outcomes[-1]) for o in outcomes), outcomes
        assert all(states)
        for window, ref in zip(windows, refs):
            assert len(window) == len(ref)
            assert _same(window.query(), ref.query()), (window.query(), ref.query())
            assert all(map(_same, window, ref))


@pytest.mark.parametrize("name", ["amta", "two_stacks", "daba", "log_mta"])
@pytest.mark.parametrize("monoid", [ArgMin(), ArgMax(), Variance(), StdDev(ddof=1)], ids=repr)
def test_row_monoids_numpy_batches_take_no_python_per_event(use_typed, name, monoid):
    """Variance / StdDev numpy columns and ArgMin / ArgMax structured (key, value) columns go
    the C loops (the monoid's lift is never called) and stay typed; a value the C loops do
    not take (NaN) goes the general path, which names it, nothing changed."""
    from unittest import mock
    window = Window(monoid, TimeRange(10), algorithm=name)
    arg = isinstance(monoid, (ArgMin, ArgMax))
    values = np.arange(100.0) % 7
    column = _structured(np.arange(100) * 3, values, "i8", "f8") if arg else values
    with mock.patch.object(type(monoid), "lift", side_effect=AssertionError("general path")):
        assert window.insert_many(np.arange(100), column) == 90
    assert _is_typed(window)
    typed.USE = False
    ref = Window(monoid, TimeRange(10), algorithm=name)
    ref.insert_many(list(zip(range(100), column.tolist())))
    assert _same(window.query(), ref.query()) and all(map(_same, window, ref))
    bad = column.copy()
    (bad["value"] if arg else bad)[5] = math.nan
    with pytest.raises(ValueError, match="update 5: "):
        window.insert_many(np.arange(100, 200), bad)
    assert _same(window.query(), ref.query()) and len(window) == len(ref) and _is_typed(window)
