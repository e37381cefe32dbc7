"""The Stream engine by example: the API, bad input, lateness, state, keys and shared work.

The property tests against a brute-force recomputation are in test_stream_properties.py.
"""

from __future__ import annotations

import math
import random

import pytest

import kvs
from mta import Collect, KeyedStream, Max, MaxSize, Mean, Record, Stream, Sum
from mta.counting import CountingMonoid
from mta.windows import Count, Policy, Punctuation, Session, Sliding, Tumbling


def dashboard(**options) -> Stream:
    s = Stream(Record(avg=Mean(), peak=Max()), **options)
    s.add("1m", Sliding(60, 10))
    s.add("5m", Sliding(300, 60))
    s.add("session", Session(gap=30))
    return s


def test_issue_example_runs_and_reports_each_window_once():
    s = dashboard(allowed_lateness=5.0)
    events = [(t, float(t % 17)) for t in range(0, 600, 3)]
    random.Random(7).shuffle(events)
    for ts, value in events:
        s.insert(ts, value)
    results = s.advance(600)
    one_minute = [r for r in results if r.query == "1m"]
    assert [(r.start, r.end) for r in one_minute] == [(start, start + 60) for start in range(-50, 550, 10)]
    last = one_minute[-1]
    inside = [v for t, v in events if 540 <= t < 600]
    assert last.count == len(inside)
    assert last.value["avg"] == pytest.approx(sum(inside) / len(inside))
    assert last.value["peak"] == max(inside)
    assert all(r.final for r in results)
    assert not [r for r in results if r.query == "session"]  # one session, open until 597 + 30
    later = s.advance(700)
    assert [(r.start, r.end, r.count) for r in later if r.query == "session"] == [(0, 627, len(events))]


def test_bad_input_names_the_problem_and_changes_nothing():
    s = Stream(Sum(), allowed_lateness=2)
    s.add("t", Tumbling(10))
    s.insert(1, 1)
    before = s.snapshot()
    for ts, value, error in [("1", 1, TypeError), (True, 1, TypeError), (math.nan, 1, ValueError),
                             (math.inf, 1, ValueError), (3, "x", ValueError)]:
        with pytest.raises(error):
            s.insert(ts, value)
    with pytest.raises(TypeError, match=r"updates\[1\]"):
        s.insert_many([(2, 1), ("late", 1)])
    with pytest.raises(ValueError, match="predicate"):
        p = Stream(Sum())
        p.add("p", Punctuation(lambda v: 1 / 0))
        p.insert_many([(1, 1)])
    with pytest.raises((TypeError, ValueError), match=r"updates\[2\]"):
        s.insert_many([(2, 1), (3, 1), (4, "x")])
    with pytest.raises(TypeError, match=r"updates\[0\]"):
        s.insert_many([(1, 2, 3)])
    with pytest.raises(TypeError, match="watermark"):
        s.advance("10")
    assert s.snapshot() == before
    with pytest.raises(ValueError, match="exists"):
        s.add("t", Sliding(5, 1))
    with pytest.raises(TypeError, match="window type"):
        s.add("u", MaxSize(3))
    with pytest.raises(KeyError):
        s.remove("nope")
    with pytest.raises(ValueError, match="slide"):
        Sliding(10, 0)
    with pytest.raises(ValueError, match="allowed_lateness"):
        Stream(Sum(), allowed_lateness=-1)
    with pytest.raises(ValueError, match="final"):
        Stream(Sum(), final="tree")


def test_ordered_stream_refuses_an_older_tuple():
    s = Stream(Sum(), ordered=True)
    s.add("t", Tumbling(10))
    s.insert(5, 1)
    with pytest.raises(ValueError, match="ordered=True"):
        s.insert(4, 1)
    with pytest.raises(ValueError, match=r"updates\[1\].*ordered=True"):
        s.insert_many([(6, 1), (5, 1)])
    assert [(r.start, r.value) for r in s.advance(10)] == [(0, 1)]


def test_lateness_boundary_update_drop_and_side_output():
    dropped = []
    s = Stream(Sum(), allowed_lateness=5, on_late=lambda ts, v: dropped.append((ts, v)))
    s.add("t", Tumbling(10))
    s.insert(3, 1)
    assert [(r.start, r.value, r.final) for r in s.advance(20)] == [(0, 1, True)]
    assert s.insert(15, 10) is True   # == watermark - lateness: taken
    assert s.insert(14.5, 100) is False  # just below: dropped
    assert s.dropped == 1 and dropped == [(14.5, 100)]
    assert [(r.start, r.value, r.final) for r in s.advance(20)] == [(10, 10, False)]
    s.insert(16, 1)
    assert [(r.start, r.value, r.final, r.count) for r in s.advance(21)] == [(10, 11, False, 2)]


def test_late_tuple_merges_two_sessions_and_names_what_it_replaces():
    s = Stream(Collect(), allowed_lateness=100)
    s.add("s", Session(gap=5))
    for ts in (0, 2, 10, 12):
        s.insert(ts, ts)
    first = s.advance(30)
    assert [(r.start, r.end, r.value) for r in first] == [(0, 7, [0, 2]), (10, 17, [10, 12])]
    s.insert(6, 6)  # 2 + 5 > 6 and 10 - 6 < 5: bridges both
    [merged] = s.advance(30)
    assert (merged.start, merged.end, merged.value, merged.final) == (0, 17, [0, 2, 6, 10, 12], False)
    assert set(merged.replaces) == {(0, 7), (10, 17)}


def test_punctuation_late_split_and_count_shift():
    s = Stream(Collect(), allowed_lateness=100)
    s.add("p", Punctuation(lambda v: v == "!"))
    s.add("c", Count(2))
    for ts, v in [(0, "!"), (1, "a"), (4, "b"), (10, "!"), (11, "c")]:
        s.insert(ts, v)
    got = [(r.query, r.start, r.end, r.value) for r in s.advance(20)]
    assert ("p", 0, 10, ["!", "a", "b"]) in got
    assert [g for g in got if g[0] == "c"] == [("c", 0, 2, ["!", "a"]), ("c", 2, 4, ["b", "!"])]
    s.insert(3, "!")  # a late punctuation splits [0, 10); every count window after position 2 shifts
    got = {(r.query, r.start, r.end): (r.value, r.replaces, r.final) for r in s.advance(20)}
    assert got[("p", 0, 3)] == (["!", "a"], ((0, 10),), False)
    assert got[("p", 3, 10)] == (["!", "b"], (), False)
    assert got[("c", 2, 4)] == (["!", "b"], (), False)


def test_policy_and_multi_measure_windows_follow_an_mta_window():
    s = Stream(Sum())
    s.add("last3", Count(3, every=10))
    s.add("max3", Policy(MaxSize(3), every=10))
    for ts in range(25):
        s.insert(ts, ts)
    got = {(r.query, r.end): (r.start, r.value, r.count) for r in s.advance(30)}
    for end in (10, 20, 30):
        last = [t for t in range(25) if t < end][-3:]
        assert got[("last3", end)] == got[("max3", end)] == (last[0], sum(last), 3)


def test_queries_added_and_removed_at_run_time():
    s = Stream(Sum())
    s.add("a", Tumbling(10))
    for ts in range(0, 30):
        s.insert(ts, 1)
    assert [r.end for r in s.advance(15)] == [10]
    s.add("b", Tumbling(5))  # from watermark 15 on: windows [15, 20), [20, 25)
    s.remove("a")
    assert [(r.query, r.start, r.count) for r in s.advance(25)] == [("b", 15, 5), ("b", 20, 5)]
    assert s.queries == {"b": Tumbling(5)}


@pytest.mark.parametrize("final", ["lazy", "auto", "eager", "amta", "fiba"])
def test_every_final_aggregation_gives_the_same_results(final):
    rng = random.Random(3)
    events = [(rng.randrange(0, 2000), rng.randrange(100)) for _ in range(3000)]

    def run(name: str) -> list:
        s = Stream(Collect(), allowed_lateness=50, final=name)
        s.add("long", Sliding(400, 10))
        s.add("short", Sliding(30, 10))
        out = []
        for n, (ts, v) in enumerate(events):
            s.insert(ts, v)
            if n % 100 == 99:
                out += s.advance(ts - 100)
        return out + s.advance(math.inf)

    assert run(final) == run("lazy")


def test_one_combine_per_tuple_into_slices_whatever_the_number_of_windows():
    """Slicing's point (paper section 3.4): a tuple is combined once, into one slice; and
    equal queries are computed once."""
    counting = CountingMonoid(Sum())
    s = Stream(counting, final="lazy")
    for k in range(100):
        s.add(f"t{k}", Tumbling(1 + k % 20))
    s.insert_many((i / 100, 1) for i in range(10_000))
    before = counting.calls
    s.advance(50)
    folded = counting.calls - before
    slices = 50  # one per second: the tumbling edges are whole seconds
    # Per slice, the first tuple starts it and the others combine; per window, its slices
    # minus one; and the 100 queries ask for 20 distinct windows, each computed once.
    assert folded == (5000 - slices) + sum((size - 1) * (50 // size) for size in range(1, 21))


def test_snapshot_restore_mid_stream_continues_identically():
    def build() -> Stream:
        s = Stream(Collect(), allowed_lateness=20)
        s.add("t", Sliding(20, 5))
        s.add("s", Session(7))
        s.add("c", Count(4, 3))
        s.add("m", Count(3, every=10))
        return s

    rng = random.Random(5)
    events = [(rng.randrange(0, 300), rng.randrange(10)) for _ in range(400)]
    a = build()
    for ts, v in events[:200]:
        a.insert(ts, v)
    a.advance(150)
    b = build()
    b.restore(a.snapshot())
    for s in (a, b):
        for ts, v in events[200:]:
            s.insert(ts, v)
    assert a.advance(400) == b.advance(400)
    other = Stream(Collect(), allowed_lateness=20)
    other.add("t", Sliding(20, 6))
    with pytest.raises(ValueError, match="snapshot is of a stream"):
        other.restore(a.snapshot())


@pytest.mark.parametrize("url", ["memory://", "file"])
def test_save_and_load_through_a_kvs_backend_with_one_writer(url, tmp_path):
    backend = kvs.connect(tmp_path / "store" if url == "file" else url)
    try:
        a = Stream(Sum())
        a.add("t", Tumbling(10))
        a.insert(1, 5)
        a.save(backend, "clicks")
        b = Stream(Sum())
        b.add("t", Tumbling(10))
        with pytest.raises(kvs.StoreError):
            b.load(backend, "clicks")  # a holds it
        a.close()
        b.load(backend, "clicks")
        b.insert(2, 6)
        assert [(r.start, r.value) for r in b.advance(10)] == [(0, 11)]
        b.save(backend, "clicks")
        b.close()
    finally:
        backend.close()


def test_save_and_load_on_redis(redis_url):
    backend = kvs.connect(redis_url)
    try:
        a = Stream(Sum(), allowed_lateness=5)
        a.add("s", Session(3))
        a.insert(1, 1)
        a.save(backend, "stream-redis-test")
        a.close()
        b = Stream(Sum(), allowed_lateness=5)
        b.add("s", Session(3))
        b.load(backend, "stream-redis-test")
        b.insert(2, 2)
        assert [(r.start, r.end, r.value) for r in b.advance(10)] == [(1, 5, 3)]
        b.close()
        backend.delete("stream-redis-test")
    finally:
        backend.close()


def test_keyed_stream_keeps_one_state_per_key():
    k = KeyedStream(Sum(), allowed_lateness=5)
    k.add("t", Tumbling(10))
    k.insert_many([("a", 1, 1), ("b", 2, 10), ("a", 3, 2)])
    got = sorted((r.key, r.start, r.value) for r in k.advance(10))
    assert got == [("a", 0, 3), ("b", 0, 10)]
    k.insert("a", 11, 1)
    state = k.snapshot_key("a")
    copy = KeyedStream(Sum(), allowed_lateness=5)
    copy.add("t", Tumbling(10))
    copy.restore_key("a", state)
    assert [(r.key, r.value) for r in copy.advance(20)] == [(r.key, r.value) for r in k.advance(20)] == [("a", 1)]
    k.advance(100)
    assert k.keys() == []  # nothing left of either key
    whole = KeyedStream(Sum(), allowed_lateness=5)
    whole.add("t", Tumbling(10))
    k.insert("c", 101, 4)
    whole.restore(k.snapshot())
    assert [(r.key, r.value) for r in whole.advance(200)] == [("c", 4)]
    with pytest.raises(TypeError, match=r"updates\[1\]"):
        k.insert_many([("a", 150, 1), ("a", "x", 1)])


def test_a_punctuation_query_added_after_a_removal_gets_a_bit_of_its_own():
    s = Stream(Sum())
    s.add("A", Punctuation(lambda v: v == 1))
    s.add("B", Punctuation(lambda v: v == 2))
    s.remove("A")
    s.add("C", Punctuation(lambda v: v == 3))
    s.insert_many([(0, 2), (1, 5), (2, 3), (3, 5), (4, 2), (5, 3), (6, 5)])
    got = {(r.query, r.start, r.end): r.value for r in s.advance(100)}
    assert got == {("B", 0, 4): 15, ("C", 2, 5): 10}


@pytest.mark.parametrize("lateness", [0, 3])
def test_an_open_session_does_not_hold_every_slice_since_its_start(lateness):
    """A session that never ends while a tumbling query cuts a slice a second: the session
    folds the slices no other query needs into a prefix, so memory stays flat."""
    def build() -> Stream:
        s = Stream(Collect(), allowed_lateness=lateness)
        s.add("t", Tumbling(1))
        s.add("s", Session(gap=5))
        return s

    s = build()
    sizes = []
    for second in range(200):
        s.insert_many((second + k / 4, second * 4 + k) for k in range(4))
        s.advance(second + 1)
        sizes.append(len(s.slices))
        if second == 100:
            copy = build()
            copy.restore(s.snapshot())
            s = copy
    assert max(sizes[50:]) <= lateness + 3
    late = 200 - lateness  # late (and taken) when lateness > 0
    s.insert(late, -1)
    [session] = [r for r in s.advance(math.inf) if r.query == "s"]
    expected = list(range(800))  # values in time order
    expected.insert(next((i for i, v in enumerate(expected) if v / 4 > late), 800), -1)
    assert (session.start, session.end, session.count) == (0, max(199.75, late) + 5, 801)
    assert session.value == expected


def test_equal_queries_get_equal_results_under_their_own_names():
    s = Stream(Collect())
    s.add("a", Tumbling(10))
    s.add("b", Tumbling(10))
    s.insert_many([(1, "x"), (12, "y")])
    results = s.advance(20)
    assert [(r.query, r.start, r.value) for r in results] == [("a", 0, ["x"]), ("b", 0, ["x"]),
                                                              ("a", 10, ["y"]), ("b", 10, ["y"])]
    assert results[0].value is not results[1].value
    s.remove("a")
    s.insert(25, "z")
    assert [(r.query, r.value) for r in s.advance(30)] == [("b", ["z"])]


def test_keyed_batch_is_all_or_nothing_across_keys():
    """A value one key's punctuation predicate refuses leaves every key as it was (each key's
    batch is checked before any is inserted)."""
    k = KeyedStream(Sum())
    k.add("p", Punctuation(lambda v: 1 / v > 0))
    k.insert("a", 1, 1)
    before = k.snapshot()
    with pytest.raises(ValueError, match=r"updates\[2\].*predicate"):
        k.insert_many([("a", 2, 5), ("b", 3, 1), ("b", 4, 0)])
    assert k.snapshot() == before and k.keys() == ["a"]
    assert k.insert_many([("a", 2, 5), ("b", 3, 1)]) == 2


def test_sliding_first_windows_after_a_time_are_exact():
    """``first_starting_after`` / ``first_ending_after``: the smallest k with start(k) / end(k)
    > t, for integer specs and times (answered by the floor division alone) and for the others."""
    rng = random.Random(20)
    for _ in range(3000):
        spec = Sliding(rng.randint(1, 30), rng.randint(1, 30), rng.randint(-50, 50))
        t = rng.choice([rng.randint(-10 ** 6, 10 ** 6), rng.uniform(-100, 100), 2 ** 70 + rng.randint(0, 9)])
        if rng.random() < 0.3:
            spec = Sliding(rng.choice([0.1, 0.25, 3]), rng.choice([0.1, 0.3, 2]), rng.choice([0, 0.5]))
            t = rng.choice([rng.randint(-1000, 1000), rng.uniform(-100, 100)])
        for first, bound in ((spec.first_starting_after, spec.start), (spec.first_ending_after, spec.end)):
            k = first(t)
            assert bound(k - 1) <= t < bound(k), (spec, t, k)
