"""``Stream(final="shared")``: every plan the optimizer could choose gives the oracle's results.

The optimizer picks one (partial, final) technique per group; here a planner callable forces
each combination, and a random split of the queries into groups, so that every multi-query
aggregator and every partial aggregation (Panes, Pairs, Cutty) runs inside the engine under
in-order and late data, queries added and removed, snapshots, and keyed streams.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta import Collect, Count, GeometricMean, Mean, Record, Stream, Sum, Variance
from mta.monoid import First, Last, Max, MaxCount, Min, MinCount
from mta.algorithms import MULTI_QUERY
from mta.windows import Session, Sliding, Tumbling
from test_stream_properties import MONOIDS, Run, scenarios

PARTIALS = ("panes", "pairs", "cutty")


@dataclass
class _Group:
    queries: tuple
    partial: str
    final: str


@dataclass
class _Plan:
    groups: list


def forced(partial: str, final: str, split: int = 0) -> Any:
    """A planner: the queries in groups of ``split`` (all in one when 0), each group executed
    with ``partial`` and ``final``."""
    def plan(queries: list, rate: float) -> _Plan:
        names = tuple(q.name for q in queries)
        step = split or len(names)
        return _Plan([_Group(names[i:i + step], partial, final) for i in range(0, len(names), step)])
    return plan


def finals_for(monoid: Any) -> list[str]:
    """The multi-query aggregators that serve ``monoid``."""
    usable = []
    for name, cls in MULTI_QUERY.items():
        try:
            cls.check_monoid(monoid)
        except TypeError:
            continue
        usable.append(name)
    return usable


@pytest.mark.parametrize("partial", PARTIALS)
@pytest.mark.parametrize("monoid", ["sum", "collect", "max"])
@hsettings(max_examples=40)
@given(data=st.data())
def test_forced_plans_against_oracle(partial: str, monoid: str, data: st.DataObject) -> None:
    """Tumbling and sliding queries (and a session beside them) in one or several groups."""
    m = MONOIDS[monoid]()
    final = data.draw(st.sampled_from(finals_for(m)), label="final")
    split = data.draw(st.integers(0, 2), label="split")
    queries, ops, allowed = data.draw(scenarios(("sliding", "sliding", "tumbling"), max_ops=40,
                                                in_order=data.draw(st.booleans(), label="in order")),
                                      label="scenario")
    Run(m, queries, allowed, "shared", optimizer=forced(partial, final, split)).run(ops)


@pytest.mark.parametrize("partial", PARTIALS)
@hsettings(max_examples=40)
@given(data=st.data())
def test_forced_plans_with_queries_changing_and_snapshots(partial: str, data: st.DataObject) -> None:
    queries, ops, allowed = data.draw(scenarios(("sliding", "tumbling", "session"), max_ops=40, mid_queries=True,
                                                snapshots=True), label="scenario")
    m = Collect()
    final = data.draw(st.sampled_from(finals_for(m)), label="final")
    Run(m, queries, allowed, "shared", optimizer=forced(partial, final, data.draw(st.integers(0, 2)))).run(ops)


@hsettings(max_examples=30)
@given(data=st.data())
def test_forced_plans_keyed(data: st.DataObject) -> None:
    queries, ops, allowed = data.draw(scenarios(("sliding", "tumbling"), max_ops=40, keys=("a", "b"), snapshots=True),
                                      label="scenario")
    partial = data.draw(st.sampled_from(PARTIALS), label="partial")
    final = data.draw(st.sampled_from(finals_for(Sum())), label="final")
    Run(Sum(), queries, allowed, "shared", optimizer=forced(partial, final), keyed=True).run(ops)


@pytest.mark.parametrize("partial", PARTIALS)
def test_float_times_in_decimal_units(partial: str) -> None:
    """Sizes and slides of tenths of a second: exact ticks, the same windows as lazy slicing."""
    results = {}
    for final in ("lazy", "shared"):
        s = Stream(Sum(), final=final, optimizer=forced(partial, "panes"))
        s.add("a", Sliding(0.3, 0.1))
        s.add("b", Sliding(0.7, 0.2, 0.05))
        s.add("c", Tumbling(0.5))
        out = []
        for k in range(200):
            s.insert(k * 0.037, k)
            if k % 7 == 0:
                out += s.advance(k * 0.037)
        out += s.advance(float("inf"))
        results[final] = [(r.query, round(r.start, 9), round(r.end, 9), r.value, r.count) for r in out]
    assert results["shared"] == results["lazy"]
    assert len(results["lazy"]) > 100


def test_a_plan_the_monoid_cannot_run_is_refused_before_the_advance_changes_anything() -> None:
    from test_stream_properties import SumNoInverse
    s = Stream(SumNoInverse(), final="shared", optimizer=forced("pairs", "slickdeque"))
    s.add("a", Sliding(4, 2))
    s.insert_many([(1, 1), (2, 2), (5, 3)])
    with pytest.raises(TypeError, match="slickdeque needs an invertible or a selection monoid"):
        s.advance(10)
    assert s.watermark == -float("inf")
    s = Stream(SumNoInverse(), final="shared", optimizer=forced("pairs", "slideside"))
    s.add("a", Sliding(4, 2))
    s.insert_many([(1, 1), (2, 2), (5, 3)])
    assert [(r.start, r.end, r.value) for r in s.advance(10)] == [(-2, 2, 1), (0, 4, 3), (2, 6, 5), (4, 8, 3)]


def test_the_default_plan_is_explained_and_shares_the_sliding_queries() -> None:
    s = Stream(Sum(), final="shared")
    s.add("1m", Sliding(60, 10))
    s.add("5m", Sliding(300, 30))
    s.add("1h", Sliding(3600, 60))
    s.add("t", Tumbling(60))
    plan = s.plan()
    assert sorted(q for g in plan.groups for q in g.queries) == ["1h", "1m", "5m", "t"]
    text = str(plan)
    assert all(name in text for name in ("1m", "5m", "1h")) and "ops/tick" in text
    s.remove("1h")
    assert sorted(q for g in s.plan().groups for q in g.queries) == ["1m", "5m", "t"]


@pytest.mark.parametrize("monoid", [Sum, Collect])
def test_the_groups_answer_the_windows_with_few_combines(monoid) -> None:
    """Long sliding windows: the plan's aggregators answer them (the fallback folds would
    cost a combine per slice in the window) and give lazy slicing's results."""
    from mta.counting import CountingMonoid

    def run(final: str) -> tuple[list, int]:
        counting = CountingMonoid(monoid())
        s = Stream(counting, final=final)
        for name, window in {"a": Sliding(600, 10), "b": Sliding(1200, 20), "c": Sliding(900, 30)}.items():
            s.add(name, window)
        out = []
        for t in range(0, 6000, 100):
            s.insert_many([(u, (u,) if monoid is Collect else u) for u in range(t, t + 100)])
            out += s.advance(t + 100)
        return [(r.query, r.start, r.end, r.value, r.count) for r in out], counting.calls + counting.inverts

    lazy, lazy_ops = run("lazy")
    shared, shared_ops = run("shared")
    assert shared == lazy and len(lazy) > 1000
    assert shared_ops * 4 < lazy_ops, (shared_ops, lazy_ops)


def test_a_tuple_just_before_an_edge_stays_before_it() -> None:
    """A session cuts a slice at 73.49999999999997, just before the edge 73.5 of Sliding(6, 1.5):
    the shared final rounded it onto the edge and left the tuple out of [67.5, 73.5) (issue 18's
    outside test). Ticks are now exact against the engine's own edge floats."""
    results = {}
    for final in ("lazy", "shared"):
        s = Stream(Sum(), final=final)
        s.add("h", Sliding(6, 1.5))
        s.add("s", Session(0.8))
        s.insert(73.49999999999997, 17)
        results[final] = [(r.query, r.start, r.end, r.value, r.count) for r in s.advance(100)]
    assert results["shared"] == results["lazy"]
    assert ("h", 67.5, 73.5, 17, 1) in results["shared"]


@pytest.mark.parametrize("final", [None, "slideside", "slickdeque", "flatfat", "panes"])
def test_a_range_of_2_40_slides_costs_no_memory_for_the_range(final) -> None:
    """Sliding(2**40, 1): the aggregator allocated for its range (MemoryError), then the group
    inserted 2**40 empty partials before the first window; now it starts at the first slice."""
    results = {}
    for mode in ("lazy", "shared"):
        s = Stream(Sum(), final=mode, **({"optimizer": forced("pairs", final)} if final and mode == "shared" else {}))
        s.add("a", Sliding(2**40, 1))
        s.add("b", Sliding(4, 1))
        out = []
        for t in (1, 2, 2, 7, 30):
            s.insert(t, t)
            out += s.advance(t)
        out += s.advance(40)
        results[mode] = [(r.query, r.start, r.end, r.value, r.count) for r in out]
    assert results["shared"] == results["lazy"]
    assert ("a", 40 - 2**40, 40, 42, 5) in results["shared"]


def test_flatfit_refuses_a_range_it_would_allocate_for_before_the_advance_changes_anything() -> None:
    s = Stream(Sum(), final="shared", optimizer=forced("pairs", "flatfit"))
    s.add("a", Sliding(2**40, 1))
    s.insert(1, 1)
    with pytest.raises(ValueError, match="flatfit allocates two slots per unit of its largest range"):
        s.advance(5)
    assert s.watermark == -float("inf")
    default = Stream(Sum(), final="shared")
    default.add("a", Sliding(2**40, 1))
    assert all(g.final != "flatfit" for g in default.plan().groups)


# --------------------------------------------------------------------------- floats and subtraction

def _outlier_then_ones(monoid: Any, final: str, *specs: Sliding) -> tuple[list, Stream]:
    stream = Stream(monoid, final=final)
    for k, spec in enumerate(specs):
        stream.add(f"q{k}", spec)
    stream.insert(0, 1e16)
    for t in range(1, 400):
        stream.insert(t, 1.0)
    return [(r.query, r.start, r.end, r.value) for r in stream.advance(400)], stream


@pytest.mark.parametrize("monoid", [Sum(), Mean(), Variance(), GeometricMean(), Record(s=Sum(), n=Count())])
@pytest.mark.parametrize("specs", [(Sliding(16, 1),), (Sliding(16, 1), Sliding(32, 2)), (Sliding(160, 10),)])
def test_a_shared_final_does_not_subtract_floats(monoid, specs) -> None:
    # A subtracting technique (SlickDeque's running totals, SlideSide's inverse) kept the
    # rounding of 1e16 + 1.0 - 1e16 for every later window: [1.0, 1.0, ...] for 16.0. At its
    # first float partial the group re-plans without inverting techniques.
    auto, _ = _outlier_then_ones(monoid, "auto", *specs)
    shared, stream = _outlier_then_ones(monoid, "shared", *specs)
    assert [r[:3] for r in shared] == [r[:3] for r in auto]
    # once the outlier left every window, the windows hold exactly representable sums
    late = [(a, s) for a, s in zip(auto, shared) if a[1] > 1]
    assert late and all(a == s for a, s in late)
    assert all(group.final != "slickdeque" for group in stream.plan().groups)
    assert stream.final.groups and all(g.rounds is None for g in stream.final.groups.values())


def test_a_shared_final_keeps_subtracting_ints() -> None:
    stream = Stream(Sum(), final="shared")
    stream.add("q", Sliding(16, 1))
    for t in range(100):
        stream.insert(t, t)
    results = stream.advance(100)
    assert results[-1].value == sum(range(84, 100))
    assert [g.final for g in stream.plan().groups] == ["slickdeque"]
    assert all(g.rounds is not None for g in stream.final.groups.values())


def _fold(monoid: Any, values: list) -> Any:
    """The window's tuples folded in order (the oracle)."""
    acc = monoid.identity
    for v in values:
        acc = monoid.combine(acc, monoid.lift(v))
    return monoid.lower(acc)


def _exact(value: Any) -> Any:
    """``value`` compared bit for bit: its type and repr (0.0 vs -0.0, 2 vs 2.0, nan)."""
    return type(value), repr(value)


SELECTION_CASES = [  # (monoid, values): the shared final answered the second value, or the other sign
    (First, [None, 44, 2]), (Last, [1, 2, None]), (Last, [2, 2.0, None, None]),
    (Min, [0.0, 1.0, -0.0]), (Max, [0.0, -1.0, -0.0]), (First, [math.nan]), (Last, [math.nan]),
    (Min, [2.0, 3, 2]), (Min, [2, 3, 2.0]), (Max, [2.0, 1, 2]), (Max, [2, 1, 2.0]),
]


def _serving(cases: list[tuple], finals: list) -> list:
    """``(make, data, final)`` for each case and each of ``finals`` that serves ``make()`` (None: the
    default plan), so that no case passes without asserting."""
    return [pytest.param(make, data, final, id=f"{make.__name__}-{data}-{final}")
            for make, data in cases for final in finals
            if final is None or final in finals_for(make())]


@pytest.mark.parametrize("make,values,final",
                         _serving(SELECTION_CASES, [None, "slickdeque", "slideside", "flatfit", "flatfat"]))
def test_a_window_of_a_few_tuples_answers_their_fold(make, values, final) -> None:
    """A 40-slice window over ``values`` (one a slice): its fold, bit for bit. A None value was
    the group's empty partial (First answered 44, Last 2); the default plan and forced finals."""
    monoid = make()
    stream = Stream(monoid, final="shared", optimizer="triweave" if final is None else forced("panes", final))
    stream.add("w", Sliding(40, 1))
    for t, v in enumerate(values):
        stream.insert(t, v)
    results = stream.advance(math.inf)
    assert stream.final.groups
    for r in results:
        held = values[max(0, math.ceil(r.start)):max(0, math.ceil(r.end))]
        assert _exact(r.value) == _exact(_fold(monoid, held)), (r.start, r.end, held)


TIE_POOLS = [(Min, [0.0, -0.0, 1.0, 2, 2.0]), (Max, [0.0, -0.0, -1.0, 2, 2.0]), (MinCount, [0.0, -0.0, 1.0, 2, 2.0]),
             (MaxCount, [0.0, -0.0, -1.0, 2, 2.0]), (First, [None, 0.0, -0.0, 1]), (Last, [None, 0.0, -0.0, 1])]


@pytest.mark.parametrize("make,pool,final", _serving(TIE_POOLS, ["slickdeque", "slideside", "flatfit", "flatfat"]))
@pytest.mark.parametrize("seed", range(3))
def test_ties_of_many_windows_answer_the_fold(make, pool, final, seed) -> None:
    """Sliding windows of 3, 5 and 40 slices over ties of 0.0 / -0.0 and 2 / 2.0: every window
    its fold, bit for bit (SlideSide's suffix scan put the newer operand first for a commutative
    monoid, FlatFAT's full window read the root of a wrapped buffer: a tie answered the newer one,
    for MinCount too, commutative but with ordered ties)."""
    monoid = make()
    rng = random.Random(seed)
    values = [rng.choice(pool) for _ in range(120)]
    stream = Stream(monoid, final="shared", optimizer=forced("panes", final))
    for size in (3, 5, 40):
        stream.add(f"w{size}", Sliding(size, 1))
    for t, v in enumerate(values):
        stream.insert(t, v)
    results = stream.advance(len(values))
    assert len(results) > 300
    for r in results:
        held = values[max(0, r.start):r.end]
        assert _exact(r.value) == _exact(_fold(monoid, held)), (r.query, r.start, r.end)
