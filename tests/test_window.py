"""``mta.Window``: argument checking, rejected updates leave no trace, policy plumbing."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import (ALGORITHM_NAMES, BASELINES, TREE_ALGORITHMS, CountingStore, WindowOracle, hsettings,
                      record_monoid, supports)
from kvs import MemoryStore
from mta import (Agg, Collect, Count, First, Max, MaxSize, Mean, MonoidError, Record, Sum, Variance,
                 TimeRange, Window, all_of, any_of)
from mta.monoid import Monoid


def state(window: Window) -> tuple:
    """Everything observable about a window."""
    return len(window), window.query(), window.partial(), list(window)


def filled(name: str = "amta", policy: Any = None, monoid: Monoid | None = None) -> Window:
    window = Window(monoid or Sum(), policy, algorithm=name)
    for ts, value in [(1, 5), (2, 7), (2, 1), (4, 3)]:
        window.insert(ts, value)
    return window


# --------------------------------------------------------------------------- construction

@pytest.mark.parametrize("algorithm", ["nope", "AMTA", "", None, 3])
def test_unknown_algorithm_names_the_choices(algorithm) -> None:
    with pytest.raises(ValueError) as info:
        Window(Sum(), algorithm=algorithm)
    message = str(info.value)
    assert repr(algorithm) in message
    assert all(name in message for name in ALGORITHM_NAMES)


@pytest.mark.parametrize("name", BASELINES)
def test_store_passed_to_a_baseline_is_refused(name) -> None:
    with pytest.raises(ValueError, match=name):
        Window(Sum(), algorithm=name, store=MemoryStore())


@pytest.mark.parametrize("name", TREE_ALGORITHMS)
def test_tree_algorithms_use_the_store_they_are_given(name) -> None:
    store = CountingStore()
    window = Window(Sum(), MaxSize(3000), algorithm=name, store=store, buffer_size=8, cache_size=4)
    for ts in range(5000):
        window.insert(ts, ts)
    assert store.counts["extend"] > 0 and store.counts["read"] > 0
    assert window.query() == sum(range(2000, 5000)) and len(window) == 3000


@pytest.mark.parametrize("name", TREE_ALGORITHMS)
@pytest.mark.parametrize("options", [{"buffer_size": 0}, {"cache_size": 0}])
def test_tree_options_are_validated(name, options) -> None:
    with pytest.raises(ValueError):
        Window(Sum(), algorithm=name, **options)


@pytest.mark.parametrize("monoid", [Max(), First(), Record(s=Sum(), f=First())], ids=repr)
def test_subtract_on_evict_needs_an_invertible_monoid(monoid) -> None:
    with pytest.raises(TypeError, match="invertible"):
        Window(monoid, algorithm="subtract_on_evict")


def test_subtract_on_evict_takes_invertible_monoids() -> None:
    for monoid in (Sum(), Count(), Mean(), Collect(), Record(s=Sum(), n=Count())):
        window = Window(monoid, MaxSize(2), algorithm="subtract_on_evict")
        for ts, v in enumerate([4, 8, 16]):
            window.insert(ts, v)
        assert len(window) == 2


@pytest.mark.parametrize("monoid", [Sum, "sum", None, 0])
def test_monoid_must_be_a_monoid_instance(monoid) -> None:
    with pytest.raises(TypeError):
        Window(monoid)


@pytest.mark.parametrize("policy", [5, "MaxSize(3)", [MaxSize(3)], object()])
def test_non_callable_policy_is_refused(policy) -> None:
    with pytest.raises(TypeError, match="callable"):
        Window(Sum(), policy)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_no_policy_keeps_everything(name) -> None:
    window = Window(Sum(), algorithm=name)
    assert window.algorithm == name and name in repr(window)
    assert [window.insert(ts, 1) for ts in range(100)] == [0] * 100
    assert len(window) == 100 and window.query() == 100
    window.evict(40)
    assert len(window) == 60 and window.query() == 60


# --------------------------------------------------------------------------- rejected updates

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@pytest.mark.parametrize("policy", [None, MaxSize(3), TimeRange(10)], ids=repr)
def test_decreasing_timestamp_is_refused_and_changes_nothing(name, policy) -> None:
    window = filled(name, policy)
    before = state(window)
    with pytest.raises(ValueError, match="non-decreasing"):
        window.insert(3.999, 1)
    assert state(window) == before
    window.insert(4, 2)  # equal timestamps are fine
    oracle = WindowOracle(Sum(), policy)
    for ts, value in [(1, 5), (2, 7), (2, 1), (4, 3), (4, 2)]:
        oracle.insert(ts, value)
    assert list(window) == oracle.partials() and window.query() == oracle.query()


@pytest.mark.parametrize("timestamp, error", [
    (math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
    (True, TypeError), (False, TypeError), ("5", TypeError), (None, TypeError),
    (5 + 0j, TypeError),
])
@pytest.mark.parametrize("name", ["amta", "log_mta", "naive"])
def test_bad_timestamps_are_refused_and_change_nothing(name, timestamp, error) -> None:
    window = filled(name, TimeRange(10))
    before = state(window)
    with pytest.raises(error):
        window.insert(timestamp, 1)
    assert state(window) == before
    with pytest.raises(error):
        window.insert_many([(5, 1), (timestamp, 1)])
    assert state(window) == before


UNLIFTABLE = [(Sum(), "x"), (Sum(), math.nan), (Sum(), math.inf), (Sum(), None), (Sum(), True),
              (Max(), math.nan), (Mean(), "1"), (Record(s=Sum(), n=Count()), {"s": 1})]


@pytest.mark.parametrize("name, monoid, value", [
    pytest.param(name, monoid, value, id=f"{name}-{monoid!r}-{value!r}")
    for name in ALGORITHM_NAMES for monoid, value in UNLIFTABLE if supports(name, monoid)])
def test_value_the_monoid_cannot_lift_changes_nothing(name, monoid, value) -> None:
    window = filled(name, MaxSize(3), monoid)
    before = state(window)
    with pytest.raises(MonoidError):
        window.insert(100, value)
    assert state(window) == before
    # the rejected update did not move the timestamp order forward either
    window.insert(5, 2)
    assert len(window) == 3


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_insert_many_rejects_the_whole_batch(name) -> None:
    window = filled(name, TimeRange(10))
    before = state(window)
    batches = [
        ([(5, 1), (6, 2), (7, 3), (8, "x")], MonoidError, "update 3"),
        ([(5, 1), (6, math.nan)], MonoidError, "update 1"),
        ([(5, 1), (6, 2), (5.5, 3)], ValueError, "update 2"),
        ([(5, 1), (3, 2)], ValueError, "update 1"),
        ([(4, 1)] * 4 + [(math.inf, 1)], ValueError, "update 4"),
        ([(5, 1), (6, 2, 3)], TypeError, "update 1"),
        ([(5, 1), 7], TypeError, "update 1"),
        ([(True, 1)], TypeError, "update 0"),
    ]
    for batch, error, where in batches:
        with pytest.raises(error, match=where):
            window.insert_many(batch)
        assert state(window) == before
        with pytest.raises(error, match=where):
            window.insert_many(iter(batch))
        assert state(window) == before


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_insert_many_equals_inserting_one_by_one(name) -> None:
    updates = [(ts // 3, ts % 7) for ts in range(200)]
    one = Window(Sum(), any_of(TimeRange(9), MaxSize(20)), algorithm=name)
    many = Window(Sum(), any_of(TimeRange(9), MaxSize(20)), algorithm=name)
    evicted = sum(one.insert(ts, v) for ts, v in updates)
    assert many.insert_many(u for u in updates) == evicted
    assert state(many) == state(one)
    assert many.insert_many([]) == 0
    with pytest.raises(ValueError):  # the batch continues from the newest timestamp
        many.insert_many([(updates[-1][0] - 1, 0)])


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=60),
       st.lists(st.integers(1, 25), min_size=1, max_size=6),
       st.sampled_from(["count", "time", "any", "all", "user"]))
@hsettings(max_examples=60)
def test_batches_leave_the_window_of_one_by_one_insertion(steps, cuts, kind) -> None:
    """Batchable policies are enforced once per batch, or once after several with
    ``enforce=False``; the window and the evictions are the same."""
    policy = {"count": MaxSize(7), "time": TimeRange(5), "any": any_of(MaxSize(7), TimeRange(5)),
              "all": all_of(MaxSize(4), TimeRange(3)),
              "user": lambda total, old: total.count - old.count >= 6}[kind]  # not batchable: per update
    updates, ts = [], 0
    for gap, value in steps:
        ts += gap
        updates.append((ts, value))
    one, many, deferred = Window(Collect(), policy), Window(Collect(), policy), Window(Collect(), policy)
    evicted_one = sum(one.insert(t, v) for t, v in updates)
    evicted_many = evicted_deferred = start = 0
    sizes = itertools.cycle(cuts)
    while start < len(updates):  # batches of the drawn sizes, in turn, until every update is in
        cut = next(sizes)
        batch = updates[start:start + cut]
        evicted_many += many.insert_many(batch)
        # as the server's slices: a batchable policy only enforced with the last one
        evicted_deferred += deferred.insert_checked(deferred.check(*zip(*batch)), enforce=start + cut >= len(updates))
        start += cut
    assert (list(many), many.query(), evicted_many) == (list(one), one.query(), evicted_one)
    assert (list(deferred), deferred.query(), evicted_deferred) == (list(one), one.query(), evicted_one)


def test_a_batch_is_committed_whole(tmp_path) -> None:
    """No commit in the middle of insert_many, one right after it if a write buffer filled
    up: a checkpoint has all of a batch or none of it."""
    import kvs
    backend = kvs.connect(tmp_path / "w.db")
    w = Window(Sum(), TimeRange(1000), store=backend, window_id="b", buffer_size=8, block_size=4,
               background=False)
    commits = backend.round_trips.writes
    w.insert_many((ts, 1) for ts in range(500))
    assert backend.round_trips.writes == commits + 1
    assert Window.open(backend, "b", Sum(), TimeRange(1000), take_over=True).query() == 500


# --------------------------------------------------------------------------- policies in the window

class PolicyFailure(Exception):
    pass


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_a_policy_that_raises_propagates(name) -> None:
    def policy(total, old):
        if total.count > 3:
            raise PolicyFailure("boom")
        return False

    window = Window(Sum(), policy, algorithm=name)
    for ts in range(3):
        window.insert(ts, 1)
    with pytest.raises(PolicyFailure, match="boom"):
        window.insert(3, 1)


@pytest.mark.parametrize("name", [n for n in ALGORITHM_NAMES if supports(n, record_monoid())])
def test_record_policy_sees_field_views(name) -> None:
    monoid = record_monoid()
    seen = []

    def policy(total, old):
        assert isinstance(total, Agg) and isinstance(old, Agg)
        seen.append((total.value.sum, total.value.n, old.value.first, old.count))
        assert total.value.n == total.count and old.value.n == old.count
        return total.value.sum - old.value.sum >= 10  # keep the newest that sum to < 10

    window = Window(monoid, policy, algorithm=name)
    oracle = WindowOracle(monoid, policy)
    for ts, v in enumerate([3, 4, 5, 6, 1, 1, 9, 0, 2]):
        assert window.insert(ts, v) == oracle.insert(ts, v)
        assert list(window) == oracle.partials()
        assert window.query() == oracle.query()
        assert window.query()["sum"] >= 10 or len(window) == ts + 1
    assert seen and window.query() == {"n": 3, "sum": 11, "max": 9, "first": 9, "last": 2}


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_user_policy_sees_counts_and_timestamps(name) -> None:
    calls = []

    def policy(total, old):
        calls.append((total.count, total.last, old.count, old.last))
        return False

    window = Window(Sum(), policy, algorithm=name)
    window.insert(10, 1)
    window.insert(12, 1)
    window.insert(12, 1)
    assert calls and all(c[0] >= c[2] >= 1 for c in calls)
    last_of_prefix = {1: 10, 2: 12, 3: 12}
    final = [c for c in calls if c[0] == 3]
    assert final and all(c[1] == 12 and c[3] == last_of_prefix[c[2]] for c in final)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_policy_sees_the_same_totals_after_evictions(name) -> None:
    # Every algorithm, subtract_on_evict's running total included, shows the policy
    # the count and newest timestamp of the window that is left.
    seen = []

    def keep_three(total, old):
        seen.append((total.count, total.last, old.count, old.last))
        return total.count - old.count >= 3

    window = Window(Sum(), keep_three, algorithm=name)
    for ts in range(0, 60, 10):
        window.insert(ts, 1)
    assert len(window) == 3 and window.query() == 3
    totals = {(count, last) for count, last, _, _ in seen}
    assert totals == {(1, 0), (2, 10), (3, 20), (4, 30), (4, 40), (4, 50)}
    oldest_kept = {0: 0, 10: 0, 20: 0, 30: 0, 40: 10, 50: 20}
    assert all(old_last >= oldest_kept[last] for _, last, _, old_last in seen)


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_max_size_zero_keeps_nothing(name) -> None:
    for policy in (MaxSize(0), any_of(MaxSize(0)), all_of(MaxSize(0), MaxSize(0))):
        window = Window(Sum(), policy, algorithm=name)
        for ts in range(5):
            assert window.insert(ts, 7) == 1
            assert len(window) == 0 and window.query() == 0 and list(window) == []


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@pytest.mark.parametrize("width", [1, 2.5, 10])
def test_time_range_keeps_last_minus_width_exclusive_to_last(name, width) -> None:
    window = Window(Collect(), TimeRange(width), algorithm=name)
    stamps = [0, 0, 0.5, 1, 1, 2.5, 3.5, 3.5, 6, 10, 12.5, 12.5, 40]
    for i, ts in enumerate(stamps):
        window.insert(ts, i)
        expected = [j for j, t in enumerate(stamps[:i + 1]) if ts - width < t <= ts]
        assert window.query() == expected


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_duplicate_timestamps_enter_and_leave_together(name) -> None:
    window = Window(Sum(), TimeRange(5), algorithm=name)
    for _ in range(50):
        assert window.insert(100, 1) == 0
    assert len(window) == 50
    assert window.insert(104.5, 1) == 0
    assert window.insert(105, 1) == 50  # every update at 100 leaves at once
    assert len(window) == 2 and window.query() == 2


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_combined_policies_in_a_window(name) -> None:
    tight = Window(Sum(), any_of(TimeRange(10), MaxSize(3)), algorithm=name)
    loose = Window(Sum(), all_of(TimeRange(10), MaxSize(3)), algorithm=name)
    for ts in [0, 1, 2, 3, 4, 20, 21, 22, 23, 24, 25]:
        tight.insert(ts, ts)
        loose.insert(ts, ts)
        # any_of: within 10 AND at most 3; all_of: within 10 OR among the newest 3
        recent = [t for t in range(ts + 1) if t in (0, 1, 2, 3, 4, 20, 21, 22, 23, 24, 25)]
        newest3 = recent[-3:]
        in_range = [t for t in recent if t > ts - 10]
        assert list(tight) == [t for t in recent if t in in_range and t in newest3]
        assert list(loose) == [t for t in recent if t in in_range or t in newest3]


# --------------------------------------------------------------------------- other operations

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_evict_and_clear(name) -> None:
    window = filled(name, TimeRange(100))
    window.evict(2)
    assert list(window) == [1, 3] and window.query() == 4
    with pytest.raises(ValueError):
        window.evict(3)
    assert list(window) == [1, 3]
    window.clear()
    assert state(window) == (0, 0, 0, [])
    window.insert(-50, 9)  # the timestamp order restarts after clear
    assert list(window) == [9]


@pytest.mark.parametrize("name", [n for n in ALGORITHM_NAMES if supports(n, Mean())])
def test_partial_and_query(name) -> None:
    window = Window(Mean(), MaxSize(2), algorithm=name)
    assert window.partial() == (0, 0) and window.query() is None
    for ts, v in enumerate([1, 2, 6]):
        window.insert(ts, v)
    assert window.partial() == (8, 2) and window.query() == 4
    assert list(window) == [(2, 1), (6, 1)]


@given(st.lists(st.tuples(st.integers(1, 200), st.integers(0, 40)), min_size=1, max_size=12),
       st.sampled_from(["time", "count", "none"]), st.sampled_from(["amta", "log_mta"]))
@hsettings(max_examples=60, deadline=None)
def test_large_batches_cross_chunks_and_merges_like_single_insertions(batches, kind, name) -> None:
    """insert_many's runs (folded at once up to the next chunk or tree merge) against
    insert one by one, with evictions between batches, on a non-commutative monoid."""
    policy = {"time": TimeRange(150), "count": MaxSize(300), "none": None}[kind]
    one, many = Window(Collect(), policy, algorithm=name), Window(Collect(), policy, algorithm=name)
    ts = 0
    for size, evict in batches:
        updates = [(ts + i // 2, ts + i) for i in range(size)]
        ts += size
        for t, v in updates:
            one.insert(t, v)
        many.insert_many(updates)
        k = min(evict, len(one))
        one.evict(k)
        many.evict(k)
        assert (list(many), many.query()) == (list(one), one.query())


@given(st.lists(st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                          st.booleans(), st.fractions(), st.just("x")), max_size=8))
@hsettings(max_examples=200)
def test_lift_many_equals_lifting_one_by_one(values) -> None:
    from mta.monoid import Count, Max, Mean, Min

    for monoid in (Sum(), Count(), Min(), Max(), Mean()):
        try:
            expected = [monoid.lift(v) for v in values]
        except (TypeError, ValueError) as error:
            with pytest.raises(type(error)):
                monoid.lift_many(values)
            continue
        assert monoid.lift_many(values) == expected


# --------------------------------------------------------------------------- eviction by time

@pytest.mark.parametrize("name", ALGORITHM_NAMES)
@given(times=st.lists(st.integers(0, 50), max_size=40).map(sorted), cuts=st.lists(st.integers(-5, 60), max_size=5))
@hsettings(max_examples=40)
def test_evict_before_removes_exactly_the_older_updates(name, times, cuts) -> None:
    """Non-commutative (Collect), duplicate timestamps, cuts before, inside and past the window."""
    options = {"buffer_size": 1, "cache_size": 1} if name in TREE_ALGORITHMS else {}
    window = Window(Collect(), TimeRange(1000), algorithm=name, **options)
    window.insert_many([(t, i) for i, t in enumerate(times)])
    kept = list(enumerate(times))
    for cut in cuts:
        evicted = window.evict_before(cut)
        before = len(kept)
        kept = [(i, t) for i, t in kept if t >= cut]
        assert evicted == before - len(kept)
        assert window.query() == [i for i, _ in kept]
        assert window.oldest_timestamp() == (kept[0][1] if kept else None)


def test_evict_before_needs_a_window_that_keeps_timestamps() -> None:
    for policy in (None, MaxSize(3)):
        window = filled(policy=policy)
        before = state(window)
        with pytest.raises(TypeError, match="keeps timestamps"):
            window.evict_before(3)
        with pytest.raises(TypeError, match="keeps timestamps"):
            window.oldest_timestamp()
        assert state(window) == before


@pytest.mark.parametrize("algorithm", ["amta", "two_stacks", "daba", "log_mta", "fiba"])
def test_window_mixing_fractions_and_numpy_floats(algorithm):
    """Every update is lifted to an int, a Fraction or a float, which combine without error
    (numpy's longdouble with a Fraction raised from combine, after the update was stored)."""
    np = pytest.importorskip("numpy")
    w = Window(Sum(), MaxSize(2), algorithm=algorithm)
    for t, v in enumerate([Fraction(1, 3), np.longdouble(0.25), np.float32(0.5), Fraction(1, 7)]):
        w.insert(t, v)
    assert w.query() == 0.5 + Fraction(1, 7) and len(w) == 2


@pytest.mark.parametrize("algorithm", ["amta", "fiba"])
@pytest.mark.parametrize("monoid", [Sum(), Mean(), Count(), Max(), Variance()], ids=repr)
def test_check_takes_numpy_columns_and_gives_python_numbers(algorithm, monoid):
    """``check`` of numeric numpy columns (what the gRPC server decodes) gives what it gives
    for the same columns as lists, and refuses the same updates, naming them."""
    np = pytest.importorskip("numpy")
    windows = [Window(monoid, TimeRange(10), algorithm=algorithm) for _ in range(2)]
    for w in windows:
        w.insert(0, 1)
    arrays = windows[0].check(np.array([1, 2, 2], dtype=np.int64), np.array([1.5, 2.5, -0.0]))
    lists = windows[1].check([1, 2, 2], [1.5, 2.5, -0.0])
    assert type(arrays[0]) is list and repr(arrays) == repr((list(lists[0]), list(lists[1])))
    bad = [(np.array([1.0, np.nan]), np.array([1.0, 2.0]), "update 1")]
    if algorithm == "amta":
        bad.append((np.array([3, 2]), np.array([1.0, 2.0]), "update 1"))
    if not isinstance(monoid, Count):
        bad.append((np.array([1, 2]), np.array([1.0, np.nan]), "update 1"))
    for ts, values, message in bad:
        with pytest.raises(ValueError, match=message):
            windows[0].check(ts, values)


@pytest.mark.parametrize("algorithm", ["amta", "two_stacks", "daba", "log_mta", "flatfat", "fiba", "btree", "sorted"])
@pytest.mark.parametrize("policy", [MaxSize(3), TimeRange(5)], ids=repr)
def test_windows_over_a_record_pickle(algorithm, policy):
    """A Record's combine is generated code, which pickle cannot name: the algorithms (and
    the timed monoid) leave it out of their state and take it back from the monoid."""
    import copy
    import pickle

    window = Window(Record(s=Sum(), m=Max(), c=Collect()), policy, algorithm=algorithm)
    for t in range(8):
        window.insert(t, t * 1.5)
    twins = [pickle.loads(pickle.dumps(window)), copy.deepcopy(window)]
    for t in range(8, 12):
        for w in (window, *twins):
            w.insert(t, t)
        for twin in twins:
            assert twin.query() == window.query() and list(twin) == list(window)


@pytest.mark.parametrize("algorithm", ["amta", "two_stacks", "fiba"])
def test_numpy_scalar_timestamps_are_taken_as_python_numbers(algorithm):
    """As values are: np.int64 as an int, numpy floats as a float (numpy ints were refused,
    and np.float64 came back out of oldest_timestamp as numpy)."""
    np = pytest.importorskip("numpy")
    window = Window(Sum(), TimeRange(10), algorithm=algorithm)
    window.insert(np.int64(5), 1)
    window.insert(np.float32(6.5), 2)
    window.insert(np.float64(7.5), 3)
    assert window.query() == 6 and repr(window.oldest_timestamp()) == "5"
    timestamps, _ = window.check([np.int64(8), np.float64(9.25)], [1, 2])
    assert [repr(t) for t in timestamps] == ["8", "9.25"]
    for bad in (np.bool_(True), "7", np.float64("nan")):
        with pytest.raises((TypeError, ValueError), match="timestamp"):
            window.insert(bad, 1)
    assert window.query() == 6 and len(window) == 3


def test_a_stored_window_refuses_to_pickle_saying_how_to_reopen_it():
    import pickle

    window = Window(Sum(), MaxSize(3), store=MemoryStore())
    window.insert(1, 2)
    with pytest.raises(TypeError, match="stored window does not pickle.*Window.open"):
        pickle.dumps(window)
    assert window.query() == 2
