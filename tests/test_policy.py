"""Window slide policies (mta.policy): constructors, semantics, combinators, monotonicity."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import ALGORITHM_NAMES, WindowOracle, hsettings
from mta import Agg, MaxSize, Sum, TimeRange, Window, all_of, any_of
from mta.algorithms import ORDERED_ALGORITHMS
from mta.policy import AllOf, AnyOf, Policy


def agg(count: int, last=None, value=None) -> Agg:
    return Agg(count, last, value)


# --------------------------------------------------------------------------- constructors

@pytest.mark.parametrize("n", [-1, -100, 1.5, 2.0, True, False, "3", None, math.inf])
def test_max_size_validation(n) -> None:
    with pytest.raises(ValueError, match="MaxSize"):
        MaxSize(n)


@pytest.mark.parametrize("n", [0, 1, 10**9])
def test_max_size_accepts_non_negative_ints(n) -> None:
    policy = MaxSize(n)
    assert policy.max_size == n and repr(policy) == f"MaxSize({n})"


@pytest.mark.parametrize("width", [0, -1, -0.5, math.nan, math.inf, -math.inf, True, "5", None])
def test_time_range_validation(width) -> None:
    with pytest.raises(ValueError, match="TimeRange"):
        TimeRange(width)


@pytest.mark.parametrize("width", [1, 0.001, 3_600_000])
def test_time_range_accepts_positive_finite_widths(width) -> None:
    assert TimeRange(width).width == width and repr(TimeRange(width)) == f"TimeRange({width})"


def test_time_range_takes_numpy_numbers_as_python_numbers() -> None:
    """An outside-in tester: np.int64(2) was refused as "not a finite width > 0"."""
    import numpy as np
    for width, expected in ((np.int64(2), 2), (np.float64(2.5), 2.5), (np.int32(3), 3)):
        policy = TimeRange(width)
        assert policy.width == expected and type(policy.width) is type(expected)
    with pytest.raises(ValueError, match="int or float width, got Fraction"):
        TimeRange(Fraction(3, 2))
    with pytest.raises(ValueError, match="finite width > 0"):
        TimeRange(np.int64(0))


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
def test_time_range_takes_an_int_width_beyond_the_float_range(algorithm) -> None:
    # math.isfinite(10**500) raises OverflowError: an int width is finite by being an int.
    window = Window(Sum(), policy=TimeRange(10**500), algorithm=algorithm)
    window.insert(1, 2)
    window.insert(10**400, 3)
    assert window.query() == 5 and len(window) == 2
    window.insert(10**501, 4)
    assert window.query() == 4 and len(window) == 1


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES + list(ORDERED_ALGORITHMS))
@pytest.mark.parametrize("policy", [TimeRange(5), TimeRange(1e-300), any_of(MaxSize(3), TimeRange(5))])
def test_time_range_compares_an_int_beyond_the_float_range_with_a_float(algorithm, policy) -> None:
    # 10**400 - 1.0 raises OverflowError; the policy compares exactly instead (it raised after
    # the update had gone in, leaving it in the window)
    window = Window(Sum(), policy=policy, algorithm=algorithm)
    window.insert(1.0, 1)
    window.insert(10**400, 2)
    assert (len(window), window.query()) == (1, 2)
    window = Window(Sum(), policy=policy, algorithm=algorithm)
    window.insert(-10**400, 1)
    window.insert(1.0, 2)
    assert (len(window), window.query()) == (1, 2)
    window = Window(Sum(), policy=policy, algorithm=algorithm)
    window.insert(1.0, 1)
    window.insert_many([(2.0, 1), (10**400, 2)])
    assert (len(window), window.query()) == (1, 2)
    if algorithm in ORDERED_ALGORITHMS:  # late, but within the window of the newest: 1.0 stays
        window = Window(Sum(), policy=policy, algorithm=algorithm)
        window.insert(1.0, 1)
        window.insert(-10**400, 2)
        assert window.query() == 1 and len(window) == 1


def test_combinators_validate_their_arguments() -> None:
    for combinator in (any_of, all_of):
        with pytest.raises(ValueError):
            combinator()
        with pytest.raises(TypeError, match="callable"):
            combinator(MaxSize(3), 5)
        with pytest.raises(TypeError, match="callable"):
            combinator("TimeRange(3)")


def test_policy_base_is_abstract() -> None:
    with pytest.raises(NotImplementedError):
        Policy()(agg(1), agg(1))


# --------------------------------------------------------------------------- semantics

def test_max_size_is_listing_3() -> None:
    policy = MaxSize(3)
    assert policy(agg(5), agg(2))  # 3 would remain: 2 must go
    assert not policy(agg(5), agg(3))  # 2 would remain
    assert MaxSize(0)(agg(1), agg(1))
    # built-ins read their inputs by index: plain tuples work too
    assert policy((5, None, None), (2, None, None))


def test_time_range_is_listing_1() -> None:
    hour = 3_600_000
    policy = TimeRange(hour)
    assert policy(agg(2, hour), agg(1, 0))  # exactly one hour old: out
    assert not policy(agg(2, hour), agg(1, 1))  # inside the hour
    assert not policy(agg(2, 5), agg(1, 5))
    assert policy((2, 10.5, None), (1, 0.5, None)) is False
    assert TimeRange(10)((2, 10.5, None), (1, 0.5, None))


@pytest.mark.parametrize("a", [False, True])
@pytest.mark.parametrize("b", [False, True])
def test_any_of_and_all_of_truth_tables(a, b) -> None:
    p = lambda total, old: a  # noqa: E731
    q = lambda total, old: b  # noqa: E731
    assert any_of(p, q)(agg(1), agg(1)) == (a or b)
    assert all_of(p, q)(agg(1), agg(1)) == (a and b)
    assert any_of(p)(agg(1), agg(1)) == a == all_of(p)(agg(1), agg(1))


def test_combinators_nest_and_report_tuple_support() -> None:
    built_in = any_of(MaxSize(3), all_of(TimeRange(5), MaxSize(1)))
    assert isinstance(built_in, AnyOf) and isinstance(built_in.policies[1], AllOf)
    assert built_in.on_tuples  # built-ins only: the window may pass raw tuples
    assert built_in.max_size is None  # a combination is not a plain count limit
    user = any_of(MaxSize(3), lambda total, old: False)
    assert not user.on_tuples
    assert "MaxSize(3)" in repr(built_in) and "TimeRange(5)" in repr(built_in)
    assert repr(all_of(MaxSize(1))).startswith("all_of")


# --------------------------------------------------------------------------- monotonicity

aggs = st.lists(st.tuples(st.integers(0, 5), st.integers(-20, 20)), min_size=1, max_size=40)


def prefixes(stream: list[tuple[int, int]]) -> tuple[Agg, list[Agg]]:
    """Agg of the whole window and of every non-empty prefix (timestamps non-decreasing)."""
    ts, out = 0, []
    stamps = []
    for step, _ in stream:
        ts += step
        stamps.append(ts)
    total_value = sum(v for _, v in stream)
    value = 0
    for i, (_, v) in enumerate(stream):
        value += v
        out.append(Agg(i + 1, stamps[i], value))
    return Agg(len(stream), stamps[-1], total_value), out


def built_in_policies(n: int, width: int) -> list:
    return [MaxSize(n), TimeRange(width), any_of(MaxSize(n), TimeRange(width)),
            all_of(MaxSize(n), TimeRange(width)), any_of(all_of(MaxSize(n), TimeRange(width)))]


@given(stream=aggs, n=st.integers(0, 40), width=st.integers(1, 30))
@hsettings(max_examples=100)
def test_built_in_policies_are_prefix_monotone(stream, n, width) -> None:
    """True for a prefix implies true for every shorter prefix (the contract Algorithm 2 needs)."""
    total, prefix_aggs = prefixes(stream)
    for policy in built_in_policies(n, width):
        verdicts = [bool(policy(total, old)) for old in prefix_aggs]
        assert verdicts == sorted(verdicts, reverse=True)


# --------------------------------------------------------------------------- through the window

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_max_size_fast_path_equals_the_general_path(name) -> None:
    """MaxSize alone evicts by count; wrapped or as a callable it goes through enforce."""
    variants = [MaxSize(7), any_of(MaxSize(7)), lambda total, old: total.count - old.count >= 7]
    windows = [Window(Sum(), policy, algorithm=name) for policy in variants]
    for ts in range(60):
        evicted = {w.insert(ts // 4, ts * 3 % 11) for w in windows}
        assert len(evicted) == 1
        assert len({(w.query(), tuple(w)) for w in windows}) == 1
        assert len(windows[0]) == min(ts + 1, 7)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@given(stream=st.lists(st.tuples(st.sampled_from([0, 1, 3]), st.integers(0, 9)), max_size=60),
       n=st.integers(0, 12), width=st.integers(1, 12))
@hsettings(max_examples=15)
def test_combined_built_ins_match_the_oracle(name, stream, n, width) -> None:
    for policy in built_in_policies(n, width):
        window = Window(Sum(), policy, algorithm=name)
        oracle = WindowOracle(Sum(), policy)
        ts = 0
        for step, value in stream:
            ts += step
            assert window.insert(ts, value) == oracle.insert(ts, value)
            assert list(window) == oracle.partials()
            assert window.query() == oracle.query()
