"""TypedFiBA (mta.algorithms.typed_fiba, issue 20) against the object FiBA it mirrors and a
naive recomputation.

Both paths run in this process: the module as imported (compiled when the install had a C
compiler) and its pure-Python twin (``load_pure``). On random operation sequences (in-order
and out-of-order inserts, equal keys, single and bulk evictions down to nothing, range
queries, prefix searches, undo, clear, copies) every result must be the object FiBA's,
floats bit for bit (``.hex()``: -0.0 is not 0.0), and so must the whole tree: every node's
entries, aggregate, size, spine flags and suffix folds. Anything the typed tree cannot hold
raises Untyped and changes nothing, after which ``to_object()`` goes on as FiBA would.
"""

from __future__ import annotations

import copy
import math
import pickle
import random
import struct
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, strategies as st

from conftest import hsettings
from mta import ArgMax, ArgMin, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, StdDev, Sum, Variance
from mta._extensions import load_pure
from mta.algorithms import typed_fiba
from mta.algorithms.fiba import FiBA
from mta.algorithms.typed import Untyped

TWINS = {"imported": typed_fiba, "pure": load_pure("mta.algorithms.typed_fiba")}
MONOIDS = [Sum, Count, Min, Max, Mean, MinCount, MaxCount, First, Last, Variance, ArgMin, ArgMax]
#: The monoids whose partials are (value, count) pairs.
PAIRS = (Mean, MinCount, MaxCount)
#: Those whose partials are (value, key) pairs, the key drawn as an int or a float.
ARGS = (ArgMin, ArgMax)
#: Selections: any order of combines of the same sequence gives the same partial.
SELECTIONS = (Min, Max, Count, MinCount, MaxCount, First, Last, ArgMin, ArgMax)
#: Variance: ints of magnitude up to 2**25 stay typed (deltas squared exact in doubles).
VAR_INTS = st.one_of(st.integers(-10**6, 10**6), st.integers(-3, 3),
                     st.sampled_from([2**25, -2**25, 2**25 - 1, -2**25 + 1]))
#: Variance partials of count >= 2 (as a combine makes them): either kind takes them.
VAR_MERGED = st.sampled_from([(2, 0.5, 0.125), (3, -1.5, 2.0), (2, -0.0, 0.0)])
# Magnitudes far apart: a sum in another order rounds differently.
FLOATS = [1e16, -1e16, 1.0, 0.5, -3.25, 1e-3, 7.0, 2.0 ** 60, -0.0, -0.0, 0.0]
# Mostly zeros: where an operand order or a combine with the identity shows (-0.0 + -0.0 is
# -0.0, 0 + -0.0 is 0.0; min(-0.0, 0.0) keeps the left one).
ZEROS = [-0.0, -0.0, -0.0, 0.0, 1.0, -1.0]
PALETTES = [FLOATS, ZEROS, [-0.0, 0.0]]
INTS = st.one_of(st.integers(-10**6, 10**6), st.sampled_from([2**62, -2**62, 2**63 - 1, -2**63]))


def identical(a, b) -> bool:
    """Equal values of the same types (tuples and lists element by element; floats bit for bit)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(identical, a, b))
    if type(a) is float and type(b) is float:
        return a.hex() == b.hex()
    return type(a) is type(b) and a == b


def dump(tree) -> tuple:
    """The whole tree, node by node: (keys, values, agg, size, left, right, suffix, children)."""
    if isinstance(tree, FiBA):
        def node(n):
            children = None if n.children is None else [node(c) for c in n.children]
            return (list(n.keys), list(n.values), n.agg, n.size, n.left, n.right,
                    None if n.suffix is None else list(n.suffix), children)
        return node(tree._root)
    return tree.dump(lambda *fields: fields)


def assert_same(tree, ref) -> None:
    assert len(tree) == len(ref)
    assert identical(tree.query(), ref.query()), (tree.query(), ref.query())
    assert identical(list(tree), list(ref))
    assert identical(tree.oldest(), ref.oldest()) and identical(tree.newest(), ref.newest())
    assert identical(dump(tree), dump(ref))


def naive(entries: dict, monoid):
    """The left fold of the entries in key order (exact for ints; Min/Max up to the sign of zero)."""
    return reduce(monoid.combine, (entries[k] for k in sorted(entries)), monoid.identity)


def exact(entries: dict, monoid_cls) -> bool:
    """Whether any order of combines gives the same result (ints; selections always;
    Variance never: Chan's merge rounds)."""
    return monoid_cls in SELECTIONS or (monoid_cls not in (Variance, StdDev) and all(
        type(v[0] if monoid_cls in PAIRS else v) is int for v in entries.values()))


def values_for(monoid_cls, ints: bool, floats: list = FLOATS, big: bool = True, float_keys: bool = False):
    """Partials of the monoid: ints (``big``: up to the int64 limits; Variance's up to 2**25)
    or floats of the palette; ArgMin / ArgMax's keys floats or ints (``float_keys``)."""
    if monoid_cls is Count:
        return st.sampled_from([1, 2, 3])
    if monoid_cls in (Variance, StdDev):
        base = VAR_INTS if ints else st.sampled_from(floats)
        return st.one_of(base, base, base, base, base, VAR_MERGED).map(
            lambda v: v if type(v) is tuple else monoid_cls().lift(v))
    base = (INTS if big else st.integers(-10**6, 10**6)) if ints else st.sampled_from(floats)
    if monoid_cls in (MinCount, MaxCount, ArgMin, ArgMax) and ints:
        base = st.one_of(base, st.integers(-3, 3))  # ties add their counts, or keep the left one
    if monoid_cls in (Min, Max, ArgMin, ArgMax, First, Last) and not ints:
        base = st.one_of(base, st.sampled_from([math.inf, -math.inf]))
    if monoid_cls in ARGS:
        key = st.integers(-5, 5).map(float if float_keys else int)
        return st.tuples(base, st.one_of(key, st.sampled_from([-0.0, 2.5, 1e300] if float_keys
                                                             else [2**63 - 1, -2**63])))
    return base.map(lambda v: (v, 1)) if monoid_cls in PAIRS else base


def ops(monoid_cls, ints: bool, float_keys: bool, floats: list, float_akeys: bool = False):
    key = st.integers(0, 60).map(float if float_keys else int)
    vals = values_for(monoid_cls, ints, floats, float_keys=float_akeys)
    return st.one_of(
        st.tuples(st.just("insert"), key, vals),                       # anywhere: out of order, equal keys
        st.tuples(st.just("append"), st.integers(1, 3), vals),         # in order, after the newest
        st.tuples(st.just("append"), st.integers(1, 3), vals),
        st.tuples(st.just("evict"), key, st.none()),
        st.tuples(st.just("evict_oldest"), st.none(), st.none()),
        st.tuples(st.just("evict_upto"), st.integers(-1, 70).map(float if float_keys else int), st.none()),
        st.tuples(st.just("range"), key, key),
        st.tuples(st.just("search"), st.integers(0, 12), st.none()),
        st.tuples(st.just("snapshot"), st.none(), st.none()),
        st.tuples(st.just("restore"), st.none(), st.none()),
        st.tuples(st.just("clear"), st.none(), st.none()),
        st.tuples(st.just("copy"), st.none(), st.none()),
        # what the typed tree cannot hold: the other kind of value or key, ints beyond int64, -0.0 keys
        # (ArgMin, ArgMax: a key of the other kind in the partial; Variance: an int beyond 2**25)
        st.tuples(st.just("foreign"), key, st.sampled_from(["float", "int", "huge", "key", "negzero", "akey", "var"])),
    )


def foreign(kind: str, key, monoid_cls, ints: bool, float_akeys: bool = False):
    """An entry of ``kind`` that the tree may not hold (the other kind in a non-empty tree...)."""
    value = {"float": 0.25, "int": 3, "huge": 2**64, "var": 2**25 + 1}.get(kind, 5 if ints else 0.5)
    if monoid_cls is Count:
        value = {"float": 1.0, "huge": 2**64}.get(kind, 1)
    if monoid_cls in PAIRS:
        value = (value, 1)
    elif monoid_cls in (Variance, StdDev):
        value = (1, value, 0)
    elif monoid_cls in ARGS:
        value = (value, (2 if float_akeys else 2.0) if kind == "akey" else (2.0 if float_akeys else 2))
    if kind == "key":
        key = int(key) if type(key) is float else float(key)
    elif kind == "negzero":
        key = -0.0
    return key, value


def searching(calls: list, limit: int):
    """A prefix predicate that records what it was asked (both trees must ask the same)."""
    def pred(agg) -> bool:
        calls.append(agg)
        return len(calls) <= limit
    return pred


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("monoid_cls", MONOIDS, ids=lambda c: c.__name__)
@hsettings(max_examples=150)
@given(data=st.data())
def test_matches_object_fiba(path, monoid_cls, data):
    ints = data.draw(st.booleans(), "int values")
    float_keys = data.draw(st.booleans(), "float keys")
    min_arity = data.draw(st.sampled_from([2, 3, 4, 16]), "min_arity")
    floats = data.draw(st.sampled_from(PALETTES), "float values")
    float_akeys = data.draw(st.booleans(), "float keys in ArgMin / ArgMax partials")
    monoid = monoid_cls()
    tree = TWINS[path].TypedFiBA(monoid, min_arity=min_arity)
    ref = FiBA(monoid, min_arity=min_arity)
    entries: dict = {}
    saved = None
    demoted = False

    def act(call):
        """``call(tree)``; on Untyped (nothing changed) the tree demotes and it goes on."""
        nonlocal tree, demoted
        before = dump(tree)
        try:
            return call(tree)
        except Untyped:
            assert not demoted, "the object FiBA raised Untyped"
            assert identical(dump(tree), before), "Untyped after a change"
            tree, demoted = tree.to_object(), True
            assert type(tree) is FiBA
            assert_same(tree, ref)
            return call(tree)

    for op, a, b in data.draw(st.lists(ops(monoid_cls, ints, float_keys, floats, float_akeys), max_size=150)):
        if op == "insert" or op == "append" or op == "foreign":
            if op == "append":
                newest = ref.newest()
                a = (newest[0] if newest else 0) + a
            elif op == "foreign":
                a, b = foreign(b, a, monoid_cls, ints, float_akeys)
            assert act(lambda t: t.insert(a, b)) == ref.insert(a, b)
            entries[a] = monoid.combine(entries[a], b) if a in entries else b
        elif op == "evict":
            assert act(lambda t: t.evict(a)) == ref.evict(a)
            entries.pop(a, None)
        elif op == "evict_oldest":
            oldest = ref.oldest()
            if oldest is not None:
                assert tree.evict(oldest[0]) and ref.evict(oldest[0])
                del entries[oldest[0]]
        elif op == "evict_upto":
            assert act(lambda t: t.evict_upto(a)) == ref.evict_upto(a)
            entries = {k: v for k, v in entries.items() if not k <= a}
        elif op == "range":
            low, high = a, b
            assert identical(act(lambda t: t.query_range(low, high)), ref.query_range(low, high))
            assert identical(act(lambda t: t.entries(low, high)), ref.entries(low, high))
            inside = {k: v for k, v in entries.items() if low <= k <= high}
            if exact(inside, monoid_cls):
                assert tree.query_range(low, high) == naive(inside, monoid)
        elif op == "search":
            calls, ref_calls = [], []
            assert identical(tree.search(searching(calls, a)), ref.search(searching(ref_calls, a)))
            assert identical(calls, ref_calls)
        elif op == "snapshot":
            saved = (tree.snapshot(), ref.snapshot(), dict(entries))
        elif op == "restore" and saved is not None:
            tree.restore(saved[0])
            ref.restore(saved[1])
            entries = dict(saved[2])
            tree.end_hold()
            ref.end_hold()
            saved = None
        elif op == "clear":
            tree.clear()
            ref.clear()
            entries = {}
        elif op == "copy" and not demoted:
            tree = copy.deepcopy(tree)
            saved = None  # the copy has its own journal
            ref.end_hold()
            tree.end_hold()
        assert_same(tree, ref)
        if exact(entries, monoid_cls):
            assert tree.query() == naive(entries, monoid)
        if not demoted:
            assert identical(tree.result(), monoid.lower(ref.query()))
        assert len(tree) == len(entries)
    if exact(entries, monoid_cls):  # FiBA.check recomputes every aggregate in its own order
        tree.check()


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("monoid_cls", MONOIDS, ids=lambda c: c.__name__)
@hsettings(max_examples=40)
@given(data=st.data())
def test_sliding_window_use(path, monoid_cls, data):
    """As a window uses it: mostly in-order inserts and evictions of the oldest (the
    fingers' fast paths, the left finger's suffix folds), some late inserts at distance d
    and bulk evictions, 400 steps from a drawn seed; the query after every step, and the
    tree node for node at the end."""
    monoid = monoid_cls()
    min_arity = data.draw(st.sampled_from([2, 2, 3, 4]), "min_arity")
    ints = data.draw(st.booleans(), "int values")
    palette = data.draw(st.sampled_from(PALETTES), "float values")
    rnd = random.Random(data.draw(st.integers(0, 2**32), "seed"))

    def value():
        if monoid_cls is Count:
            return rnd.randint(1, 3)
        span = 3 if monoid_cls in (MinCount, MaxCount, ArgMin, ArgMax) else 10**6  # small ints tie
        v = rnd.randint(-span, span) if ints else rnd.choice(palette)
        if monoid_cls in ARGS:
            return (v, rnd.randint(0, 9))
        return (v, 1) if monoid_cls in PAIRS else monoid.lift(v)

    tree = TWINS[path].TypedFiBA(monoid, min_arity=min_arity)
    ref = FiBA(monoid, min_arity=min_arity)
    newest = 0
    for _ in range(400):
        r = rnd.random()
        if r < 0.55:
            key = newest = newest + 1
            if r < 0.05:  # late, d back
                key -= rnd.randint(1, 40)
            v = value()
            assert tree.insert(key, v) == ref.insert(key, v)
        elif r < 0.97:
            if len(ref):
                key = ref.oldest()[0]
                assert tree.evict(key) and ref.evict(key)
        else:
            bound = newest - rnd.randint(0, 60)
            assert tree.evict_upto(bound) == ref.evict_upto(bound)
        assert identical(tree.query(), ref.query()), (tree.query(), ref.query())
        assert len(tree) == len(ref)
    assert_same(tree, ref)


@pytest.mark.parametrize("monoid_cls", MONOIDS, ids=lambda c: c.__name__)
@hsettings(max_examples=25)
@given(data=st.data())
def test_state_crosses_paths(monoid_cls, data):
    """A tree's state (what pickle and deepcopy carry) loads on either path, and its
    to_object() is the object FiBA node for node; pickling round-trips as imported."""
    monoid = monoid_cls()
    vals = data.draw(st.lists(st.tuples(st.integers(0, 200), values_for(monoid_cls, data.draw(st.booleans()))),
                              max_size=120))
    for source, target in (("imported", "pure"), ("pure", "imported")):
        tree = TWINS[source].TypedFiBA(monoid, min_arity=3)
        ref = FiBA(monoid, min_arity=3)
        for key, value in vals:
            try:
                tree.insert(key, value)
            except Untyped:  # mixed kinds: the object takes them
                tree = tree.to_object()
            ref.insert(key, value)
        if isinstance(tree, FiBA):
            continue
        ref.evict_upto(50)
        tree.evict_upto(50)
        cls, args = tree.__reduce__()
        moved = TWINS[target]._unpickled(TWINS[target].TypedFiBA, *args[1:])
        assert_same(moved, ref)
        assert_same(tree.to_object(), ref)
        if source == "imported":
            assert_same(pickle.loads(pickle.dumps(tree)), ref)
        if vals:  # and goes on as FiBA
            last = vals[-1][1]  # of the tree's kinds
            if monoid_cls in (Sum, Mean):  # a small one: within the INT bound
                small = 1 if type(last[0] if monoid_cls in PAIRS else last) is int else 0.5
                last = (small, 1) if monoid_cls in PAIRS else small
            for t in (moved, ref):
                t.insert(300, last)
                t.evict_upto(100)
            assert_same(moved, ref)


@pytest.mark.parametrize("path", list(TWINS))
def test_bulk_evictions_of_a_large_tree(path):
    """Long in-order runs with bulk evictions of every size (the cut along a boundary at
    every height) and out-of-order inserts at distance d, floats against FiBA."""
    monoid = Sum()
    tree, ref = TWINS[path].TypedFiBA(monoid, min_arity=4), FiBA(monoid, min_arity=4)
    key = 0
    for round_ in range(12):
        for _ in range(400):
            key += 1
            value = FLOATS[(key * 7) % len(FLOATS)]
            tree.insert(key, value)
            ref.insert(key, value)
            if key % 5 == 0:  # out of order, d back
                d = (key * 13) % 97
                tree.insert(max(key - d, 1), 1e-3)
                ref.insert(max(key - d, 1), 1e-3)
        bound = key - (round_ * 37) % 300
        assert tree.evict_upto(bound) == ref.evict_upto(bound)
        assert_same(tree, ref)
    assert tree.evict_upto(key) == ref.evict_upto(key)  # everything
    assert_same(tree, ref)
    assert len(tree) == 0 and tree.query() == 0 and type(tree.query()) is int


@pytest.mark.parametrize("path", list(TWINS))
def test_refusals_change_nothing(path):
    """Untyped for what no column holds, before any change; the INT bound counts |v|."""
    mod = TWINS[path]
    tree = mod.TypedFiBA(Sum(), min_arity=2)
    for k in range(10):
        tree.insert(k, 2**59)
    before = dump(tree)
    for key, value in [(11, 2**62), (11, 0.5), (1.5, 1), (11, 2**63), (True, 1), (11, True), (11, float("nan")),
                       (2**63, 1)]:
        with pytest.raises(Untyped):
            tree.insert(key, value)
        assert identical(dump(tree), before)
    with pytest.raises(Untyped):
        tree.evict(1.0)  # a lookup of the other kind
    tree.evict_upto(6)  # frees room under the bound: |v| of the evicted left the sum
    tree.insert(11, 2**62)
    tree.check()
    with pytest.raises(ValueError):
        mod.TypedFiBA(Sum(), min_arity=17)
    with pytest.raises(TypeError, match="ArgMin and ArgMax, not GeometricMean"):
        from mta import GeometricMean
        mod.TypedFiBA(GeometricMean())
    with pytest.raises(Untyped):
        mod.TypedFiBA(Count()).insert(1, 1.0)


#: Partials each tree (of ints, int keys) refuses: no column holds them, or not as the
#: object tree would give them back.
REFUSED = {
    First: [None, "x", True, 2**63, 0.5, ()],
    Last: [None, (1,), False, -2**63 - 1, 1.5],
    Variance: [(1, 2**25 + 1, 0), (1, -2**25 - 1, 0), (1, 1.5, 0), (1, 3, 0.0), (1, 3, 1), (0, 0.0, 0.0),
               (2, 1, 0.5), (2, 1.0, 0), (1, True, 0), (True, 1, 0), (2**32, 1.0, 1.0), (1, 3), [1, 3, 0], None],
    ArgMin: [None, (1, 1.5), (1.5, 1), (float("nan"), 1), (1, "k"), (1, True), (True, 1), (1, 2**63), (2**63, 1),
             (1, None), [1, 1], (1, 1, 1)],
}
REFUSED[StdDev] = REFUSED[Variance]
REFUSED[ArgMax] = REFUSED[ArgMin]


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("monoid_cls", list(REFUSED), ids=lambda c: c.__name__)
def test_wide_refusals_change_nothing(path, monoid_cls):
    """First, Last, Variance, StdDev, ArgMin, ArgMax: Untyped before any change, in insert
    and accepts; the tree then goes on (and demotes to the object FiBA, which takes them)."""
    monoid = monoid_cls()
    tree = TWINS[path].TypedFiBA(monoid, min_arity=2)
    ref = FiBA(monoid, min_arity=2)
    for k in range(12):
        v = (k * 5) % 7 - 3
        p = (v, k) if monoid_cls in ARGS else monoid.lift(v)
        tree.insert(k * 2, p)
        ref.insert(k * 2, p)
    before = dump(tree)
    for bad in REFUSED[monoid_cls]:
        with pytest.raises(Untyped):
            tree.insert(5, bad)
        assert identical(dump(tree), before)
        assert not tree.accepts([bad])
        assert not tree.accepts([tree.oldest()[1], bad])
    assert tree.accepts([tree.oldest()[1], tree.newest()[1]])
    assert_same(tree, ref)
    obj = tree.to_object()
    for t in (obj, ref):  # the object FiBA takes what it is given
        t.insert(5, REFUSED[monoid_cls][0])
    assert_same(obj, ref)


@pytest.mark.parametrize("path", list(TWINS))
def test_variance_int_bound_and_kinds(path):
    """Variance of ints: up to 2**25 in magnitude typed and bit for bit the object's (deltas
    of 2**26 squared: 2**52), count-1 partials given back as lifted (an int mean, M2 the
    int 0); an empty tree takes either kind again (by its first lifted partial); a merged
    partial fits either kind."""
    mod = TWINS[path]
    for monoid in (Variance(), StdDev(ddof=1)):
        tree, ref = mod.TypedFiBA(monoid, min_arity=2), FiBA(monoid, min_arity=2)
        for k, v in enumerate([2**25, -2**25, 2**25 - 1, 3, -2**25 + 1, 2**25, 0, -7] * 5):
            key = (k * 11) % 40
            assert tree.insert(key, monoid.lift(v)) == ref.insert(key, monoid.lift(v))
            assert_same(tree, ref)
            assert identical(tree.result(), monoid.lower(ref.query()))
        assert tree.oldest() == ref.oldest() and type(tree.oldest()[1][1]) is type(ref.oldest()[1][1])
        tree.evict_upto(100)
        ref.evict_upto(100)
        assert_same(tree, ref)
        assert tree.result() is None and identical(tree.query(), (0, 0.0, 0.0))
        for t in (tree, ref):  # a float tree now (a merged partial first would keep the kind)
            t.insert(2, monoid.lift(0.25))
            t.insert(1, (2, 1.0, 0.5))
            t.insert(0, monoid.lift(-0.0))
        assert_same(tree, ref)
        with pytest.raises(Untyped):
            tree.insert(3, monoid.lift(1))


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("monoid_cls", [First, Last], ids=lambda c: c.__name__)
def test_first_last_hold_any_float(path, monoid_cls):
    """First and Last never compare values: NaN, infinities and -0.0 stay typed and come
    back bit for bit; inserts between entries (out of order) and at equal keys select as
    the object FiBA does; an empty tree's result is None, its query the private identity."""
    monoid = monoid_cls()
    tree, ref = TWINS[path].TypedFiBA(monoid, min_arity=2), FiBA(monoid, min_arity=2)
    assert tree.result() is None and tree.query() is monoid.identity
    nan = struct.unpack("d", struct.pack("Q", 0x7FF8_0000_0000_0bad))[0]
    for k, v in enumerate([nan, -0.0, math.inf, 0.0, -math.inf, 1.5] * 4):
        key = (k * 7) % 19
        assert tree.insert(key, v) == ref.insert(key, v)
        assert_same(tree, ref)
        assert identical(tree.query_range(3, 12), ref.query_range(3, 12))
    tree.evict_upto(30)
    assert tree.query() is monoid.identity and tree.query_range(0, 5) is monoid.identity


#: Primary parts of pair keys: floats of any span (relative and epoch seconds, subnormals,
#: huge, negative, equal neighbours) or ints up to the int64 limits.
PAIR_FLOATS = [-1e300, -7.5e15, -1.0, -5e-324, 0.0, 5e-324, 1e-300, 0.5, 100.0, 100.5, 1.7e9, 1.7e9 + 0.25, 2.0 ** 53,
               1e300, math.inf, -math.inf]
PAIR_INTS = [-2**63, -2**63 + 1, -2**40, -1, 0, 1, 2**34, 2**53 + 1, 2**63 - 2, 2**63 - 1]


def pair_ops(monoid_cls, ints: bool, float_keys: bool):
    primary = st.sampled_from(PAIR_FLOATS if float_keys else PAIR_INTS)
    key = st.tuples(primary, st.one_of(st.integers(0, 5), st.sampled_from([-1, 2**63 - 1, -2**63])))
    vals = values_for(monoid_cls, ints, big=False)  # (the INT bound: test_matches_object_fiba)
    return st.one_of(
        st.tuples(st.just("insert"), key, vals),
        st.tuples(st.just("insert"), key, vals),
        st.tuples(st.just("arrays"), st.lists(primary, max_size=6), st.integers(0, 2**62)),
        st.tuples(st.just("evict"), key, st.none()),
        st.tuples(st.just("evict_upto"), key, st.none()),
        st.tuples(st.just("range"), key, key),
        st.tuples(st.just("key_at"), st.integers(0, 20), st.none()),
        st.tuples(st.just("snapshot"), st.none(), st.none()),
        st.tuples(st.just("restore"), st.none(), st.none()),
        st.tuples(st.just("copy"), st.none(), st.none()),
        st.tuples(st.just("foreign"), primary, st.sampled_from([(1.5,), (2**64,), (-0.0,), None])),
    )


@pytest.mark.parametrize("path", list(TWINS))
@pytest.mark.parametrize("monoid_cls", MONOIDS, ids=lambda c: c.__name__)
@hsettings(max_examples=80)
@given(data=st.data())
def test_pair_keys_match_object_fiba(path, monoid_cls, data):
    """Pair keys ``(primary, int)`` (the out-of-order window's ``(timestamp, arrival)``), the
    primary a float of any span or an int near the int64 limits: every result and the whole
    tree are those of the object FiBA on the same tuple keys; a key it cannot hold raises
    Untyped and changes nothing; ``insert_arrays`` is ``insert`` one by one (or Untyped,
    nothing changed)."""
    ints = data.draw(st.booleans(), "int values")
    float_keys = data.draw(st.booleans(), "float keys")
    min_arity = data.draw(st.sampled_from([2, 3, 16]), "min_arity")
    monoid = monoid_cls()
    tree = TWINS[path].TypedFiBA(monoid, min_arity=min_arity, pairs=True)
    ref = FiBA(monoid, min_arity=min_arity)
    entries: dict = {}
    saved = None
    for op, a, b in data.draw(st.lists(pair_ops(monoid_cls, ints, float_keys), max_size=80)):
        if op == "insert":
            before = dump(tree)
            try:
                new = tree.insert(a, b)
            except Untyped:  # a partial of the other kind than the tree's (Variance: merged ones keep it)
                assert identical(dump(tree), before) and len(ref)
            else:
                assert new == ref.insert(a, b)
                entries[a] = monoid.combine(entries[a], b) if a in entries else b
        elif op == "arrays":
            stamps = np.array(a, dtype=np.float64 if float_keys else np.int64)
            column = [(j * 7) % 5 - 2 for j in range(len(a))]
            values = np.array(column, dtype=np.int64 if ints else np.float64)
            before = dump(tree)
            try:
                tree.insert_arrays(stamps, values, b)
            except Untyped:  # another monoid, or columns of another kind than a tree's entries
                assert identical(dump(tree), before)
                assert monoid_cls not in (Count, Sum, Min, Max, Mean) or len(ref)
            else:
                for j, (t, v) in enumerate(zip(stamps.tolist(), values.tolist())):
                    lifted, key = monoid.lift(v), (t, b + j)
                    ref.insert(key, lifted)
                    entries[key] = monoid.combine(entries[key], lifted) if key in entries else lifted
        elif op == "evict":
            assert tree.evict(a) == ref.evict(a)
            entries.pop(a, None)
        elif op == "evict_upto":
            assert tree.evict_upto(a) == ref.evict_upto(a)
            entries = {k: v for k, v in entries.items() if not k <= a}
        elif op == "range":
            assert identical(tree.query_range(a, b), ref.query_range(a, b))
            assert identical(tree.entries(a, b), ref.entries(a, b))
            inside = sorted(k for k in entries if a <= k <= b)
            assert identical(tree.count_range(a, b), (len(inside), inside[-1]) if inside else (0, None))
        elif op == "key_at":
            keys = sorted(entries)
            if a < len(keys):
                assert identical(tree.key_at(a), keys[a])
        elif op == "snapshot":
            saved = (tree.snapshot(), ref.snapshot(), dict(entries))
        elif op == "restore" and saved is not None:
            tree.restore(saved[0])
            ref.restore(saved[1])
            entries = dict(saved[2])
            tree.end_hold()
            ref.end_hold()
            saved = None
        elif op == "copy":
            tree = pickle.loads(pickle.dumps(tree)) if path == "imported" and len(entries) % 2 else copy.deepcopy(tree)
            saved = None
            ref.end_hold()
            tree.end_hold()
        elif op == "foreign":  # not a pair of a key and an int64: refused, nothing changed
            key = a if b is None else (b[0], 1) if b[0] == -0.0 else (a, b[0])
            before = dump(tree)
            with pytest.raises(Untyped):
                tree.insert(key, ref.oldest()[1] if len(ref) else 0)
            assert identical(dump(tree), before)
        assert_same(tree, ref)
        if exact(entries, monoid_cls):
            assert tree.query() == naive(entries, monoid)
