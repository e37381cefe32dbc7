"""Every algorithm of the ALGORITHMS registry against a plain-list oracle.

Random operation sequences (insert, bursts of up to 3000 inserts, evict(k) for
every kind of valid k, enforce with single and combined policies, query, len,
iteration, clear, invalid evictions) run on each algorithm and on a Python list
whose aggregate is recomputed with functools.reduce. The tree algorithms also
run with tiny write buffers and caches so that flushes, cache refills and cache
misses happen on almost every operation, and bursts grow their trees to ~12
levels so that bulk evictions cross many stored blocks.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import (ALGORITHM_NAMES, TINY_TREE_OPTIONS, TREE_ALGORITHMS, WindowOracle, fold,
                      hsettings, make_aggregator, options_id, oracle_enforce, record_monoid,
                      supports)
from mta import MaxSize, TimeRange, Window, all_of, any_of
from mta.monoid import Collect, Max, Monoid, Record, Sum

Wsp = Callable[[Any, Any], bool]


# --------------------------------------------------------------------------- monoids and policies
#
# Each monoid case: the monoid, how to draw input values, and prefix-monotone policy
# factories ``param -> wsp(total, old)`` over that monoid's partials.

def _sum_policies() -> dict[str, Callable[[int], Wsp]]:
    return {
        # keep evicting while what would remain still sums to more than p
        "remaining_above": lambda p: lambda total, old: total - old > p,
        # evict the longest prefix whose own sum is at most p (values are >= 0)
        "prefix_at_most": lambda p: lambda total, old: old <= p,
    }


def _max_policies() -> dict[str, Callable[[int], Wsp]]:
    return {
        # values as timestamps (paper Listing 1 / Fig. 2): max(prefix) <= max(total) - p
        "time_range": lambda p: lambda total, old: total - old >= p,
        # paper Table 2: everything older than the maximum can never matter again
        "older_than_max": lambda p: lambda total, old: old < total,
    }


def _collect_policies() -> dict[str, Callable[[int], Wsp]]:
    return {
        # max count: keep at most p elements
        "max_count": lambda p: lambda total, old: len(total) - len(old) >= p,
        # paper section 3.2: the newest of `old` goes if it and all after it sum to > p
        "section_3_2": lambda p: lambda total, old: sum(total) - sum(old) + old[-1] > p,
        # time range with the values as timestamps
        "time_range": lambda p: lambda total, old: max(total) - max(old) >= p,
        "leading_below": lambda p: lambda total, old: all(v < p for v in old),
    }


def _record_policies(monoid: Record) -> dict[str, Callable[[int], Wsp]]:
    view = monoid.view

    def wrap(condition: Callable[[Any, Any, int], bool]) -> Callable[[int], Wsp]:
        return lambda p: lambda total, old: condition(view(total), view(old), p)

    return {
        "max_count": wrap(lambda t, o, p: t.n - o.n >= p),
        "section_3_2": wrap(lambda t, o, p: t.sum - o.sum + o.last > p),
        "older_than_max": wrap(lambda t, o, p: o.max < t.max),
        "remaining_above": wrap(lambda t, o, p: t.sum - o.sum > p),
    }


class MonoidCase:
    def __init__(self, name: str, monoid: Monoid, values: st.SearchStrategy,
                 policies: dict[str, Callable[[int], Wsp]]) -> None:
        self.name = name
        self.monoid = monoid
        self.values = values
        self.policies = policies
        self.policy_names = sorted(policies)

    def make_policy(self, spec: tuple) -> Wsp:
        """``spec`` = (combinator, i, j, p, q): one policy or any_of/all_of of two."""
        how, i, j, p, q = spec
        names = self.policy_names
        first = self.policies[names[i % len(names)]](p)
        if how == "single":
            return first
        second = self.policies[names[j % len(names)]](q)
        return any_of(first, second) if how == "any" else all_of(first, second)

    def random_values(self, n: int, seed: int) -> list[int]:
        rng = random.Random(seed)
        low, high = (-50, 50) if isinstance(self.monoid, Max) else (0, 20)
        return [rng.randint(low, high) for _ in range(n)]


def monoid_cases() -> list[MonoidCase]:
    record = record_monoid()
    return [
        MonoidCase("sum", Sum(), st.integers(0, 20), _sum_policies()),
        MonoidCase("max", Max(), st.integers(-50, 50), _max_policies()),
        MonoidCase("collect", Collect(), st.integers(0, 20), _collect_policies()),
        MonoidCase("record", record, st.integers(0, 20), _record_policies(record)),
    ]


CASES = {case.name: case for case in monoid_cases()}


def algorithm_params() -> list:
    """(algorithm, monoid case): every algorithm with every monoid it supports."""
    return [pytest.param(name, case.name, id=f"{name}-{case.name}")
            for name in ALGORITHM_NAMES for case in CASES.values() if supports(name, case.monoid)]


def tiny_tree_params() -> list:
    """(tree algorithm, monoid case, options) with write buffers of 1-3 and caches of 1-2."""
    return [pytest.param(name, case_name, options, id=f"{name}-{case_name}-{options_id(options)}")
            for name in TREE_ALGORITHMS for case_name in CASES for options in TINY_TREE_OPTIONS]


# --------------------------------------------------------------------------- operations

policy_spec = st.tuples(st.sampled_from(["single", "single", "any", "all"]),
                        st.integers(0, 7), st.integers(0, 7),
                        st.integers(0, 60), st.integers(0, 60))
evict_spec = st.tuples(st.just("evict"),
                       st.sampled_from(["all", "all_but_one", "half", "one", "zero", "random"]),
                       st.integers(0, 10**6))
#: a bulk eviction down to a few elements, then single insertions (True) and evictions (False,
#: skipped on an empty window), checked after each: tiny windows sliding, where tree merges
#: and stack states follow each other fast.
walk = st.tuples(st.just("walk"), st.integers(0, 4), st.lists(st.booleans(), max_size=80))
small_burst = st.integers(1, 64)
big_burst = st.sampled_from([300, 1000, 3000])


def operations(values: st.SearchStrategy, max_burst: int) -> st.SearchStrategy:
    """A prefill burst (often hundreds or thousands of elements), then random operations."""
    bursts = st.one_of(small_burst, big_burst, st.integers(1, 3000)).map(lambda n: min(n, max_burst))
    burst = st.tuples(st.just("burst"), bursts, st.integers(0, 2**32))
    op = st.one_of(
        st.tuples(st.just("insert"), values),
        burst,
        evict_spec,
        evict_spec,
        st.tuples(st.just("enforce"), policy_spec),
        st.tuples(st.just("enforce"), policy_spec),
        st.tuples(st.just("query")),
        st.tuples(st.just("iter")),
        st.tuples(st.just("too_many"), st.integers(1, 3)),
        st.tuples(st.just("clear")),
        walk,
    )
    return st.tuples(burst, st.lists(op, min_size=3, max_size=40)).map(lambda t: [t[0], *t[1]])


def evict_count(mode: str, x: int, n: int) -> int:
    return {"all": n, "all_but_one": max(n - 1, 0), "half": n // 2, "one": min(n, 1),
            "zero": 0, "random": x % (n + 1)}[mode]


def check_same(agg, monoid: Monoid, items: list) -> None:
    assert len(agg) == len(items)
    assert list(agg) == items
    assert agg.query() == fold(monoid, items)


def run_operations(agg, case: MonoidCase, ops: list, items: list | None = None) -> list:
    """Apply ``ops`` to ``agg`` and to the list ``items`` (the oracle); return ``items``."""
    monoid = case.monoid
    items = [] if items is None else items
    for op in ops:
        kind = op[0]
        if kind == "insert":
            partial = monoid.lift(op[1])
            agg.insert(partial)
            items.append(partial)
        elif kind == "burst":
            for value in case.random_values(op[1], op[2]):
                partial = monoid.lift(value)
                agg.insert(partial)
                items.append(partial)
        elif kind == "evict":
            k = evict_count(op[1], op[2], len(items))
            agg.evict(k)
            del items[:k]
        elif kind == "enforce":
            wsp = case.make_policy(op[1])
            expected = oracle_enforce(monoid, items, wsp)
            assert agg.enforce(wsp) == expected
        elif kind == "query":
            assert agg.query() == fold(monoid, items)
        elif kind == "iter":
            assert list(agg) == items
        elif kind == "too_many":
            with pytest.raises(ValueError):
                agg.evict(len(items) + op[1])
            check_same(agg, monoid, items)
        elif kind == "clear":
            agg.clear()
            items.clear()
        elif kind == "walk":
            k = max(len(items) - op[1], 0)
            agg.evict(k)
            del items[:k]
            for step, grow in enumerate(op[2]):
                if grow:
                    partial = monoid.lift(case.random_values(1, step)[0])
                    agg.insert(partial)
                    items.append(partial)
                elif items:
                    agg.evict(1)
                    del items[0]
                assert agg.query() == fold(monoid, items)
        assert len(agg) == len(items)
    check_same(agg, monoid, items)
    return items


def draw_ops(data, case_name: str, label: str = "ops") -> list:
    # Collect combines cost O(size): keep its windows to a few hundred elements.
    max_burst = 300 if case_name == "collect" else 3000
    return data.draw(operations(CASES[case_name].values, max_burst), label=label)


def draw_and_run(data, name: str, case_name: str, options: dict) -> None:
    case = CASES[case_name]
    run_operations(make_aggregator(name, case.monoid, **options), case, draw_ops(data, case_name))


@pytest.mark.parametrize("name, case_name", algorithm_params())
@given(data=st.data())
@hsettings(max_examples=20)
def test_random_operations_match_list_oracle(name, case_name, data) -> None:
    draw_and_run(data, name, case_name, {})


@pytest.mark.parametrize("name, case_name, options", tiny_tree_params())
@given(data=st.data())
@hsettings(max_examples=10)
def test_tree_random_operations_with_tiny_buffers_and_caches(name, case_name, options, data) -> None:
    """Flushes after almost every insertion, a cache refill or miss on almost every read."""
    draw_and_run(data, name, case_name, options)


# --------------------------------------------------------------------------- deterministic edges

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_enforce_on_empty_window_returns_zero_without_calling_policy(name) -> None:
    agg = make_aggregator(name, Sum())
    calls = []

    def wsp(total, old):
        calls.append((total, old))
        return True

    assert agg.enforce(wsp) == 0
    assert calls == [] and len(agg) == 0 and agg.query() == 0
    agg.insert(5)
    agg.evict(1)
    assert agg.enforce(wsp) == 0
    assert calls == [] and len(agg) == 0


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_evict_zero_is_a_no_op_and_too_many_changes_nothing(name) -> None:
    monoid = Collect()
    agg = make_aggregator(name, monoid)
    items = [monoid.lift(v) for v in range(40)]
    for p in items:
        agg.insert(p)
    agg.evict(0)
    check_same(agg, monoid, items)
    for k in (41, 42, 10**9):
        with pytest.raises(ValueError):
            agg.evict(k)
        check_same(agg, monoid, items)
    agg.evict(3)
    check_same(agg, monoid, items[3:])
    agg.evict(0)
    check_same(agg, monoid, items[3:])
    agg.evict(37)
    check_same(agg, monoid, [])
    with pytest.raises(ValueError):
        agg.evict(1)
    agg.evict(0)
    check_same(agg, monoid, [])


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@pytest.mark.parametrize("k", [True, 1.0, 2.0, "1"])
def test_evict_count_must_be_an_int(name, k) -> None:
    # Bools and non-ints are refused with TypeError, also where a fast path for
    # evict(1) could take True == 1 or 1.0 == 1 for a valid count.
    monoid = Collect()
    agg = make_aggregator(name, monoid)
    items = [monoid.lift(v) for v in range(40)]
    for p in items:
        agg.insert(p)
    agg.evict(1)  # AMTA: builds the stack, so the next evict(1) takes the fast path
    del items[:1]
    with pytest.raises(TypeError):
        agg.evict(k)
    check_same(agg, monoid, items)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_enforce_policy_that_keeps_everything_or_nothing(name) -> None:
    monoid = Collect()
    agg = make_aggregator(name, monoid)
    items = [monoid.lift(v) for v in range(100)]
    for p in items:
        agg.insert(p)
    assert agg.enforce(lambda total, old: False) == 0
    check_same(agg, monoid, items)
    assert agg.enforce(lambda total, old: True) == 100
    check_same(agg, monoid, [])
    agg.insert((7,))
    check_same(agg, monoid, [(7,)])


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_enforce_sees_the_window_total_and_prefix_aggregates(name) -> None:
    """Every call of the policy gets the whole window as `total` and a true prefix as `old`."""
    monoid = Collect()
    agg = make_aggregator(name, monoid)
    items = [monoid.lift(v) for v in range(1000)]
    for p in items:
        agg.insert(p)
    window = tuple(range(1000))
    seen = []

    def wsp(total, old):
        seen.append(len(old))
        assert total == window
        assert old == window[:len(old)]
        return len(old) <= 613

    assert agg.enforce(wsp) == 613
    assert 613 in seen and 614 in seen
    check_same(agg, monoid, items[613:])


@pytest.mark.parametrize("name", TREE_ALGORITHMS)
@pytest.mark.parametrize("options", [{}] + TINY_TREE_OPTIONS, ids=options_id)
def test_tree_bulk_evictions_of_every_size(name, options) -> None:
    """Deterministic sweep: windows of ~2000 with the head at many offsets, and bulk
    evictions / enforcements of sizes 1 .. len that cross many stored blocks."""
    monoid = Collect()
    agg = make_aggregator(name, monoid, **options)
    items: list = []
    rng = random.Random(len(options) * 7 + len(name))
    next_value = 0
    for step in range(40):
        while len(items) < 2000:
            partial = monoid.lift(next_value)
            next_value += 1
            agg.insert(partial)
            items.append(partial)
        k = rng.choice([1, 2, 3, 15, 16, 17, 255, 256, 511, 512, 513, 1023, 1999, 2000,
                        rng.randint(1, 2000)])
        if step % 2:
            agg.evict(k)
            del items[:k]
        else:
            keep = len(items) - k
            assert agg.enforce(lambda total, old: len(total) - len(old) >= keep) == k
            del items[:k]
        assert len(agg) == len(items)
        assert agg.query() == tuple(v for p in items for v in p)
    assert list(agg) == items


@pytest.mark.parametrize("name", TREE_ALGORITHMS)
def test_small_windows_at_every_alignment(name) -> None:
    """Windows of 1 .. 33 leaves, their head at every offset of two chunks, reached by
    a bulk eviction, then emptied one leaf at a time with one insertion half way
    (AMTA builds such windows straight from the buffered leaves)."""
    monoid = Collect()
    for start in range(40, 104):
        for length in range(1, 34):
            agg = make_aggregator(name, monoid)
            for value in range(start + length):
                agg.insert(monoid.lift(value))
            agg.evict(start)
            items = list(range(start, start + length))
            assert agg.query() == tuple(items), (start, length)
            for step in range(length + 1):
                if step == length // 2:
                    agg.insert(monoid.lift(-1))
                    items.append(-1)
                agg.evict(1)
                del items[0]
                assert agg.query() == tuple(items), (start, length, step)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@given(walks=st.lists(walk, min_size=1, max_size=8))
@hsettings(max_examples=300)
def test_tiny_windows_sliding_match_list_oracle(name, walks) -> None:
    run_operations(make_aggregator(name, Collect()), CASES["collect"], walks)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_every_short_sequence_of_single_insertions_and_evictions(name) -> None:
    """All 2^13 sequences of 13 single insertions and evictions (an eviction on an
    empty window skipped), the aggregate checked after each: every way a window
    of up to 13 leaves can slide from an empty start."""
    monoid = Collect()
    length = 13
    for pattern in range(1 << length):
        agg = make_aggregator(name, monoid)
        items: list[int] = []
        for step in range(length):
            if pattern >> step & 1:
                agg.insert(monoid.lift(step))
                items.append(step)
            elif items:
                agg.evict(1)
                del items[0]
            assert agg.query() == tuple(items), (bin(pattern), step)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_clear_restarts_the_window(name) -> None:
    monoid = Collect()
    agg = make_aggregator(name, monoid)
    for v in range(300):
        agg.insert(monoid.lift(v))
    agg.evict(17)
    agg.clear()
    check_same(agg, monoid, [])
    assert agg.enforce(lambda total, old: True) == 0
    items = [monoid.lift(v) for v in (5, 1, 9)]
    for p in items:
        agg.insert(p)
    check_same(agg, monoid, items)
    assert agg.enforce(lambda total, old: len(total) - len(old) >= 2) == 1
    check_same(agg, monoid, items[1:])


# --------------------------------------------------------------------------- through mta.Window

def window_policies(monoid: Monoid) -> dict[str, Callable[[int], Any]]:
    """Policies for ``mta.Window``: built-ins, user callables over Agg, and combinations."""
    out: dict[str, Callable[[int], Any]] = {
        "time_range": lambda p: TimeRange(p + 1),
        "max_size": lambda p: MaxSize(p),
        "time_or_size": lambda p: any_of(TimeRange(p + 1), MaxSize(p // 2 + 1)),
        "time_and_size": lambda p: all_of(TimeRange(p // 3 + 1), MaxSize(p)),
        # a user callable over counts and timestamps only
        "user_span": lambda p: (lambda total, old: total.last - old.last >= p + 1
                                or total.count - old.count >= 2 * p + 1),
    }
    if isinstance(monoid, Record):
        out["user_section_3_2"] = lambda p: (
            lambda total, old: total.value.sum - old.value.sum + old.value.last > p)
        out["user_older_than_max"] = lambda p: any_of(
            MaxSize(p + 1), lambda total, old: old.value.max < total.value.max)
    elif isinstance(monoid, Sum):
        out["user_sum_budget"] = lambda p: lambda total, old: total.value - old.value > p
    return out


def window_monoids(name: str) -> list[Monoid]:
    return [m for m in (Sum(), Max(), Collect(), record_monoid()) if supports(name, m)]


timestamp_steps = st.lists(st.tuples(st.sampled_from([0, 0, 1, 1, 2, 5, 13]), st.integers(0, 20)),
                           min_size=1, max_size=120)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@given(data=st.data())
@hsettings(max_examples=40)
def test_window_matches_oracle_after_every_insert(name, data) -> None:
    monoid = data.draw(st.sampled_from(window_monoids(name)), label="monoid")
    policies = window_policies(monoid)
    kind = data.draw(st.sampled_from(sorted(policies)), label="policy")
    param = data.draw(st.integers(0, 30), label="param")
    options = {}
    if name in TREE_ALGORITHMS:
        options = data.draw(st.sampled_from([{}] + TINY_TREE_OPTIONS), label="options")
    policy = policies[kind](param)
    window = Window(monoid, policy, algorithm=name, **options)
    oracle = WindowOracle(monoid, policy)
    timestamp = data.draw(st.integers(-100, 100), label="start")
    for step, value in data.draw(timestamp_steps, label="stream"):
        timestamp += step
        assert window.insert(timestamp, value) == oracle.insert(timestamp, value)
        assert len(window) == len(oracle.items)
        assert window.query() == oracle.query()
        assert list(window) == oracle.partials()
        if isinstance(policy, TimeRange):  # independent of the oracle: (last - width, last]
            assert all(timestamp - policy.width < t <= timestamp for t in oracle.timestamps())
        if isinstance(policy, MaxSize):
            assert len(window) <= policy.max_size
