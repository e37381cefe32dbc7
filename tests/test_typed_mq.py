"""The typed multi-query aggregators (``mta.algorithms.typed_mq``) against their object twins.

Hypothesis sequences of inserts (ints, floats with -0.0, huge ints beyond int64 and near the
INT bound, the other kind), clears and queries run on a typed twin and on the object
aggregator it mirrors: after every step the answers are equal, ints exactly and floats bit
for bit (``.hex()``), and so are ``query(r)``, ``len`` and the errors. A partial the twin
refuses raises ``Untyped`` with its answers unchanged; the test then goes on with
``to_object()`` (the demotion), which must keep matching. Runs on both paths (the pure one
in scripts/test.sh).
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta import Stream
from mta.algorithms import MULTI_QUERY, MultiQueryAggregator, multi_query_aggregator, typed, typed_mq
from mta.algorithms.slickdeque import SlickDequeInv, SlickDequeNonInv
from mta.algorithms.slideside import InvertibleSlideSide, OverlaidSlideSide
from mta.algorithms.typed import Untyped
from mta.counting import CountingMonoid
from mta.monoid import (ArgMax, ArgMin, Collect, Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev,
                        Sum, Variance)
from mta.windows import Sliding
from test_multi_query import key, naive

#: twin, the object class it mirrors, the monoids it serves
PAIRS = {
    "slideside": (typed_mq.TypedSlideSide, InvertibleSlideSide, (Sum, Count, Mean, Variance, StdDev)),
    "slideside-overlaid": (typed_mq.TypedOverlaidSlideSide, OverlaidSlideSide,
                           (Min, Max, MinCount, MaxCount, First, Last, ArgMin, ArgMax)),
    # the fields of a Record mixing them with the above (a lone one gets "slideside")
    "slideside-overlaid-sums": (typed_mq.TypedOverlaidSlideSide, OverlaidSlideSide,
                                (Sum, Count, Mean, Variance, StdDev)),
    "slickdeque-noninv": (typed_mq.TypedSlickDeque, SlickDequeNonInv, (Min, Max, First, Last, ArgMin, ArgMax)),
    "slickdeque-inv": (typed_mq.TypedSlickDequeInv, SlickDequeInv, (Sum, Count, Mean, Variance, StdDev)),
}
CASES = [(pair, monoid) for pair, (_, _, monoids) in PAIRS.items() for monoid in monoids]

BIG = 2 ** 63
numbers = st.one_of(
    st.integers(-50, 50),
    st.sampled_from([BIG - 1, -BIG, BIG, -BIG - 1, 2 ** 62, -(2 ** 62), 2 ** 61, 2 ** 53 + 1, 10 ** 30]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.sampled_from([-0.0, 0.0, 1e308, -1e308, 0.1, 1e16, 5e-324, math.inf, -math.inf]),
    st.just(True),  # a bool: refused by every twin
)


#: the monoids whose partials are more than a number (``aux`` shapes them, :func:`partial_of`)
WIDE = (MinCount, MaxCount, First, Last, ArgMin, ArgMax)

#: what an insert of a wide monoid adds to its value: a count, a key (of any kind), or "id":
#: the monoid's identity (the shared final's empty partial)
auxes = st.one_of(st.just("id"), st.integers(-3, 3), st.floats(width=64),
                  st.sampled_from([-0.0, math.nan, 2 ** 70, "k", None, True]))


def partial_of(monoid: Any, value: Any, aux: Any = 1) -> Any:
    """The partial of ``value``: Mean's ``(value, 1)``; MinCount's ``(value, aux)`` for a
    count ``aux`` in 0..3 (else 1); ArgMin's ``(value, aux)``, ``aux`` the key; a wide
    monoid's identity for ``aux == "id"``."""
    if isinstance(monoid, Mean):
        return (value, 1)
    if isinstance(monoid, Variance):  # one value as lifted, or merged with 1 or 2 more (floats)
        if aux == "id":
            return monoid.identity
        p = (1, value, 0)
        for extra in range(aux if type(aux) is int and 2 <= aux <= 3 else 1, 1, -1):
            p = monoid.combine(p, (1, extra * 0.5, 0))
        return p
    if type(monoid) not in WIDE:
        return value
    if aux == "id":
        return monoid.identity
    if isinstance(monoid, (MinCount, MaxCount)):
        return (value, aux if type(aux) is int and 0 <= aux <= 3 else 1)
    if isinstance(monoid, (ArgMin, ArgMax)):
        return (value, aux)
    return value


def kinds(monoid: Any, value: Any, aux: Any) -> Any:
    """What decides a twin's kind: the value's type (ArgMin's: and the key's); None for an
    identity (it fits either)."""
    if aux == "id" and type(monoid) in WIDE:
        return None
    return (type(value), type(aux)) if isinstance(monoid, (ArgMin, ArgMax)) else type(value)


def lawful(monoid: Any, partial: Any) -> bool:
    """Whether the monoid's lift (or combine) makes ``partial``: then a fold in any order is
    the left fold (the wide monoids' combines are exactly associative on such partials; sums
    on ints only, Variance's never)."""
    if isinstance(monoid, (Sum, Count)):
        return type(partial) is int
    if isinstance(monoid, Mean):
        return type(partial[0]) is int
    if isinstance(monoid, Variance):
        return False
    if partial == monoid.identity or partial is monoid.identity:
        return True
    value = partial[0] if isinstance(monoid, (MinCount, MaxCount, ArgMin, ArgMax)) else partial
    if isinstance(monoid, (First, Last)):
        return True
    if type(value) not in (int, float) or value != value:
        return False
    return not isinstance(monoid, (MinCount, MaxCount)) or math.isfinite(value)


def has_nan(x: Any) -> bool:
    """Whether a partial holds a NaN (which ``==`` tells from an equal fold's)."""
    if isinstance(x, float):
        return x != x
    return isinstance(x, tuple) and any(map(has_nan, x))


def keys(xs: list) -> list:
    return [key(x) for x in xs]


@st.composite
def range_sets(draw: Any) -> list[int]:
    top = draw(st.sampled_from([1, 2, 3, 8, 17, 64]))
    ranges = draw(st.lists(st.integers(1, top), min_size=1, max_size=8))
    if draw(st.booleans()):
        ranges += ranges[: draw(st.integers(1, len(ranges)))]  # duplicates, unsorted
    return ranges


steps = st.lists(st.one_of(st.tuples(st.just("insert"), st.tuples(numbers, auxes)),
                           st.tuples(st.just("clear"), st.none()),
                           st.tuples(st.just("query"), st.integers(-1, 70))), max_size=120)


def query_or_error(agg: Any, r: Any) -> Any:
    try:
        return key(agg.query(r))
    except ValueError as error:
        return ("ValueError", str(error))


def same(twin: Any, obj: Any) -> None:
    assert keys(twin.answers()) == keys(obj.answers())
    assert len(twin) == len(obj)


@pytest.mark.parametrize("pair,make", CASES, ids=[f"{p}-{m.__name__}" for p, m in CASES])
@hsettings(max_examples=150)
@given(ranges=range_sets(), ops=steps, mixed=st.booleans())
def test_twin_matches_the_object_aggregator(pair, make, ranges, ops, mixed) -> None:
    """Every step on both; a refused partial leaves the twin unchanged, then demotes it.
    Without ``mixed`` the stream keeps to the kind of the first partial (no demotion from
    the other kind, so long typed runs are checked too)."""
    run_steps(pair, make, ranges, ops, mixed)


WIDE_CASES = [(pair, monoid) for pair, monoid in CASES if monoid in WIDE]
SELECTIONS = (Min, Max, First, Last, ArgMin, ArgMax)
#: the wide monoids and the other selections (Min, Max)
TIE_CASES = [(pair, monoid) for pair, monoid in CASES if monoid in WIDE or monoid in SELECTIONS]


def tied(make: type) -> Any:
    """Steps over few distinct values, so that ties (ArgMin keeps the oldest, MinCount adds
    counts and keeps the left value's sign, Alg. 3 keeps an older node equal to the new one:
    0.0 and -0.0) are the rule; NaN but for Min / Max (which the twins refuse), ±inf, and keys
    (signed zeros too) or the identity ("id")."""
    values = [0.0, -0.0, 1.0, 1.0, 2.0, math.inf, -math.inf] + ([] if make in (Min, Max) else [math.nan])
    insert = st.tuples(st.just("insert"), st.tuples(st.sampled_from(values),
                                                    st.sampled_from(["id", 0, 1, 2, 0.0, -0.0])))
    return st.lists(st.one_of(insert, insert, st.tuples(st.just("clear"), st.none())), max_size=80)


@pytest.mark.parametrize("pair,make", TIE_CASES, ids=[f"{p}-{m.__name__}" for p, m in TIE_CASES])
@hsettings(max_examples=150)
@given(ranges=range_sets(), data=st.data())
def test_twins_break_ties_as_the_object_aggregator(pair, make, ranges, data) -> None:
    """The wide and selection monoids over a few floats (signed zeros, ±inf, NaN where the monoid
    takes it) and keys: the object aggregator's answers and the naive fold's, bit for bit."""
    run_steps(pair, make, ranges, data.draw(tied(make)), False)


@pytest.mark.parametrize("cls", [SlickDequeNonInv, typed_mq.TypedSlickDeque])
@pytest.mark.parametrize("make,partials,expected", [
    (Last, [Last().identity, math.nan], [math.nan, math.nan]),  # nan != nan kept the empty node
    (First, [0.0, -0.0], [0.0, -0.0]),  # 0.0 == -0.0 popped the older 0.0
    (Min, [0.0, -0.0], [0.0, -0.0]),
    (Max, [-0.0, 0.0], [-0.0, 0.0]),
    (ArgMin, [(1.0, 0.0), (1.0, -0.0)], [(1.0, 0.0), (1.0, -0.0)]),
    (ArgMax, [(2, -0.0), (2, 0.0)], [(2, -0.0), (2, 0.0)]),
])
def test_alg3_pops_a_node_only_when_the_new_partial_is_selected(cls, make, partials, expected) -> None:
    """Alg. 3's printed domination test (``combine(back, new) == new``) answered the identity for
    Last over [empty, nan] and the newer signed zero of a tie: ranges 2 and 1 answer the fold."""
    agg = cls(make(), [2, 1])
    for p in partials:
        agg.insert(p)
    assert keys(agg.answers()) == keys(expected)
    assert keys([agg.query(2), agg.query(1)]) == keys(expected)
    assert keys(expected) == keys([naive(make(), partials, r) for r in (2, 1)])


def run_steps(pair: str, make: type, ranges: list, ops: list, mixed: bool) -> None:
    """The steps on the twin and the object aggregator (see the tests above)."""
    twin_cls, obj_cls, _ = PAIRS[pair]
    monoid = make()
    twin, obj = twin_cls(monoid, ranges), obj_cls(monoid, ranges)
    assert isinstance(twin, MultiQueryAggregator) and twin.name == obj.name and twin.any_range == obj.any_range
    assert (twin.ranges, twin.capacity) == (obj.ranges, obj.capacity)
    demoted = False
    first_kind = None
    held: list = []  # since clear, for the naive fold (wide monoids, lawful partials only)
    same(twin, obj)
    for op, arg in ops:
        if op == "clear":
            twin.clear()
            obj.clear()
            first_kind = None
            held = []
        elif op == "query":
            assert query_or_error(twin, arg) == query_or_error(obj, arg)
        else:
            arg, aux = arg
            identity = make in (Min, Max) and arg == monoid.identity  # kept in int columns too
            kind = kinds(monoid, arg, aux)
            if not mixed and type(arg) in (int, float) and not identity and kind is not None:
                first_kind = first_kind or kind
                if kind != first_kind:
                    continue
            p = partial_of(monoid, arg, aux)
            if held is not None:
                held = held + [p] if lawful(monoid, p) else None
            if not demoted:
                before = keys(twin.answers())
                fits = twin.fits(p)  # the Record twins' check: changes nothing, says what insert does
                assert keys(twin.answers()) == before
                try:
                    twin.insert(p)
                except Untyped:
                    assert not fits
                    assert keys(twin.answers()) == before  # nothing changed
                    twin = twin.to_object()
                    assert type(twin) is obj_cls
                    demoted = True
                    twin.insert(p)
                else:
                    assert fits
            else:
                twin.insert(p)
            obj.insert(p)
        same(twin, obj)
        r = obj.ranges[len(ops) % len(obj.ranges)]
        assert key(twin.query(r)) == key(obj.query(r))
        if (make in WIDE or make in SELECTIONS) and held is not None:
            expected = [naive(monoid, held, min(r, len(held))) for r in obj.ranges]
            # (SlideSide's suffix scan took Min / Max as commutative: a tie of 0.0 and -0.0
            # answered the newer sign)
            assert keys(obj.answers()) == keys(expected)
            assert keys(twin.answers()) == keys(obj.answers())


@pytest.mark.parametrize("pair,make", CASES, ids=[f"{p}-{m.__name__}" for p, m in CASES])
@hsettings(max_examples=60)
@given(ranges=range_sets(), values=st.lists(st.tuples(numbers, auxes), max_size=60), extra=st.tuples(numbers, auxes))
def test_to_object_hands_over_the_same_state(pair, make, ranges, values, extra) -> None:
    """``to_object()`` at any point, then the same inserts on it and on the object that saw
    everything: the same answers."""
    twin_cls, obj_cls, _ = PAIRS[pair]
    monoid = make()
    twin, obj = twin_cls(monoid, ranges), obj_cls(monoid, ranges)
    for v, aux in values:
        try:
            twin.insert(partial_of(monoid, v, aux))
        except Untyped:
            continue
        obj.insert(partial_of(monoid, v, aux))
    handed = twin.to_object()
    assert type(handed) is obj_cls
    same(handed, obj)
    for v, aux in (extra, *values[:5]):
        handed.insert(partial_of(monoid, v, aux))
        obj.insert(partial_of(monoid, v, aux))
        same(handed, obj)


NUMBER_CASES = [(pair, monoid) for pair, monoid in CASES if monoid not in (Variance, StdDev)]


@pytest.mark.parametrize("pair,make", NUMBER_CASES, ids=[f"{p}-{m.__name__}" for p, m in NUMBER_CASES])
def test_int_bound_and_kinds(pair, make) -> None:
    """The INT bound (SUM, MEAN: the sum of |v| held <= 2**63 - 1) refuses what could overflow
    int64, and takes it again once evictions make room; Min/Max take any int64."""
    twin_cls, _, _ = PAIRS[pair]
    monoid = make()
    twin = twin_cls(monoid, [2, 1])
    p = lambda v: partial_of(monoid, v)  # noqa: E731
    twin.insert(p(2 ** 62))
    twin.insert(p(2 ** 62 - 1))
    bounded = make in (Sum, Count, Mean)
    if bounded:
        with pytest.raises(Untyped):
            twin.insert(p(2 ** 62 + 1))  # with the 2**62 - 1 held: 2**63 - 1 + 1
        twin.insert(p(-(2 ** 62)))  # 2**62 leaves: exactly at the bound
        assert twin.answers() == ([(-1, 2), (-(2 ** 62), 1)] if make is Mean else [-1, -(2 ** 62)])
    else:  # any int64 but the one at the identity's end (see the next test)
        twin.insert(p(2 ** 63 - 1 if make is Max else 2 ** 63 - 2))
        twin.insert(p(-(2 ** 63) if make is Min else -(2 ** 63) + 1))
    for refused in (1.5, 2 ** 63, -(2 ** 63) - 1, True):
        with pytest.raises(Untyped):
            twin.insert(p(refused))
    twin.clear()
    if make is Count and twin_cls is typed_mq.TypedOverlaidSlideSide:  # Count's ints only (its fold)
        with pytest.raises(Untyped):
            twin.insert(p(1.5))
        return
    twin.insert(p(1.5))  # an empty twin takes either kind
    with pytest.raises(Untyped):
        twin.insert(p(1))
    if make is Mean:
        with pytest.raises(Untyped):
            twin.insert((1.0, 2 ** 32))


@pytest.mark.parametrize("pair", ["slideside-overlaid", "slickdeque-noninv"])
@pytest.mark.parametrize("make", [Min, Max])
def test_min_max_hold_their_identity_among_ints(pair, make) -> None:
    """Min's +inf (Max's -inf), which the shared final inserts for empty partials, stays typed
    in an int window (as the int64 at that end, an int partial equal to which is refused),
    and identities held before the first float become floats."""
    twin_cls, obj_cls, _ = PAIRS[pair]
    monoid = make()
    sentinel = 2 ** 63 - 1 if make is Min else -(2 ** 63)
    for tail in ([3, -2, 7], [1.5, 0.5]):
        twin, obj = twin_cls(monoid, [1, 2, 4]), obj_cls(monoid, [1, 2, 4])
        for p in [monoid.identity, monoid.identity, *tail, monoid.identity, tail[0], monoid.identity]:
            twin.insert(p)
            obj.insert(p)
            same(twin, obj)
            assert keys([twin.query(r) for r in (1, 2, 3, 4)]) == keys([obj.query(r) for r in (1, 2, 3, 4)])
        assert keys(twin.to_object().answers()) == keys(obj.answers())
        if type(tail[0]) is int:
            with pytest.raises(Untyped):
                twin.insert(sentinel)
            with pytest.raises(Untyped):
                twin.insert(-monoid.identity)
            same(twin, obj)


@pytest.mark.parametrize("pair,make", WIDE_CASES, ids=[f"{p}-{m.__name__}" for p, m in WIDE_CASES])
def test_wide_twins_refuse_what_they_cannot_hold(pair, make) -> None:
    """Huge ints, bools, strings, the other kind (ArgMin: of key too), NaN keys, MinCount's
    infinite values and counts beyond 2**32: Untyped, the answers unchanged; the object
    aggregator ``to_object`` gives takes each and matches one that saw everything."""
    twin_cls, obj_cls, _ = PAIRS[pair]
    monoid = make()
    good = [partial_of(monoid, 3, 1), partial_of(monoid, -2, 2), monoid.identity, partial_of(monoid, 3, 0)]
    bad = [partial_of(monoid, v, 1) for v in (2 ** 63, -(2 ** 63) - 1, True, 1.5)]
    if make in (First, Last):  # any value (the others compare theirs)
        bad += ["x", None, (1, 2)]
    if make in (ArgMin, ArgMax):
        bad += [(1, 1.5), (1, "k"), (1, None), (1, 2 ** 64), (1, True), (math.nan, 1)]
    if make in (MinCount, MaxCount):
        bad += [(1, 2 ** 32), (1, -1), (1, 1.0), (2 ** 63 - 1 if make is MinCount else -(2 ** 63), 1)]
    for p in bad:
        twin, obj = twin_cls(monoid, [1, 2, 4]), obj_cls(monoid, [1, 2, 4])
        for q in good:
            twin.insert(q)
            obj.insert(q)
        before = keys(twin.answers())
        with pytest.raises(Untyped):
            twin.insert(p)
        assert keys(twin.answers()) == before == keys(obj.answers())
        handed = twin.to_object()
        for q in (p, *good):
            handed.insert(q)
            obj.insert(q)
            same(handed, obj)
    if make in (MinCount, MaxCount):  # floats: the infinities are not lifted (inf is the identity's)
        twin = twin_cls(monoid, [2])
        twin.insert((1.5, 1))
        for p in ((math.inf, 1), (-math.inf, 1), (math.nan, 1), (-monoid.identity[0], 0)):
            with pytest.raises(Untyped):
                twin.insert(p)


@pytest.mark.parametrize("make", [Variance, StdDev])
@pytest.mark.parametrize("pair", ["slideside", "slickdeque-inv", "slideside-overlaid-sums"])
def test_variance_keeps_the_objects_ints_and_refuses_what_it_cannot_hold(pair, make) -> None:
    """Variance's partials keep their ints where the object's do (a lifted int's mean and M2,
    ``invert``'s one-value rest ``(1, mean, 0)`` and its rounding clamp to the int 0), int
    and float values mix, the identity is held; ints beyond 2**25, bools, other counts' int
    means, non-finite floats, a count-1 float M2: Untyped, nothing changed."""
    twin_cls, obj_cls, _ = PAIRS[pair]
    monoid = make(ddof=1)
    twin, obj = twin_cls(monoid, [1, 2, 3]), obj_cls(monoid, [1, 2, 3])
    values = [3, 2 ** 25, -(2 ** 25), 0.1, 1e16, 0.1, 7, monoid.identity, 0.5, -0.0, 3, 3, 3]
    for v in values:
        p = v if type(v) is tuple else monoid.lift(v)
        twin.insert(p)
        obj.insert(p)
        same(twin, obj)
        assert keys([monoid.lower(a) for a in twin.answers()]) == keys([monoid.lower(a) for a in obj.answers()])
    assert any(type(a[1]) is int for a in obj.answers())  # (1, 3, 0): a lifted int
    clamped = False  # invert's rest of [x, y, y] less x rounds below 0: M2 the int 0, count 2
    fresh, fresh_obj = twin_cls(monoid, [2, 3]), obj_cls(monoid, [2, 3])
    for v in (-5.240707458162173, 0.8845845059190367, 0.8845845059190367, monoid.identity):
        p = v if type(v) is tuple else monoid.lift(v)
        fresh.insert(p)
        fresh_obj.insert(p)
        same(fresh, fresh_obj)
        clamped = clamped or any(a[0] == 2 and type(a[2]) is int for a in fresh_obj.answers())
    assert clamped or obj_cls is OverlaidSlideSide  # (which never inverts)
    held = keys(twin.answers())
    for bad in [(1, 2 ** 25 + 1, 0), (1, True, 0), (1, 1.0, 0.0), (2, 1, 0.0), (2, 1.0, 1), (1, math.inf, 0),
                (2, math.nan, 0.0), (2, 1.0, math.inf), (0, -0.0, 0.0), (0, 0.0, 0), (2 ** 32, 1.0, 1.0), (1, 1.0),
                None, (True, 1.0, 0)]:
        with pytest.raises(Untyped):
            twin.insert(bad)
        assert keys(twin.answers()) == held
    handed = twin.to_object()
    for v in (2 ** 40, 1.5, 2):
        handed.insert(monoid.lift(v))
        obj.insert(monoid.lift(v))
        same(handed, obj)


@pytest.mark.parametrize("pair", list(PAIRS))
def test_ranges_are_checked_as_the_object_aggregator_does(pair) -> None:
    twin_cls, obj_cls, monoids = PAIRS[pair]
    monoid = monoids[0]()
    for bad in ([], [0], [2, -1], [1.0], "12", 3, [True]):
        with pytest.raises((TypeError, ValueError)) as expected:
            obj_cls(monoid, bad)
        with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
            twin_cls(monoid, bad)
    with pytest.raises(TypeError):
        twin_cls(Collect(), [1])
    with pytest.raises(TypeError):
        twin_cls(CountingMonoid(monoid), [1])


def test_the_factory_gives_a_twin_when_the_typed_cores_are_in_use(monkeypatch) -> None:
    monkeypatch.setattr(typed, "USE", True)
    for make in WIDE:
        assert type(multi_query_aggregator("slideside", make(), [3])) is typed_mq.TypedOverlaidSlideSide
    for make in (First, Last, ArgMin, ArgMax):
        assert type(multi_query_aggregator("slickdeque", make(), [3])) is typed_mq.TypedSlickDeque
    with pytest.raises(TypeError, match="neither"):  # the object aggregator's refusal: no twin
        multi_query_aggregator("slickdeque", MinCount(), [3])
    assert type(multi_query_aggregator("slideside", Sum(), [3])) is typed_mq.TypedSlideSide
    assert type(multi_query_aggregator("slickdeque", Min(), [3])) is typed_mq.TypedSlickDeque
    assert type(multi_query_aggregator("slickdeque", Mean(), [3])) is typed_mq.TypedSlickDequeInv
    assert type(multi_query_aggregator("slideside", Max(), [3])) is typed_mq.TypedOverlaidSlideSide
    assert type(multi_query_aggregator("flatfit", Sum(), [3])) is MULTI_QUERY["flatfit"]
    assert type(multi_query_aggregator("slideside", CountingMonoid(Sum()), [3])) is InvertibleSlideSide
    monkeypatch.setattr(typed, "USE", False)
    assert type(multi_query_aggregator("slideside", Sum(), [3])) is InvertibleSlideSide
    assert type(multi_query_aggregator("slideside", Sum(), [3], inverse=False)) is OverlaidSlideSide


@pytest.mark.parametrize("final,make", [("slideside", Sum), ("slideside", Mean), ("slideside", Min), ("slickdeque", Sum),
                                        ("slickdeque", Min), ("slickdeque", Mean)])
def test_shared_streams_demote_and_match_the_object_aggregators(monkeypatch, final, make) -> None:
    """``Stream(final="shared")`` with the twins (typed.USE) against the same stream with the
    object aggregators, bit for bit: ints, then floats, with gaps (an empty partial inserts
    the monoid's identity: Sum's int 0 into a FLOAT twin, Min's inf into an INT one), so the
    twins are demoted mid-stream."""
    from test_stream_shared import forced

    built = []
    real = multi_query_aggregator

    def spy(name, monoid, ranges, **how):
        agg = real(name, monoid, ranges, **how)
        built.append(agg)
        return agg

    monkeypatch.setattr("mta.stream.shared.multi_query_aggregator", spy)
    results = {}
    for use in (True, False):
        monkeypatch.setattr(typed, "USE", use)
        s = Stream(make(), final="shared", optimizer=forced("pairs", final))
        s.add("a", Sliding(8, 1))
        s.add("b", Sliding(20, 2))
        out = []
        for t in range(300):
            if t % 50 < 40:  # then a gap of 10: windows with empty partials
                s.insert(t, (t % 13) * 0.1 - 0.5 if t > 100 else t % 13)
            if t % 5 == 0:
                out += s.advance(t)
        out += s.advance(math.inf)
        results[use] = [(r.query, r.start, r.end, key(r.value), r.count) for r in out]
        held = {type(group.mq) for group in s.final.groups.values()}
        assert held and not any(cls.__name__.startswith("Typed") for cls in held)  # demoted (or never typed)
    assert results[True] == results[False] and len(results[False]) > 200
    twins = [agg for agg in built if type(agg).__name__.startswith("Typed")]
    assert twins and len(twins) < len(built)  # the typed run built twins, the object run none


@pytest.mark.parametrize("final,make,floats", [
    ("slideside", Max, False), ("slickdeque", Min, False), ("slideside", Sum, False),
    ("slideside", MinCount, False), ("slideside", MaxCount, True), ("slideside", First, True),
    ("slickdeque", Last, False), ("slickdeque", First, True), ("slideside", ArgMin, False), ("slickdeque", ArgMax, True),
    ("slickdeque", ArgMin, True), ("slideside", Last, False)])
def test_shared_streams_of_ints_stay_typed(monkeypatch, final, make, floats) -> None:
    """Ints (or floats) with gaps: the identities inserted for empty partials (Sum's 0, Min's
    +inf, Max's -inf, MinCount's (inf, 0), First's and Last's private empty, ArgMin's None)
    leave the twins typed to the end, with the object aggregators' results (ArgMin's
    values keyed by their timestamps). No Variance: the shared final never subtracts it
    (``shared.rounding_test``), so its twins are not built there."""
    from test_stream_shared import forced

    results = {}
    for use in (True, False):
        monkeypatch.setattr(typed, "USE", use)
        s = Stream(make(), final="shared", optimizer=forced("pairs", final))
        s.add("a", Sliding(8, 1))
        s.add("b", Sliding(20, 2))
        out = []
        for t in range(10, 300):
            if t % 50 < 35:
                v = (t % 17 - 8) * (0.5 if floats else 1)
                s.insert(t, (t, v) if make in (ArgMin, ArgMax) else v)
            if t % 5 == 0:
                out += s.advance(t)
        out += s.advance(math.inf)
        results[use] = [(r.query, r.start, r.end, key(r.value), r.count) for r in out]
        typed_groups = {type(g.mq).__name__.startswith("Typed") for g in s.final.groups.values()}
        assert typed_groups == {use}
    assert results[True] == results[False] and len(results[False]) > 200


def test_ranges_too_large_for_a_twin_get_the_object_aggregator():
    """A twin allocates its columns for the largest range up front (MemoryError at 2**40),
    where the object aggregator grows with what it holds."""
    agg = multi_query_aggregator("slickdeque", Min(), [3, typed_mq.MAX_CAPACITY + 1])
    assert type(agg) is MULTI_QUERY["slickdeque"](Min(), [1]).__class__
    agg.insert(4)
    agg.insert(2)
    assert agg.answers() == [2, 2]


@pytest.mark.parametrize("make", [Sum, Mean])
@pytest.mark.parametrize("pair", ["slickdeque-inv", "slideside", "slideside-overlaid-sums"])
@hsettings(max_examples=150)
@given(ranges=range_sets(), ops=st.lists(st.one_of(
    st.tuples(st.just("insert"), st.one_of(st.just(0), st.just(0), st.floats(allow_nan=False, width=64),
                                           st.sampled_from([-0.0, 0.0, 0.1, 1e16, -1e308]))),
    st.tuples(st.just("clear"), st.none())), max_size=120))
def test_a_float_sum_holds_the_int_identity_without_demoting(pair, make, ranges, ops) -> None:
    """Sum's int 0 (the shared final's empty partial; Mean's ``(0, 0)``) among floats, before
    them and after a clear: the slickdeque and slideside twins (the overlaid one too) stay typed, their answers the
    object's bit for bit (``0 + -0.0``, ``-0.0 - 0`` and the ints 0 of sums of zeros only
    included), and so are the answers of the object aggregator ``to_object`` hands on."""
    twin_cls, obj_cls, _ = PAIRS[pair]
    monoid = make()
    p = lambda v: monoid.identity if v == 0 and type(v) is int else partial_of(monoid, v)  # noqa: E731
    twin, obj = twin_cls(monoid, ranges), obj_cls(monoid, ranges)
    for op, arg in ops:
        if op == "clear":
            twin.clear()
            obj.clear()
        else:
            twin.insert(p(arg))  # never Untyped
            obj.insert(p(arg))
        same(twin, obj)
    handed = twin.to_object()
    for v in (0, 1.5, 0, -0.0, *[0] * max(ranges), 2.5):
        handed.insert(p(v))
        obj.insert(p(v))
        same(handed, obj)


def test_slideside_sums_of_zeros_across_a_wrap_are_the_int_0() -> None:
    """A float Sum's window made of int zeros only, the previous lap's newest two and this
    lap's first (suffix, then prefix): the int 0, on the twin and on the object aggregator
    it hands on, and a float again once a float is in it."""
    twin, obj = typed_mq.TypedSlideSide(Sum(), [1, 2, 3]), InvertibleSlideSide(Sum(), [1, 2, 3])
    for v in (1.5, 0, 0, 0):  # the lap [1.5, 0, 0], then the 0 that wraps it
        twin.insert(v)
        obj.insert(v)
    assert keys(twin.answers()) == keys(obj.answers()) == [("int", 0)] * 3
    handed = twin.to_object()
    assert keys(handed.answers()) == [("int", 0)] * 3
    for v in (0, -0.0, 0, 0, 0):
        handed.insert(v)
        obj.insert(v)
        twin.insert(v)
        same(handed, obj)
        same(twin, obj)
    assert keys(obj.answers()) == [("int", 0)] * 3


def test_the_int_identity_still_refuses_other_ints_in_a_float_sum() -> None:
    twin = typed_mq.TypedSlickDequeInv(Sum(), [2])
    twin.insert(0)
    twin.insert(-0.0)
    twin.insert(0)
    with pytest.raises(Untyped):
        twin.insert(3)
    assert keys(twin.answers()) == [("float", (0.0).hex())]
    twin.clear()
    twin.insert(3)
    with pytest.raises(Untyped):
        twin.insert(0.5)
    assert twin.answers() == [3]


def test_a_shared_float_sum_stays_typed_across_empty_stretches(monkeypatch) -> None:
    """Float sums with gaps (each empty partial inserts the int 0): the slickdeque twin demoted
    at the first gap; now it holds to the end, with the object aggregator's results."""
    from test_stream_shared import forced

    results = {}
    for use in (True, False):
        monkeypatch.setattr(typed, "USE", use)
        s = Stream(Sum(), final="shared", optimizer=forced("pairs", "slickdeque"))
        s.add("a", Sliding(8, 1))
        s.add("b", Sliding(20, 2))
        out = []
        for t in range(300):
            if t % 50 < 35:
                s.insert(t, (t % 13) * 0.1 - 0.5 if t % 7 else -0.0)
            if t % 5 == 0:
                out += s.advance(t)
        out += s.advance(math.inf)
        results[use] = [(r.query, r.start, r.end, key(r.value), r.count) for r in out]
        typed_groups = {type(g.mq).__name__.startswith("Typed") for g in s.final.groups.values()}
        assert typed_groups == {use}
    assert results[True] == results[False] and len(results[False]) > 200


# -- Records (TypedRecordSlideSide, TypedRecordSlickDeque) ---------------------------------

#: the fields a Record twin serves (invertible, each with a twin)
RECORD_FIELDS = (Count, Sum, Mean, Variance, StdDev)
RECORD_PAIRS = {"slideside": (typed_mq.TypedRecordSlideSide, InvertibleSlideSide),
                "slickdeque": (typed_mq.TypedRecordSlickDeque, SlickDequeInv)}

records = st.lists(st.sampled_from(RECORD_FIELDS), min_size=1, max_size=4).map(
    lambda makes: Record({f"f{k}": make() for k, make in enumerate(makes)}))
#: one field's partial replaced by something its twin refuses (and the object takes)
field_refusals = st.sampled_from([2 ** 63, 10 ** 30, 2 ** 40, True, 0.5, -0.0, 1e308])
record_steps = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.tuples(numbers, st.none())),
    st.tuples(st.just("insert"), st.tuples(st.integers(-9, 9), st.none())),
    st.tuples(st.just("refuse"), st.tuples(st.integers(-9, 9), field_refusals)),
    st.tuples(st.just("late"), st.tuples(st.integers(-9, 9), field_refusals)),
    st.tuples(st.just("identity"), st.none()),
    st.tuples(st.just("clear"), st.none()),
    st.tuples(st.just("query"), st.integers(-1, 70))), max_size=100)


def record_partial(monoid: Record, value: Any) -> tuple:
    """The Record partial of one value (a bool, or a float beyond a Variance field's reach,
    goes in as each field's raw partial: the object aggregators take them)."""
    return tuple(partial_of(m, value) if not isinstance(m, Count) else 1 for m in monoid.fields.values())


def state(agg: Any) -> dict:
    """An object aggregator's attributes, lists and tuples item by item, floats by ``hex()``."""
    def deep(x: Any) -> Any:
        return [deep(y) for y in x] if isinstance(x, list) else key(x)
    return {name: deep(value) for name, value in vars(agg).items()}


def loose_state(agg: Any) -> dict:
    """:func:`state` but SlickDequeInv's slots: a float Sum's twin holds the int 0 there as
    0.0, which only answers that take a float read (TypedSlickDequeInv's docstring)."""
    return {**state(agg), "_partials": None}


def record_insert(twin: Any, obj: Any, p: tuple, state_of: Any) -> Any:
    """``p`` into the object aggregator and into ``twin``, a Record twin or the object
    aggregator it demoted to; return the one that took it. A twin that refuses ``p`` raises
    Untyped with nothing changed (answers, ``len``, the state ``to_object`` hands over by
    ``state_of``) and demotes to an object aggregator of ``obj``'s class."""
    if not type(twin).__name__.startswith("Typed"):
        obj.insert(p)
        twin.insert(p)
        return twin
    before = keys(twin.answers()), len(twin), state_of(obj)
    obj.insert(p)
    try:
        twin.insert(p)
    except Untyped:
        assert (keys(twin.answers()), len(twin), state_of(twin.to_object())) == before
        twin = twin.to_object()
        assert type(twin) is type(obj)
        twin.insert(p)
    return twin


def exact_fields(monoid: Record, partials: list, r: int, answer: tuple) -> None:
    """The naive fold of the newest ``r`` of ``partials`` (all since clear), field by field,
    where it is exact: Count, Sum and Mean fields of ints only since clear (the invertible
    aggregators subtract what they added: ints in any order give the same int)."""
    for k, m in enumerate(monoid.fields.values()):
        column = [p[k] for p in partials]
        ints = [x[0] if isinstance(m, Mean) else x for x in column]
        if isinstance(m, (Count, Sum, Mean)) and all(type(x) is int for x in ints):
            assert answer[k] == naive(m, column, r)


@pytest.mark.parametrize("final", sorted(RECORD_PAIRS))
@hsettings(max_examples=150)
@given(monoid=records, ranges=range_sets(), ops=record_steps)
def test_record_twins_match_the_object_aggregator(final, monoid, ranges, ops) -> None:
    """A Record twin against the object aggregator over the Record, step by step: answers,
    ``query``, ``len`` and the state ``to_object`` hands over, bit for bit; a partial one
    field refuses raises Untyped with nothing changed, then the twin demotes and goes on
    equal. Int answers of Count, Sum and Mean fields equal the naive fold too."""
    cls, obj_cls = RECORD_PAIRS[final]
    assert typed_mq.twin(final, monoid, ranges) is cls
    twin, obj = cls(monoid, ranges), obj_cls(monoid, ranges)
    held: list = []
    for op, arg in ops:
        if op in ("insert", "refuse", "late", "identity"):
            if op == "identity":
                p = monoid.identity
            elif op == "late":  # floats in the middle fields (their checks may change kinds), then a refusal
                last = list(monoid.fields.values())[-1]
                refused = arg[1] if isinstance(last, Count) else partial_of(last, arg[1])
                p = (record_partial(monoid, arg[0])[:1] + record_partial(monoid, arg[0] + 0.5)[1:-1]
                     + (refused,))[-len(monoid.fields):]
            else:
                p = record_partial(monoid, arg[0])
                if op == "refuse":
                    k = arg[0] % len(p)
                    m = list(monoid.fields.values())[k]
                    p = p[:k] + (partial_of(m, arg[1]) if not isinstance(m, Count) else arg[1],) + p[k + 1:]
            twin = record_insert(twin, obj, p, loose_state)
            held.append(p)
        elif op == "clear":
            twin.clear()
            obj.clear()
            held = []
        else:
            assert query_or_error(twin, arg) == query_or_error(obj, arg)
        same(twin, obj)
        if type(twin) is cls:
            assert loose_state(twin.to_object()) == loose_state(obj)
        for r, answer in zip(twin.ranges, twin.answers()):
            exact_fields(monoid, held, min(r, len(twin)), answer)


def test_record_twins_are_built_for_invertible_fields_with_twins(monkeypatch) -> None:
    """The factory gives a Record twin where the object aggregator is InvertibleSlideSide or
    SlickDequeInv, or OverlaidSlideSide (fields mixing selections and sums too); a Record
    with a field without a twin, a subclass of Record, or another final gets the object
    aggregator, and SlickDeque refuses a mixed Record as it does without the twins."""
    monkeypatch.setattr(typed, "USE", True)
    mixed = Record(n=Count(), s=Sum(), m=Mean())
    assert type(multi_query_aggregator("slideside", mixed, [2, 5])) is typed_mq.TypedRecordSlideSide
    assert type(multi_query_aggregator("slickdeque", mixed, [2, 5])) is typed_mq.TypedRecordSlickDeque
    assert type(multi_query_aggregator("slideside", Record(v=Variance(), d=StdDev()), [3])) \
        is typed_mq.TypedRecordSlideSide
    selections = Record(a=Min(), f=First(), g=ArgMin())
    assert type(multi_query_aggregator("slideside", selections, [3])) is typed_mq.TypedRecordOverlaidSlideSide
    stats = Record(n=Count(), s=Sum(), lo=Min(), f=First())
    for monoid in (stats, Record(v=Variance(), x=Max()), Record(m=Mean(), d=StdDev(), a=ArgMax())):
        assert type(multi_query_aggregator("slideside", monoid, [3])) is typed_mq.TypedRecordOverlaidSlideSide
    assert type(multi_query_aggregator("slideside", Record(s=Sum(), x=Min(), c=Collect()), [3])) is OverlaidSlideSide
    for monoid in (selections, Record(v=Variance(), x=Max()), stats):
        with pytest.raises(TypeError, match="invertible"):
            multi_query_aggregator("slickdeque", monoid, [3])
    assert typed_mq.twin("slickdeque", stats, [3]) is None
    # SlideSide built with inverse=False (the shared final once it may not subtract): the overlaid twins
    sums = Record(n=Count(), s=Sum(), v=Variance())
    for monoid, cls in ((Sum(), typed_mq.TypedOverlaidSlideSide), (Variance(), typed_mq.TypedOverlaidSlideSide),
                        (Min(), typed_mq.TypedOverlaidSlideSide), (sums, typed_mq.TypedRecordOverlaidSlideSide),
                        (stats, typed_mq.TypedRecordOverlaidSlideSide)):
        assert type(multi_query_aggregator("slideside", monoid, [3], inverse=False)) is cls
        assert typed_mq.twin("slideside", monoid, [3], inverse=True) is (
            typed_mq.TypedSlideSide if monoid.invertible and type(monoid) is not Record else
            typed_mq.TypedRecordSlideSide if monoid.invertible else None)
    assert type(typed_mq.TypedRecordOverlaidSlideSide(sums, [3])) is typed_mq.TypedRecordOverlaidSlideSide
    assert typed_mq.twin("slickdeque", Sum(), [3], inverse=False) is None
    assert type(multi_query_aggregator("slideside", Record(s=Sum(), c=Collect()), [3], inverse=False)) \
        is OverlaidSlideSide
    with pytest.raises(TypeError, match="invertible"):
        multi_query_aggregator("slideside", stats, [3], inverse=True)
    assert type(multi_query_aggregator("slideside", Record(s=Sum(), c=Collect()), [3])) is InvertibleSlideSide

    class MyRecord(Record):
        pass

    assert type(multi_query_aggregator("slideside", MyRecord(s=Sum()), [3])) is InvertibleSlideSide
    assert type(multi_query_aggregator("flatfit", mixed, [3])) is MULTI_QUERY["flatfit"]
    assert typed_mq.twin("slideside", mixed, [typed_mq.MAX_CAPACITY + 1]) is None
    with pytest.raises(TypeError):
        typed_mq.TypedRecordSlideSide(Record(x=Max()), [3])


def test_a_record_partial_of_the_wrong_shape_is_untyped_with_nothing_changed() -> None:
    monoid = Record(n=Count(), s=Sum())
    for cls in (typed_mq.TypedRecordSlideSide, typed_mq.TypedRecordSlickDeque):
        twin = cls(monoid, [1, 3])
        twin.insert((1, 5))
        for bad in ((1,), (1, 2, 3), [1, 2], 7, (1, "x"), ("x", 2), (1, 2.5)):
            with pytest.raises(Untyped):
                twin.insert(bad)
            assert twin.answers() == [(1, 5), (1, 5)] and len(twin) == 1
        with pytest.raises(ValueError, match="ranges"):
            twin.query(4)


def test_a_refused_field_after_a_kind_change_leaves_the_other_fields_undecided() -> None:
    """A float in a Sum field of int zeros (whose check turns its twin to floats) beside a
    later field that refuses: the check is undone, so the twin still takes ints there."""
    monoid = Record(a=Sum(), b=Sum(), c=Sum())
    for cls, obj_cls in RECORD_PAIRS.values():
        twin, obj = cls(monoid, [2, 4]), obj_cls(monoid, [2, 4])
        for p in ((0, 0, 0), (0, 0, 0)):
            twin.insert(p)
            obj.insert(p)
        with pytest.raises(Untyped):
            twin.insert((1, 2.5, 2 ** 63))
        for p in ((3, 4, 5), (5, 6, 7)):
            twin.insert(p)  # Untyped if b's twin had kept the FLOAT kind of its check
            obj.insert(p)
            same(twin, obj)
        assert twin.answers() == [(8, 10, 12), (8, 10, 12)]
        assert all(type(x) is int for a in twin.answers() for x in a)


@pytest.mark.parametrize("final,fields,twin", [
    ("slideside", "nsm", typed_mq.TypedRecordSlideSide), ("slickdeque", "nsm", typed_mq.TypedRecordSlickDeque),
    ("slideside", "mfx", typed_mq.TypedRecordOverlaidSlideSide),
    ("slideside", "nslf", typed_mq.TypedRecordOverlaidSlideSide)])
def test_shared_streams_of_records_stay_typed(monkeypatch, final, fields, twin) -> None:
    """A Record of Count, Sum and Mean (or of Min, First and Max) over ints with gaps (the
    identity for empty partials) keeps its Record twin to the end, with the object
    aggregators' results; then floats (the shared final re-plans a subtracting group at a
    float: Rounding; the selections' twins demote) match too."""
    from test_stream_shared import forced

    monoid = {"nsm": Record(n=Count(), s=Sum(), m=Mean()), "mfx": Record(m=Min(), f=First(), x=Max()),
              "nslf": Record(n=Count(), s=Sum(), lo=Min(), f=First())}[fields]
    for floats in (False, True):
        results = {}
        for use in (True, False):
            monkeypatch.setattr(typed, "USE", use)
            s = Stream(monoid, final="shared", optimizer=forced("pairs", final))
            s.add("a", Sliding(8, 1))
            s.add("b", Sliding(20, 2))
            out = []
            for t in range(10, 300):
                if t % 50 < 35:
                    s.insert(t, (t % 17 - 8) * (0.5 if floats and t > 150 else 1))
                if t % 5 == 0:
                    out += s.advance(t)
            out += s.advance(math.inf)
            results[use] = [(r.query, r.start, r.end, key(tuple(r.value.values())), r.count) for r in out]
            kinds_held = {type(g.mq).__name__ for g in s.final.groups.values()}
            if use and not floats:
                assert kinds_held == {twin.__name__}
            if not use:
                assert not any(name.startswith("Typed") for name in kinds_held)
        assert results[True] == results[False] and len(results[False]) > 200


#: the fields an OverlaidSlideSide Record twin serves: the selections and MinCount/MaxCount,
#: and beside one of them the invertible fields (alone, those get InvertibleSlideSide's twin)
OVERLAID_FIELDS = (Min, Max, MinCount, MaxCount, First, Last, ArgMin, ArgMax)
SUM_FIELDS = (Count, Sum, Mean, Variance, StdDev)
#: the common "stats" Record, mixing them
STATS = (Count, Sum, Min, Max, Mean, Variance, First, ArgMin)
overlaid_records = st.one_of(
    st.lists(st.sampled_from(OVERLAID_FIELDS), min_size=1, max_size=4),
    st.tuples(st.lists(st.sampled_from(OVERLAID_FIELDS + SUM_FIELDS), max_size=4), st.sampled_from(OVERLAID_FIELDS),
              st.integers(0, 4)).map(lambda t: t[0][:t[2]] + [t[1]] + t[0][t[2]:]),
    st.just(list(STATS))).map(lambda makes: Record({f"f{k}": make() for k, make in enumerate(makes)}))
overlaid_steps = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.tuples(numbers, auxes)),
    st.tuples(st.just("insert"), st.tuples(st.sampled_from([0.0, -0.0, 1.0, 2.0, 0, 1, 0.1, 1e16, math.nan]),
                                           st.sampled_from(["id", 0, 1, 2, 0.0, -0.0]))),
    st.tuples(st.just("identity"), st.none()),  # the shared final's empty partial: Sum's int 0 among floats
    st.tuples(st.just("clear"), st.none()),
    st.tuples(st.just("query"), st.integers(-1, 70))), max_size=100)


def one_kind_steps(values: Any, keys_: Any) -> Any:
    """Steps of one kind of values (and of ArgMin keys), with identities: long typed runs."""
    return st.lists(st.one_of(
        st.tuples(st.just("insert"), st.tuples(values, keys_)),
        st.tuples(st.just("identity"), st.none()),
        st.tuples(st.just("clear"), st.none()),
        st.tuples(st.just("query"), st.integers(-1, 70))), min_size=20, max_size=100)


typed_runs = st.one_of(
    overlaid_steps,
    one_kind_steps(st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                             st.sampled_from([0.0, -0.0, 0.1, 1e16, 1.0, 2.0])), st.sampled_from(["id", 0.0, -0.0, 1.5])),
    one_kind_steps(st.integers(-50, 50), st.sampled_from(["id", 0, 1, 2])))


@hsettings(max_examples=200)
@given(monoid=overlaid_records, ranges=range_sets(), ops=typed_runs)
def test_overlaid_record_twins_match_the_object_aggregator(monoid, ranges, ops) -> None:
    """A Record of the selections and MinCount/MaxCount, and of them mixed with Count, Sum,
    Mean, Variance and StdDev, against the object OverlaidSlideSide over it, step by step
    (signed zeros tie: the scans combine in the Record's direction, older first unless
    every field is commutative; any range 1..capacity, between the levels too: the
    Record's fold; the identity's int zeros among float sums; NaN), bit for bit, and
    ``to_object``'s state; a partial a field refuses raises Untyped with nothing changed,
    then the twin demotes. Answers of partials the fields' lifts make (sums: of ints) equal
    the naive fold (``==``: zeros' signs aside)."""
    cls = typed_mq.TypedRecordOverlaidSlideSide
    assert typed_mq.twin("slideside", monoid, ranges) is cls
    twin, obj = cls(monoid, ranges), OverlaidSlideSide(monoid, ranges)
    held: list = []
    for op, arg in ops:
        if op in ("insert", "identity"):
            p = monoid.identity if op == "identity" else \
                tuple(1 if isinstance(m, Count) else partial_of(m, arg[0], arg[1]) for m in monoid.fields.values())
            twin = record_insert(twin, obj, p, state)
            held = (held + [p])[-twin.capacity:]
        elif op == "clear":
            twin.clear()
            obj.clear()
            held = []
        else:
            assert query_or_error(twin, arg) == query_or_error(obj, arg)
            if 0 < arg <= twin.capacity and not any(map(has_nan, held)) and all(
                    lawful(m, p[k]) for p in held for k, m in enumerate(monoid.fields.values())):
                assert twin.query(arg) == naive(monoid, held, min(arg, len(held)))
        same(twin, obj)
        if type(twin) is cls:
            assert state(twin.to_object()) == state(obj)


def test_a_shared_float_stats_record_stays_typed_across_empty_stretches(monkeypatch) -> None:
    """A Record mixing sums and selections over floats with gaps (each empty partial inserts
    the identity: Count's and Sum's int 0, Mean's ``(0, 0)``, Min's inf, First's empty,
    ArgMin's None) keeps its TypedRecordOverlaidSlideSide to the end, with the object
    aggregator's results bit for bit."""
    from test_stream_shared import forced

    monoid = Record(n=Count(), s=Sum(), lo=Min(), hi=Max(), m=Mean(), v=Variance(), f=First(), a=ArgMin())
    results = {}
    for use in (True, False):
        monkeypatch.setattr(typed, "USE", use)
        s = Stream(monoid, final="shared", optimizer=forced("pairs", "slideside"))
        s.add("a", Sliding(8, 1))
        s.add("b", Sliding(20, 2))
        s.add("c", Sliding(9, 3))
        out = []
        for t in range(10, 300):
            if t % 50 < 35:
                v = (t % 13) * 0.1 - 0.5 if t % 7 else -0.0
                s.insert(t, {"n": v, "s": v, "lo": v, "hi": v, "m": v, "v": v, "f": v, "a": (t, v)})
            if t % 5 == 0:
                out += s.advance(t)
        out += s.advance(math.inf)
        results[use] = [(r.query, r.start, r.end, key(tuple(r.value.values())), r.count) for r in out]
        held = {type(g.mq).__name__ for g in s.final.groups.values()}
        assert held == {"TypedRecordOverlaidSlideSide" if use else "OverlaidSlideSide"}
    assert results[True] == results[False] and len(results[False]) > 300


@pytest.mark.parametrize("monoid,twin", [
    (Sum(), "TypedOverlaidSlideSide"), (Mean(), "TypedOverlaidSlideSide"), (Variance(), "TypedOverlaidSlideSide"),
    (Record(n=Count(), s=Sum(), v=StdDev()), "TypedRecordOverlaidSlideSide")])
def test_a_shared_float_sum_replanned_to_combine_only_stays_typed(monkeypatch, monoid, twin) -> None:
    """Floats (with gaps: the identity's int zeros) make a subtracting SlideSide group re-plan
    (``Rounding``: Variance's at once) to SlideSide's overlaid variant, built with
    ``inverse=False``: its twin (TypedOverlaidSlideSide serves the sums too) holds to the
    end, with the object aggregator's results bit for bit."""
    from test_stream_shared import forced

    results = {}
    for use in (True, False):
        monkeypatch.setattr(typed, "USE", use)
        s = Stream(monoid, final="shared", optimizer=forced("pairs", "slideside"))
        s.add("a", Sliding(8, 1))
        s.add("b", Sliding(20, 2))
        out = []
        for t in range(10, 300):
            if t % 50 < 35:
                s.insert(t, (t % 13) * 0.1 - 0.5 if t % 7 else -0.0)
            if t % 5 == 0:
                out += s.advance(t)
        out += s.advance(math.inf)
        results[use] = [(r.query, r.start, r.end, key(r.value if type(monoid) is not Record
                                                          else tuple(r.value.values())), r.count) for r in out]
        assert not s.final.invert  # re-planned
        held = {type(g.mq).__name__ for g in s.final.groups.values()}
        assert held == {twin if use else "OverlaidSlideSide"}
    assert results[True] == results[False] and len(results[False]) > 200


def test_an_overlaid_count_takes_ints_only() -> None:
    """Count's fold (``acc + sum(rest)``, the object's answer to a range between the levels)
    adds floats in another order than the left fold: the overlaid Count twin refuses a float
    partial (Count's lift makes ints), nothing changed, and the object aggregator it demotes
    to answers as one that saw everything."""
    partials = [0.1, 0.7, 0.2, 0.3, 1e16, 0.9]
    obj = OverlaidSlideSide(Count(), [1, 16])
    for p in partials:
        obj.insert(p)
    rest = partials[-4:]
    assert obj.query(5) == Count().fold(partials[1], rest) != naive(Sum(), partials, 5)  # not the left fold
    twin = typed_mq.TypedOverlaidSlideSide(Count(), [1, 16])
    for p in (1, 1, 2):
        twin.insert(p)
    for bad in (0.5, -0.0, True):
        assert not twin.fits(bad)
        with pytest.raises(Untyped):
            twin.insert(bad)
        assert twin.answers() == [2, 4] and len(twin) == 3
    handed, reference = twin.to_object(), OverlaidSlideSide(Count(), [1, 16])
    for p in (1, 1, 2, *partials):
        reference.insert(p)
    for p in partials:
        handed.insert(p)
    assert keys([handed.query(r) for r in range(1, 17)]) == keys([reference.query(r) for r in range(1, 17)])


def test_overlaid_record_scans_keep_the_older_of_signed_zeros() -> None:
    """Min beside First (not commutative): SlideSide's scans combine older first, so a tie
    of 0.0 and -0.0 keeps the older, where the Min twin alone keeps the newer."""
    monoid = Record(m=Min(), f=First())
    twin, obj = typed_mq.TypedRecordOverlaidSlideSide(monoid, [3, 5]), OverlaidSlideSide(monoid, [3, 5])
    for v in (1.0, 0.0, -0.0, 0.0, -0.0, 5.0, 6.0, 0.0, -0.0):
        twin.insert((v, v))
        obj.insert((v, v))
        same(twin, obj)
        for r in range(1, 6):
            assert key(twin.query(r)) == key(obj.query(r))
