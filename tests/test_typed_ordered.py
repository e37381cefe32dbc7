"""Out-of-order windows (``algorithm="fiba"``) on a typed FiBA (:mod:`mta.typed_ordered`)
against the same window on the object TimeOrdered + FiBA: the same results (floats bit
for bit), errors, frontier, iteration, and the same tree node for node, through inserts
in and out of order, equal timestamps, late updates, evictions, retractions, range
queries and demotion mid-stream. The typed path is switched on (``typed.USE``) on both
the compiled and the pure path (where the same source runs interpreted)."""

from __future__ import annotations

import math
from functools import reduce
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta import Window
from mta.algorithms import typed
from mta.monoid import ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, StdDev, Sum, Variance
from mta.policy import MaxSize, TimeRange, all_of, any_of

MONOIDS = {"sum": Sum, "count": Count, "min": Min, "max": Max, "mean": Mean, "mincount": MinCount, "maxcount": MaxCount,
           "first": First, "last": Last, "variance": Variance, "stddev": lambda: StdDev(ddof=1), "argmin": ArgMin,
           "argmax": ArgMax}
#: Monoids whose inputs are (key, value) pairs: the key an int (a value of another kind demotes).
ARG_INPUTS = ("argmin", "argmax")
#: Monoids whose float results depend on the order of combines (FiBA.check refolds otherwise).
ROUNDING = ("variance", "stddev")


def given_as(monoid: str, value: Any, key: Any = 1) -> Any:
    """What ``Window.insert`` takes for ``monoid``: ``(key, value)`` for ArgMin / ArgMax."""
    return (key, value) if monoid in ARG_INPUTS else value
POLICIES = {"none": None, "size": MaxSize(5), "size0": MaxSize(0), "time": TimeRange(6), "time_f": TimeRange(2.5), "time_r": TimeRange(0.3),
            "any": any_of(MaxSize(7), TimeRange(9)), "all": all_of(MaxSize(3), TimeRange(4))}


def make(monoid: str, policy: str, late: str, min_arity: int, use_typed: bool) -> Window:
    saved = typed.USE
    typed.USE = use_typed
    try:
        return Window(MONOIDS[monoid](), POLICIES[policy], algorithm="fiba", late=late, min_arity=min_arity)
    finally:
        typed.USE = saved


def norm(x: Any) -> Any:
    """``x`` with floats as hex (bit for bit) and tuples/lists recursively."""
    if isinstance(x, float):
        return x.hex()
    if isinstance(x, (tuple, list)):
        return type(x)(map(norm, x))
    return x


def outcome(call: Any) -> Any:
    try:
        return ("ok", norm(call()))
    except Exception as error:  # the same error, by type and message
        return ("error", type(error).__name__, str(error))


def tree_of(window: Window, check: bool = True) -> Any:
    """The object FiBA of ``window`` (the typed one's object twin), node by node; ``check``:
    FiBA.check it first (it refolds in its own order: exact for ints only)."""
    algorithm = window._algorithm
    tree = (algorithm.to_object() if window._typed else algorithm).tree

    def dump(node: Any) -> Any:
        stale = node.suffix is not None and len(node.suffix) != len(node.keys)  # dropped by to_object
        return (node.keys, node.values, node.agg, node.size, node.left, node.right, None if stale else node.suffix,
                None if node.children is None else [dump(child) for child in node.children])

    if check:
        tree.check()
    return norm(dump(tree._root))


def naive(window: Window) -> Any:
    """The window's result by a left fold of its entries (in timestamp order)."""
    monoid = window.monoid
    return monoid.lower(reduce(monoid.combine, list(window), monoid.identity))


#: Timestamps: drawn times 0..30 mapped in order (other numbers as they are) to ints, epoch
#: seconds, relative half seconds, floats of mixed magnitudes and signs (subnormals, huge,
#: equal neighbours), and ints near the int64 limits. Every kind stays typed at any span.
_MIXED = sorted([-1e300, -7.5e15, -123.25, -1.0, -5e-324, 0.0, 5e-324, 2.2250738585072014e-308, 1e-300, 0.1, 0.5,
                 1.0, 1.0, 100.0, 100.5, 1.7e9, 1.7e9 + 0.25, 2.0 ** 52, 2.0 ** 53, 1e16, 1e100, 1e300, 1.7e308,
                 -2.0 ** 60, 3.0, 3.0, 42.0, 1e-10, -1e-10, 7e200, 8e-200])
_I64 = sorted([-2**63, -2**63 + 1, -2**63 + 2, -2**62, -2**40, -1, 0, 1, 2, 2**34, 2**35, 2**40, 2**52, 2**53, 2**53 + 1,
               2**62, 2**63 - 3, 2**63 - 2, 2**63 - 1, 2**63 - 1, 5, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
STAMPS = {"int": lambda t: t, "epoch": lambda t: 1e9 + t * 0.1, "relative": lambda t: 100.0 + t * 0.5,
          "epoch_wide": lambda t: 1.7e9 + t * 997.25, "mixed": _MIXED.__getitem__, "int64": _I64.__getitem__}


def stamp(kind: str, t: Any) -> Any:
    """Drawn time ``t`` as a timestamp of ``kind`` (not a time 0..30: as it is)."""
    return STAMPS[kind](t) if type(t) is int and 0 <= t <= 30 else t


TS = st.integers(0, 30)
INT_VALUES = st.integers(-50, 50)
FLOAT_VALUES = st.sampled_from([0.0, -0.0, 1.5, -2.25, 0.1, 1e16, -1e16, 3.0, 1e-300])
OPS = st.one_of(
    st.tuples(st.just("insert"), TS),
    st.tuples(st.just("insert"), TS),
    st.tuples(st.just("insert"), TS),
    st.tuples(st.just("many"), st.lists(TS, max_size=5)),
    st.tuples(st.just("columns"), st.lists(TS, max_size=5)),
    st.tuples(st.just("clear")),
    st.tuples(st.just("evict"), st.integers(0, 3)),
    st.tuples(st.just("evict_before"), st.one_of(TS, st.sampled_from([4.5, -3.0, 1e300, math.inf, None, "x"]))),
    st.tuples(st.just("evict"), st.sampled_from([-1, True, 1.0])),
    st.tuples(st.just("retract"), st.one_of(TS, st.just(7.5))),
    st.tuples(st.just("range"), st.one_of(st.none(), TS, st.just(3.5)), st.one_of(st.none(), TS, st.just(20.5))),
    st.tuples(st.just("demote"), st.sampled_from([2.5, 2 ** 64, "value"])),
)


CASES = dict(monoid=st.sampled_from(sorted(MONOIDS)), policy=st.sampled_from(sorted(POLICIES)),
             late=st.sampled_from(["refuse", "include"]), min_arity=st.sampled_from([2, 3, 16]),
             floats=st.booleans(), stamps=st.sampled_from(sorted(STAMPS)), ops=st.lists(OPS, max_size=60), data=st.data())


@hsettings(max_examples=300)
@given(**CASES)
def test_typed_ordered_window_is_the_object_one(monoid: str, policy: str, late: str, min_arity: int, floats: bool,
                                                stamps: str, ops: list, data: Any) -> None:
    same_as_object(monoid, policy, late, min_arity, floats, stamps, ops, data)


def common_calls(op: tuple, at: Any, draw: Any) -> list | None:
    """The calls on a window that a random operation of the shared kinds stands for (``at``
    maps a drawn time to a timestamp, ``draw`` draws an update's value), or None for a kind
    the test makes its own calls for."""
    kind = op[0]
    if kind == "insert":
        value = draw()
        return [lambda w: w.insert(at(op[1]), value)]
    if kind == "many":
        batch = [(at(t), draw()) for t in op[1]]
        return [lambda w: w.insert_many(batch)]
    if kind == "columns":
        stamps, column = list(map(at, op[1])), [draw() for _ in op[1]]
        return [lambda w: w.insert_many(stamps, column)]
    if kind == "clear":
        return [lambda w: w.clear()]
    if kind == "evict":
        return [lambda w: w.evict(op[1])]
    if kind == "evict_before":
        return [lambda w: w.evict_before(at(op[1]))]
    if kind == "retract":
        return [lambda w: w.retract(at(op[1]))]
    if kind == "range":
        low, high = at(op[1]), at(op[2])
        return [lambda w: w.query(low, high), lambda w: w.tally(low, high), lambda w: w.partial(low, high)]
    return None


def step_alike(typed_window: Window, object_window: Window, calls: list, op: Any) -> None:
    """Make ``calls`` on both windows (the same results or errors), then assert that they
    hold the same: size, aggregate, partial, frontier, entries."""
    for call in calls:
        assert outcome(lambda: call(typed_window)) == outcome(lambda: call(object_window)), op
    assert len(typed_window) == len(object_window)
    assert norm(typed_window.query()) == norm(object_window.query())
    assert norm(typed_window.partial()) == norm(object_window.partial())
    assert typed_window.frontier == object_window.frontier
    assert norm(list(typed_window)) == norm(list(object_window))


def same_as_object(monoid: str, policy: str, late: str, min_arity: int, floats: bool, stamps: str, ops: list,
                   data: Any) -> None:
    """Both windows through ``ops``, timestamps of kind ``stamps`` (:data:`STAMPS`); the
    typed one stays typed unless an operation made to demote it ran, and (ints, exact
    monoids) gives a naive fold's result."""

    def at(t: Any) -> Any:
        return stamp(stamps, t)

    typed_window = make(monoid, policy, late, min_arity, True)
    object_window = make(monoid, policy, late, min_arity, False)
    assert typed_window._typed and not object_window._typed
    values = FLOAT_VALUES if floats and monoid != "count" else INT_VALUES
    if monoid in ARG_INPUTS:  # small values tie: the oldest must be kept (the keys tell them apart)
        values = st.one_of(values, st.integers(-2, 2)) if not floats else values
    keys = iter(range(10 ** 6))

    def draw() -> Any:
        return given_as(monoid, data.draw(values), next(keys))

    exact = (not floats or monoid == "count") and monoid not in ROUNDING
    demoted = False
    for op in ops:
        calls = common_calls(op, at, draw)
        if calls is None:  # what the typed core cannot hold: a timestamp of the other kind, a value beyond int64
            bad = op[1]
            value = draw()
            calls = [lambda w: w.insert(bad, value) if bad != "value" else w.insert(at(3), given_as(monoid, 2 ** 70))]
            demoted = True
        step_alike(typed_window, object_window, calls, op)
        assert norm(typed_window.oldest_timestamp()) == norm(object_window.oldest_timestamp())
        assert typed_window._typed or demoted, op
        if exact and typed_window._typed:
            assert norm(typed_window.query()) == norm(naive(typed_window))
    assert tree_of(typed_window, exact) == tree_of(object_window, exact)


@pytest.mark.parametrize("monoid", sorted(MONOIDS))
def test_demotion_mid_stream_keeps_the_state(monoid: str) -> None:
    typed_window = make(monoid, "size", "include", 2, True)
    object_window = make(monoid, "size", "include", 2, False)
    exact = monoid not in ROUNDING
    for j in range(40):
        for w in (typed_window, object_window):
            w.insert((j * 7) % 13 + j // 2, given_as(monoid, j % 5 - 2, j))
    assert typed_window._typed
    assert tree_of(typed_window, exact) == tree_of(object_window, exact)
    for w in (typed_window, object_window):
        w.insert(30.5, given_as(monoid, 1))  # a float timestamp: the typed window demotes
    assert not typed_window._typed
    assert tree_of(typed_window, exact) == tree_of(object_window, exact)
    for j in range(40):
        for w in (typed_window, object_window):
            w.insert(j % 9 + 25, given_as(monoid, j % 4, j))
        assert norm(typed_window.query()) == norm(object_window.query())
    assert tree_of(typed_window, exact) == tree_of(object_window, exact)


def test_late_updates_are_refused_the_same_way() -> None:
    typed_window = make("sum", "size", "refuse", 2, True)
    object_window = make("sum", "size", "refuse", 2, False)
    for w in (typed_window, object_window):
        for t in range(10):
            w.insert(t, t)
        w.evict_before(8.5)
    assert typed_window.frontier == object_window.frontier == 8.5
    assert outcome(lambda: typed_window.insert(8, 1)) == outcome(lambda: object_window.insert(8, 1))
    assert outcome(lambda: typed_window.insert(8, 1))[0] == "error"
    assert typed_window._typed
    assert typed_window.query() == object_window.query() == 9


def test_typed_only_where_it_can_serve() -> None:
    saved = typed.USE
    typed.USE = True
    try:
        assert Window(Sum(), MaxSize(3), algorithm="fiba")._typed
        assert Window(Sum(), None, algorithm="fiba", late="include")._typed
        assert not Window(Sum(), lambda total, old: False, algorithm="fiba")._typed
        assert not Window(Sum(), MaxSize(3), algorithm="fiba", min_arity=17)._typed
        assert not Window(Sum(), MaxSize(3), algorithm="btree")._typed
        with pytest.raises(ValueError, match="late must be one of"):
            Window(Sum(), MaxSize(3), algorithm="fiba", late="drop")
    finally:
        typed.USE = saved
    assert Window(Sum(), MaxSize(3), algorithm="fiba")._typed == typed.COMPILED


@hsettings(max_examples=150)
@given(keys=st.lists(st.integers(-40, 40), unique=True, max_size=80), evicts=st.lists(st.integers(-40, 40)),
       min_arity=st.sampled_from([2, 3]), bounds=st.lists(st.tuples(st.integers(-45, 45), st.integers(-45, 45))))
def test_count_range_and_key_at_are_the_entries(keys: list, evicts: list, min_arity: int, bounds: list) -> None:
    """TypedFiBA.count_range and key_at (what the window's range queries and evictions use)
    against the entries themselves."""
    from mta.algorithms.typed_fiba import TypedFiBA
    tree = TypedFiBA(Sum(), min_arity=min_arity)
    for key in keys:
        tree.insert(key, key)
    for key in evicts:
        tree.evict(key)
    entries = [key for key, _ in tree]
    for rank, key in enumerate(entries):
        assert tree.key_at(rank) == key
    with pytest.raises(IndexError):
        tree.key_at(len(entries))
    for low, high in bounds:
        inside = [key for key in entries if low <= key <= high]
        assert tree.count_range(low, high) == (len(inside), inside[-1] if inside else None)


@pytest.mark.parametrize("monoid", ["mean", "variance", "argmin", "first"])
@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_a_copied_typed_window_goes_on_as_the_original(copier: str, monoid: str) -> None:
    """The object out-of-order window does not load from a pickle (FiBA.__new__); the typed
    one does, and its copy is independent and goes on as the original does."""
    import copy
    import pickle
    original = make(monoid, "time", "refuse", 2, True)
    for j in range(30):
        original.insert((j * 5) % 11 + j, given_as(monoid, j % 4 + 0.25, j))
    clone = pickle.loads(pickle.dumps(original)) if copier == "pickle" else copy.deepcopy(original)
    assert clone._typed and clone.frontier == original.frontier
    for j in range(30):
        for w in (original, clone):
            w.insert((j * 3) % 7 + 30 + j, given_as(monoid, j % 3 - 0.5, 100 + j))
            w.evict_before(j + 20)
        assert norm(clone.query()) == norm(original.query())
        assert norm(clone.tally(35, 50)) == norm(original.tally(35, 50))
    assert tree_of(clone, monoid != "variance") == tree_of(original, monoid != "variance")
    before = (len(original), norm(original.query()))
    clone.insert(100, given_as(monoid, 1.0))  # the copy is independent
    assert (len(original), norm(original.query())) == before != (len(clone), norm(clone.query()))


@pytest.mark.parametrize("policy", ["time_r", "time_f", "any"])
def test_float_timestamps_expire_as_the_object_window_rounds(policy: str) -> None:
    """Float timestamps 1e9 + k * 0.1 against TimeRange(0.3): ``newest - t >= width`` and
    ``t <= newest - width`` disagree at some steps (rounding); the typed window evicts what
    the object one does, and stays typed."""
    typed_window = make("sum", policy, "include", 2, True)
    object_window = make("sum", policy, "include", 2, False)
    for k in [*range(40), 5, 50, 12, 49]:
        for w in (typed_window, object_window):
            w.insert(1e9 + k * 0.1, k)
        assert norm(list(typed_window)) == norm(list(object_window))
        assert typed_window.frontier == object_window.frontier
    assert typed_window._typed
    assert tree_of(typed_window) == tree_of(object_window)


def test_evict_before_an_int_beyond_the_float_range():
    """A typed window's bound went through math.isfinite, which raised OverflowError."""
    for bound, left in ((10**400, 0), (-(10**400), 2)):
        window = Window(Sum(), algorithm="fiba")
        window.insert(1, 1)
        window.insert(2, 2)
        assert window.evict_before(bound) == 2 - left and len(window) == left and window.frontier == bound


@pytest.mark.parametrize("monoid", ["first", "last", "variance", "stddev", "argmin", "argmax"])
@pytest.mark.parametrize("bad", ["value", "kind"])
def test_wide_monoids_demote_mid_stream_by_value(monoid: str, bad: str) -> None:
    """An out-of-order window of First, Last, Variance, StdDev, ArgMin or ArgMax is typed
    until a value it cannot hold (an int beyond int64, or beyond 2**25 for Variance; a
    value of the other kind), then the object window's state, results and range queries
    go on from there."""
    typed_window = make(monoid, "time", "include", 2, True)
    object_window = make(monoid, "time", "include", 2, False)
    assert typed_window._typed
    for j in range(60):  # out of order, equal timestamps, value ties
        for w in (typed_window, object_window):
            w.insert((j * 7) % 13 + j // 3, given_as(monoid, j % 3 - 1, j % 4))
        assert norm(typed_window.query()) == norm(object_window.query())
        assert norm(typed_window.query(j // 3, j // 3 + 4)) == norm(object_window.query(j // 3, j // 3 + 4))
    assert typed_window._typed
    odd = 2 ** 70 if bad == "value" else 0.5
    for w in (typed_window, object_window):
        w.insert(20, given_as(monoid, odd, 2))
    assert not typed_window._typed
    for j in range(30):
        for w in (typed_window, object_window):
            w.insert(20 + (j * 5) % 7, given_as(monoid, j % 3 + 0.25, j))
        assert norm(typed_window.query()) == norm(object_window.query())
        assert norm(list(typed_window)) == norm(list(object_window))
    exact = monoid not in ROUNDING
    assert tree_of(typed_window, exact) == tree_of(object_window, exact)


@pytest.mark.parametrize("monoid", ["first", "last", "variance", "stddev", "argmin", "argmax"])
def test_wide_monoids_empty_and_evicted_windows(monoid: str) -> None:
    """Empty windows, windows evicted to nothing and refilled (with the other kind of
    value: an empty window takes either), as the object window."""
    typed_window = make(monoid, "size", "include", 3, True)
    object_window = make(monoid, "size", "include", 3, False)
    for w in (typed_window, object_window):
        assert w.query() is None and w.query(0, 10) is None and len(w) == 0
    for value in (3, -0.0, 1.5):
        for j in range(12):
            for w in (typed_window, object_window):
                w.insert(j % 4 + 10 * j, given_as(monoid, value if j % 2 else -value, j))
            assert norm(typed_window.query()) == norm(object_window.query())
        for w in (typed_window, object_window):
            w.evict_before(10 ** 6)
            assert w.query() is None and len(w) == 0
        assert typed_window._typed
    for w in (typed_window, object_window):
        w.insert(5, given_as(monoid, 2))
    assert norm(typed_window.query()) == norm(object_window.query()) and typed_window._typed
