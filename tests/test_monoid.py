"""Laws and behaviour of the built-in monoids (mta.monoid)."""

from __future__ import annotations

import copy
import inspect
import math
import pickle
import statistics
from decimal import Decimal
from fractions import Fraction
from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mta import Window
from mta.monoid import (
    ArgMax, ArgMin, Collect, Count, First, GeometricMean, Last, Max, MaxCount, Mean,
    Min, MinCount, Monoid, MonoidError, Record, StdDev, Sum, Variance,
)

settings.register_profile("monoid", deadline=None)
settings.load_profile("monoid")


def fold(m: Monoid, values) -> object:
    """Left fold of the lifted values, starting from the identity."""
    return reduce(m.combine, map(m.lift, values), m.identity)


def fold_partials(m: Monoid, partials) -> object:
    return reduce(m.combine, partials, m.identity)


def close(a, b, rel=1e-9, abs_=1e-9) -> bool:
    """Component-wise isclose on numbers / nested tuples (exact for non-floats)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(close(x, y, rel, abs_) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return a == b


ints = st.integers(-1000, 1000)
small = st.integers(-3, 3)  # many ties
fracs = st.builds(Fraction, st.integers(-1000, 1000), st.integers(1, 12))
floats = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
positives = st.floats(1e-3, 1e6)
anything = st.one_of(st.none(), ints, st.text(max_size=3), st.tuples(ints))


def keyed(values):
    """(key, value) pairs with unique increasing keys, so the oldest is identifiable."""
    return st.lists(values, max_size=12).map(lambda vs: list(enumerate(vs)))


# monoid, strategy for a list of inputs, exact comparison?
CASES = [
    (Count(), st.lists(anything, max_size=12), True),
    (Sum(), st.lists(ints, max_size=12), True),
    (Sum(), st.lists(fracs, max_size=12), True),
    (Min(), st.lists(st.one_of(floats, ints, st.just(math.inf), st.just(-math.inf)), max_size=12), True),
    (Max(), st.lists(st.one_of(floats, ints, st.just(math.inf), st.just(-math.inf)), max_size=12), True),
    (Mean(), st.lists(ints, max_size=12), True),
    (Variance(), st.lists(fracs, max_size=12), True),
    (Variance(ddof=1), st.lists(fracs, max_size=12), True),
    (StdDev(), st.lists(fracs, max_size=12), True),
    (Variance(), st.lists(floats, max_size=12), False),
    (GeometricMean(), st.lists(positives, max_size=12), False),
    (ArgMin(), keyed(small), True),
    (ArgMax(), keyed(small), True),
    (MinCount(), st.lists(small, max_size=12), True),
    (MaxCount(), st.lists(small, max_size=12), True),
    (First(), st.lists(anything, max_size=12), True),
    (Last(), st.lists(anything, max_size=12), True),
    (Collect(), st.lists(anything, max_size=12), True),
    (Record(n=Count(), s=Sum(), hi=Max(), all=Collect(), first=First()),
     st.lists(ints, max_size=12), True),
]
CASE_IDS = [f"{m!r}-{i}" for i, (m, _, _) in enumerate(CASES)]


def _same(exact: bool, a, b) -> bool:
    return a == b if exact else close(a, b, rel=1e-7, abs_=1e-3)


@pytest.mark.parametrize("m,values,exact", CASES, ids=CASE_IDS)
def test_identity_is_neutral_on_both_sides(m, values, exact):
    @given(values)
    def check(xs):
        for p in [fold(m, xs), m.identity] + [m.lift(x) for x in xs[:3]]:
            assert m.combine(m.identity, p) == p
            assert m.combine(p, m.identity) == p

    check()


@pytest.mark.parametrize("m,values,exact", CASES, ids=CASE_IDS)
def test_combine_is_associative(m, values, exact):
    @given(values, values, values)
    def check(xs, ys, zs):
        a, b, c = fold(m, xs), fold(m, ys), fold(m, zs)
        left = m.combine(m.combine(a, b), c)
        right = m.combine(a, m.combine(b, c))
        assert _same(exact, left, right)
        # and the fold of the concatenation is the same partial
        assert _same(exact, left, fold(m, xs + ys + zs))

    check()


@pytest.mark.parametrize("m,values,exact", CASES, ids=CASE_IDS)
def test_combine_is_a_plain_function(m, values, exact):
    # The algorithms call combine millions of times: no bound method, no self.
    assert not inspect.ismethod(m.combine)
    assert callable(m.combine)


def test_min_max_combine_takes_no_self():
    assert Min.__dict__["combine"].__class__ is staticmethod
    assert Min.combine(3, 1) == 1 and Max.combine(3, 1) == 3
    assert Min.combine(2, 2.0).__class__ is int  # ties keep the left operand
    assert Max.combine(2, 2.0).__class__ is int


# --------------------------------------------------------------------- lower vs direct


@given(st.lists(anything, max_size=20))
def test_count_lower(xs):
    assert Count().lower(fold(Count(), xs)) == len(xs)


@given(st.lists(ints, max_size=20))
def test_sum_lower(xs):
    assert Sum().lower(fold(Sum(), xs)) == sum(xs)


@given(st.lists(st.one_of(floats, ints), max_size=20))
def test_min_max_lower(xs):
    assert Min().lower(fold(Min(), xs)) == (min(xs) if xs else math.inf)
    assert Max().lower(fold(Max(), xs)) == (max(xs) if xs else -math.inf)


@given(st.lists(fracs, max_size=20))
def test_mean_lower_exact_with_fractions(xs):
    got = Mean().lower(fold(Mean(), xs))
    assert got == (statistics.mean(xs) if xs else None)


@given(st.lists(floats, max_size=20))
def test_mean_lower_floats(xs):
    got = Mean().lower(fold(Mean(), xs))
    if not xs:
        assert got is None
    else:
        assert math.isclose(got, statistics.fmean(xs), rel_tol=1e-9, abs_tol=1e-6)


@given(st.lists(fracs, max_size=20))
def test_variance_lower_exact_with_fractions(xs):
    pop, sample = Variance(), Variance(ddof=1)
    assert pop.lower(fold(pop, xs)) == (statistics.pvariance(xs) if xs else None)
    assert sample.lower(fold(sample, xs)) == (statistics.variance(xs) if len(xs) > 1 else None)


@given(st.lists(floats, max_size=30))
def test_variance_and_stddev_lower_floats(xs):
    scale = max([1.0] + [abs(x) for x in xs])
    tol = 1e-9 * scale * scale
    for ddof, var_ref, sd_ref in [(0, statistics.pvariance, statistics.pstdev),
                                  (1, statistics.variance, statistics.stdev)]:
        v, s = Variance(ddof), StdDev(ddof)
        got_v, got_s = v.lower(fold(v, xs)), s.lower(fold(s, xs))
        if len(xs) <= ddof:
            assert got_v is None and got_s is None
        else:
            assert math.isclose(got_v, var_ref(xs), rel_tol=1e-7, abs_tol=tol)
            assert math.isclose(got_s, sd_ref(xs), rel_tol=1e-7, abs_tol=math.sqrt(tol))


def test_variance_is_numerically_stable_with_a_large_offset():
    xs = [1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16]
    # combine in a tree shape, as the algorithms do
    m = Variance()
    p = m.combine(m.combine(m.lift(xs[0]), m.lift(xs[1])), m.combine(m.lift(xs[2]), m.lift(xs[3])))
    assert m.lower(p) == pytest.approx(22.5, abs=1e-6)
    assert Variance(ddof=1).lower(p) == pytest.approx(30.0, abs=1e-6)
    assert StdDev().lower(p) == pytest.approx(math.sqrt(22.5), abs=1e-6)
    # the naive sum-of-squares formula loses everything here
    naive = sum(x * x for x in xs) / 4 - (sum(xs) / 4) ** 2
    assert abs(naive - 22.5) > 1


def test_variance_identity_and_small_windows():
    m = Variance()
    assert m.identity == (0, 0.0, 0.0)
    assert m.lower(m.identity) is None
    assert m.lower(m.lift(5)) == 0
    assert Variance(ddof=1).lower(Variance(ddof=1).lift(5)) is None
    assert StdDev(ddof=1).lower(fold(StdDev(ddof=1), [1, 3])) == pytest.approx(math.sqrt(2))
    assert repr(StdDev(ddof=1)) == "StdDev(ddof=1)"


@pytest.mark.parametrize("ddof", [2, -1, True, 0.0, "0", None])
def test_variance_rejects_bad_ddof(ddof):
    with pytest.raises(ValueError, match="ddof"):
        Variance(ddof)


@given(st.lists(positives, max_size=20))
def test_geometric_mean_lower(xs):
    got = GeometricMean().lower(fold(GeometricMean(), xs))
    if not xs:
        assert got is None
    else:
        assert math.isclose(got, statistics.geometric_mean(xs), rel_tol=1e-9)


def test_geometric_mean_does_not_overflow():
    xs = [1e300] * 10  # the running product would be inf
    assert GeometricMean().lower(fold(GeometricMean(), xs)) == pytest.approx(1e300, rel=1e-9)


@given(keyed(small))
def test_argmin_argmax_lower_keeps_the_oldest_extreme(pairs):
    for m, pick in [(ArgMin(), min), (ArgMax(), max)]:
        got = m.lower(fold(m, pairs))
        if not pairs:
            assert got is None
            continue
        best = pick(v for _, v in pairs)
        oldest = next(k for k, v in pairs if v == best)
        assert got == (oldest, best)


def test_argmin_keys_need_no_order_and_lists_are_accepted():
    m = ArgMax()
    p = fold(m, [("b", 1), [object(), 0], ({"k": 1}, 7)])
    assert m.lower(p) == ({"k": 1}, 7)
    assert m.lift(("t", 2.5)) == (2.5, "t")  # partial is (value, key)


@given(st.lists(small, max_size=20))
def test_mincount_maxcount_lower(xs):
    for m, pick in [(MinCount(), min), (MaxCount(), max)]:
        got = m.lower(fold(m, xs))
        if not xs:
            assert got is None
        else:
            best = pick(xs)
            assert got == (best, xs.count(best))


def test_mincount_identities():
    assert MinCount().identity == (math.inf, 0)
    assert MaxCount().identity == (-math.inf, 0)
    assert MinCount().lower(MinCount().identity) is None


@given(st.lists(anything, max_size=20))
def test_first_last_collect_lower(xs):
    assert First().lower(fold(First(), xs)) == (xs[0] if xs else None)
    assert Last().lower(fold(Last(), xs)) == (xs[-1] if xs else None)
    assert Collect().lower(fold(Collect(), xs)) == xs


def test_first_last_keep_none_as_a_value():
    f = First()
    p = fold(f, [None, 1, 2])
    assert p is None  # the partial is the value None, not the empty identity
    assert p != f.identity
    assert f.combine(p, f.lift(3)) is None
    assert Last().combine(Last().lift(1), Last().lift(None)) is None
    assert f.lower(f.identity) is None and repr(f.identity) == "<empty>"


def test_first_last_identity_survives_pickle_and_copy():
    e = First().identity
    assert pickle.loads(pickle.dumps(e)) is e
    assert copy.deepcopy(e) is e
    assert Last().identity is e
    with pytest.raises(MonoidError, match="First"):
        First().lift(e)


# --------------------------------------------------------------------- invert


INVERTIBLE = [
    (Count(), st.lists(anything, max_size=12), True),
    (Sum(), st.lists(ints, max_size=12), True),
    (Mean(), st.lists(ints, max_size=12), True),
    (Mean(), st.lists(fracs, max_size=12), True),
    (Variance(), st.lists(fracs, max_size=12), True),
    (Variance(ddof=1), st.lists(fracs, max_size=12), True),
    (StdDev(), st.lists(fracs, max_size=12), True),
    (Collect(), st.lists(anything, max_size=12), True),
    (Record(n=Count(), s=Sum(), m=Mean(), v=Variance()), st.lists(fracs, max_size=12), True),
    (Variance(), st.lists(floats, max_size=12), False),
    (GeometricMean(), st.lists(positives, max_size=12), False),
]


@pytest.mark.parametrize("m,values,exact", INVERTIBLE, ids=[repr(c[0]) for c in INVERTIBLE])
def test_invert(m, values, exact):
    assert m.invertible

    @given(values, values)
    def check(front_xs, back_xs):
        front, back = fold(m, front_xs), fold(m, back_xs)
        total = m.combine(front, back)
        rest = m.invert(total, front)
        assert _same(exact, m.combine(front, rest), total)
        assert _same(exact, rest, back)
        if exact:
            assert m.lower(rest) == m.lower(back)

    check()


def test_variance_invert_edge_cases():
    m = Variance()
    total = fold(m, [1, 2, 3])
    assert m.invert(total, total) == m.identity
    assert m.invert(total, m.identity) == total
    one = m.invert(total, fold(m, [1, 2]))
    assert one[0] == 1 and one[1] == pytest.approx(3) and one[2] == 0
    with pytest.raises(ValueError):
        m.invert(fold(m, [1]), total)


@given(st.lists(floats, min_size=2, max_size=40))
def test_variance_float_invert_never_negative(xs):
    m = Variance()
    total = fold(m, xs)
    for i in range(1, len(xs)):
        rest = m.invert(total, fold(m, xs[:i]))
        assert rest[0] == len(xs) - i
        assert rest[2] >= 0


@pytest.mark.parametrize("m", [Min(), Max(), ArgMin(), ArgMax(), MinCount(), MaxCount(),
                               First(), Last(), Record(s=Sum(), hi=Max())], ids=repr)
def test_non_invertible_monoids_refuse_invert(m):
    assert not m.invertible
    with pytest.raises(TypeError, match="not invertible"):
        m.invert(m.identity, m.identity)


# --------------------------------------------------------------------- flags / order


def test_non_commutative_monoids_depend_on_operand_order():
    c = Collect()
    assert c.combine(c.lift(1), c.lift(2)) == (1, 2)
    assert c.combine(c.lift(2), c.lift(1)) == (2, 1)
    assert First().combine(1, 2) == 1 and First().combine(2, 1) == 2
    assert Last().combine(1, 2) == 2 and Last().combine(2, 1) == 1
    # ArgMin / ArgMax: ties keep the oldest (left) operand
    for m in (ArgMin(), ArgMax()):
        a, b = m.lift(("old", 5)), m.lift(("new", 5))
        assert m.lower(m.combine(a, b)) == ("old", 5)
        assert m.lower(m.combine(b, a)) == ("new", 5)


@pytest.mark.parametrize("m,commutative,invertible,selection,ordered_ties", [
    (Count(), True, True, False, False), (Sum(), True, True, False, False),
    (Min(), True, False, True, True), (Max(), True, False, True, True),
    (Mean(), True, True, False, False), (Variance(), True, True, False, False),
    (StdDev(), True, True, False, False), (GeometricMean(), True, True, False, False),
    (ArgMin(), False, False, True, True), (ArgMax(), False, False, True, True),
    (MinCount(), True, False, False, True), (MaxCount(), True, False, False, True),
    (First(), False, False, True, True), (Last(), False, False, True, True),
    (Collect(), False, True, False, False),
], ids=repr)
def test_flags(m, commutative, invertible, selection, ordered_ties):
    assert (m.commutative, m.invertible, m.selection, m.ordered_ties) == (commutative, invertible, selection,
                                                                          ordered_ties)


def _bits(x: object) -> object:
    """``x`` bit for bit: floats by hex (the sign of zero), other types by name and value."""
    if isinstance(x, float):
        return x.hex()
    if isinstance(x, tuple):
        return tuple(map(_bits, x))
    return type(x).__name__, x


TIES = st.sampled_from([[0.0, -0.0], [2, 2.0, Fraction(2)]]).flatmap(
    lambda tie: st.tuples(st.lists(st.sampled_from(tie), min_size=1, max_size=4),
                          st.lists(st.sampled_from(tie), min_size=1, max_size=4)))


@pytest.mark.parametrize("m", [Count(), Sum(), Mean(), Variance(), Record(s=Sum(), n=Count(), v=Variance())],
                         ids=repr)
@given(xy=TIES)
def test_without_ordered_ties_equal_values_combine_alike_in_either_order(m, xy):
    """A commutative monoid without ``ordered_ties`` (FlatFAT reads a wrapped window's root for it):
    aggregates of equal-comparing values combine to the same bits in either order."""
    a, b = fold(m, xy[0]), fold(m, xy[1])
    assert _bits(m.combine(a, b)) == _bits(m.combine(b, a))


@pytest.mark.parametrize("m", [Min(), Max(), MinCount(), MaxCount(), Record(s=Sum(), lo=MinCount())], ids=repr)
def test_ordered_ties_keep_the_left_operands_value(m):
    a, b = m.lift(0.0), m.lift(-0.0)
    assert _bits(m.combine(a, b)) != _bits(m.combine(b, a))
    assert m.ordered_ties and m.commutative


@pytest.mark.parametrize("m,values", [
    (Min(), st.lists(floats, max_size=8)), (Max(), st.lists(floats, max_size=8)),
    (ArgMin(), keyed(small)), (ArgMax(), keyed(small)),
    (First(), st.lists(anything, max_size=8)), (Last(), st.lists(anything, max_size=8)),
], ids=lambda p: repr(p) if isinstance(p, Monoid) else "")
def test_selection_monoids_return_an_operand(m, values):
    @given(values, values)
    def check(xs, ys):
        a, b = fold(m, xs), fold(m, ys)
        r = m.combine(a, b)
        assert r is a or r is b

    check()


@pytest.mark.parametrize("m", [Sum(), Mean(), MinCount(), Variance(), GeometricMean()], ids=repr)
def test_commutative_monoids_commute(m):
    @given(st.lists(st.integers(1, 5), max_size=8), st.lists(st.integers(1, 5), max_size=8))
    def check(xs, ys):
        a, b = fold(m, xs), fold(m, ys)
        assert close(m.combine(a, b), m.combine(b, a))

    check()


# --------------------------------------------------------------------- bad inputs


NUMERIC = [Sum(), Min(), Max(), Mean(), Variance(), StdDev(), GeometricMean(),
           MinCount(), MaxCount()]
BAD = ["1", None, True, False, [1], (1,), 1 + 2j, Decimal("1"), float("nan"), object()]


@pytest.mark.parametrize("m", NUMERIC, ids=repr)
@pytest.mark.parametrize("bad", BAD, ids=lambda bad: "object()" if type(bad) is object else repr(bad))
def test_numeric_monoids_refuse_bad_values(m, bad):
    with pytest.raises(MonoidError) as info:
        m.lift(bad)
    msg = str(info.value)
    assert type(m).__name__ in msg
    assert repr(bad) in msg


@pytest.mark.parametrize("m", [Sum(), Mean(), Variance(), StdDev(), GeometricMean(),
                               MinCount(), MaxCount()], ids=repr)
@pytest.mark.parametrize("bad", [math.inf, -math.inf], ids=repr)
def test_infinity_refused_where_it_would_poison(m, bad):
    with pytest.raises(MonoidError, match=type(m).__name__):
        m.lift(bad)


def test_min_max_accept_infinity_and_fractions():
    assert Min().lift(math.inf) == math.inf
    assert Max().lift(-math.inf) == -math.inf
    assert Min().combine(Min().lift(Fraction(1, 3)), Min().lift(0.5)) == Fraction(1, 3)


def test_numpy_scalars():
    np = pytest.importorskip("numpy")
    assert Sum().lift(np.float64(1.5)) == 1.5
    assert Sum().lift(np.int32(3)) == 3
    for bad in (np.float32("nan"), np.float64("inf"), np.bool_(True)):
        with pytest.raises(MonoidError, match="Sum"):
            Sum().lift(bad)
    with pytest.raises(MonoidError, match="Max"):
        Max().lift(np.float32("nan"))


def test_other_reals_are_lifted_to_floats():
    """numpy's float32, float16 and longdouble become floats: mixed with a Fraction,
    longdouble raised from combine after the update was stored, and float32 summed in
    float32 or float64 by the order of the operands."""
    np = pytest.importorskip("numpy")
    for value in (np.float32(0.1), np.float16(0.5), np.longdouble(0.1)):
        for m in (Sum(), Min(), Max()):
            lifted = m.lift(value)
            assert type(lifted) is float and lifted == float(value)
    assert type(Mean().lift(np.float32(2.5))[0]) is float
    sums = [Sum().lift(Fraction(1, 3)), Sum().lift(np.longdouble(0.1))]
    assert Sum().combine(*sums) == Sum().combine(*reversed(sums)) == Fraction(1, 3) + 0.1
    assert type(Sum().lift(Fraction(1, 3))) is Fraction


@pytest.mark.parametrize("bad", [0, -1, -0.0, Fraction(-1, 2), -1e-300])
def test_geometric_mean_refuses_non_positive(bad):
    with pytest.raises(MonoidError, match="GeometricMean.*positive"):
        GeometricMean().lift(bad)


def test_geometric_mean_refuses_fraction_that_underflows():
    with pytest.raises(MonoidError, match="GeometricMean"):
        GeometricMean().lift(Fraction(1, 10**400))


@pytest.mark.parametrize("m", [ArgMin(), ArgMax()], ids=repr)
@pytest.mark.parametrize("bad", [5, None, "ab", (1,), (1, 2, 3), (1, "x"), (1, None),
                                 (1, float("nan")), (1, True)], ids=repr)
def test_arg_monoids_refuse_bad_inputs(m, bad):
    with pytest.raises(MonoidError, match=type(m).__name__):
        m.lift(bad)


def test_count_first_last_collect_take_anything():
    for v in ["x", None, float("nan"), [1]]:
        assert Count().lift(v) == 1
        assert Collect().lift(v)[0] is v
        assert First().lift(v) is v
        assert Last().lift(v) is v


# --------------------------------------------------------------------- Record


def make_record() -> Record:
    return Record(n=Count(), total=Sum(), peak=Max(), avg=Mean())


def test_record_construction_forms_agree():
    a = Record(n=Count(), total=Sum())
    b = Record({"n": Count(), "total": Sum()})
    c = Record([("n", Count())], total=Sum)  # pairs, and a Monoid class is instantiated
    for r in (a, b, c):
        assert list(r.fields) == ["n", "total"]
        assert r.identity == (0, 0)
        assert r.combine(r.lift(4), r.lift(6)) == (2, 10)
    assert isinstance(c.fields["total"], Sum)
    with pytest.raises(TypeError):
        a.fields["x"] = Sum()  # read-only


@pytest.mark.parametrize("args,kwargs,exc", [
    ((), {}, ValueError),
    (({"_x": Sum()},), {}, ValueError),
    (({"class": Sum()},), {}, ValueError),
    (({"a b": Sum()},), {}, ValueError),
    (({1: Sum()},), {}, ValueError),
    (({"a": Sum()},), {"a": Max()}, ValueError),
    ((), {"a": sum}, TypeError),
    ((), {"a": 3}, TypeError),
])
def test_record_construction_errors(args, kwargs, exc):
    with pytest.raises(exc):
        Record(*args, **kwargs)


def test_record_lift_lower_view():
    r = make_record()
    p = fold(r, [{"n": "ignored", "total": 3, "peak": 3, "avg": 3},
                 {"avg": 5, "peak": 9, "total": 5, "n": None}])  # key order is irrelevant
    assert p == (2, 8, 9, (8, 2))
    assert r.lower(p) == {"n": 2, "total": 8, "peak": 9, "avg": 4.0}
    v = r.view(p)
    assert (v.n, v.total, v.peak, v.avg) == (2, 8, 9, (8, 2))  # partials, not lowered
    assert v == p and v[1] == 8
    assert r.view(r.identity).peak == -math.inf


def test_record_lift_scalar_goes_to_every_field():
    r = make_record()
    assert r.lift(7) == (1, 7, 7, (7, 1))
    assert r.lower(fold(r, [1, 2, 6])) == {"n": 3, "total": 9, "peak": 6, "avg": 3.0}


def test_record_lift_errors_name_the_field():
    r = make_record()
    with pytest.raises(MonoidError, match="missing field 'avg'"):
        r.lift({"n": 1, "total": 1, "peak": 1})
    with pytest.raises(MonoidError, match="no field 'extra'"):
        r.lift({"n": 1, "total": 1, "peak": 1, "avg": 1, "extra": 1})
    with pytest.raises(MonoidError, match="field 'peak'.*Max.*nan"):
        r.lift({"n": 1, "total": 1, "peak": float("nan"), "avg": 1})
    with pytest.raises(MonoidError, match="field 'total'.*Sum.*'x'"):
        r.lift("x")


def test_record_flags_are_all_of_fields():
    assert Record(a=Sum(), b=Mean()).commutative
    assert Record(a=Sum(), b=Mean()).invertible
    r = Record(a=Sum(), b=Collect())
    assert not r.commutative and r.invertible
    r = Record(a=Min(), b=Max())
    assert r.commutative and not r.invertible and not r.selection and r.ordered_ties
    assert Record(a=Sum(), b=MinCount()).ordered_ties and not Record(a=Sum(), b=Mean()).ordered_ties
    assert Record(a=Sum(), b=Max()).combine is not Record(a=Sum(), b=Max()).combine


@given(st.lists(st.lists(ints, min_size=10, max_size=10), max_size=8))
def test_record_with_many_fields_matches_fields(rows):
    names = [f"f{i}" for i in range(10)]
    kinds = [Sum, Min, Max, Mean, MinCount, MaxCount, Collect, First, Last, Count]
    r = Record({n: k() for n, k in zip(names, kinds)})
    p = fold(r, [dict(zip(names, row)) for row in rows])
    for i, (name, m) in enumerate(r.fields.items()):
        assert p[i] == fold(m, [row[i] for row in rows])
        assert getattr(r.view(p), name) == p[i]


def test_nested_record_and_pickle():
    r = Record(stats=Record(s=Sum(), hi=Max()), n=Count())
    p = fold(r, [{"stats": 3, "n": 0}, {"stats": {"s": 1, "hi": 10}, "n": 0}])
    assert p == ((4, 10), 2)
    assert r.lower(p) == {"stats": {"s": 4, "hi": 10}, "n": 2}
    assert r.view(p).stats == (4, 10)
    r2 = pickle.loads(pickle.dumps(r))
    assert repr(r2) == repr(r) == "Record(stats=Record(s=Sum(), hi=Max()), n=Count())"
    assert r2.combine(p, r2.lift({"stats": 1, "n": 0})) == ((5, 10), 3)


FOLD_CASES = CASES + [(Record(n=Count(), s=Sum(), lo=Min(), hi=Max(), a=Mean()),
                       st.lists(st.one_of(ints, floats), max_size=30), True)]


@pytest.mark.parametrize("m,values", [case[:2] for case in FOLD_CASES],
                         ids=[f"{m!r}-{i}" for i, (m, _, _) in enumerate(FOLD_CASES)])
def test_fold_is_the_left_fold_of_combine(m, values):
    """Monoids with their own ``fold`` (by field, builtin min/max/sum) give exactly the
    left fold's partial: same values, same types, same float rounding."""
    @given(values, values)
    def check(before, xs):
        acc = fold(m, before)
        partials = [m.lift(x) for x in xs]
        got, expected = m.fold(acc, partials), reduce(m.combine, partials, acc)
        assert got == expected and repr(got) == repr(expected)
    check()


@pytest.mark.parametrize("m, big", [(Mean(), 2 * 10**308), (GeometricMean(), 2 * 10**308), (Variance(), 2**450 + 1),
                                    (StdDev(), -(2**450) - 1)], ids=repr)
def test_ints_whose_float_results_would_overflow_are_refused_at_lift(m, big):
    """These monoids' results are floats (``int / int``): an int that would overflow them was
    accepted and raised later, from combine (after the update was stored) or from lower."""
    with pytest.raises(MonoidError, match=type(m).__name__):
        m.lift(big)
    if not isinstance(m, GeometricMean):
        with pytest.raises(MonoidError, match=type(m).__name__):
            m.lift(-big)
    if isinstance(m, Mean):  # the batch form too, where a sum of ints can cancel out
        with pytest.raises(MonoidError, match="Mean"):
            m.lift_many([big, -big])
    edge = 10**308 if not isinstance(m, Variance) else 2**450
    values = [edge, 1, 2] if isinstance(m, GeometricMean) else [edge, -edge, 1]
    assert m.lower(fold(m, values)) is not None  # the largest ints taken have a float result


def test_numpy_longdouble_beyond_the_float_range_is_refused_not_made_infinite():
    np = pytest.importorskip("numpy")
    for m in (Sum(), Min(), Max(), Mean()):
        with pytest.raises(MonoidError, match="within the float range"):
            m.lift(np.longdouble("1e400"))
    assert Max().lift(np.longdouble("inf")) == math.inf


@pytest.mark.parametrize("monoid", [First(), Last()])
def test_first_and_last_take_numpy_numbers_as_python_numbers(monoid) -> None:
    # as the other built-in monoids and numpy columns do (np.int64 stayed numpy through insert,
    # and became an int through insert_many); other values, numpy bools included, as they are
    for value, want in ((np.int64(3), 3), (np.uint64(2**64 - 1), 2**64 - 1), (np.float32(2.5), 2.5),
                        (np.float64("nan"), None), (np.float16("inf"), math.inf)):
        got = monoid.lift(value)
        assert type(got) is type(want) if want is not None else type(got) is float and math.isnan(got)
        assert want is None or got == want
        window = Window(monoid)
        window.insert(0, value)
        by_column = Window(monoid)
        by_column.insert_many(np.array([0]), np.array([value]))
        assert repr(window.query()) == repr(by_column.query())
    flag = np.bool_(True)
    assert monoid.lift(flag) is flag and monoid.lift("x") == "x" and monoid.lift(None) is None
