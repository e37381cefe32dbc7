"""TypedAMTA (issue 20) against the object AmortizedMTA, on both paths in one process.

Every test runs on the class as imported (compiled when the build had a compiler) and on
its pure-Python twin (``load_pure``). The reference is AmortizedMTA fed the same
operations: results must be identical -- same type, and for floats the same bits (values
of mixed magnitudes, 1e16 beside 1.0, make every difference in the order of operations
show).
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta._extensions import load_pure
from mta.algorithms import typed_amta
from mta.algorithms.amta import AmortizedMTA
from mta.monoid import _EMPTY, ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, StdDev, Sum, Variance

PURE = load_pure("mta.algorithms.typed_amta")
CLASSES = pytest.mark.parametrize("cls", [typed_amta.TypedAMTA, PURE.TypedAMTA],
                                  ids=["compiled" if typed_amta.COMPILED else "imported", "pure"])
Untyped = (typed_amta.Untyped, PURE.Untyped)

MONOIDS = {"sum": Sum(), "count": Count(), "min": Min(), "max": Max(), "mean": Mean(),
           "mincount": MinCount(), "maxcount": MaxCount(), "first": First(), "last": Last(),
           "variance": Variance(), "variance1": Variance(ddof=1), "stddev": StdDev(), "argmin": ArgMin(),
           "argmax": ArgMax()}
#: The monoids whose partials are (value, count) pairs.
PAIRS = {"mean", "mincount", "maxcount"}
#: Partials (count, mean, M2).
VARIANCES = {"variance", "variance1", "stddev"}
#: Partials (value, key), identity None.
ARGS = {"argmin", "argmax"}
#: Floats whose sums depend on the order of operations (1e16 + 1.0 + 1.0 != 1e16 + 2.0).
SUMMANDS = st.sampled_from([1e16, -1e16, 1.0, -1.0, 0.5, 3.0, 1e-3, -0.0, 0.0, 2.5e15, 7.0])
#: Floats whose minimum (maximum) is often a tie between 0.0 and -0.0, which only the left
#: operand rule tells apart.
SELECTED = {"min": st.sampled_from([0.0, -0.0, 0.0, -0.0, 1.0, 2.5]),
            "max": st.sampled_from([0.0, -0.0, 0.0, -0.0, -1.0, -2.5]),
            "mincount": st.sampled_from([0.0, -0.0, 1.0, 1.0, 2.5, -3.0]),
            "maxcount": st.sampled_from([0.0, -0.0, -1.0, -1.0, -2.5, 3.0]),
            "first": st.sampled_from([0.0, -0.0, 1.0, 2.5, math.inf, math.nan]),
            "last": st.sampled_from([0.0, -0.0, -1.0, 2.5, -math.inf, math.nan])}
#: Ints that tie often (MinCount / MaxCount add the counts of equal values).
TIES = st.integers(-3, 3)
INTS = st.integers(-10**6, 10**6)
#: Variance's INT kind: ints of at most 2**25, often at the bound (deviations of 2**26,
#: squares of 2**52: still exact as doubles).
VARIANCE_INTS = st.sampled_from([2**25, -2**25, 2**25 - 1, -2**25 + 1, 0, 1, -1]) | st.integers(-2**25, 2**25)
#: Partials of several values (what _chan gives), and the identity: either kind takes them.
VARIANCE_MERGED = st.sampled_from([(0, 0.0, 0.0), (2, 0.5, 0.125), (3, 1e16, 2.5), (5, -0.0, 0.0), (2, -3.25, 1e32)])
ARG_VALUES = {"float": st.sampled_from([0.0, -0.0, 1.0, 1.0, -2.5, math.inf, -math.inf]),
              "int": TIES | st.sampled_from([2**63 - 1, -2**63])}
#: Keys are never compared: NaN and -0.0 must come back bit for bit.
ARG_KEYS = {"float": st.sampled_from([0.0, -0.0, 1.5, math.nan, -2.0, 1e300]),
            "int": st.integers(-5, 5) | st.sampled_from([2**63 - 1, -2**63])}


def lift(name: str, v):
    """A value as the monoid of ``name`` lifts it (ArgMin / ArgMax: with key 7)."""
    return (v, 1) if name in PAIRS else (1, v, 0) if name in VARIANCES else (v, 7) if name in ARGS else v


def identical(a, b) -> bool:
    """Same type and value, floats bit for bit (repr tells -0.0 from 0.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(map(identical, a, b))
    return repr(a) == repr(b)


def partials(name: str, kind: str, neutral: bool = True) -> st.SearchStrategy:
    """Partials of the ``kind``'s values (ArgMin / ArgMax: keys of the same kind);
    Variance's also merged ones, which fit either kind, unless not ``neutral``."""
    if name == "count":
        return st.integers(0, 3)
    if name in VARIANCES:
        lifted = st.builds(lambda v: (1, v, 0), VARIANCE_INTS if kind == "int" else SUMMANDS)
        return lifted | lifted | VARIANCE_MERGED if neutral else lifted
    if name in ARGS:
        return st.tuples(ARG_VALUES[kind], ARG_KEYS[kind])
    values = (TIES if name in PAIRS - {"mean"} else INTS) if kind == "int" else SELECTED.get(name, SUMMANDS)
    if name in PAIRS:
        return st.tuples(values, st.integers(0, 4))
    return values


def operations(part: st.SearchStrategy, small: bool) -> st.SearchStrategy:
    """Sequences of operations; ``small`` keeps windows small, where trees merge and the
    stack is rebuilt all the time."""
    evict = st.one_of(st.just("all"), st.integers(0, 3), st.integers(0, 6 if small else 80))
    op = st.one_of(
        st.tuples(st.just("insert"), part),
        st.tuples(st.just("insert"), part),
        st.tuples(st.just("insert_many"), st.lists(part, max_size=4 if small else 90)),
        st.tuples(st.just("evict"), evict),
        st.tuples(st.just("evict"), st.just(1)),
        st.tuples(st.just("evict"), st.just(1)),
        st.tuples(st.just("iter")),
        st.tuples(st.just("clear")),
        st.tuples(st.just("hold")),
        st.tuples(st.just("snapshot")),
        st.tuples(st.just("restore")),
        st.tuples(st.just("to_object")),
    )
    return st.lists(op, max_size=120)


def check_same(typed, ref) -> None:
    assert len(typed) == len(ref)
    assert identical(typed.query(), ref.query()), (typed.query(), ref.query())


def outcome(call):
    try:
        call()
    except (TypeError, ValueError) as error:
        return type(error), str(error)
    return None


def play(cls, monoid, ops) -> None:
    """Run ``ops`` on a typed window and on AmortizedMTA, comparing after every step.
    Snapshots are taken and restored only while held, as mta.Window does."""
    typed, ref = cls(monoid), AmortizedMTA(monoid)
    saved = None
    for op in ops:
        kind = op[0]
        if kind == "insert":
            typed.insert(op[1])
            ref.insert(op[1])
        elif kind == "insert_many":
            assert isinstance(typed, AmortizedMTA) or typed.accepts(op[1])
            typed.insert_many(op[1])
            ref.insert_many(op[1])
        elif kind == "evict":
            k = len(ref) if op[1] == "all" else op[1]
            assert outcome(lambda: typed.evict(k)) == outcome(lambda: ref.evict(k))
        elif kind == "iter":
            assert all(map(identical, list(typed), list(ref))) and len(list(typed)) == len(ref)
        elif kind == "clear":
            typed.clear()
            ref.clear()
            saved = None
        elif kind == "hold":
            if ref.hold:
                due = typed.end_hold()
                assert isinstance(typed, AmortizedMTA) or due is False
                ref.end_hold()
                saved = None
            else:
                typed.begin_hold()
                ref.begin_hold()
        elif kind == "snapshot" and ref.hold:
            saved = typed.snapshot(), ref.snapshot()
        elif kind == "restore" and saved is not None:
            typed.restore(saved[0])
            ref.restore(saved[1])
            saved = None
        elif kind == "to_object" and not isinstance(typed, AmortizedMTA):
            typed, saved = typed.to_object(), None
            assert type(typed) is AmortizedMTA
        check_same(typed, ref)
    assert all(map(identical, list(typed), list(ref)))


@CLASSES
@pytest.mark.parametrize("small", [True, False], ids=["small", "large"])
@pytest.mark.parametrize("kind", ["float", "int"])
@pytest.mark.parametrize("name", list(MONOIDS))
@hsettings(max_examples=60)
@given(data=st.data())
def test_same_results_as_amta(cls, name, kind, small, data):
    if name == "count" and kind == "float":
        return  # Count partials are ints (Untyped otherwise: test_untyped_changes_nothing)
    play(cls, MONOIDS[name], data.draw(operations(partials(name, kind), small)))


@CLASSES
@pytest.mark.parametrize("name", ["sum", "min", "mean", "mincount", "maxcount"])
@hsettings(max_examples=12)
@given(rng=st.randoms(use_true_random=False))
def test_bulk_eviction_into_a_small_window(cls, name, rng):
    """AmortizedMTA computes a bulk eviction that leaves at most one chunk from its leaf
    buffer, or through the tree when its last flush (past 512 buffered leaves, or at the
    end of a hold) moved some of those leaves to its store: two orders of operations. The
    typed window follows the object's flushes to take the same one. (The reference's
    ``_bstart`` only steers the test to just after a flush.)"""
    monoid = MONOIDS[name]
    values = {"min": [0.0, -0.0, 1.0, 2.5], "sum": [1e16, -1e16, 1.0, 0.5, 3.0, 1e-3, 7.0],
              "mincount": [0.0, -0.0, 1.0, 2.5], "maxcount": [0.0, -0.0, -1.0, 2.5]}.get(name)

    def part():
        v = rng.choice(values or [1e16, -1e16, 1.0, 0.5, 3.0, 1e-3, 7.0])
        return (v, 1) if name in PAIRS else v

    typed, ref = cls(monoid), AmortizedMTA(monoid)
    for _ in range(rng.randint(1, 3)):
        held = rng.random() < 0.3
        if held:
            typed.begin_hold()
            ref.begin_hold()
        flushed = ref._bstart[0]
        while ref._bstart[0] == flushed and len(ref) < 2000:
            p = part()
            typed.insert(p)
            ref.insert(p)
        if held:
            typed.end_hold()
            ref.end_hold()
        batch = [part() for _ in range(rng.randint(0, 31))]
        typed.insert_many(batch)
        ref.insert_many(batch)
        k = max(0, len(ref) - rng.randint(1, 33))
        typed.evict(k)
        ref.evict(k)
        check_same(typed, ref)
        for _ in range(rng.randint(0, 40)):
            p = part()
            typed.insert(p)
            ref.insert(p)
            typed.evict()
            ref.evict()
            check_same(typed, ref)


@CLASSES
@pytest.mark.parametrize("name", ["sum", "min", "mean", "maxcount", "variance", "argmax"])
def test_large_windows_and_bulk_evictions(cls, name):
    """Windows of thousands (stored levels up to 2^12, rings that grow and wrap many
    times), steady and shrinking, with evictions of every size."""
    monoid = MONOIDS[name]
    rng = random.Random(20)
    values = [1e16, 1.0, -1e16, 0.5, 3.0, 1e-3]

    def part():
        v = rng.choice(values) * rng.choice([1, 3, 7])
        return (v, rng.randrange(9)) if name in ARGS else lift(name, v)

    typed, ref = cls(monoid), AmortizedMTA(monoid)
    for target in (5000, 300, 9000, 40, 3000):
        for _ in range(3 if cls is PURE.TypedAMTA else 12):
            while len(ref) < target:
                batch = [part() for _ in range(rng.randrange(1, 700))]
                typed.insert_many(batch)
                ref.insert_many(batch)
            for _ in range(200):
                p = part()
                typed.insert(p)
                ref.insert(p)
                k = min(len(ref), rng.choice([1, 1, 1, 0, 2, rng.randrange(0, 40)]))
                typed.evict(k)
                ref.evict(k)
                check_same(typed, ref)
            k = rng.randrange(0, len(ref) + 1)
            typed.evict(k)
            ref.evict(k)
            check_same(typed, ref)
    assert all(map(identical, list(typed), list(ref)))
    assert all(map(identical, list(typed.to_object()), list(ref)))


BAD = {
    "sum": [True, "1", None, 1 + 0j, 2**63, -2**63 - 1, (1.0, 1)],
    "count": [1.0, True, 2**64, "x"],
    "min": [False, "a", 2**70, [1]],
    "max": [None, 2**63],
    "mean": [1.0, 1, (1.0,), (1.0, 1, 0), (1.0, 1.0), (1.0, -1), (1.0, 2**32), ("a", 1), (True, 1),
             (2**63, 1), [1.0, 1], (1.0, True)],
    "mincount": [1.0, (1.0,), (1.0, -1), (1.0, 2**32), (True, 1), (2**63, 1), [1.0, 1], (1.0, True),
                 (math.inf, 1), (-math.inf, 1), (math.nan, 1)],
    "maxcount": [2, (1, 1, 1), (1.0, 1.0), ("a", 1), (-2**63 - 1, 1), (math.inf, 1), (math.nan, 0)],
    "first": ["a", None, True, 2**63, (1.0, 1), _EMPTY],
    "last": [b"x", False, -2**63 - 1, [1], _EMPTY],
    # M2 of one value is the int 0; counts in [0, 2**32); means of INT kind at most 2**25; several
    # values: float mean and M2, finite; no values: the identity (0, 0.0, 0.0) only
    "variance": [1.0, 1, (1, 1.0), (1, 1.0, 0.0), (1, 1.0, 1), (1, 1.0, False), (1, True, 0), (True, 1.0, 0),
                 (1, 2**25 + 1, 0), (1, -2**25 - 1, 0), (1, 2**60, 0), (1, math.inf, 0), (1, math.nan, 0), (1, "a", 0),
                 (2, 1, 0.5), (2, 1.0, 0), (2, 1.0, math.inf), (2, math.nan, 1.0), (0, 1.0, 0.0), (0, -0.0, 0.0),
                 (0, 0.0, -0.0), (0, 0, 0.0), (-1, 1.0, 0.0), (2**32, 1.0, 0.0), (2.0, 1.0, 0.0), [1, 1.0, 0], None],
    # (value, key): no NaN value, values and keys ints in int64 or floats, keys no other type
    "argmin": [1.0, None, (1.0,), (1.0, 2, 3), [1.0, 1], (math.nan, 1), (1.0, "k"), (1.0, None), (1.0, True),
               (True, 1), (1.0, 2**63), (2**63, 1), (-2**63 - 1, 1.5), (1.0, (1, 2)), ("1", 1)],
}
BAD["variance1"] = BAD["stddev"] = BAD["variance"]
BAD["argmax"] = BAD["argmin"]


@CLASSES
@pytest.mark.parametrize("name", list(MONOIDS))
@hsettings(max_examples=15)
@given(data=st.data())
def test_untyped_changes_nothing(cls, name, data):
    """A partial that does not fit -- another type, the other kind in a non-empty window,
    outside int64 -- raises Untyped (insert, insert_many: the whole batch) and changes
    nothing; accepts says so beforehand. The window then goes on as AmortizedMTA."""
    monoid = MONOIDS[name]
    kind = "int" if name == "count" else data.draw(st.sampled_from(["float", "int"]))
    part = partials(name, kind)
    other = partials(name, "int" if kind == "float" else "float", neutral=False)
    typed, ref = cls(monoid), AmortizedMTA(monoid)
    # the newest, never evicted below, fixes the kind (Variance: merged partials fit either)
    start = data.draw(st.lists(part, max_size=80)) + [data.draw(partials(name, kind, neutral=False))]
    typed.insert_many(start)
    ref.insert_many(start)
    k = data.draw(st.integers(0, len(start) - 1))
    typed.evict(k)
    ref.evict(k)
    bad = list(BAD[name])
    if name != "count":
        bad.append(data.draw(other))  # the other kind, in a non-empty window
    for partial in bad:
        batch = data.draw(st.lists(part, max_size=5))
        batch.insert(data.draw(st.integers(0, len(batch))), partial)
        before = list(typed)
        assert not typed.accepts(batch)
        with pytest.raises(Untyped):
            typed.insert(partial)
        with pytest.raises(Untyped):
            typed.insert_many(batch)
        assert all(map(identical, list(typed), before)) and len(typed) == len(before)
        check_same(typed, ref)
    play_on = data.draw(operations(part, small=False))
    rest = typed.to_object() if data.draw(st.booleans()) else typed
    for op in play_on:
        if op[0] == "insert":
            rest.insert(op[1])
            ref.insert(op[1])
        elif op[0] == "insert_many":
            rest.insert_many(op[1])
            ref.insert_many(op[1])
        elif op[0] == "evict" and op[1] != "all":
            k = min(op[1], len(ref))
            rest.evict(k)
            ref.evict(k)
        check_same(rest, ref)


@CLASSES
def test_the_kind_switches_only_when_empty(cls):
    typed = cls(Sum())
    typed.insert(1)
    assert typed.accepts([2, 3]) and not typed.accepts([2.0])
    typed.evict()
    assert typed.accepts([2.0]) and not typed.accepts([2.0, 3])
    typed.insert_many([2.5, 0.5])
    assert identical(typed.query(), 3.0)
    typed.evict(2)
    assert typed.query() == 0 and type(typed.query()) is int  # the identity, as AmortizedMTA's
    typed.insert(7)
    assert identical(typed.query(), 7)


@CLASSES
def test_evict_errors_match_amta(cls):
    for n in (0, 1, 5, 40):
        typed, ref = cls(Min()), AmortizedMTA(Min())
        typed.insert_many([float(i) for i in range(n)])
        ref.insert_many([float(i) for i in range(n)])
        for k in (True, False, 1.0, "1", None, -1, n + 1, 2**70, -2**70):
            expected = outcome(lambda: ref.evict(k))
            assert expected is not None
            assert outcome(lambda: typed.evict(k)) == expected
            check_same(typed, ref)
            assert all(map(identical, list(typed), list(ref)))
        with pytest.raises(TypeError, match="evict count must be an int, got bool"):
            typed.evict(True)
    with pytest.raises(ValueError, match="cannot evict 1 elements from a window of 0"):
        cls(Sum()).evict()


LIMIT = 2**63 - 1
BIG = st.one_of(st.integers(2**62 - 4, 2**62 + 4), st.integers(-2**62 - 4, -2**62 + 4), st.integers(-9, 9),
                st.integers(2**61, 2**62))


@CLASSES
@pytest.mark.parametrize("name", ["sum", "mean", "count", "max"])
@hsettings(max_examples=30)
@given(data=st.data())
def test_int_bound_demotes(cls, name, data):
    """INT kind: Sum, Count and Mean take a partial only while the sum of |v| over the
    window stays at most 2^63 - 1 (Min and Max: any int64). On Untyped the window demotes
    to the object algorithm and goes on exactly as AmortizedMTA."""
    monoid = MONOIDS[name]
    bounded = name != "max"

    def wrap(v):
        return (v, 1) if name == "mean" else v

    typed, ref = cls(monoid), AmortizedMTA(monoid)
    demoted = False
    for step in data.draw(st.lists(st.one_of(st.tuples(st.just("insert"), BIG),
                                             st.tuples(st.just("many"), st.lists(BIG, max_size=4)),
                                             st.tuples(st.just("evict"), st.integers(0, 3))), max_size=40)):
        if step[0] == "evict":
            k = min(step[1], len(ref))
            typed.evict(k)
            ref.evict(k)
        else:
            batch = [wrap(v) for v in (step[1] if step[0] == "many" else [step[1]])]
            window = [p[0] if name == "mean" else p for p in ref]
            fits = not bounded or sum(map(abs, window + [p[0] if name == "mean" else p for p in batch])) <= LIMIT
            if not demoted:
                assert typed.accepts(batch) is fits
                if not fits:
                    with pytest.raises(Untyped):
                        (typed.insert_many if step[0] == "many" else lambda b: typed.insert(b[0]))(batch)
                    check_same(typed, ref)
                    typed, demoted = typed.to_object(), True
            if step[0] == "many":
                typed.insert_many(batch)
                ref.insert_many(batch)
            else:
                typed.insert(batch[0])
                ref.insert(batch[0])
        check_same(typed, ref)


@CLASSES
def test_int_bound_edges(cls):
    typed = cls(Sum())
    typed.insert_many([2**62, 2**62 - 1])
    assert typed.query() == LIMIT
    for bad in (1, -1, [0, 1]):
        with pytest.raises(Untyped):
            typed.insert_many(bad if isinstance(bad, list) else [bad])
    typed.insert(0)
    typed.evict()
    typed.insert(-1)  # |v| of the evicted leaf is given back
    assert typed.query() == 2**62 - 2
    typed.evict(3)
    typed.insert(-2**63 + 1)
    with pytest.raises(Untyped):
        cls(Sum()).insert(-2**63)  # |v| = 2^63 on its own


@CLASSES
def test_memory_is_reclaimed(cls):
    """A window that slides over many times its size keeps rings of about its size."""
    typed = cls(Sum())
    n = 1000
    typed.insert_many([1.0] * n)
    for i in range(20 * n):
        typed.insert(float(i))
        typed.evict()
    state = typed.snapshot()
    leaves, nodes = state[1], state[4]
    assert n < len(leaves) <= 2 * n and len(nodes) <= n // 8


@CLASSES
@pytest.mark.parametrize("name", ["sum", "mean", "min", "mincount", "maxcount", "first", "last", "variance",
                                  "variance1", "stddev"])
@hsettings(max_examples=15)
@given(data=st.data())
def test_window_interface(cls, name, data):
    """What mta.Window calls besides the Aggregator methods: push (insert, then evict down
    to MaxSize as AmortizedMTA.enforce does), result, oldest, insert_array (numpy columns),
    and copies (deepcopy, pickle)."""
    import copy
    import pickle

    import numpy as np


    monoid = MONOIDS[name]
    kind = data.draw(st.sampled_from(["float", "int"]))
    size = data.draw(st.integers(1, 70))
    typed, ref = cls(monoid, max_size=size), AmortizedMTA(monoid)
    values = FLOATS_FOR_ARRAYS if kind == "float" else (TIES if name in ("mincount", "maxcount") else st.integers(-10**6, 10**6))
    for step in data.draw(st.lists(st.one_of(st.tuples(st.just("push"), values),
                                             st.tuples(st.just("array"), st.lists(values, max_size=80)),
                                             st.tuples(st.just("copy"), st.sampled_from(["deepcopy", "pickle"]))),
                                   max_size=30)):
        if step[0] == "push":
            p = lift(name, step[1])
            evicted = typed.push(0, p)
            ref.insert(p)
            k = max(0, len(ref) - size)
            ref.evict(k)
            assert evicted == k
        elif step[0] == "array":
            column = np.array(step[1], dtype=np.float64 if kind == "float" else np.int64)
            column.flags.writeable = False  # as Arrow's buffers are
            typed.insert_array(column)
            ref.insert_many([lift(name, v) for v in step[1]])
        else:
            if step[1] == "pickle" and cls is typed_amta.TypedAMTA:  # the pure twin is not importable by name
                typed = pickle.loads(pickle.dumps(typed))
            else:
                typed = copy.deepcopy(typed)
        check_same(typed, ref)
        assert identical(typed.result(), monoid.lower(ref.query()))
        if len(ref):
            assert identical(typed.oldest(), next(iter(ref)))


FLOATS_FOR_ARRAYS = st.sampled_from([1e16, -1e16, 1.0, 0.5, 3.0, 1e-3, 7.0])


@CLASSES
@pytest.mark.parametrize("policy", ["TimeRange(3)", "MaxSize(5)"])
@hsettings(max_examples=15)
@given(data=st.data())
def test_under_a_timed_window(cls, policy, data):
    """Under mta.algorithms.typed.TypedTimed (a window whose policy reads times), against
    AmortizedMTA over the timed monoid; on a timestamp of the other kind the timed window
    demotes through to_object(monoid, wrap), whose partials carry counts and timestamps."""
    from mta.algorithms.typed import TypedTimed
    from mta.policy import MaxSize, TimeRange
    from mta.window import _Timed

    policy = eval(policy)  # noqa: S307  (one of the two literals above)
    monoid = Mean()
    timed = _Timed(monoid)
    core = TypedTimed(cls(monoid), timed, policy)
    ref = AmortizedMTA(timed)
    t = data.draw(st.sampled_from([0, 0.0]))
    for kind, dt, value in data.draw(st.lists(st.tuples(st.sampled_from(["push", "push", "columns", "other"]),
                                                        st.sampled_from([0, 1, 2]), FLOATS_FOR_ARRAYS),
                                              max_size=60)):
        t += dt
        stamp = (float(t) if type(t) is int else int(t)) if kind == "other" else t
        element = (1, stamp, monoid.lift(value))
        try:
            if not isinstance(core, TypedTimed):
                raise Untyped[0]("demoted")
            if kind == "columns":
                core.insert_columns([stamp, stamp], [element[2]] * 2)
                evicted = core.enforce(policy)
            else:
                evicted = core.push(stamp, element[2])
        except Untyped:
            if isinstance(core, TypedTimed):
                core = core.to_object()
                assert type(core) is AmortizedMTA
            core.insert_many([element] * 2) if kind == "columns" else core.insert(element)
            evicted = core.enforce(policy)
        ref.insert_many([element] * 2) if kind == "columns" else ref.insert(element)
        assert evicted == ref.enforce(policy)
        assert len(core) == len(ref)
        assert identical(core.query(), ref.query()), (core.query(), ref.query())
        assert all(map(identical, core, ref))


@CLASSES
def test_variance_int_kind_bound(cls):
    """INT kind: ints of at most 2**25 (deviations squared exact as doubles); a larger one
    raises Untyped and changes nothing, and the window demotes to AmortizedMTA, which goes on
    with the object results. Floats of any finite size: FLOAT kind."""
    for monoid in (Variance(), StdDev(ddof=1)):
        typed, ref = cls(monoid), AmortizedMTA(monoid)
        for v in (2**25, -2**25, 2**25 - 1, 3, -2**25):
            typed.insert((1, v, 0))
            ref.insert((1, v, 0))
            check_same(typed, ref)
            assert identical(typed.result(), monoid.lower(ref.query()))
        typed.evict(2)
        ref.evict(2)
        before = list(typed)
        for bad in ((1, 2**25 + 1, 0), (1, -2**25 - 1, 0), (1, 2**449, 0), (1, 0.5, 0)):
            assert not typed.fits(bad) and not typed.accepts([(1, 1, 0), bad])
            with pytest.raises(Untyped):
                typed.insert(bad)
            with pytest.raises(Untyped):
                typed.insert_many([(1, 1, 0), bad])
            assert all(map(identical, list(typed), before))
            check_same(typed, ref)
        typed = typed.to_object()
        for p in ((1, 2**40, 0), (1, 5, 0), (1, 2**25 + 1, 0)):
            typed.insert(p)
            ref.insert(p)
            typed.evict()
            ref.evict()
            check_same(typed, ref)
        typed = cls(monoid)
        typed.insert_many([(1, 1e300, 0), (1, -1e300, 0), (1, 2.5, 0)])
        ref = AmortizedMTA(monoid)
        ref.insert_many([(1, 1e300, 0), (1, -1e300, 0), (1, 2.5, 0)])
        check_same(typed, ref)  # M2 overflows to inf on both
        assert identical(typed.result(), monoid.lower(ref.query()))


@CLASSES
@pytest.mark.parametrize("name", ["variance", "variance1", "stddev", "argmin", "argmax"])
def test_count_one_and_empty_results(cls, name):
    """A partial of one value, an evicted window and an empty one give the object's partials
    and results: (1, v, 0) with the int M2 and v of the window's kind; the identity; None."""
    monoid = MONOIDS[name]
    for v in (5, -0.0, 2.5, -2**25):
        typed, ref = cls(monoid), AmortizedMTA(monoid)
        for step in range(3):
            assert identical(typed.query(), ref.query()) and identical(typed.result(), monoid.lower(ref.query()))
            p = lift(name, v)
            typed.insert(p)
            ref.insert(p)
            check_same(typed, ref)
            assert identical(typed.result(), monoid.lower(ref.query()))
            assert identical(typed.oldest(), next(iter(ref)))
            typed.evict(1)
            ref.evict(1)
            check_same(typed, ref)


@CLASSES
@pytest.mark.parametrize("name", ["argmin", "argmax"])
def test_arg_key_kinds(cls, name):
    """The first partial of an empty window sets the key kind (int or float) with the value
    kind; a key of the other kind in a non-empty window is Untyped, nothing changed. Float
    keys (NaN, -0.0, inf) come back bit for bit; copies and pickles keep everything."""
    import copy
    import pickle

    monoid = MONOIDS[name]
    typed, ref = cls(monoid), AmortizedMTA(monoid)
    for p in ((1.0, math.nan), (1.0, -0.0), (0.0, math.inf), (-0.0, 0.0)):
        typed.insert(p)
        ref.insert(p)
        check_same(typed, ref)
    for bad in ((1.0, 3), (2, 1.5), (2, 3)):
        assert not typed.fits(bad) and not typed.accepts([bad])
        with pytest.raises(Untyped):
            typed.insert(bad)
        check_same(typed, ref)
    again = copy.deepcopy(typed)
    check_same(again, ref)
    if cls is typed_amta.TypedAMTA:  # the pure twin is not importable by name
        again = pickle.loads(pickle.dumps(typed))
        check_same(again, ref)
        assert all(map(identical, list(again), list(ref)))
    typed.evict(len(typed))
    ref.evict(len(ref))
    assert typed.query() is None and typed.result() is None
    for p in ((3, 2**63 - 1), (3, -2**63), (-7, 0)):  # an empty window takes the other kinds
        typed.insert(p)
        ref.insert(p)
        check_same(typed, ref)
        assert identical(typed.result(), monoid.lower(ref.query()))
    assert not typed.fits((3, 1.5)) and not typed.fits((3.0, 1))
    obj = typed.to_object()
    for p in ((3, "a"), (-9, None), (3, 1.5)):
        obj.insert(p)
        ref.insert(p)
        check_same(obj, ref)
