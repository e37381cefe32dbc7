"""The worked examples of the MTA paper (sections 3-5), on every algorithm they apply to.

Figures 1, 2, 4 and 5, the section 3.2 running example, the Table 2 "max" policy,
and Listings 1-3.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import (ALGORITHM_NAMES, WindowOracle, hsettings, make_aggregator, oracle_prefix,
                      supports)
from mta import Last, Max, MaxSize, Record, Sum, TimeRange, Window, any_of
from mta.monoid import Monoid

NON_INVERTIBLE_OK = [name for name in ALGORITHM_NAMES if supports(name, Max())]


def aggregator_with(name: str, monoid: Monoid, values: list) -> Any:
    agg = make_aggregator(name, monoid)
    for v in values:
        agg.insert(monoid.lift(v))
    return agg


# --------------------------------------------------------------------------- Fig. 1 / Fig. 4

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@pytest.mark.parametrize("values, total", [([1, 2, 1, 2, 1, 2], 9), ([1, 2, 1, 2, 1, 2, 1, 2], 12)])
def test_fig1_fig4_sum_of_the_example_windows(name, values, total) -> None:
    agg = aggregator_with(name, Sum(), values)
    assert agg.query() == total
    assert list(agg) == values
    # Fig. 4b: evicting the head leaves R = 5 + 6 = 11 (the stack top was 5).
    if len(values) == 8:
        agg.evict(1)
        assert agg.query() == 11


# --------------------------------------------------------------------------- Fig. 2

def fig2_policy(total: Any, old: Any) -> bool:
    """Monoid max over timestamps; WSP total - old >= 4 (a window of 4 time units)."""
    return total - old >= 4


@pytest.mark.parametrize("name", NON_INVERTIBLE_OK)
@pytest.mark.parametrize("before", [[1, 2, 3, 4], [1, 1, 2, 2, 3, 3, 4], [1, 2, 2, 3, 3, 3, 4, 4]])
def test_fig2_inserting_8_evicts_all_the_others(name, before) -> None:
    """Every timestamp before 8 is <= 8 - 4, so the bulk eviction keeps only 8.

    (The text: "When timestamp 8 is inserted it triggers the WSP enforcement to
    evict all the other updates"; the figure itself is not in the text, so the
    windows here are every window of timestamps <= 4 the policy lets exist.)
    """
    agg = make_aggregator(name, Max())
    for ts in before:
        agg.insert(ts)
        assert agg.enforce(fig2_policy) == 0  # everything stays within 4 units
    agg.insert(8)
    assert agg.enforce(fig2_policy) == len(before)
    assert list(agg) == [8] and agg.query() == 8 and len(agg) == 1


@pytest.mark.parametrize("name", NON_INVERTIBLE_OK)
def test_fig2_policy_step_by_step_keeps_the_last_four_time_units(name) -> None:
    agg = make_aggregator(name, Max())
    for ts in range(1, 8):
        agg.insert(ts)
        agg.enforce(fig2_policy)
        assert list(agg) == list(range(max(1, ts - 3), ts + 1))  # (ts - 4, ts]
    agg.insert(8)
    assert agg.enforce(fig2_policy) == 1  # only 4 is at 8 - 4 or earlier
    assert list(agg) == [5, 6, 7, 8]
    agg.insert(20)
    assert agg.enforce(fig2_policy) == 4
    assert list(agg) == [20]


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_fig2_through_window_time_range(name) -> None:
    window = Window(Sum(), TimeRange(4), algorithm=name)
    for ts in (1, 2, 3, 4):
        assert window.insert(ts, ts) == 0
    assert window.insert(8, 8) == 4
    assert list(window) == [8] and window.query() == 8


# --------------------------------------------------------------------------- Fig. 5

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_fig5_amta_single_update_evictions(name) -> None:
    agg = aggregator_with(name, Sum(), [1, 3, 2, 1, 2, 1, 1, 0, 3, 1])
    assert agg.query() == 15
    agg.evict(1)
    assert agg.query() == 14
    agg.evict(1)
    assert agg.query() == 11
    assert list(agg) == [2, 1, 2, 1, 1, 0, 3, 1]


# --------------------------------------------------------------------------- section 3.2

SECTION_3_2_MONOID = Record(max=Max(), sum=Sum(), last=Last())


def sum_at_most_10(total: Any, old: Any) -> bool:
    """The newest update of `old` must go if it and everything after it exceed 10."""
    return total.value.sum - old.value.sum + old.value.last > 10


@pytest.mark.parametrize("name", [n for n in ALGORITHM_NAMES if supports(n, SECTION_3_2_MONOID)])
def test_section_3_2_running_example(name) -> None:
    window = Window(SECTION_3_2_MONOID, sum_at_most_10, algorithm=name)
    for ts, value in enumerate([2, 2, 3, 3]):
        assert window.insert(ts, value) == 0
    assert window.query()["max"] == 3 and window.query()["sum"] == 10
    assert window.insert(4, 4) == 2
    assert [p[0] for p in window] == [3, 3, 4]
    assert window.query() == {"max": 4, "sum": 10, "last": 4}


# --------------------------------------------------------------------------- Table 2 (max)

def table2_max_policy(n: int):
    """Paper section 5.6: at most n updates, and drop the older sub-window that does
    not hold the maximum (those updates can never be the result again)."""
    return any_of(MaxSize(n), lambda total, old: old.value < total.value)


@pytest.mark.parametrize("name", NON_INVERTIBLE_OK)
@given(stream=st.lists(st.integers(-30, 30), min_size=1, max_size=150), n=st.integers(1, 40))
@hsettings(max_examples=40)
def test_table2_max_policy_evicts_everything_older_than_the_maximum(name, stream, n) -> None:
    policy = table2_max_policy(n)
    window = Window(Max(), policy, algorithm=name)
    oracle = WindowOracle(Max(), policy)
    for ts, value in enumerate(stream):
        assert window.insert(ts, value) == oracle.insert(ts, value)
        kept = list(window)
        assert kept == oracle.partials()
        assert window.query() == max(kept)
        assert len(kept) <= n
        # the oldest update left is the maximum, unless the size limit cut first
        assert kept[0] == max(kept) or len(kept) == n
        # the newest n updates always contain what remains
        assert kept == stream[ts + 1 - len(kept):ts + 1]


# --------------------------------------------------------------------------- Listing 1

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_listing1_one_hour_time_range_in_milliseconds(name) -> None:
    hour = 3_600_000
    window = Window(Sum(), TimeRange(hour), algorithm=name)
    window.insert(0, 1)
    window.insert(1_000_000, 2)
    window.insert(hour - 1, 4)
    assert window.query() == 7  # all within the last hour
    assert window.insert(hour, 8) == 1  # hour - 0 >= hour: the update at 0 left
    assert window.query() == 14
    assert window.insert(hour + 1_000_000, 16) == 1  # exactly one hour after 1_000_000
    assert window.query() == 28
    assert window.insert(3 * hour, 32) == 3
    assert window.query() == 32


@pytest.mark.parametrize("name", NON_INVERTIBLE_OK)
def test_listing1_on_a_max_of_timestamps(name) -> None:
    """The paper's reading: the max of a run of timestamps is its latest timestamp."""
    hour = 3_600_000
    agg = make_aggregator(name, Max())
    wsp = lambda total, old: total - old >= hour  # noqa: E731
    stamps = [0, 10, 600_000, 3_599_999, 3_600_000, 3_600_010, 7_200_005]
    kept: list = []
    for ts in stamps:
        agg.insert(ts)
        kept.append(ts)
        n = agg.enforce(wsp)
        assert n == oracle_prefix(Max(), kept, wsp)
        del kept[:n]
        assert list(agg) == kept
        assert all(ts - hour < t <= ts for t in kept)


# --------------------------------------------------------------------------- Listings 2 and 3

class ListingTwo(Monoid):
    """Paper Listing 2: partials (count, maxSize); the newest maxSize wins."""

    identity = (0, None)

    @staticmethod
    def combine(left: tuple, right: tuple) -> tuple:
        if not right[0]:
            return left
        return (left[0] + right[0], right[1])

    def lift(self, max_size: int) -> tuple:
        return (1, max_size)


def listing3_wsp(total: tuple, old: tuple) -> bool:
    """Paper Listing 3: total.count - old.count >= total.maxSize."""
    return total[0] - old[0] >= total[1]


@pytest.mark.parametrize("name", NON_INVERTIBLE_OK)
def test_listing3_constant_size_window_with_listing2_monoid(name) -> None:
    """Experiment 1: fill to maxSize, then each insertion evicts exactly one update."""
    monoid = ListingTwo()
    agg = make_aggregator(name, monoid)
    size = 100
    for i in range(size):
        agg.insert(monoid.lift(size))
        assert agg.enforce(listing3_wsp) == 0
    for i in range(3 * size):
        agg.insert(monoid.lift(size))
        assert agg.enforce(listing3_wsp) == 1
        assert len(agg) == size and agg.query() == (size, size)


@pytest.mark.parametrize("name", NON_INVERTIBLE_OK)
def test_listing3_shrinking_max_size_is_a_bulk_eviction(name) -> None:
    """Experiment 2: a new update with a smaller maxSize evicts many at once."""
    monoid = ListingTwo()
    agg = make_aggregator(name, monoid)
    rng = random.Random(4)
    for i in range(1000):
        agg.insert(monoid.lift(1000))
    agg.enforce(listing3_wsp)
    length = 1000
    for _ in range(30):
        new_size = rng.randint(1, length)
        agg.insert(monoid.lift(new_size))
        evicted = agg.enforce(listing3_wsp)
        assert evicted == length + 1 - new_size
        length = new_size
        assert len(agg) == length and agg.query() == (length, new_size)
        for _ in range(rng.randint(0, 500)):  # grow again with a large maxSize
            agg.insert(monoid.lift(10**6))
            length += 1
        assert agg.enforce(listing3_wsp) == 0


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_listing3_max_size_through_window(name) -> None:
    window = Window(Sum(), MaxSize(3), algorithm=name)
    evicted = [window.insert(ts, v) for ts, v in enumerate([5, 1, 2, 7, 3, 9])]
    assert evicted == [0, 0, 0, 1, 1, 1]
    assert list(window) == [7, 3, 9] and window.query() == 19
