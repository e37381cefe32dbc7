"""The brute-force Stream oracle (tests/stream_oracle.py) on small cases computed by hand.

These run without the engine: they check the oracle that test_stream_properties.py trusts.
"""

from __future__ import annotations

import pytest

from mta import Collect, MaxSize, Sum
from stream_oracle import (Count, CountEvery, Expected, KeyedOracle, PolicyEvery, Punctuation, Session, Sliding,
                           StreamOracle, Tumbling)

E = Expected


def oracle(monoid=None, lateness=0, **queries):
    o = StreamOracle(monoid or Sum(), lateness)
    for name, spec in queries.items():
        o.add(name, spec)
    return o


def test_sliding_in_order_sorted_by_end():
    o = oracle(w=Sliding(10, 5))
    for ts, v in [(1, 1), (6, 2), (12, 4)]:
        assert o.insert(ts, v)
    assert o.advance(10) == [E("w", -5, 5, 1, 1, True), E("w", 0, 10, 3, 2, True)]
    assert o.advance(15) == [E("w", 5, 15, 6, 2, True)]
    assert o.advance(20) == [E("w", 10, 20, 4, 1, True)]
    assert o.advance(40) == []


def test_lateness_boundary_and_updates():
    o = oracle(lateness=5, w=Sliding(10, 5))
    o.insert(1, 1)
    o.insert(6, 2)
    assert o.advance(10) == [E("w", -5, 5, 1, 1, True), E("w", 0, 10, 3, 2, True)]
    assert o.insert(5, 100)      # 10 - 5: inclusive
    assert not o.insert(4, 7)    # just below
    assert o.dropped == 1 and o.late == [(4, 7)]
    assert o.insert(12, 1)
    # [0,10) changed: update; [5,15) closes now with the late tuple in it: simply final
    assert o.advance(15) == [E("w", 0, 10, 103, 3, False), E("w", 5, 15, 103, 3, True)]
    assert not o.insert(9, 1000)  # 15 - 5 > 9
    assert o.insert(10, 1000)     # 15 - 5: an update of [5,15); [10,20) is not closed
    assert o.advance(14) == [E("w", 5, 15, 1103, 4, False)]
    assert o.watermark == 15


def test_late_tuple_in_an_empty_window_is_an_update():
    o = oracle(lateness=100, w=Tumbling(10))
    o.insert(25, 1)
    assert o.advance(30) == [E("w", 20, 30, 1, 1, True)]
    o.insert(3, 2)
    # [0,10) was already closed at the previous watermark: it exists only through the late tuple
    assert o.advance(30) == [E("w", 0, 10, 2, 1, False)]


def test_sessions_late_tuples_create_and_merge():
    o = oracle(lateness=100, s=Session(3))
    o.insert(1, 1)
    o.insert(7, 2)
    assert o.advance(20) == [E("s", 1, 4, 1, 1, True), E("s", 7, 10, 2, 1, True)]
    o.insert(4, 4)  # 3 after 1 and 3 before 7: a session of its own between two emitted ones
    assert o.advance(20) == [E("s", 4, 7, 4, 1, False)]
    o.insert(3, 8)  # 2 after 1, 1 before 4: merges [1,4) and [4,7)
    assert o.advance(20) == [E("s", 1, 7, 13, 3, False, ((1, 4), (4, 7)))]
    o.insert(6, 16)  # merges [1,7) and [7,10)
    assert o.advance(21) == [E("s", 1, 10, 31, 5, False, ((1, 7), (7, 10)))]


def test_session_extended_past_the_watermark_replaces_when_it_closes():
    o = oracle(lateness=10, s=Session(5))
    o.insert(0, 1)
    assert o.advance(6) == [E("s", 0, 5, 1, 1, True)]
    o.insert(4, 2)  # extends the session to [0, 9): not closed at 6
    assert o.advance(7) == []
    assert o.advance(9) == [E("s", 0, 9, 3, 2, False, ((0, 5),))]
    o.insert(2, 4)  # inside, same bounds
    assert o.advance(9) == [E("s", 0, 9, 7, 3, False)]


def test_count_windows_shift_under_late_tuples():
    o = oracle(lateness=10, c=Count(2))
    for ts in (1, 3, 5, 7):
        o.insert(ts, ts)
    assert o.advance(8) == [E("c", 0, 2, 4, 2, True), E("c", 2, 4, 12, 2, True)]
    o.insert(2, 2)  # positions: 1 2 3 5 7
    assert o.advance(8) == [E("c", 0, 2, 3, 2, False), E("c", 2, 4, 8, 2, False)]
    o.insert(9, 9)
    # 6 tuples below 10: [4,6) = 7 + 9 closes
    assert o.advance(10) == [E("c", 4, 6, 16, 2, True)]


def test_count_window_completed_by_a_late_tuple_is_an_update_and_sliding_count():
    o = oracle(lateness=10, c=Count(3, 1))
    o.insert(5, 5)
    assert o.advance(6) == [E("c", 0, 1, 5, 1, True)]
    o.insert(1, 1)
    # positions 1, 5: [0,1) shifts, [0,2) is complete (closed at 6 already)
    assert o.advance(6) == [E("c", 0, 1, 1, 1, False), E("c", 0, 2, 6, 2, False)]


def test_count_window_reported_again_when_shifted_with_the_same_value():
    o = oracle(lateness=10, c=Count(1))
    o.insert(1, 7)
    o.insert(3, 7)
    assert o.advance(4) == [E("c", 0, 1, 7, 1, True), E("c", 1, 2, 7, 1, True)]
    o.insert(2, 7)  # [1,2) now holds the late tuple: same sum, other tuple
    assert o.advance(4) == [E("c", 1, 2, 7, 1, False), E("c", 2, 3, 7, 1, False)]


def test_count_every_multi_measure():
    o = oracle(lateness=10, m=CountEvery(2, 5))
    for ts in (1, 2, 3, 6):
        o.insert(ts, ts)
    assert o.advance(10) == [E("m", 2, 5, 5, 2, True), E("m", 3, 10, 9, 2, True)]
    o.insert(4, 4)
    assert o.advance(10) == [E("m", 3, 5, 7, 2, False, ((2, 5),)), E("m", 4, 10, 10, 2, False, ((3, 10),))]
    o.insert(0, 100)  # too old to be among the last two of any report
    assert o.advance(10) == []
    o = oracle(lateness=10, m=CountEvery(1, 1))
    o.insert(0, 5)
    assert o.advance(1) == [E("m", 0, 1, 5, 1, True)]
    o.insert(0, 5)  # the report at 1 now holds the new tuple, and shows the same: not repeated
    assert o.advance(1) == []


def test_punctuation_split_by_a_late_punctuation():
    o = oracle(lateness=10, p=Punctuation(lambda v: v == 0))
    for ts, v in [(0, 0), (2, 1), (5, 0), (7, 1), (10, 0)]:
        o.insert(ts, v)
    o.insert(-1, 9)  # before the first punctuation: no window
    assert o.advance(10) == [E("p", 0, 5, 1, 2, True), E("p", 5, 10, 1, 2, True)]
    o.insert(3, 0)
    assert o.advance(10) == [E("p", 0, 3, 1, 2, False, ((0, 5),)), E("p", 3, 5, 0, 1, False)]


def test_punctuation_first_closed_by_an_on_time_punctuation_or_by_this_advance_is_final():
    o = oracle(lateness=5, p=Punctuation(lambda v: v == 0))
    o.insert(0, 0)
    assert o.advance(1) == []
    o.insert(1, 0)  # on time, at the watermark: [0, 1) closes now for the first time
    assert o.advance(1) == [E("p", 0, 1, 0, 1, True)]
    o.insert(-2, 0)  # late punctuation: [-2, 0), closed at 1 already
    assert o.advance(1) == [E("p", -2, 0, 0, 1, False)]
    o = oracle(lateness=5, p=Punctuation(lambda v: v == 0))
    o.insert(0, 0)
    assert o.advance(-1) == []
    o.insert(-2, 0)  # late, and [-2, 0) closes in this advance: simply final
    assert o.advance(40) == [E("p", -2, 0, 0, 1, True)]
    o = oracle(lateness=5, p=Punctuation(lambda v: v == 0))
    assert o.advance(0) == []
    o.insert(0, 0)   # on time
    o.insert(-1, 0)  # late: [-1, 0) is in the past, completed by a late punctuation: an update
    assert o.advance(40) == [E("p", -1, 0, 0, 1, False)]
    o = oracle(lateness=5, p=Punctuation(lambda v: v == 0))
    assert o.advance(0) == []
    o.insert(-1, 0)  # late first: no window yet
    o.insert(0, 0)   # on time, completes [-1, 0): new
    assert o.advance(40) == [E("p", -1, 0, 0, 1, True)]
    o = oracle(lateness=5, p=Punctuation(lambda v: v == 0))
    o.insert(0, 0)
    assert o.advance(1) == []
    o.insert(1, 0)  # on time: closes [0, 1) at the previous watermark
    o.insert(0, 2)  # late, into that window: still its first report
    assert o.advance(41) == [E("p", 0, 1, 2, 2, True)]


def test_periodic_reports_only_after_periods_with_tuples():
    o = oracle(lateness=30, m=CountEvery(3, 10), k=PolicyEvery(MaxSize(3), 10))
    o.insert(0, 1)
    o.insert(25, 2)
    # 20 and 40 follow periods without tuples: not reported (the window is as it was)
    assert o.advance(40) == [E("m", 0, 10, 1, 1, True), E("k", 0, 10, 1, 1, True),
                             E("m", 0, 30, 3, 2, True), E("k", 0, 30, 3, 2, True)]
    o.insert(15, 4)  # late: its own period's report (20) appears, and 30 changes
    assert o.advance(40) == [E("m", 0, 20, 5, 2, False), E("k", 0, 20, 5, 2, False),
                             E("m", 0, 30, 7, 3, False), E("k", 0, 30, 7, 3, False)]


def test_policy_every_with_collect():
    o = oracle(Collect(), k=PolicyEvery(MaxSize(2), 5))
    for ts, v in [(1, "a"), (2, "b"), (3, "c"), (6, "d")]:
        o.insert(ts, v)
    assert o.advance(10) == [E("k", 2, 5, ["b", "c"], 2, True), E("k", 3, 10, ["c", "d"], 2, True)]


def test_equal_timestamps_keep_arrival_order_and_queries_added_mid_stream():
    o = oracle(Collect(), w=Tumbling(10))
    o.insert(12, "x")
    assert o.advance(10) == []
    o.add("late", Tumbling(5))
    o.add("sess", Session(2))
    with pytest.raises(ValueError):
        o.add("w", Tumbling(1))
    o.insert(12, "y")
    o.insert(11, "z")
    assert o.advance(20) == [E("sess", 11, 14, ["z", "x", "y"], 3, True),
                             E("late", 10, 15, ["z", "x", "y"], 3, True),
                             E("w", 10, 20, ["z", "x", "y"], 3, True)]
    o.remove("w")
    o.add("w", Sliding(4, 2, offset=1))  # sees ts >= 20 only; windows start >= 20
    o.insert(20, "a")
    o.insert(21, "b")
    assert o.advance(30) == [E("sess", 20, 23, ["a", "b"], 2, True), E("late", 20, 25, ["a", "b"], 2, True),
                             E("w", 21, 25, ["b"], 1, True)]


def test_keyed_oracle_replays_queries_for_a_new_key():
    k = KeyedOracle(Sum())
    k.add("t", Tumbling(10))
    k.insert("a", 1, 1)
    assert k.advance(10) == [E("t", 0, 10, 1, 1, True, key="a")]
    k.add("u", Tumbling(5))
    k.insert("b", 12, 2)  # a new key gets both queries, "u" since 10
    k.insert("b", 3, 2)   # late, dropped
    assert k.dropped == 1
    assert sorted(k.advance(20)) == [E("t", 10, 20, 2, 1, True, key="b"), E("u", 10, 15, 2, 1, True, key="b")]
    with pytest.raises(KeyError):
        k.remove("v")
