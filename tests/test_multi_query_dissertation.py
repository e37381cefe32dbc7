"""The dissertation's multi-query aggregators: SlickDeque (Algorithms 2 and 3), FlatFIT
(Algorithm 1) and FlatFAT's range answers (``MULTI_QUERY`` names slickdeque, flatfit, flatfat).

Exact oracles: the combine counts, answers and arrays of the dissertation's Examples
3-6 (Figures 10, 20, 22), counted with :class:`mta.counting.CountingMonoid` (combines
+ inverts) against a Panes fold of the same identity-filled array; each algorithm's
operation counts (Tables 3-4); refusals; and a hypothesis check of the three against
a naive fold of the newest ``r`` partials (the generic test over every registered
algorithm is tests/test_multi_query.py).
"""

from __future__ import annotations

import operator
import random
from functools import reduce
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta.algorithms import MULTI_QUERY
from mta.algorithms.flatfat import FlatFATRanges
from mta.algorithms.flatfit import FlatFIT
from mta.algorithms.slickdeque import SlickDeque, SlickDequeInv, SlickDequeNonInv
from mta.counting import CountingMonoid
from mta.monoid import ArgMax, Collect, First, Last, Max, MaxCount, Min, Monoid, Sum

NAMES = ("slickdeque", "flatfit", "flatfat")


class Concat(Monoid):
    """Strings: associative, neither commutative, invertible nor a selection."""

    identity = ""
    combine = staticmethod(operator.add)


class InvertibleLast(Last):
    """Last with an inverse (the newest of a total is the total): selection AND invertible."""

    invertible = True

    def invert(self, total: Any, front: Any) -> Any:
        return total


def ops(monoid: CountingMonoid) -> int:
    """Operations as the dissertation counts them: aggregate operations and inverses."""
    return monoid.calls + monoid.inverts


class Panes:
    """The dissertation's Panes: an identity-filled circular array of ``wSize`` partials,
    each answer a fold of the newest ``r`` slots (r - 1 combines, identities included)."""

    def __init__(self, monoid: Monoid, ranges: tuple[int, ...]) -> None:
        self.monoid, self.ranges = monoid, ranges
        self.partials = [monoid.identity] * max(ranges)

    def insert(self, partial: Any) -> None:
        self.partials = self.partials[1:] + [partial]

    def query(self, r: int) -> Any:
        return reduce(self.monoid.combine, self.partials[-r:])


def run_example(cls: type, monoid: Monoid, ranges: tuple[int, ...], tuples: list[int]):
    """Both algorithms over ``tuples``. Returns the aggregator, each query's answers and
    operations per step, the operations of each insert, and Panes' operations per query."""
    counted, panes_counted = CountingMonoid(monoid), CountingMonoid(monoid)
    agg, panes = cls(counted, ranges), Panes(panes_counted, ranges)
    answers: dict[int, list] = {r: [] for r in ranges}
    steps: dict[int, list[int]] = {r: [] for r in ranges}
    inserts: list[int] = []
    panes_ops = dict.fromkeys(ranges, 0)
    for x in tuples:
        before = ops(counted)
        agg.insert(x)
        panes.insert(x)
        inserts.append(ops(counted) - before)
        for r in ranges:
            before, panes_before = ops(counted), ops(panes_counted)
            answers[r].append(agg.query(r))
            steps[r].append(ops(counted) - before)
            assert panes.query(r) == answers[r][-1]
            panes_ops[r] += ops(panes_counted) - panes_before
    return agg, answers, steps, inserts, panes_ops


# --------------------------------------------------------------------------- Examples 3-6

EX3_TUPLES = [2, 4, 0, 3, 7, 6, 1, 8, 9, 5]
EX5_TUPLES = [6, 5, 0, 1, 3, 4, 2, 7]


def test_example_3_flatfit_single_query_21_against_panes_40() -> None:
    """Max over range 5, slide 1 (Figure 10): wReset at steps 1 and 7, one combine at
    steps 2, 6, 8, two at the others; Panes folds the 5 slots each step."""
    agg, answers, steps, inserts, panes = run_example(FlatFIT, Max(), (5,), EX3_TUPLES)
    assert answers[5] == [2, 4, 4, 4, 7, 7, 7, 8, 9, 9]
    assert steps[5] == [4, 1, 2, 2, 2, 1, 4, 1, 2, 2] and inserts == [0] * 10
    assert sum(steps[5]) == 21 and panes[5] == 40


def test_example_4_flatfit_multi_query_6_against_panes_10() -> None:
    """Example 3 plus Q2 (range 2): Q2 costs 0 combines at steps 1, 3, 7, 9 and one at
    the others; Q1 still costs 21. The arrays end as Figure 10's step 10."""
    agg, answers, steps, inserts, panes = run_example(FlatFIT, Max(), (5, 2), EX3_TUPLES)
    assert answers[5] == [2, 4, 4, 4, 7, 7, 7, 8, 9, 9]
    assert answers[2] == [2, 4, 4, 3, 7, 7, 6, 8, 9, 9]
    assert steps[2] == [0, 1, 0, 1, 1, 1, 0, 1, 0, 1]
    assert sum(steps[2]) == 6 and panes[2] == 10
    assert sum(steps[5]) == 21 and panes[5] == 40
    assert agg._pointers == [1, 4, 3, 4, 1] and agg._partials == [1, 9, 9, 5, 6]


def test_example_5_slickdeque_inv_32_against_panes_48() -> None:
    """Sum over ranges 3 and 5 (Figure 20): one combine and one invert per range per step."""
    agg, answers, steps, inserts, panes = run_example(SlickDeque, Sum(), (3, 5), EX5_TUPLES)
    assert isinstance(agg, SlickDequeInv)
    assert answers[3] == [6, 11, 11, 6, 4, 8, 9, 13]
    assert answers[5] == [6, 11, 11, 12, 15, 13, 10, 17]
    assert inserts == [4] * 8 and steps[3] == steps[5] == [0] * 8  # answers are lookups
    assert sum(inserts) == 32 and panes[3] + panes[5] == 48


def test_example_6_slickdeque_non_inv_11_against_panes_48() -> None:
    """Max over ranges 3 and 5 (Figure 22): only the pops of line 16 combine; the deque
    holds Figure 22's nodes (the paper numbers positions mod 5 from 0)."""
    counted = CountingMonoid(Max())
    agg = SlickDeque(counted, (5, 3))
    assert isinstance(agg, SlickDequeNonInv)
    panes = Panes(CountingMonoid(Max()), (5, 3))
    deques, answers = [], []
    for x in EX5_TUPLES:
        agg.insert(x)
        panes.insert(x)
        deques.append([((p - 1) % 5, v) for p, v in zip(agg._pos[agg._head:], agg._val[agg._head:])])
        answers.append(agg.answers())
        assert answers[-1] == [panes.query(5), panes.query(3)]
    assert deques == [[(0, 6)], [(0, 6), (1, 5)], [(0, 6), (1, 5), (2, 0)], [(0, 6), (1, 5), (3, 1)],
                      [(0, 6), (1, 5), (4, 3)], [(1, 5), (0, 4)], [(0, 4), (1, 2)], [(2, 7)]]
    assert [a[1] for a in answers] == [6, 6, 6, 5, 3, 4, 4, 7]  # Q1: step 4 answers 5 (not 6)
    assert [a[0] for a in answers] == [6, 6, 6, 6, 6, 5, 4, 7]
    assert ops(counted) == 11 and ops(panes.monoid) == 48


# --------------------------------------------------------------------------- SlickDeque

def test_slickdeque_picks_the_variant_from_the_monoid() -> None:
    assert MULTI_QUERY["slickdeque"] is SlickDeque
    assert type(SlickDeque(Sum(), (3,))) is SlickDequeInv and not SlickDeque(Sum(), (3,)).any_range
    assert type(SlickDeque(Collect(), (3,))) is SlickDequeInv
    for monoid in (Max(), Min(), ArgMax(), First(), Last(), InvertibleLast()):
        agg = SlickDeque(monoid, (3,))
        assert type(agg) is SlickDequeNonInv and agg.any_range and agg.name == "slickdeque"


@pytest.mark.parametrize("monoid", [Concat(), MaxCount()])
def test_slickdeque_refuses_a_monoid_neither_invertible_nor_selection(monoid) -> None:
    message = f"slickdeque needs an invertible or a selection monoid; {type(monoid).__name__} is neither"
    with pytest.raises(TypeError, match=message):
        SlickDeque.check_monoid(monoid)
    with pytest.raises(TypeError, match=message):
        SlickDeque(monoid, (2, 3))
    with pytest.raises(TypeError, match="needs an invertible monoid; Max is not"):
        SlickDequeInv(Max(), (2,))
    with pytest.raises(TypeError, match="needs a selection monoid; Sum is not"):
        SlickDequeNonInv(Sum(), (2,))


def test_slickdeque_equality_pop_would_be_wrong_for_concatenation() -> None:
    """Why Alg. 3 refuses non-selection monoids: with "b" + "a" != "a" nothing pops, and
    the oldest node in a range is not the range's concatenation."""
    class Unchecked(SlickDequeNonInv):
        @classmethod
        def check_monoid(cls, monoid: Monoid) -> None:
            pass

    agg = Unchecked(Concat(), (2,))
    agg.insert("b")
    agg.insert("a")
    assert agg.query(2) == "b" != "ba"


def test_slickdeque_inv_two_operations_per_distinct_range() -> None:
    counted = CountingMonoid(Sum())
    agg = SlickDeque(counted, (7, 3, 7, 1, 3))
    rng = random.Random(5)
    for step in range(1, 101):
        agg.insert(rng.randint(-9, 9))
        assert counted.calls == counted.inverts == 3 * step  # 3 distinct ranges
        agg.answers()
        agg.query(1)
    assert counted.calls == 300
    with pytest.raises(ValueError, match=r"answers the ranges \[1, 3, 7\], not 2"):
        agg.query(2)


def test_slickdeque_inv_non_commutative_group_removes_the_oldest_part() -> None:
    agg = SlickDeque(Collect(), (3, 1))
    for x in range(6):
        agg.insert((x,))
    assert agg.answers() == [(3, 4, 5), (5,)]


@pytest.mark.parametrize("n", [64, 1024])
def test_slickdeque_non_inv_under_two_combines_per_slide_with_every_range(n) -> None:
    """Table 4: each partial is compared at most twice (inserted, popped), and the answers
    of all n ranges cost no combine at all."""
    counted = CountingMonoid(Max())
    agg = SlickDeque(counted, range(1, n + 1))
    rng = random.Random(n)
    window: list[float] = []
    for _ in range(4 * n):
        x = rng.random()
        agg.insert(x)
        window = (window + [x])[-n:]
        before = counted.calls
        answers = agg.answers()
        assert counted.calls == before
    assert answers == [max(window[-r:]) for r in range(1, n + 1)]
    assert counted.calls < 2 * 4 * n


def test_slickdeque_non_inv_worst_case_descending_input_fills_the_deque() -> None:
    """Section 4.3.1's worst case: descending input keeps every node; a new maximum then
    pops all of them (n - 1 combines in one insert)."""
    n = 50
    counted = CountingMonoid(Max())
    agg = SlickDeque(counted, (n, 1))
    for x in range(n, 0, -1):
        agg.insert(x)
    assert len(agg._pos) - agg._head == n and agg.answers() == [n, 1]
    before = counted.calls
    agg.insert(1000)
    assert counted.calls - before == n - 1 and agg.answers() == [1000, 1000]


def test_slickdeque_non_inv_keeps_the_oldest_of_ties_for_argmax() -> None:
    """ArgMax keeps the OLDEST of equal values (non-commutative): equal values must not pop."""
    agg = SlickDeque(ArgMax(), (4, 2))
    for key in "abcd":
        agg.insert((5, key))
    assert agg.answers() == [(5, "a"), (5, "c")]
    assert [agg.query(r) for r in (1, 2, 3, 4)] == [(5, "d"), (5, "c"), (5, "b"), (5, "a")]


# --------------------------------------------------------------------------- FlatFIT

@pytest.mark.parametrize("n", [2, 5, 16, 100])
def test_flatfit_single_query_three_combines_per_slide_over_each_period(n) -> None:
    """Section 3.3.1: every n + 1 slides cost (n - 1) (wReset) + 2 (n - 2) + 2 = 3 (n - 1)."""
    counted = CountingMonoid(Max())
    agg = FlatFIT(counted, (n,))
    rng = random.Random(n)
    for period in range(1, 6):
        for _ in range(n + 1):
            agg.insert(rng.random())
            agg.answers()
        assert counted.calls == 3 * (n - 1) * period


def test_flatfit_max_multi_at_most_3n_combines_per_slide() -> None:
    """Table 3: 3n per slide with every range 1..n answered (about 1.5n measured)."""
    n = 256
    counted = CountingMonoid(Max())
    agg = FlatFIT(counted, range(1, n + 1))
    rng = random.Random(3)
    for _ in range(n):
        agg.insert(rng.random())
        agg.answers()
    counted.calls = 0
    for _ in range(200):
        agg.insert(rng.random())
        agg.answers()
    assert n <= counted.calls / 200 <= 3 * n


def test_flatfit_single_hop_lookup_costs_nothing() -> None:
    """Alg. 1 line 42 would pop an empty stack here: range 1 always points at currInd."""
    counted = CountingMonoid(Collect())
    agg = FlatFIT(counted, (1, 4))
    for x in range(10):
        agg.insert((x,))
        before = counted.calls
        assert agg.query(1) == (x,)
        assert counted.calls == before
        assert agg.query(4) == tuple(range(max(0, x - 3), x + 1))  # oldest first (the fixed line 38)


# --------------------------------------------------------------------------- FlatFAT

def test_flatfat_answers_a_range_by_its_minimum_cover() -> None:
    """A full window of 16 leaves: a slide rewrites one leaf path (4 combines); a range of
    r leaves costs (cover nodes - 1) combines, at most 2 log2(16) - 1; the whole window
    of a commutative monoid is the root (no combine)."""
    counted = CountingMonoid(Sum())
    agg = FlatFATRanges(counted, range(1, 17))
    for x in range(16):
        agg.insert(x)
    counted.calls = 0
    agg.insert(16)  # the oldest leaf (0) takes 16
    assert counted.calls == 4
    costs = {}
    for r in range(1, 17):
        counted.calls = 0
        assert agg.query(r) == sum(range(17 - r, 17))
        costs[r] = counted.calls
    assert costs[16] == 0 and costs[1] == 0 and max(costs.values()) <= 7
    # leaves 1..15 and 0 hold 1..15 and 16: range 15 is leaves 1..15 = cover {1, 2-3, 4-7, 8-15}
    assert costs[15] == 3


def test_flatfat_wrapped_window_folds_oldest_first() -> None:
    agg = FlatFATRanges(Collect(), (20, 3))
    for x in range(37):  # 20 < 32 leaves: the window wraps around the leaf array
        agg.insert((x,))
    assert agg.answers() == [tuple(range(17, 37)), (34, 35, 36)]
    assert [agg.query(r) for r in (1, 2, 19)] == [(36,), (35, 36), tuple(range(18, 37))]


# --------------------------------------------------------------------------- common

@pytest.mark.parametrize("name", NAMES)
def test_refusals_of_unknown_ranges(name) -> None:
    monoid = Max()
    agg = MULTI_QUERY[name](monoid, (4, 2))
    assert agg.answers() == [monoid.identity] * 2 and len(agg) == 0
    for bad in (0, 5, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match=name):
            agg.query(bad)
    with pytest.raises(ValueError):
        MULTI_QUERY[name](monoid, ())
    with pytest.raises(TypeError):
        MULTI_QUERY[name](monoid, (2, "3"))


MONOIDS = {
    "sum": (Sum(), st.integers(-50, 50)),
    "max": (Max(), st.integers(-5, 5)),
    "min": (Min(), st.integers(-5, 5)),
    "collect": (Collect(), st.tuples(st.integers(0, 9))),
    "first": (First(), st.integers(0, 3)),
    "last": (Last(), st.integers(0, 3)),
    "argmax": (ArgMax(), st.tuples(st.integers(0, 3), st.integers(0, 99))),
    "invertible_last": (InvertibleLast(), st.integers(0, 3)),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", list(MONOIDS))
@hsettings(max_examples=25, deadline=None)
@given(data=st.data())
def test_against_a_naive_fold(name, kind, data) -> None:
    monoid, values = MONOIDS[kind]
    ranges = data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=6), label="ranges")
    stream = data.draw(st.lists(values, max_size=120), label="stream")
    clear_at = data.draw(st.integers(0, 130), label="clear_at")
    agg = MULTI_QUERY[name](monoid, ranges)
    capacity = max(ranges)
    window: list = []
    for step, x in enumerate(stream):
        if step == clear_at:
            agg.clear()
            window = []
        agg.insert(x)
        window = (window + [x])[-capacity:]
        assert len(agg) == len(window)
        assert agg.answers() == [reduce(monoid.combine, window[-r:], monoid.identity) for r in ranges]
        if agg.any_range:
            r = data.draw(st.integers(1, capacity), label="r")
            assert agg.query(r) == reduce(monoid.combine, window[-r:], monoid.identity)


def test_max_multi_with_a_large_window_agrees() -> None:
    """Every range 1..2^12 over a window that wraps several times (Sum and Max)."""
    n = 4096
    rng = random.Random(12)
    for monoid in (Sum(), Max()):
        aggs = [MULTI_QUERY[name](monoid, range(1, n + 1)) for name in NAMES]
        window: list[int] = []
        for step in range(3 * n + 5):
            x = rng.randint(0, 10 ** 6)
            window.append(x)
            for agg in aggs:
                agg.insert(x)
            if step % 1500 == 1499 or step == 3 * n + 4:
                window = window[-n:]
                expected = _suffix_folds(monoid, window, n)
                for agg in aggs:
                    assert agg.answers() == expected, agg.name


def _suffix_folds(monoid: Monoid, window: list, n: int) -> list:
    """The fold of the newest r (all, if fewer), for r = 1 .. n, in O(n) (commutative monoids)."""
    out, acc = [], monoid.identity
    for x in reversed(window):
        acc = monoid.combine(acc, x)
        out.append(acc)
    return out + [acc] * (n - len(out))
