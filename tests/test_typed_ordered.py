"""Out-of-order windows (``algorithm="fiba"``) on a typed FiBA (:mod:`mta.typed_ordered`)
against the same window on the object TimeOrdered + FiBA: the same results (floats bit
for bit), errors, frontier, iteration, and the same tree node for node, through inserts
in and out of order, equal timestamps, late updates, evictions, retractions, range
queries and demotion mid-stream. The typed path is switched on (``typed.USE``) on both
the compiled and the pure path (where the same source runs interpreted)."""

from __future__ import annotations

import base64
import math
import pickle
from functools import reduce
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta import Window
from mta.algorithms import typed
from mta.monoid import (ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev, Sum,
                        Variance)
from mta.policy import MaxSize, TimeRange, all_of, any_of
from mta.ordered_window import TimeOrdered
from mta.typed_ordered import TypedTimeOrdered

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


# -- pickles from before pair keys --------------------------------------------------------

#: Windows pickled by commit b563cec's compiled build (packed int64 keys), made by inserting
#: _OLD_HISTORY[name] into _OLD_WINDOWS[name]() (see test_a_window_pickled_with_packed_keys_goes_on).
_OLD_PICKLES = {
    "int_sum": (
        "gASVvgIAAAAAAACMCm10YS53aW5kb3eUjAZXaW5kb3eUk5QpgZR9lCiMBm1vbm9pZJSMCm10YS5tb25vaWSUjANTdW2Uk5QpgZSM"
        "BnBvbGljeZSMCm10YS5wb2xpY3mUjAlUaW1lUmFuZ2WUk5QpgZR9lIwFd2lkdGiUSxlzYowJX21heF9zaXpllE6MCF9vcmRlcmVk"
        "lIiMBl90aW1lZJSIjAZfc3RvcmWUTowFX3NhZmWUiIwGX3R5cGVklIiMBV9tYWtllIwJZnVuY3Rvb2xzlIwHcGFydGlhbJSTlIwR"
        "bXRhLnR5cGVkX29yZGVyZWSUjBBUeXBlZFRpbWVPcmRlcmVklJOUhZRSlChoHWgJaACMBl9UaW1lZJSTlGgJhZRSlGgOh5R9lE50"
        "lGKMCl9mbHVzaF9kdWWUiYwRX2NvdW50c19hbmRfdGltZXOUiIwKX2FsZ29yaXRobZRoHSmBlH2UKIwEdHJlZZSMGW10YS5hbGdv"
        "cml0aG1zLnR5cGVkX2ZpYmGUjApfdW5waWNrbGVklJOUKGgtjAlUeXBlZEZpQkGUk5RoCUsQKImJiUseiU4oXZQoigUEAADQAYoF"
        "AwAA4AGKBQcAADACigUFAACAAooFBgAAgAJlXZQoSwVLBEsISwZLB2VLHksFiYldlChLB0sNSxVLGUseZU50lHSUdJRSlIwGX3No"
        "YXBllGg4aAVoI4wEbGF0ZZSMBnJlZnVzZZSMB19wb2xpY3mUaA6MBV9wbGFulEsBSxlHQDkAAAAAAACHlIwJX2Fycml2YWxzlEsI"
        "jAhmcm9udGllcpRLDIwGX2Zsb2F0lImMBV9iYXNllEsAjAZfZmlyc3SUSwCMCl9qb3VybmFsZWSUiXVijAdfbmV3ZXN0lEsjjAVu"
        "b3Rlc5R9lIwCaWSUTowHYmFja2VuZJROjAZsYWJlbHOUfZR1Yi4="),
    "float_mean": (
        "gASVYwcAAAAAAACMCm10YS53aW5kb3eUjAZXaW5kb3eUk5QpgZR9lCiMBm1vbm9pZJSMCm10YS5tb25vaWSUjARNZWFulJOUKYGU"
        "jAZwb2xpY3mUTowJX21heF9zaXpllE6MCF9vcmRlcmVklIiMBl90aW1lZJSIjAZfc3RvcmWUTowFX3NhZmWUiIwGX3R5cGVklIiM"
        "BV9tYWtllIwJZnVuY3Rvb2xzlIwHcGFydGlhbJSTlIwRbXRhLnR5cGVkX29yZGVyZWSUjBBUeXBlZFRpbWVPcmRlcmVklJOUhZRS"
        "lChoF2gJaACMBl9UaW1lZJSTlGgJhZRSlE6HlH2UjAltaW5fYXJpdHmUSwRzTnSUYowKX2ZsdXNoX2R1ZZSJjBFfY291bnRzX2Fu"
        "ZF90aW1lc5SIjApfYWxnb3JpdGhtlGgXKYGUfZQojAR0cmVllIwZbXRhLmFsZ29yaXRobXMudHlwZWRfZmliYZSMCl91bnBpY2ts"
        "ZWSUk5QoaCiMCVR5cGVkRmlCQZSTlGgJSwQoiYiJSwCJTihdlEsAYV2URwAAAAAAAAAASwGGlGFHAAAAAAAAAABLAYaUSwGJiU5d"
        "lCgoXZQoigcfAAAAAADhigcXAAAAAADpigcPAAAAAADxigcHAAAAAAD5ZV2UKEdACMzMzMzMzUsBhpRHQAJmZmZmZmdLAYaURz/4"
        "AAAAAAAASwGGlEc/5mZmZmZmZ0sBhpRlR0A5mZmZmZmaSxCGlEsQiIlOXZQoKF2UKIoHJwAAAAAA2YoHJQAAAAAA24oHIwAAAAAA"
        "3YoHIQAAAAAA32VdlChHQA8zMzMzMzRLAYaUR0ANmZmZmZmaSwGGlEdADAAAAAAAAEsBhpRHQApmZmZmZmdLAYaUZUdARAAAAAAA"
        "AEsUhpRLFIiJXZQoR0AKZmZmZmZnSwGGlEdAGzMzMzMzNEsChpRHQCUAAAAAAABLA4aUR0AszMzMzMzNSwSGlGVOdJQoXZQoigcd"
        "AAAAAADjigcbAAAAAADligcZAAAAAADnZV2UKEdABzMzMzMzNEsBhpRHQAWZmZmZmZpLAYaUR0AEAAAAAAAASwGGlGVHQCAzMzMz"
        "MzRLA4aUSwOJiU5OdJQoXZQoigcVAAAAAADrigcTAAAAAADtigcRAAAAAADvZV2UKEdAAMzMzMzMzUsBhpRHP/5mZmZmZmdLAYaU"
        "Rz/7MzMzMzM0SwGGlGVHQBbMzMzMzM1LA4aUSwOJiU5OdJQoXZQoigcNAAAAAADzigcLAAAAAAD1igcJAAAAAAD3ZV2UKEc/9MzM"
        "zMzMzUsBhpRHP/GZmZmZmZpLAYaURz/szMzMzMzNSwGGlGVHQApmZmZmZmdLA4aUSwOJiU5OdJQoXZQoigcFAAAAAAD7igcDAAAA"
        "AAD9igcBAAAAAAD/ZV2UKEc/4AAAAAAAAEsBhpRHP9MzMzMzMzRLAYaURz+5mZmZmZmaSwGGlGVHP+zMzMzMzM1LA4aUSwOJiU5O"
        "dJRldJQoXZQoigcKAAAAAAAKigcUAAAAAAAUigceAAAAAAAeZV2UKEc/8AAAAAAAAEsBhpRHQAAAAAAAAABLAYaUR0AIAAAAAAAA"
        "SwGGlGVHQDgAAAAAAABLD4aUSw+JiE5dlCgoXZQoigcCAAAAAAACigcEAAAAAAAEigcGAAAAAAAGigcIAAAAAAAIZV2UKEc/yZmZ"
        "mZmZmksBhpRHP9mZmZmZmZpLAYaURz/jMzMzMzM0SwGGlEc/6ZmZmZmZmksBhpRlR0AAAAAAAAAASwSGlEsEiYlOTnSUKF2UKIoH"
        "DAAAAAAADIoHDgAAAAAADooHEAAAAAAAEIoHEgAAAAAAEmVdlChHP/MzMzMzMzRLAYaURz/2ZmZmZmZnSwGGlEc/+ZmZmZmZmksB"
        "hpRHP/zMzMzMzM1LAYaUZUdAGAAAAAAAAUsEhpRLBImJTk50lChdlCiKBxYAAAAAABaKBxgAAAAAABiKBxoAAAAAABqKBxwAAAAA"
        "ABxlXZQoR0ABmZmZmZmaSwGGlEdAAzMzMzMzNEsBhpRHQATMzMzMzM1LAYaUR0AGZmZmZmZnSwGGlGVHQCQAAAAAAAFLBIaUSwSJ"
        "iU5OdJQoXZQoigcgAAAAAAAgigciAAAAAAAiigckAAAAAAAkigcmAAAAAAAmZV2UKEdACZmZmZmZmksBhpRHQAszMzMzMzRLAYaU"
        "R0AMzMzMzMzNSwGGlEdADmZmZmZmZ0sBhpRlR0BDAAAAAAAASxOGlEsTiYhOTnSUZXSUZXSUdJR0lFKUjAZfc2hhcGWUaI9oBWgd"
        "jARsYXRllIwGcmVmdXNllIwHX3BvbGljeZROjAVfcGxhbpROjAlfYXJyaXZhbHOUSyiMCGZyb250aWVylE6MBl9mbG9hdJSIjAVf"
        "YmFzZZSKCAAAAED8VNlBjAZfZmlyc3SUSwCMCl9qb3VybmFsZWSUiXVijAdfbmV3ZXN0lEdB2VT8PZAAAIwFbm90ZXOUfZSMAmlk"
        "lE6MB2JhY2tlbmSUTowGbGFiZWxzlH2UdWIu"),
    "int_record": (
        "gASVHgQAAAAAAACMCm10YS53aW5kb3eUjAZXaW5kb3eUk5QpgZR9lCiMBm1vbm9pZJSMCm10YS5tb25vaWSUjAZSZWNvcmSUk5R9"
        "lCiMAW6UaAaMBUNvdW50lJOUKYGUjAJsb5RoBowDTWlulJOUKYGUjAFzlGgGjANTdW2Uk5QpgZR1hZRSlIwGcG9saWN5lIwKbXRh"
        "LnBvbGljeZSMCVRpbWVSYW5nZZSTlCmBlH2UjAV3aWR0aJRLGXNijAlfbWF4X3NpemWUTowIX29yZGVyZWSUiIwGX3RpbWVklIiM"
        "Bl9zdG9yZZROjAVfc2FmZZSIjAZfdHlwZWSUiIwFX21ha2WUjAlmdW5jdG9vbHOUjAdwYXJ0aWFslJOUjBFtdGEudHlwZWRfb3Jk"
        "ZXJlZJSMEFR5cGVkVGltZU9yZGVyZWSUk5SFlFKUKGgraBdoAIwGX1RpbWVklJOUaBeFlFKUaByHlH2UTnSUYowKX2ZsdXNoX2R1"
        "ZZSJjBFfY291bnRzX2FuZF90aW1lc5SIjApfYWxnb3JpdGhtlGgrKYGUfZQojAR0cmVllIwgbXRhLmFsZ29yaXRobXMudHlwZWRf"
        "cmVjb3JkX2ZpYmGUjA9UeXBlZFJlY29yZEZpQkGUk5QpgZR9lChoBWgXjAV0cmVlc5RdlCiMGW10YS5hbGdvcml0aG1zLnR5cGVk"
        "X2ZpYmGUjApfdW5waWNrbGVklJOUKGhCjAlUeXBlZEZpQkGUk5RoDUsQKImJiUsFiU4oXZQoigUEAADQAYoFAwAA4AGKBQcAADAC"
        "igUFAACAAooFBgAAgAJlXZQoSwFLAUsBSwFLAWVLBUsFiYldlChLAUsCSwNLBEsFZU50lHSUdJRSlGhEKGhGaBFLECiJiYlLAIlO"
        "KF2UKIoFBAAA0AGKBQMAAOABigUHAAAwAooFBQAAgAKKBQYAAIACZV2UKEsFSwRLCEsGSwdlSwRLBYmJXZQoSwdLBksGSwRLBGVO"
        "dJR0lHSUUpRoRChoRmgVSxAoiYmJSx6JTihdlCiKBQQAANABigUDAADgAYoFBwAAMAKKBQUAAIACigUGAACAAmVdlChLBUsESwhL"
        "BksHZUseSwWJiV2UKEsHSw1LFUsZSx5lTnSUdJR0lFKUZYwGX3dpZHRolEsDdWKMBl9zaGFwZZRoTWgFaDGMBGxhdGWUjAZyZWZ1"
        "c2WUjAdfcG9saWN5lGgcjAVfcGxhbpRLAUsZR0A5AAAAAAAAh5SMCV9hcnJpdmFsc5RLCIwIZnJvbnRpZXKUSwyMBl9mbG9hdJSJ"
        "jAVfYmFzZZRLAIwGX2ZpcnN0lEsAjApfam91cm5hbGVklIl1YowHX25ld2VzdJRLI4wFbm90ZXOUfZSMAmlklE6MB2JhY2tlbmSU"
        "TowGbGFiZWxzlH2UdWIu"),
}
_INTS = [(10, 1), (12, 2), (11, 3), (30, 4), (29, 5), (40, 6), (40, 7), (35, 8)]
_OLD_HISTORY = {"int_sum": _INTS, "float_mean": [(1.7e9 + 0.25 * i * (-1) ** i, i * 0.1) for i in range(40)],
                "int_record": _INTS}
_OLD_WINDOWS = {"int_sum": lambda: Window(Sum(), TimeRange(25), algorithm="fiba"),
                "float_mean": lambda: Window(Mean(), None, algorithm="fiba", min_arity=4),
                "int_record": lambda: Window(Record(n=Count(), lo=Min(), s=Sum()), TimeRange(25), algorithm="fiba")}


@pytest.mark.parametrize("name", sorted(_OLD_PICKLES))
def test_a_window_pickled_with_packed_keys_goes_on(name):
    """A typed out-of-order window pickled before pair keys loads with pair keys, node for
    node: it answers and goes on (late and in-order updates, evictions) as a window fed the
    same history now does."""
    old = pickle.loads(base64.b64decode("".join(_OLD_PICKLES[name])))
    fresh = _OLD_WINDOWS[name]()
    for t, v in _OLD_HISTORY[name]:
        fresh.insert(t, v)
    assert type(old._algorithm) is TypedTimeOrdered  # (on the pure path too: its interpreted twin)
    assert type(fresh._algorithm) is (TypedTimeOrdered if typed.USE else TimeOrdered)
    assert repr(old.query()) == repr(fresh.query())
    newest = _OLD_HISTORY[name][-1][0]
    for dt in (-3, 5, 2, 20, 1):
        v = dt * 0.5 if name == "float_mean" else dt
        assert old.insert(newest + dt, v) == fresh.insert(newest + dt, v)
        assert repr(old.query()) == repr(fresh.query())
    assert type(old._algorithm) is TypedTimeOrdered
    if typed.USE:  # node for node: the same entries in the same tree
        assert old._algorithm.tree.dump(lambda *fields: fields) == fresh._algorithm.tree.dump(lambda *fields: fields)


@pytest.mark.parametrize("width", [1e19, 2.0 ** 63, 1.5e300, 2 ** 53, 9.5e18])
def test_int_timestamps_spanning_beyond_int64_against_a_float_width(width):
    """Int timestamps whose differences exceed int64 (up to 2**64 - 1) keep exactly the
    updates with ``newest - t < width``, one by one and in batches, under any_of too."""
    stamps = [-(2 ** 63), -1, 2 ** 63 - 1, 2 ** 63 - 5, 5 * 10 ** 18]  # (none late)
    for policy in (TimeRange(width), any_of(TimeRange(width), MaxSize(100))):
        one, batch = Window(Sum(), policy, algorithm="fiba"), Window(Sum(), policy, algorithm="fiba")
        batch.insert_many([(t, 1) for t in stamps])
        seen = []
        for t in stamps:
            one.insert(t, 1)
            seen.append(t)
            newest = max(seen)
            seen = [s for s in seen if newest - s < width]
            assert len(one) == len(seen) and one.query() == len(seen), (t, policy)
        assert type(one._algorithm) is (TypedTimeOrdered if typed.USE else TimeOrdered)
        assert len(batch) == len(seen) and batch.query() == len(seen)
