"""What is particular to the baselines (Naive, Subtract-on-Evict, TwoStacks, DABA,
FlatFAT): edge cases, capacity changes, DABA's invariants and worst-case costs.
Random operation sequences against an oracle, for every algorithm, are in
test_algorithms.py."""

from __future__ import annotations

import operator
import random
from functools import reduce
from typing import Any

import pytest

from mta.algorithms.daba import DABA
from mta.algorithms.flatfat import FlatFAT
from mta.algorithms.naive import Naive
from mta.algorithms.subtract_on_evict import SubtractOnEvict
from mta.algorithms.two_stacks import TwoStacks
from mta.monoid import Monoid, Sum


class Concat(Monoid):
    """Tuple concatenation: associative, not commutative, not invertible."""

    identity = ()
    combine = staticmethod(operator.add)

    def lift(self, value: Any) -> tuple:
        return (value,)


class InvertibleConcat(Concat):
    """Concatenation with left cancellation: invert(front + x, front) == x."""

    invertible = True

    def invert(self, total: tuple, front: tuple) -> tuple:
        assert total[:len(front)] == front
        return total[len(front):]


ALL = [Naive, SubtractOnEvict, TwoStacks, DABA, FlatFAT]
GENERAL = [Naive, TwoStacks, DABA, FlatFAT]  # need no inverse
NAMES = {Naive: "naive", SubtractOnEvict: "subtract_on_evict", TwoStacks: "two_stacks",
         DABA: "daba", FlatFAT: "flatfat"}


def fold(monoid: Monoid, partials: list) -> Any:
    return reduce(monoid.combine, partials, monoid.identity)


def check_same(agg, monoid: Monoid, items: list) -> None:
    assert len(agg) == len(items)
    assert list(agg) == items
    assert agg.query() == fold(monoid, items)


@pytest.mark.parametrize("cls", ALL)
def test_empty_window(cls) -> None:
    for monoid in (InvertibleConcat(), Sum()):
        agg = cls(monoid)
        assert agg.query() == monoid.identity
        assert len(agg) == 0 and list(agg) == []
        assert agg.enforce(lambda total, old: True) == 0
        agg.evict(0)
        agg.insert(monoid.lift(3))
        agg.evict(1)
        assert agg.query() == monoid.identity and len(agg) == 0


@pytest.mark.parametrize("cls", ALL)
def test_enforce_sees_one_total_and_cumulative_prefixes(cls) -> None:
    monoid = InvertibleConcat()
    agg = cls(monoid)
    for v in range(6):
        agg.insert((v,))
    seen = []

    def wsp(total, old):
        seen.append((total, old))
        return len(old) <= 3

    assert agg.enforce(wsp) == 3
    assert seen == [((0, 1, 2, 3, 4, 5), tuple(range(i))) for i in range(1, 5)]
    assert list(agg) == [(3,), (4,), (5,)]
    assert agg.query() == (3, 4, 5)


@pytest.mark.parametrize("cls", ALL)
def test_bad_evict_counts_change_nothing(cls) -> None:
    agg = cls(Sum())
    for v in (1, 2, 3):
        agg.insert(v)
    for k, exc in ((4, ValueError), (-1, ValueError), (True, TypeError), (1.0, TypeError)):
        with pytest.raises(exc):
            agg.evict(k)
        assert list(agg) == [1, 2, 3] and agg.query() == 6
    agg.evict()
    assert list(agg) == [2, 3] and agg.query() == 5


@pytest.mark.parametrize("cls", ALL)
def test_registry_names(cls) -> None:
    assert cls.name == NAMES[cls]


def test_subtract_on_evict_refuses_non_invertible_monoid() -> None:
    with pytest.raises(TypeError, match="invertible"):
        SubtractOnEvict.check_monoid(Concat())
    with pytest.raises(TypeError, match="invertible"):
        SubtractOnEvict(Concat())
    SubtractOnEvict.check_monoid(Sum())
    for cls in GENERAL:
        cls.check_monoid(Concat())


@pytest.mark.parametrize("cls", [DABA, FlatFAT])
def test_capacity_grows_and_shrinks(cls) -> None:
    monoid = Concat()
    agg = cls(monoid)
    items: list = []
    rng = random.Random(7)
    start = agg.capacity
    for v in range(5000):
        agg.insert((v,))
        items.append((v,))
        if rng.random() < 0.1:
            agg.evict(1)
            del items[0]
        assert agg.capacity >= len(items)
    assert agg.capacity >= 4096 and agg.capacity & (agg.capacity - 1) == 0
    assert agg.query() == fold(monoid, items) and list(agg) == items
    while len(items) > 5:
        k = rng.randint(1, max(1, len(items) // 20))
        agg.evict(k)
        del items[:k]
        if rng.random() < 0.3:
            v = rng.randint(0, 99)
            agg.insert((v,))
            items.append((v,))
        assert agg.query() == fold(monoid, items)
    assert agg.capacity == start
    assert list(agg) == items
    agg.clear()
    assert agg.capacity == start and agg.query() == ()


@pytest.mark.parametrize("cls", GENERAL)
def test_sliding_windows_of_changing_size(cls) -> None:
    """Thousands of steps; the ring buffers wrap around many times."""
    monoid = Concat()
    agg = cls(monoid)
    items: list = []
    rng = random.Random(11)
    for step in range(6000):
        target = 1 + (step // 300) * 7 % 90
        v = rng.randint(0, 20)
        agg.insert((v,))
        items.append((v,))
        n = agg.enforce(lambda total, old: len(total) - len(old) >= target)
        assert n == max(0, len(items) - target)
        del items[:n]
        assert agg.query() == fold(monoid, items)
    assert list(agg) == items


def daba_invariants(agg: DABA) -> None:
    """The region invariants of the DABA paper, checked from the raw partials."""
    head, l, r, a, b, tail = agg._head, agg._l, agg._r, agg._a, agg._b, agg._tail
    assert head <= l <= r <= a <= b <= tail
    vals = {i: agg._vals[i & agg._mask] for i in range(head, tail)}
    aggs = {i: agg._aggs[i & agg._mask] for i in range(head, tail)}

    def s(i: int, j: int) -> Any:
        return fold(agg.monoid, [vals[x] for x in range(i, j)])

    assert agg._back == s(b, tail)
    if tail == head:
        return
    assert r - l == a - r
    assert (b - l) + 1 == (b - head) - (tail - b)
    assert all(aggs[i] == s(i, b) for i in range(head, l))
    assert all(aggs[i] == s(i, r) for i in range(l, r))
    assert all(aggs[i] == s(i, b) for i in range(a, b))
    if l != r:
        assert agg._rb == s(r, b)


def test_daba_invariants_hold_after_every_operation() -> None:
    agg = DABA(Concat())
    rng = random.Random(3)
    for step in range(3000):
        if rng.random() < 0.55 or not len(agg):
            agg.insert((step,))
        else:
            agg.evict(1)
        daba_invariants(agg)


class CountingSum(Monoid):
    """Integer sum whose combine counts its calls."""

    identity = 0

    def __init__(self) -> None:
        self.calls = 0

    def combine(self, a: int, b: int) -> int:
        self.calls += 1
        return a + b


def combines_per_operation(cls, steps: int = 10_000) -> dict[str, int]:
    monoid = CountingSum()
    agg = cls(monoid)
    rng = random.Random(5)
    worst = {"insert": 0, "evict": 0, "query": 0}
    size = 0
    for step in range(steps):
        # sawtooth: grow to a random size, then drain, so flips happen at every size
        if step % 1000 < 600 or size == 0:
            op = "insert" if rng.random() < 0.8 else "evict"
        else:
            op = "evict" if rng.random() < 0.8 else "insert"
        if op == "evict" and size == 0:
            op = "insert"
        before = monoid.calls
        if op == "insert":
            agg.insert(step)
            size += 1
        else:
            agg.evict(1)
            size -= 1
        worst[op] = max(worst[op], monoid.calls - before)
        before = monoid.calls
        agg.query()
        worst["query"] = max(worst["query"], monoid.calls - before)
    return worst


def test_daba_worst_case_constant_combines() -> None:
    worst = combines_per_operation(DABA)
    assert worst["insert"] <= 3
    assert worst["evict"] <= 2
    assert worst["query"] <= 1


def test_two_stacks_flip_is_linear_worst_case() -> None:
    """The contrast that makes the DABA test meaningful."""
    assert combines_per_operation(TwoStacks)["evict"] > 100
