"""Readable examples of the Stream engine (semantics: README "Many windows on one stream"
and ../shared/DESIGN.md): a dashboard, sessions merged by a late click, the issue's mixed
queries, and the input checks. Values computed by hand."""

from __future__ import annotations

import math

import pytest

from mta import Collect, MaxSize, Max, Mean, MonoidError, Record, Stream, Sum
from mta.windows import Count, Policy, Punctuation, Session, Sliding, Tumbling


def rows(results, *queries):
    """(query, start, end, value, count, final, replaces) of each result, in the engine's order."""
    return [(r.query, r.start, r.end, r.value, r.count, r.final, tuple(r.replaces)) for r in results
            if not queries or r.query in queries]


def test_dashboard_one_and_five_minute_windows():
    """Requests counted over the last minute every 10 s and the last 5 minutes every minute."""
    s = Stream(Sum(), allowed_lateness=10)
    s.add("1m", Sliding(60, 10))
    s.add("5m", Sliding(300, 60))
    assert s.insert_many((t, 1) for t in range(0, 600, 5)) == 120  # a request every 5 s

    out = s.advance(300)
    one = [r for r in out if r.query == "1m"]
    five = [r for r in out if r.query == "5m"]
    # every 1m window [k*10, k*10 + 60) that ends by 300 and holds a request: k = -5 .. 24
    assert [(r.start, r.end) for r in one] == [(k * 10, k * 10 + 60) for k in range(-5, 25)]
    assert [r.value for r in one] == [min(r.end, 60) // 5 for r in one]  # 12 once the window is full
    assert [(r.start, r.end, r.value) for r in five] == [(k * 60, k * 60 + 300, (k * 60 + 300) // 5)
                                                         for k in range(-4, 1)]
    assert all(r.final and r.count == r.value for r in out)
    assert [r.end for r in out] == sorted(r.end for r in out)

    assert s.insert(295, 1)  # late, within 10 s: both emitted windows holding 295 are updated
    assert not s.insert(289, 1)
    assert s.dropped == 1
    assert rows(s.advance(310)) == [
        ("1m", 240, 300, 13, 13, False, ()),
        ("5m", 0, 300, 61, 61, False, ()),
        ("1m", 250, 310, 13, 13, True, ()),
    ]


def test_sessions_merged_by_a_late_click():
    s = Stream(Collect(), allowed_lateness=70)
    s.add("visit", Session(gap=30))
    for ts, page in [(0, "home"), (10, "search"), (50, "item"), (60, "cart")]:
        s.insert(ts, page)
    assert rows(s.advance(100)) == [
        ("visit", 0, 40, ["home", "search"], 2, True, ()),
        ("visit", 50, 90, ["item", "cart"], 2, True, ()),
    ]
    s.insert(35, "back")  # 25 s after "search", 15 s before "item": one visit
    out = s.advance(100)
    assert rows(out) == [("visit", 0, 90, ["home", "search", "back", "item", "cart"], 5, False, ((0, 40), (50, 90)))]
    s.insert(30, "help")  # inside the merged visit: an update of the same window
    assert rows(s.advance(100)) == [("visit", 0, 90, ["home", "search", "help", "back", "item", "cart"], 6, False,
                                     ())]


def test_the_issues_mixed_queries():
    s = Stream(Record(avg=Mean(), peak=Max()), allowed_lateness=5.0)
    s.add("1m", Sliding(60, 10))
    s.add("session", Session(gap=30))
    s.add("last4", Count(4, 2))
    s.add("custom", Policy(MaxSize(3), every=25))
    for ts, v in [(0, 10), (20, 30), (45, 20), (50, 40), (100, 5)]:
        s.insert(ts, v)

    def rec(avg, peak):
        return {"avg": avg, "peak": peak}

    # count windows end at positions 2 and 4 (4 tuples before 60); sorted by end like the others
    assert rows(s.advance(60)) == [
        ("last4", 0, 2, rec(20, 30), 2, True, ()),
        ("last4", 0, 4, rec(25, 40), 4, True, ()),
        ("1m", -50, 10, rec(10, 10), 1, True, ()),
        ("1m", -40, 20, rec(10, 10), 1, True, ()),
        ("custom", 0, 25, rec(20, 30), 2, True, ()),
        ("1m", -30, 30, rec(20, 30), 2, True, ()),
        ("1m", -20, 40, rec(20, 30), 2, True, ()),
        ("1m", -10, 50, rec(20, 30), 3, True, ()),
        ("custom", 0, 50, rec(20, 30), 3, True, ()),
        ("1m", 0, 60, rec(25, 40), 4, True, ()),
    ]
    assert s.insert(57, 100)  # late by 3
    out = s.advance(70)
    assert rows(out) == [
        ("1m", 0, 60, rec(40, 100), 5, False, ()),
        ("1m", 10, 70, rec(47.5, 100), 4, True, ()),
    ]
    s.remove("1m")
    out = s.advance(200)
    assert rows(out, "session") == [("session", 0, 87, rec(40, 100), 5, True, ()),
                                    ("session", 100, 130, rec(5, 5), 1, True, ())]
    # reports only after periods with tuples: 75 (50 and 57 came in [50, 75)) and 125 (100)
    assert rows(out, "custom") == [("custom", 45, 75, rec(160 / 3, 100), 3, True, ()),  # the 3 newest
                                   ("custom", 50, 125, rec(145 / 3, 100), 3, True, ())]
    assert rows(out, "last4") == [("last4", 2, 6, rec(41.25, 100), 4, True, ())]


def test_punctuation_and_multi_measure():
    s = Stream(Sum(), allowed_lateness=100)
    s.add("orders", Punctuation(lambda v: v < 0))  # a negative value opens a new batch
    s.add("last2", Count(2, every=10))
    for ts, v in [(1, -1), (2, 5), (4, 6), (8, -2), (9, 7), (15, -3)]:
        s.insert(ts, v)
    assert rows(s.advance(20)) == [
        ("orders", 1, 8, 10, 3, True, ()),
        ("last2", 8, 10, 5, 2, True, ()),
        ("orders", 8, 15, 5, 2, True, ()),
        ("last2", 9, 20, 4, 2, True, ()),
    ]
    s.insert(3, -10)  # a late punctuation splits [1, 8)
    assert rows(s.advance(20)) == [
        ("orders", 1, 3, 4, 2, False, ((1, 8),)),
        ("orders", 3, 8, -4, 2, False, ()),
    ]


def test_no_empty_windows_and_a_watermark_that_goes_back():
    s = Stream(Sum())
    s.add("t", Tumbling(10))
    s.insert(35, 1)
    assert rows(s.advance(50)) == [("t", 30, 40, 1, 1, True, ())]  # [0,10) .. [20,30) and [40,50) are empty
    assert s.advance(20) == [] and s.watermark == 50
    assert s.insert(50, 2) and not s.insert(49, 2)


def test_queries_dict_and_names():
    s = Stream(Sum())
    t = Tumbling(10)
    s.add("t", t)
    with pytest.raises(ValueError):
        s.add("t", Tumbling(5))
    with pytest.raises(KeyError):
        s.remove("u")
    assert list(s.queries) == ["t"]
    s.remove("t")
    assert s.queries == {}


@pytest.mark.parametrize("ts, error", [(True, TypeError), ("3", TypeError), (None, TypeError),
                                       (math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError)])
def test_bad_timestamps_change_nothing(ts, error):
    s = Stream(Sum())
    s.add("t", Tumbling(10))
    s.insert(1, 1)
    with pytest.raises(error):
        s.insert(ts, 5)
    with pytest.raises(error):
        s.insert_many([(2, 1), (ts, 5)])  # all or nothing
    assert s.dropped == 0
    assert rows(s.advance(10)) == [("t", 0, 10, 1, 1, True, ())]


def test_insert_many_counts_the_accepted():
    s = Stream(Sum(), allowed_lateness=2)
    s.add("t", Tumbling(10))
    s.insert(5, 1)
    assert rows(s.advance(10)) == [("t", 0, 10, 1, 1, True, ())]
    assert s.insert_many([(8, 1), (7, 1), (12, 1), (3, 1)]) == 2
    assert s.dropped == 2
    assert rows(s.advance(20)) == [("t", 0, 10, 2, 2, False, ()), ("t", 10, 20, 1, 1, True, ())]


def test_a_value_the_monoid_refuses_changes_nothing():
    s = Stream(Sum(), allowed_lateness=5)
    s.add("t", Tumbling(10))
    s.add("c", Count(2))
    s.insert(1, 1)
    with pytest.raises(MonoidError):
        s.insert(2, "x")
    with pytest.raises(MonoidError):
        s.insert_many([(3, 2), (4, "x")])  # all or nothing
    assert s.dropped == 0
    assert s.insert(5, 4)
    assert rows(s.advance(10)) == [("c", 0, 2, 5, 2, True, ()), ("t", 0, 10, 5, 2, True, ())]
