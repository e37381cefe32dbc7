"""Complexity claims of the MTA paper, counted exactly (never timed).

The monoid's ``combine`` is wrapped in a counter (``CountingMonoid``), the level
store in one that counts ``extend`` / ``read`` / ``set`` / ``drop_until`` calls
(``CountingStore``, i.e. round trips to a remote store), and slide policies
count their own calls. Windows hold ones under integer Sum, so a partial is the
number of elements it covers and a max-count policy is ``total - old >= keep``.

Bounds were found by measurement and are asserted with margin; what matters is
that they depend on log2(n) only, never on the number k of evicted elements,
and that the same bounds reject the baselines that evict one element at a time.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from conftest import CountingMonoid, CountingStore, make_aggregator
from mta.monoid import Sum

BULK_SIZES = [2**10, 2**12, 2**14, 2**16]
#: combines of one evict(k) / enforce(...) <= SLOPE * log2(n) + CONST, for every k.
#: Measured worst cases over random heads and k (n = 2^6 .. 2^16): AMTA ~3 log2 n + 100
#: (chunk folds of 16 leaves and the stack rebuild dominate), Log MTA ~2 log2 n.
BULK_COMBINE_BOUND = {"amta": (6, 100), "log_mta": (3, 16)}


def log2(n: int) -> int:
    return n.bit_length() - 1


def combine_bound(name: str, n: int) -> int:
    slope, const = BULK_COMBINE_BOUND[name]
    return slope * log2(n) + const


def read_bound(n: int) -> int:
    """Cache refills of one bulk operation: about one read per level."""
    return log2(n) + 4


def policy_call_bound(n: int) -> int:
    """Policy evaluations of one enforce: O(log n) (a root-to-leaf search)."""
    return 4 * log2(n) + 8


def build(name: str, n: int, *, head_offset: int = 0, **options: Any):
    """A window of ``n`` ones whose oldest element has absolute index ``head_offset``."""
    monoid = CountingMonoid(Sum())
    store = CountingStore() if name in BULK_COMBINE_BOUND else None
    if store is not None:
        options["store"] = store
    agg = make_aggregator(name, monoid, **options)
    for _ in range(n + head_offset):
        agg.insert(1)
    if head_offset:
        agg.evict(head_offset)
    assert len(agg) == n and agg.query() == n
    return agg, monoid


def keep_at_most(keep: int, calls: list):
    """Max-count policy over the Sum-of-ones partials; counts its own calls."""
    def wsp(total: int, old: int) -> bool:
        calls.append(1)
        return total - old >= keep
    return wsp


def measure(agg, monoid: CountingMonoid, op: str, k: int) -> dict[str, int]:
    """Combines, store reads and policy calls of one evict(k) or one enforce removing k."""
    store = getattr(agg, "store", None)
    if store is not None:
        store.reset_counts()
    monoid.calls = 0
    policy_calls: list = []
    n = len(agg)
    if op == "evict":
        agg.evict(k)
    else:
        assert agg.enforce(keep_at_most(n - k, policy_calls)) == k
    cost = {"combines": monoid.calls, "reads": store.counts["read"] if store else 0,
            "policy": len(policy_calls)}
    assert len(agg) == n - k and agg.query() == n - k
    return cost


def bulk_sizes(n: int) -> list[int]:
    return [1, 7, n // 2, n - 1, n]


@pytest.mark.parametrize("n", BULK_SIZES, ids=lambda n: f"2^{log2(n)}")
@pytest.mark.parametrize("name", list(BULK_COMBINE_BOUND))
def test_bulk_eviction_is_logarithmic_whatever_k(name, n) -> None:
    # The head sits at an unaligned absolute index, as in a window that has slid.
    base, monoid = build(name, n, head_offset=n // 3 + 5)
    costs = {}
    for k in bulk_sizes(n):
        for op in ("evict", "enforce"):
            costs[op, k] = measure(copy.deepcopy(base), monoid, op, k)
    for (op, k), cost in costs.items():
        assert cost["combines"] <= combine_bound(name, n), (op, k, cost)
        assert cost["reads"] <= read_bound(n), (op, k, cost)
        assert cost["policy"] <= policy_call_bound(n), (op, k, cost)
    # doubling k (n/2 -> n-1) adds at most a pass over the levels (baselines: x2)
    for op in ("evict", "enforce"):
        assert costs[op, n - 1]["combines"] <= costs[op, n // 2]["combines"] + log2(n), costs


@pytest.mark.parametrize("name", ["two_stacks", "daba"])
def test_baselines_evicting_one_by_one_exceed_the_logarithmic_bound(name) -> None:
    """The contrast that shows the bound above can tell O(log n) from O(k)."""
    n = 2**12
    base, monoid = build(name, n)
    base.evict(1)  # TwoStacks: pay the initial flip now, not inside the measurement
    base.insert(1)
    n = len(base)
    tightest = min(combine_bound(alg, n) for alg in BULK_COMBINE_BOUND)
    costs = {(op, k): measure(copy.deepcopy(base), monoid, op, k)
             for k in (7, n // 2, n - 1) for op in ("evict", "enforce")}
    # enforce checks the policy and combines once per evicted element
    for k in (n // 2, n - 1):
        assert costs["enforce", k]["policy"] >= k
        assert costs["enforce", k]["combines"] >= k > tightest
        assert costs["enforce", k]["policy"] > policy_call_bound(n)
    # doubling k (n/2 -> n-1) adds Theta(n) work (the MTAs add at most log2 n)
    assert costs["enforce", n - 1]["combines"] >= costs["enforce", n // 2]["combines"] + n // 4
    if name == "daba":  # every single eviction runs DABA's fix-up
        assert costs["evict", n // 2]["combines"] >= n // 4 > tightest


@pytest.mark.parametrize("n", BULK_SIZES, ids=lambda n: f"2^{log2(n)}")
def test_amta_insertion_is_amortized_constant(n) -> None:
    monoid = CountingMonoid(Sum())
    agg = make_aggregator("amta", monoid)
    worst = 0
    for _ in range(n):
        before = monoid.calls
        agg.insert(1)
        worst = max(worst, monoid.calls - before)
    assert monoid.calls / n <= 3  # measured: 2.0 for every n
    assert worst <= 3 * log2(n) + 30  # worst case O(log n) (measured log2 n + 28)
    assert agg.query() == n


@pytest.mark.parametrize("n", BULK_SIZES, ids=lambda n: f"2^{log2(n)}")
def test_amta_constant_size_window_steps_are_amortized_constant(n) -> None:
    """n steps of insert + evict(1) on a window of n (every element is replaced once)."""
    agg, monoid = build("amta", n)
    monoid.calls = 0
    worst = 0
    for _ in range(n):
        before = monoid.calls
        agg.insert(1)
        agg.evict(1)
        worst = max(worst, monoid.calls - before)
    assert monoid.calls / n <= 4  # measured: 3.0
    assert worst <= 6 * log2(n) + 60  # O(log n) worst case
    monoid.calls = 0
    assert agg.query() == n and monoid.calls <= 1  # the result pair: one combine


@pytest.mark.parametrize("n", BULK_SIZES[:3], ids=lambda n: f"2^{log2(n)}")
def test_log_mta_insertion_is_logarithmic(n) -> None:
    monoid = CountingMonoid(Sum())
    agg = make_aggregator("log_mta", monoid)
    worst = 0
    for _ in range(n):
        before = monoid.calls
        agg.insert(1)
        worst = max(worst, monoid.calls - before)
    assert monoid.calls / n <= log2(n) + 3  # measured: log2(n) / 2
    assert worst <= log2(n) + 1  # one combine per level of the right spine
    assert worst >= log2(n) - 1  # and it is really a tree: the spine is refreshed
    monoid.calls = 0
    assert agg.query() == n and monoid.calls == 0  # the root is the result


# --------------------------------------------------------------------------- store round trips

def steady_state_store_calls(name: str, n: int, blocks: int) -> tuple[list, int]:
    """Per block of 512 steps (insert + evict(1)) on a window of n, the store call counts."""
    agg, _ = build(name, n, buffer_size=512, cache_size=512)
    store = agg.store
    per_block = []
    for _ in range(blocks):
        store.reset_counts()
        for _ in range(512):
            agg.insert(1)
            agg.evict(1)
        per_block.append(store.counts.copy())
    assert len(agg) == n and agg.query() == n
    return per_block, store.levels


@pytest.mark.parametrize("n", BULK_SIZES, ids=lambda n: f"2^{log2(n)}")
def test_amta_store_round_trips_in_a_constant_size_window(n) -> None:
    per_block, levels = steady_state_store_calls("amta", n, blocks=max(4, n // 512))
    for counts in per_block:
        # one buffer-full of insertions: at most one write per level
        assert counts["extend"] <= levels, counts
        assert all(counts["extend", level] <= 1 for level in range(levels)), counts
        # one buffer-full of evictions: about one cache refill per level
        assert counts["read"] <= levels + 3, counts
        assert counts["drop_until"] <= 2 * levels, counts
    assert sum(counts["extend"] for counts in per_block) > 0  # the store is really used


def test_log_mta_store_round_trips_in_a_constant_size_window() -> None:
    # Log MTA rewrites its left spine at every eviction: those values stay local
    # (section 4.1.5), so the store sees batched writes and cache refills only.
    n = 2**12
    per_block, levels = steady_state_store_calls("log_mta", n, blocks=4)
    for counts in per_block:
        assert counts["extend"] <= levels, counts
        assert counts["read"] <= levels + 3, counts
        assert counts["drop_until"] <= 4 * levels, counts
