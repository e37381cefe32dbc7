"""The slice edges of many context-free queries (mta.stream.edges) and the engine on them.

``EdgeSet.around`` against the naive union of the specs' own ``floor_edge``/``next_edge``
(integer and float specs, times in and out of order); ``first_needed`` against every spec;
and the engine with many sliding queries of random sizes and slides, sessions and count
windows on the same stream, out of order with late updates, against the oracle.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from mta import Collect, Stream, Sum
from mta.stream.edges import EdgeSet, first_needed
from mta.stream.shared import Ticks
from mta.stream.slices import TimeSlices
from mta.windows import Sliding, Tumbling
from test_stream_properties import FINALS, MONOIDS, Run, scenarios

int_specs = st.builds(Sliding, st.integers(1, 40), st.integers(1, 25), st.integers(-30, 30))
float_specs = st.builds(Sliding, st.integers(1, 40).map(lambda n: n / 10), st.sampled_from([0.1, 0.25, 0.3, 1 / 3, 0.7, 2]),
                        st.sampled_from([0, 0.05, -0.2, 1.5]))
specs = st.lists(int_specs | float_specs | st.builds(Tumbling, st.integers(1, 30)), min_size=1, max_size=40)
times = st.integers(-200, 400) | st.integers(-2000, 4000).map(lambda n: n / 10) | st.floats(-300, 300)


def naive(specs: list, t: Any) -> tuple[Any, Any]:
    return max(s.floor_edge(t) for s in specs), min(s.next_edge(t) for s in specs)


def same(a: Any, b: Any) -> bool:
    """Equal values of one type (floats bit for bit)."""
    return type(a) is type(b) and (a.hex() == b.hex() if type(a) is float else a == b)


@hsettings(max_examples=300)
@given(specs=specs, ts=st.lists(times, min_size=1, max_size=60), in_order=st.booleans())
def test_edge_set_is_the_union_of_the_specs_edges(specs: list, ts: list, in_order: bool) -> None:
    edges = EdgeSet(specs)
    kinds = {s._exact is None for s in specs}
    for t in sorted(ts) if in_order else ts:
        got, want = edges.around(t), naive(specs, t)
        assert got == want, (t, got, want)
        assert got[0] <= t < got[1]
        if len(kinds) == 1:  # one kind of spec: the same ints, or the same floats bit for bit
            assert same(got[0], want[0]) and same(got[1], want[1]), (t, got, want)


def test_edge_set_merges_specs_of_one_slide():
    """1,000 queries Sliding(k * 30, 1000): one group of 100 residues (not 1,000 specs)."""
    specs = [Sliding(k * 30, 1000) for k in range(1, 1001)]
    edges = EdgeSet(specs)
    assert len(edges.groups) == 1 and len(edges.groups[0].residues) == 100
    for t in range(-50, 3000, 7):
        assert edges.around(t) == naive(specs, t)
    assert EdgeSet([]).around(5) == (float("-inf"), float("inf"))


def test_a_subclass_with_its_own_arithmetic_is_asked_itself():
    class Shifted(Sliding):
        def floor_edge(self, t: Any) -> Any:
            return super().floor_edge(t - 1) + 1

        def next_edge(self, t: Any) -> Any:
            return super().next_edge(t - 1) + 1

    specs = [Shifted(10, 10), Sliding(7, 7)]
    edges = EdgeSet(specs)
    for t in range(-30, 60):
        assert edges.around(t) == naive(specs, t)


@hsettings(max_examples=200)
@given(specs=specs, horizon=times)
def test_first_needed_keeps_the_earliest_start(specs: list, horizon: Any) -> None:
    def start(s: Sliding) -> Any:
        return s.start(s.first_ending_after(horizon))
    kept = first_needed(specs)
    assert all(any(k is s for s in specs) for k in kept)
    assert min(start(s) for s in kept) == min(start(s) for s in specs)


@pytest.mark.parametrize("monoid", ["sum", "collect"])
@hsettings(max_examples=60)
@given(data=st.data())
def test_many_sliding_queries_with_sessions_and_counts(monoid: str, data: Any) -> None:
    """Up to 12 sliding and tumbling queries of random sizes, slides and offsets, a session and
    a count window, out of order with late tuples, every final: the oracle's results."""
    n = data.draw(st.integers(2, 10), label="sliding queries")
    kinds = ("sliding",) * n + ("tumbling", "tumbling", "session", "count")
    queries, ops, allowed = data.draw(scenarios(kinds, max_ops=40, extra_queries=0, lateness=st.integers(0, 10)),
                                      label="scenario")
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS), label="final")).run(ops)


def test_thousand_sliding_queries_match_one_at_a_time():
    """The benchmark's queries Sliding(k * 30, 1000) on one stream: each query's windows as a
    stream with that query alone computes them (the slices cut by 1,000 queries' edges)."""
    shared = Stream(Sum())
    queries = [(f"s{k}", Sliding(k * 37, 1000, k % 5)) for k in range(1, 121)]
    for name, spec in queries:
        shared.add(name, spec)
    alone = {name: Stream(Sum()) for name, _ in queries}
    for name, spec in queries:
        alone[name].add(name, spec)
    got: list = []
    want: list = []
    for second in range(6):
        for ts in range(second * 1000, second * 1000 + 1000, 13):
            shared.insert(ts, ts % 97)
            for s in alone.values():
                s.insert(ts, ts % 97)
        got += [(r.query, r.start, r.end, r.value, r.count) for r in shared.advance(second * 1000 + 500)]
        for s in alone.values():
            want += [(r.query, r.start, r.end, r.value, r.count) for r in s.advance(second * 1000 + 500)]
    assert got and sorted(got) == sorted(want)


@pytest.mark.parametrize("monoid", [Sum(), Collect()], ids=["commutative", "non-commutative"])
@hsettings(max_examples=200)
@given(ops=st.lists(st.tuples(st.sampled_from(["append", "late", "late", "cut", "drop", "load"]), st.integers(0, 60)),
                    max_size=80))
def test_slice_counts_by_prefix_sums(monoid: Any, ops: list) -> None:
    """``TimeSlices.count(i, j)`` is ``sum(counts[i:j])`` after appends, late tuples (into old
    slices, before, between and after their tuples, and into gaps), cuts (splits), drops, a
    load from state, and the newest slice's count written in place as the typed ingest does."""
    edges = EdgeSet([Sliding(7, 5), Sliding(4, 4, 1)])
    slices = TimeSlices(monoid, edges.around, keep_tuples=True)
    newest = 0
    for op, x in ops:
        if op == "append":
            newest += x % 4
            slices.append(newest, monoid.lift(newest))
            if x % 3 == 0 and monoid.commutative:  # the typed ingest folds into the newest slice without append
                slices.counts[-1] += 1
        elif op == "late" and len(slices):
            ts = newest - x % 20
            if ts >= slices.low:
                slices.insert_late(ts, monoid.lift(ts))
        elif op == "cut" and len(slices) and slices.starts[0] < newest - x % 20 >= slices.low:
            slices.cut(newest - x % 20)
        elif op == "drop":
            slices.drop_before(newest - x)
        elif op == "load":
            slices.load(slices.state())
        n = len(slices)
        for i in range(n + 1):
            for j in range(i, n + 1):
                assert slices.count(i, j) == sum(slices.counts[i:j]), (i, j, slices.counts)


# ---------------------------------------------------------------- window index search (the huge-time hang)

search_specs = int_specs | float_specs | st.builds(Tumbling, st.integers(1, 30)) | st.builds(Tumbling, st.sampled_from([0.5, 0.1, 1 / 3]))
moderate_times = st.integers(-10**6, 10**6) | st.integers(-10**7, 10**7).map(lambda n: n / 10) | st.floats(-1e6, 1e6)
huge_times = st.floats(1e15, 1e308) | st.floats(-1e308, -1e15)


def brute_edges(spec: Sliding, t: Any) -> tuple:
    """Every window index near t scanned: the smallest k with start(k) > t, with end(k) > t,
    and the largest start or end <= t and smallest > t (moderate t: the float estimate of k
    is within a window or two, so +-8 windows around it hold every edge near t)."""
    lo = int((t - spec.size - spec.offset) // spec.slide) - 8
    hi = int((t - spec.offset) // spec.slide) + 8
    assert spec.start(lo) <= t < spec.start(hi) and spec.end(lo) <= t < spec.end(hi)
    ks = range(lo, hi + 1)
    edges = [spec.start(k) for k in ks] + [spec.end(k) for k in ks]
    return (min(k for k in ks if spec.start(k) > t), min(k for k in ks if spec.end(k) > t),
            max(e for e in edges if e <= t), min(e for e in edges if e > t))


def searched(spec: Sliding, t: Any) -> tuple:
    return spec.first_starting_after(t), spec.first_ending_after(t), spec.floor_edge(t), spec.next_edge(t)


@hsettings(max_examples=300)
@given(search_specs, moderate_times)
def test_window_index_search_is_the_brute_force_one(spec: Sliding, t: Any) -> None:
    got, want = searched(spec, t), brute_edges(spec, t)
    assert got[:2] == want[:2]
    assert same(got[2], want[2]) and same(got[3], want[3])
    assert all(same(a, b) for a, b in zip(EdgeSet([spec]).around(t), want[2:]))


@hsettings(max_examples=300)
@given(search_specs, huge_times)
def test_window_index_search_at_huge_times_brackets_t_with_the_spec_own_edges(spec: Sliding, t: float) -> None:
    """At |t| up to 1e308 (the estimate off by up to ulp(t) / slide windows) the indexes found
    bracket t by the spec's own start(k)/end(k), the merged progressions give the same floats,
    and ``shared.Ticks`` finds the tick whose edge is the last <= t."""
    k = spec.first_starting_after(t)
    assert spec.start(k - 1) <= t < spec.start(k)
    j = spec.first_ending_after(t)
    assert spec.end(j - 1) <= t < spec.end(j)
    below = max(spec.start(k - 1), spec.end(j - 1))
    above = min(spec.start(k), spec.end(j))
    assert same(spec.floor_edge(t), below) and same(spec.next_edge(t), above)
    assert all(same(a, b) for a, b in zip(EdgeSet([spec]).around(t), (below, above)))
    ticks = Ticks([spec.size, spec.slide, spec.offset])
    n = ticks(t)
    unit = ticks.unit
    assert n * unit.numerator / unit.denominator <= t < (n + 1) * unit.numerator / unit.denominator
