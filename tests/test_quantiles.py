"""Holistic monoids (mta.quantiles): exact Median/Quantile against sorted recomputation,
ApproxQuantile within the KLL sketch's documented rank error."""

from __future__ import annotations

import math
import pickle
import random
import statistics
from collections import Counter
from fractions import Fraction
from functools import reduce

import numpy as np
import pytest
from conftest import ALGORITHM_NAMES, hsettings
from hypothesis import given
from hypothesis import strategies as st

import kvs
from kvs import codec
from mta import ApproxQuantile, Median, MonoidError, Quantile, Window
from mta.algorithms import ORDERED_ALGORITHMS
from mta.policy import MaxSize

# --------------------------------------------------------------------------- oracles


def nearest_rank(values: list, q) -> object:
    """The smallest value with at least q * n of the values at or below it (None if empty);
    counted, not indexed, so that it does not share the implementation's formula."""
    if not values:
        return None
    n = len(values)
    return min(x for x in values if sum(v <= x for v in values) >= q * n)


def rle(values: list) -> tuple:
    """The exact partial of ``values``: sorted distinct values with their counts."""
    counts = Counter(values)
    return tuple((v, counts[v]) for v in sorted(counts))


def random_tree(m, partials: list, rng: random.Random) -> object:
    """Combine ``partials`` (kept in order) by a random bracketing."""
    if not partials:
        return m.identity
    parts = list(partials)
    while len(parts) > 1:
        i = rng.randrange(len(parts) - 1)
        parts[i:i + 2] = [m.combine(parts[i], parts[i + 1])]
    return parts[0]


def chunks(values: list, cuts: list[int]) -> list[list]:
    """``values`` cut at the (sorted, deduplicated) positions ``cuts``."""
    bounds = [0, *sorted({c % (len(values) + 1) for c in cuts}), len(values)]
    return [values[a:b] for a, b in zip(bounds, bounds[1:])]


def partial_of(m, values: list) -> object:
    return reduce(m.combine, map(m.lift, values), m.identity)


# --------------------------------------------------------------------------- strategies

ints = st.integers(-50, 50)
ties = st.integers(-3, 3)
floats = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
fracs = st.builds(Fraction, st.integers(-100, 100), st.integers(1, 7))
numbers = st.one_of(
    st.lists(ints, max_size=40),
    st.lists(ties, max_size=40),
    st.lists(floats, max_size=40),
    st.lists(st.one_of(ints, floats, fracs, st.sampled_from([math.inf, -math.inf, -0.0])), max_size=40),
)
qs = st.one_of(st.sampled_from([0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1, 1.0]), st.floats(0, 1))

# --------------------------------------------------------------------------- exact: lower


@hsettings(max_examples=300)
@given(values=numbers, q=qs)
def test_quantile_is_the_nearest_rank_value(values, q):
    m = Quantile(q)
    p = partial_of(m, values)
    assert p == rle(values)
    assert m.lower(p) == nearest_rank(values, q)


@hsettings(max_examples=200)
@given(values=st.lists(st.one_of(ints, floats), min_size=1, max_size=40), q=qs)
def test_quantile_equals_numpy_inverted_cdf(values, q):
    expected = np.quantile(np.array(values, dtype=float), q, method="inverted_cdf")
    assert Quantile(q).lower(partial_of(Quantile(q), values)) == expected


@hsettings(max_examples=200)
@given(values=numbers)
def test_median_is_the_lower_median_and_quantile_half(values):
    p = partial_of(Median(), values)
    result = Median().lower(p)
    assert result == Quantile(0.5).lower(p)
    assert result == (statistics.median_low(values) if values else None)


def test_ends_and_empty_window():
    values = [5, -2, 9, 9, 0]
    p = partial_of(Median(), values)
    assert Quantile(0).lower(p) == -2
    assert Quantile(1).lower(p) == 9
    assert Median().lower(p) == 5
    assert Median().lower(()) is None
    assert Median().lower(Median().identity) is None


def test_even_count_median_is_the_lower_middle_value():
    assert Median().lower(partial_of(Median(), [4, 1, 3, 2])) == 2


def test_float_q_rounds_its_rank_as_written_and_a_fraction_is_exact():
    values = list(range(1, 101))
    assert 0.07 * 100 > 7  # the documented rounding
    assert Quantile(0.07).lower(partial_of(Median(), values)) == 8
    assert Quantile(Fraction(7, 100)).lower(partial_of(Median(), values)) == 7


def test_exact_values_keep_their_type():
    p = partial_of(Median(), [Fraction(1, 3), Fraction(2, 3), Fraction(1, 2)])
    assert Median().lower(p) == Fraction(1, 2) and type(Median().lower(p)) is Fraction
    assert type(Median().lower(partial_of(Median(), [3, 1, 2]))) is int


# --------------------------------------------------------------------------- exact: combine, fold, invert


@hsettings(max_examples=300)
@given(values=numbers, cuts=st.lists(st.integers(0, 40), max_size=8), seed=st.integers(0, 2**16))
def test_combine_any_split_any_bracketing_any_order(values, cuts, seed):
    m = Median()
    rng = random.Random(seed)
    parts = [partial_of(m, c) for c in chunks(values, cuts)]
    assert random_tree(m, parts, rng) == rle(values)
    rng.shuffle(parts)  # commutative
    assert random_tree(m, parts, rng) == rle(values)
    assert m.fold(m.identity, parts) == rle(values)
    if parts:
        assert m.fold(parts[0], parts[1:]) == rle(values)


@hsettings(max_examples=200)
@given(a=numbers, b=numbers, c=numbers)
def test_combine_laws(a, b, c):
    m = Median()
    pa, pb, pc = (partial_of(m, v) for v in (a, b, c))
    assert m.combine(m.combine(pa, pb), pc) == m.combine(pa, m.combine(pb, pc))
    assert m.combine(pa, pb) == m.combine(pb, pa) == rle(a + b)
    assert m.combine(pa, ()) == m.combine((), pa) == pa


@pytest.mark.parametrize("big, small", [(1000, 1), (1000, 5), (1000, 40), (200, 50), (64, 64)])
def test_combine_large_and_small_runs(big, small):
    """Both ways of merging (binary search for few runs, a linear merge otherwise)."""
    rng = random.Random(big * 1000 + small)
    a = [rng.randint(0, 3 * big) for _ in range(big)]
    b = [rng.randint(0, 3 * big) for _ in range(small)]
    pa, pb = rle(a), rle(b)
    assert Median.combine(pa, pb) == Median.combine(pb, pa) == rle(a + b)
    assert Median().invert(rle(a + b), pb) == pa
    assert Median().invert(rle(a + b), pa) == pb


@hsettings(max_examples=300)
@given(values=numbers, keep=st.lists(st.booleans(), max_size=40))
def test_invert_is_multiset_difference(values, keep):
    m = Median()
    front = [v for v, k in zip(values, keep) if k]
    rest = [v for v, k in zip(values, keep) if not k] + values[len(keep):]
    total = partial_of(m, values)
    x = m.invert(total, partial_of(m, front))
    assert x == rle(rest)
    assert m.combine(partial_of(m, front), x) == total


@pytest.mark.parametrize("front", [[5, 100], list(range(60)) + [100]], ids=["few", "many"])
def test_invert_refuses_a_value_the_total_lacks(front):
    with pytest.raises(ValueError, match="holds 100, which the total does not"):
        Median().invert(rle(list(range(100))), rle(front))


@pytest.mark.parametrize("front", [[5, 5], list(range(60)) + [5]], ids=["few", "many"])
def test_invert_refuses_more_copies_than_the_total_has(front):
    with pytest.raises(ValueError, match="holds 2 of 5, the total only 1"):
        Median().invert(rle(list(range(100))), rle(front))


def test_invert_of_nothing_and_everything():
    total = rle([1, 2, 2, 3])
    assert Median().invert(total, ()) == total
    assert Median().invert(total, total) == ()


def test_quantiles_as_record_fields():
    from mta import Record

    m = Record(median=Median(), p90=ApproxQuantile(0.9), top=Quantile(1))
    rng = random.Random(4)
    values = [rng.randint(0, 1000) for _ in range(150)]
    parts = [m.fold(m.identity, m.lift_many(c)) for c in chunks(values, [10, 40, 41, 90, 120])]
    result = m.lower(m.fold(m.identity, parts))
    assert result == {"median": statistics.median_low(values), "p90": float(nearest_rank(values, 0.9)),
                      "top": max(values)}


# --------------------------------------------------------------------------- exact: partials through a codec


@hsettings(max_examples=200)
@given(values=numbers)
def test_exact_partials_round_trip_through_the_codec(values):
    m = Median()
    p = partial_of(m, values)
    back = codec.unpack(codec.pack(p))
    assert back == p and type(back) is tuple and all(type(pair) is tuple for pair in back)
    assert m.lower(back) == m.lower(p)


@hsettings(max_examples=200)
@given(a=numbers, b=numbers)
def test_list_partials_are_taken(a, b):
    """A codec that decodes arrays as lists (JSON, msgpack use_list=True) gives lists of lists."""
    m = Quantile(0.3)
    pa, pb = partial_of(m, a), partial_of(m, b)
    la, lb = [list(pair) for pair in pa], [list(pair) for pair in pb]
    assert m.combine(la, lb) == m.combine(pa, pb)
    assert m.combine(la, ()) == pa
    assert m.fold(la, [lb, lb]) == m.fold(pa, [pb, pb])
    assert m.invert(m.combine(pa, pb), lb) == pa
    assert m.lower(la) == m.lower(pa)


# --------------------------------------------------------------------------- exact: inside a window


WINDOW_ALGORITHMS = [*ALGORITHM_NAMES, *ORDERED_ALGORITHMS]


@pytest.mark.parametrize("algorithm", WINDOW_ALGORITHMS)
@pytest.mark.parametrize("monoid", [Median(), Quantile(0.9)], ids=repr)
def test_window_against_recomputation(algorithm, monoid):
    rng = random.Random(17)
    size = 25
    window = Window(monoid, MaxSize(size), algorithm=algorithm)
    values = [rng.choice([rng.randint(-20, 20), rng.uniform(-20, 20)]) for _ in range(300)]
    for t, v in enumerate(values):
        window.insert(t, v)
        assert window.query() == nearest_rank(values[max(0, t + 1 - size):t + 1], monoid.q)


def test_stored_window_reloads_exact_partials():
    """Partials packed into the store's blocks come back as the same runs."""
    rng = random.Random(3)
    window = Window(Median(), MaxSize(40), algorithm="amta", store=kvs.connect("memory://"),
                    buffer_size=1, cache_size=1)
    values = [rng.randint(0, 30) for _ in range(400)]
    for t, v in enumerate(values):
        window.insert(t, v)
        assert window.query() == statistics.median_low(values[max(0, t - 39):t + 1])


# --------------------------------------------------------------------------- approximate


def rank_gap(values_sorted: list, x: float, q: float) -> float:
    """How far q is from the normalized rank interval of x in the data (0 when inside)."""
    n = len(values_sorted)
    lo = np.searchsorted(values_sorted, x, side="left") / n
    hi = np.searchsorted(values_sorted, x, side="right") / n
    return max(lo - q, q - hi, 0.0)


DISTRIBUTIONS = {
    "uniform": lambda rng: rng.random(),
    "normal": lambda rng: rng.gauss(0, 1),
    "heavy": lambda rng: rng.paretovariate(1.2),
    "ties": lambda rng: float(rng.randint(0, 9)),
    "ints": lambda rng: rng.randint(-10**6, 10**6),
}


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("seed", [1, 2])
def test_approx_within_the_documented_rank_error(dist, seed):
    """10,000 values cut into random slices, combined by a random bracketing and by fold:
    each result's rank is within twice the library's 99%-confidence error (the sketch is
    randomized: a failure here is a much rarer event than 1%)."""
    rng = random.Random(seed)
    values = [DISTRIBUTIONS[dist](rng) for _ in range(10_000)]
    ordered = np.sort(np.array(values, dtype=float))
    cuts = [rng.randrange(10_000) for _ in range(60)]
    for q in (0, 0.01, 0.1, 0.5, 0.9, 0.99, 1):
        m = ApproxQuantile(q)
        assert 0.01 < m.rank_error < 0.015  # about 1.33% at k = 200
        parts = [m.fold(None, m.lift_many(c)) for c in chunks(values, cuts)]
        for p in (random_tree(m, parts, rng), m.fold(m.identity, parts)):
            assert rank_gap(ordered, m.lower(p), q) <= 2 * m.rank_error
            assert m.sketch(p).n == len(values)


def test_approx_extremes_are_exact():
    rng = random.Random(5)
    values = [rng.uniform(-1e3, 1e3) for _ in range(5000)]
    for q, expected in ((0, min(values)), (1, max(values))):
        m = ApproxQuantile(q)
        assert m.lower(m.fold(None, m.lift_many(values))) == expected


@hsettings(max_examples=150)
@given(values=st.lists(st.one_of(ints, floats), max_size=60), cuts=st.lists(st.integers(0, 60), max_size=6),
       q=qs, seed=st.integers(0, 2**16))
def test_approx_is_exact_until_the_sketch_compacts(values, cuts, q, seed):
    """At most k values: no compaction, so the nearest-rank result exactly."""
    m = ApproxQuantile(q)
    parts = [partial_of(m, c) for c in chunks(values, cuts)]
    p = random_tree(m, parts, random.Random(seed))
    expected = nearest_rank(values, q)
    assert m.lower(p) == (None if expected is None else float(expected))


def test_approx_exact_at_k_values():
    rng = random.Random(8)
    values = [rng.random() for _ in range(200)]
    for q in (0.1, 0.5, 0.77):
        m = ApproxQuantile(q)
        assert m.lower(m.fold(None, m.lift_many(values))) == nearest_rank(values, q)


def test_approx_partials_are_never_changed_by_combining():
    """Partials are shared between slices and windows: reusing one gives the same answers."""
    m = ApproxQuantile(0.5, k=16)
    rng = random.Random(9)
    shared = m.fold(None, [float(v) for v in range(1000)])
    before = (shared, m.lower(shared), m.sketch(shared).n)
    for _ in range(20):
        other = m.fold(None, [rng.uniform(5000, 6000) for _ in range(300)])
        m.combine(shared, other)
        m.combine(other, shared)
        m.fold(shared, [other, 3.0])
        m.sketch(shared).update(1e9)  # a sketch handed out is a copy
    assert (shared, m.lower(shared), m.sketch(shared).n) == before
    assert m.combine(None, shared) == m.combine(shared, None) == shared


def test_approx_single_values_and_empty():
    m = ApproxQuantile(0.5)
    assert m.lower(None) is None and m.lower(m.identity) is None
    assert m.lift(3) == 3.0 and type(m.lift(3)) is float
    assert m.lower(m.lift(7)) == 7.0
    assert m.lower(m.combine(1.0, 2.0)) == 1.0
    assert m.lower(m.fold(None, [])) is None
    assert m.lower(m.fold(None, [4.0])) == 4.0
    assert m.lift(Fraction(1, 4)) == 0.25
    assert m.lower(m.fold(None, [math.inf, -math.inf, 0.0])) == 0.0


@pytest.mark.parametrize("partial", [None, 2.5, "sketch"])
def test_approx_partials_round_trip_through_the_codec(partial):
    m = ApproxQuantile(0.9)
    if partial == "sketch":
        partial = m.fold(None, [float(v) for v in range(5000)])
    back = codec.unpack(codec.pack(partial))
    assert back == partial and type(back) is type(partial)
    assert m.lower(back) == m.lower(partial)


@pytest.mark.parametrize("algorithm", ["amta", "two_stacks", "daba", "flatfat", "fiba"])
def test_approx_window_of_at_most_k_values_is_exact(algorithm):
    rng = random.Random(11)
    window = Window(ApproxQuantile(0.5), MaxSize(30), algorithm=algorithm)
    values = [rng.uniform(0, 100) for _ in range(200)]
    for t, v in enumerate(values):
        window.insert(t, v)
        assert window.query() == statistics.median_low(values[max(0, t - 29):t + 1])


def test_approx_is_not_invertible():
    assert not ApproxQuantile(0.5).invertible
    with pytest.raises(TypeError):
        ApproxQuantile(0.5).invert(1.0, 1.0)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("monoid", [Median(), Quantile(0.2), ApproxQuantile(0.2)], ids=repr)
@pytest.mark.parametrize("bad", [math.nan, True, "3", None, 1j, [1], float("nan")])
def test_lift_refuses(monoid, bad):
    with pytest.raises(MonoidError, match=type(monoid).__name__) as info:
        monoid.lift(bad)
    assert repr(bad) in str(info.value)
    with pytest.raises(MonoidError):
        monoid.lift_many([1, 2.0, bad])


def test_approx_refuses_a_number_beyond_the_float_range():
    with pytest.raises(MonoidError, match="float range"):
        ApproxQuantile(0.5).lift(10**400)
    with pytest.raises(MonoidError, match="float range"):
        ApproxQuantile(0.5).lift_many([1, 10**400])


def test_lift_many_matches_lift():
    values = [3, -1.5, Fraction(1, 2), 2**70, -math.inf]
    for m in (Median(), ApproxQuantile(0.5)):
        assert m.lift_many(values) == [m.lift(v) for v in values]
        assert m.lift_many(values[:2]) == [m.lift(v) for v in values[:2]]


@pytest.mark.parametrize("cls", [Quantile, ApproxQuantile])
@pytest.mark.parametrize("q", [-0.1, 1.1, math.nan, True, "0.5", None, math.inf])
def test_bad_q(cls, q):
    with pytest.raises(ValueError, match=f"{cls.__name__} takes a quantile"):
        cls(q)


@pytest.mark.parametrize("k", [7, 65_536, 200.0, True, None])
def test_bad_k(k):
    with pytest.raises(ValueError, match="8 <= k <= 65535"):
        ApproxQuantile(0.5, k=k)


def test_repr_and_pickle():
    for m in (Median(), Quantile(0.25), Quantile(Fraction(1, 3)), ApproxQuantile(0.9, k=64)):
        back = pickle.loads(pickle.dumps(m))
        assert repr(back) == repr(m)
        assert back.lower(back.fold(back.identity, back.lift_many([3, 1, 2]))) == \
            m.lower(m.fold(m.identity, m.lift_many([3, 1, 2])))
    assert repr(ApproxQuantile(0.9, k=64)) == "ApproxQuantile(0.9, k=64)"
    assert repr(Median()) == "Median()" and repr(Quantile(0.25)) == "Quantile(0.25)"


# --------------------------------------------------------------------------- through the Stream engine


def stream_oracle(events: list[tuple], gap: float) -> dict:
    """Every window's values from the raw (ts, value) events (arrival order), by (query, start, end)."""
    out: dict = {}
    for ts, v in events:
        for start in (ts // 10 * 10,):
            out.setdefault(("tumble", start, start + 10), []).append(v)
        for start in range(ts // 5 * 5 - 15, ts + 1, 5):
            if start <= ts < start + 20:
                out.setdefault(("slide", start, start + 20), []).append(v)
    ordered = [v for _, _, v in sorted((ts, i, v) for i, (ts, v) in enumerate(events))]
    for end in range(3, len(ordered) + 1, 3):
        out[("count", max(0, end - 7), end)] = ordered[max(0, end - 7):end]
    session: list[tuple] = []
    for ts, v in sorted(events, key=lambda e: e[0]):
        if session and ts - session[-1][0] >= gap:
            out[("session", session[0][0], session[-1][0] + gap)] = [w for _, w in session]
            session = []
        session.append((ts, v))
    out[("session", session[0][0], session[-1][0] + gap)] = [w for _, w in session]
    return out


@pytest.mark.parametrize("final", ["eager", "lazy"])
@pytest.mark.parametrize("monoid", [Median(), Quantile(0.9), ApproxQuantile(0.25)], ids=repr)
def test_stream_windows_against_recomputation(monoid, final):
    """Tumbling, sliding, count (invert for the exact ones) and session windows over
    out-of-order data with late tuples, snapshot and restore half way: the last report
    of every window is its nearest-rank value (the sketch's windows are under k values)."""
    from mta import Stream
    from mta.windows import Count, Session, Sliding, Tumbling

    def stream() -> Stream:
        s = Stream(monoid, allowed_lateness=10**6, final=final)
        s.add("tumble", Tumbling(10))
        s.add("slide", Sliding(20, 5))
        s.add("count", Count(7, 3))
        s.add("session", Session(gap=3))
        return s

    rng = random.Random(23)
    events = [(t + rng.randint(-6, 6) if t > 6 else t, rng.choice([rng.randint(-5, 5), rng.uniform(-5, 5)]))
              for t in range(300) if rng.random() < 0.7]
    s = stream()
    latest: dict = {}
    for i, (ts, v) in enumerate(events):
        assert s.insert(ts, v)
        if i % 5 == 4:  # watermark ahead of the data: many late tuples, merged sessions
            for r in s.advance(ts + 2):
                for start, end in r.replaces:
                    del latest[(r.query, start, end)]
                latest[(r.query, r.start, r.end)] = r.value
        if i == len(events) // 2:
            restored = stream()
            restored.restore(s.snapshot())
            s = restored
    for r in s.advance(10**6):
        for start, end in r.replaces:
            del latest[(r.query, start, end)]
        latest[(r.query, r.start, r.end)] = r.value
    expected = {key: nearest_rank(values, monoid.q) for key, values in stream_oracle(events, 3).items()}
    if isinstance(monoid, ApproxQuantile):
        expected = {key: float(v) for key, v in expected.items()}
    assert latest == expected
