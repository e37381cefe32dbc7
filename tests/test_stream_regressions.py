"""Minimal reproductions the brute-force oracle (tests/stream_oracle.py) and
test_stream_properties.py found in the Stream engine, each fixed on main since: regression
tests. Each docstring says what the spec expects and what the engine did before the fix (the
two marked as readings settled the spec where it was silent; ../shared/DESIGN.md, "Many
windows on one stream", has them now)."""

from __future__ import annotations

import math

import pytest

from kvs import connect
from mta import Collect, Last, MaxSize, Stream, Sum
from mta.windows import Count, Policy, Punctuation, Session, Sliding, Tumbling


def rows(results):
    return [(r.query, r.start, r.end, r.value, r.count, r.final, tuple(r.replaces)) for r in results]


def is_zero(value):
    return value == 0


@pytest.mark.parametrize("window", [Count(3, every=10), Policy(MaxSize(3), every=10)], ids=["count", "policy"])
def test_every_reports_only_after_periods_with_tuples(window):
    """The spec's 23:06 clarification: a report time E is reported only if a tuple has its
    timestamp in [E - T, E). (The oracle first read "at each E the watermark reaches" literally.)"""
    s = Stream(Sum())
    s.add("q", window)
    s.insert(0, 1)
    s.insert(25, 2)
    assert rows(s.advance(40)) == [("q", 0, 10, 1, 1, True, ()), ("q", 0, 30, 3, 2, True, ())]


def test_policy_every_keeps_the_times_an_earlier_advance_stopped_before():
    """Policy(every=10): advance(5) then advance(20) loses E=10 (Count(every=) gets it)."""
    s = Stream(Sum())
    s.add("q", Policy(MaxSize(3), every=10))
    s.insert(0, 1)
    s.insert(15, 2)
    assert s.advance(5) == []
    assert rows(s.advance(20)) == [("q", 0, 10, 1, 1, True, ()), ("q", 0, 20, 3, 2, True, ())]


def test_punctuation_window_closes_when_the_watermark_reaches_the_next_punctuation():
    """Spec: closed when watermark >= p_i+1. The engine waits for watermark > p_i+1, and then
    reports the window as an update (final=False) though it was never reported."""
    s = Stream(Sum())
    s.add("p", Punctuation(is_zero))
    s.insert(0, 0)
    s.insert(6, 0)
    assert rows(s.advance(6)) == [("p", 0, 6, 0, 1, True, ())]


def test_punctuation_at_the_timestamp_of_an_earlier_tuple():
    """An on-time punctuation with the ts of a tuple already inserted: the engine raises
    AssertionError('internal: a split through a slice whose tuples were not kept')."""
    s = Stream(Sum())
    s.add("p", Punctuation(is_zero))
    s.insert(0, 0)
    s.insert(1, 1)
    s.insert(1, 0)
    assert rows(s.advance(40)) == [("p", 0, 1, 0, 1, True, ())]


def test_punctuation_query_added_mid_stream_sees_the_punctuations_already_in_the_stream():
    """Spec: a query added at w sees the accepted tuples with ts >= w already in the stream.
    The engine's new punctuation query ignores them (no window)."""
    s = Stream(Sum())
    s.insert(0, 0)
    s.insert(1, 0)
    s.add("p", Punctuation(is_zero))
    assert rows(s.advance(40)) == [("p", 0, 1, 0, 1, True, ())]


def test_count_window_late_tuple_with_no_tuple_below_the_watermark():
    """Count(2), lateness 5: insert(0), advance(0), insert(-1) raises IndexError in
    mta/stream/counted.py insert_late."""
    s = Stream(Sum(), allowed_lateness=5)
    s.add("c", Count(2))
    s.insert(0, 0)
    assert s.advance(0) == []
    assert s.insert(-1, 7)
    assert rows(s.advance(40)) == [("c", 0, 2, 7, 2, True, ())]


def test_count_window_completed_by_a_late_tuple_is_an_update():
    """Spec ambiguity (the oracle's reading): a window that exists only through late tuples and
    was already closed at the previous watermark is final=False, as the engine does for an empty
    time window filled by a late tuple, for a multi-measure report, and as the spec says of a
    session created between emitted ones and of "advance(smaller w): only pending updates".
    The engine reports a count window completed so as final=True, even from an advance that does
    not move the watermark."""
    t = Stream(Sum(), allowed_lateness=100)  # the engine's time windows: final=False
    t.add("t", Tumbling(10))
    t.insert(25, 1)
    assert rows(t.advance(30)) == [("t", 20, 30, 1, 1, True, ())]
    t.insert(15, 2)  # fills the empty [10, 20), closed at 30 already
    assert rows(t.advance(30)) == [("t", 10, 20, 2, 1, False, ())]

    s = Stream(Sum(), allowed_lateness=100)
    s.add("c", Count(2))
    for ts in (1, 2, 3):
        s.insert(ts, ts)
    assert rows(s.advance(30)) == [("c", 0, 2, 3, 2, True, ())]
    s.insert(0, 5)  # completes count window [2, 4) = 2 + 3, closed at 30 already
    assert rows(s.advance(30)) == [("c", 0, 2, 6, 2, False, ()), ("c", 2, 4, 5, 2, False, ())]


def test_multi_measure_report_whose_oldest_tuple_changed_replaces_the_old_bounds():
    """Spec gap (the oracle's reading): a late tuple moves the start of the report at E; the
    report (3, 20) supersedes the reported (15, 20), so replaces=((15, 20),) as for sessions.
    The engine says replaces=()."""
    s = Stream(Sum(), allowed_lateness=100)
    s.add("m", Count(2, every=10))
    s.insert(15, 1)
    assert rows(s.advance(20)) == [("m", 15, 20, 1, 1, True, ())]
    s.insert(3, 2)
    assert rows(s.advance(20)) == [("m", 3, 10, 2, 1, False, ()), ("m", 3, 20, 3, 2, False, ((15, 20),))]


def test_session_keeps_an_on_time_tuple_after_a_late_one_created_a_session():
    """Session(4), lateness 8: a late tuple makes session [-4, 0); then the on-time tuple at 4
    (= the watermark) and a late one at 3 merge into [0, 8): the engine's value misses the tuple
    at 4 (9 = 1 + 8 instead of 13) while its count says 3."""
    s = Stream(Sum(), allowed_lateness=8)
    s.add("s", Session(4))
    s.insert(0, 1)
    assert rows(s.advance(4)) == [("s", 0, 4, 1, 1, True, ())]
    s.insert(-4, 2)
    s.insert(4, 4)
    s.insert(3, 8)
    assert rows(s.advance(4)) == [("s", -4, 0, 2, 1, False, ())]
    assert rows(s.advance(44)) == [("s", 0, 8, 13, 3, False, ((0, 4),))]


def test_save_and_load_through_a_memory_backend():
    """Spec: s.save(backend, stream_id) to a kvs Backend. With ``memory://`` the engine raises
    AttributeError: 'MemoryBackend' object has no attribute 'commit' (a sqlite file works)."""
    backend = connect("memory://")
    s = Stream(Sum())
    s.add("t", Tumbling(10))
    s.insert(1, 1)
    s.save(backend, "s")
    s.close()
    again = Stream(Sum())
    again.add("t", Tumbling(10))
    again.load(backend, "s")
    assert rows(again.advance(10)) == [("t", 0, 10, 1, 1, True, ())]


def test_multi_measure_report_is_not_repeated_when_a_late_tuple_leaves_it_unchanged():
    """Spec: each *changed* emitted window is reported again. A late tuple at 3 is not among
    the last two tuples before 10 (8 and 9): the report at 10 is unchanged. The engine reports
    it again (final=False, same tuples and value)."""
    s = Stream(Sum(), allowed_lateness=100)
    s.add("m", Count(2, every=10))
    s.insert(8, 1)
    s.insert(9, 2)
    assert rows(s.advance(10)) == [("m", 8, 10, 3, 2, True, ())]
    s.insert(3, 5)
    assert rows(s.advance(10)) == []


def test_late_punctuation_window_closed_by_this_advance_is_final():
    """Spec: a window closed by this advance that also received late tuples is simply final=True.
    A late punctuation at -2 before the first one (0) makes [-2, 0), which closes in this advance
    (the previous watermark was -1): the engine says final=False (it is not a split of an
    emitted window, the spec's final=False case)."""
    s = Stream(Sum(), allowed_lateness=5)
    s.add("p", Punctuation(is_zero))
    s.insert(0, 0)
    assert s.advance(-1) == []
    s.insert(-2, 0)
    assert rows(s.advance(40)) == [("p", -2, 0, 0, 1, True, ())]


def test_late_punctuation_window_from_an_advance_that_does_not_move_is_an_update():
    """Spec: advance(w) with w <= watermark returns only pending updates. [-1, 0) exists only
    through the late punctuation at -1 and ended at the watermark already: the engine says
    final=True after advance(0), and final=False for the same window after advance(40)."""
    s = Stream(Sum(), allowed_lateness=3)
    s.add("p", Punctuation(is_zero))
    s.insert(0, 0)
    assert s.advance(0) == []
    s.insert(-1, 0)
    assert rows(s.advance(0)) == [("p", -1, 0, 0, 1, False, ())]


def test_late_tuple_into_an_emitted_punctuation_window_is_reported():
    """A late (non-punctuation) tuple into the emitted window [0, 2): the engine never reports
    the update when the next advance does not move the watermark (advance(2), then advance(10):
    nothing; advance(10) at once: reported), nor, with punctuations 0, 2, 5, advance(6), late
    tuple at 1, when it moves (advance(7): nothing)."""
    s = Stream(Sum(), allowed_lateness=3)
    s.add("p", Punctuation(is_zero))
    s.insert(0, 0)
    s.insert(2, 0)
    assert rows(s.advance(2)) == [("p", 0, 2, 0, 1, True, ())]
    s.insert(1, 5)
    assert rows(s.advance(2)) == [("p", 0, 2, 5, 2, False, ())]


def test_window_first_closed_by_an_on_time_punctuation_is_final_even_with_an_older_late_tuple():
    """Spec: windows first emitted in this advance are final=True, "a window closed by this
    advance that also received late tuples is simply final=True". The late punctuation at -1
    came before advance(0) closed nothing; the on-time punctuation at 0 closes [-1, 0) now (as
    for [0, 1) after the on-time punctuation at 1, which the engine reports final=True). The
    engine says final=False because the window holds a late tuple."""
    s = Stream(Sum(), allowed_lateness=1)
    s.add("p", Punctuation(is_zero))
    assert s.advance(0) == []
    s.insert(-1, 0)
    assert s.advance(0) == []
    s.insert(0, 0)
    assert rows(s.advance(40)) == [("p", -1, 0, 0, 1, True, ())]


def test_snapshot_keeps_what_a_periodic_report_showed():
    """Count(1, every=1) over Collect: a late tuple equal to the reported one leaves the report
    at 1 as it was (the engine reports nothing); after snapshot/restore the engine reports it
    again (the restored state compares the reported value differently, e.g. a tuple partial
    against a list)."""
    def stream():
        s = Stream(Collect(), allowed_lateness=6)
        s.add("m", Count(1, every=1))
        return s

    s = stream()
    s.insert(0, "x")
    assert rows(s.advance(1)) == [("m", 0, 1, ["x"], 1, True, ())]
    s.insert(0, "x")
    restored = stream()
    restored.restore(s.snapshot())
    assert restored.advance(1) == []


def test_restore_after_removing_a_punctuation_query_keeps_the_others():
    """Two punctuation queries, the first removed, then snapshot and restore into a stream with
    the remaining one (the same queries, as the spec asks): its windows are lost ([] instead of
    [0, 1)). Without the snapshot, or without the removal, it is reported."""
    s = Stream(Sum())
    s.add("a", Punctuation(is_zero))
    s.add("b", Punctuation(is_zero))
    s.advance(0)
    s.insert(0, 0)
    s.remove("a")
    s.insert(1, 0)
    restored = Stream(Sum())
    restored.add("b", Punctuation(is_zero))
    restored.restore(s.snapshot())
    assert rows(restored.advance(40)) == [("b", 0, 1, 0, 1, True, ())]


def test_late_tuple_after_removing_a_query_reaches_the_session():
    """After removing a tumbling query, a late tuple that extends an emitted session changes its
    bounds but not its value or count (1 and 1 instead of 101 and 2). Without the removal the
    session is right."""
    s = Stream(Sum(), allowed_lateness=7)
    s.add("t", Tumbling(1))
    s.add("s", Session(5))
    s.insert(-8, 1)
    assert rows(s.advance(0)) == [("t", -8, -7, 1, 1, True, ()), ("s", -8, -3, 1, 1, True, ())]
    s.remove("t")
    s.insert(-4, 100)
    assert rows(s.advance(40)) == [("s", -8, 1, 101, 2, False, ((-8, -3),))]


def test_removing_a_query_keeps_the_open_session_whole():
    """In order, no late tuple: removing the tumbling query while a session is open loses the
    session's newer tuples ([0, 3) reported with value 1 and count 1 instead of 11 and 2)."""
    s = Stream(Sum())
    s.add("t", Tumbling(1))
    s.add("s", Session(2))
    s.insert(0, 1)
    assert rows(s.advance(1)) == [("t", 0, 1, 1, 1, True, ())]
    s.insert(1, 10)
    s.remove("t")
    assert rows(s.advance(41)) == [("s", 0, 3, 11, 2, True, ())]


def test_a_tuple_in_a_gap_between_sliding_windows_belongs_to_none():
    """Sliding(1, 3): windows [3k, 3k + 1); 1 and 2 fall in gaps. After an advance between them,
    the engine counts the tuple at 2 into [3, 4) (reported with value 7, count 1): a regression
    of main 7663eba, fixed since."""
    s = Stream(Sum())
    s.add("w", Sliding(1, 3))
    s.insert(1, 5)
    assert s.advance(2) == []
    s.insert(2, 7)
    assert s.advance(42) == []


@pytest.mark.parametrize("final", ["eager", "fiba", "lazy", "amta", "auto"])
def test_eager_stores_keep_a_tuple_waiting_at_the_watermark(final):
    """With final="eager" or "fiba", the tuple at 6 (= the watermark, value 1) was counted in
    [3, 8) and [4, 7) but missing from their sums (1110 and 1010 instead of 1111 and 1011): the
    session [4, 6) had put the newest slice [4, 7) into the tree, and in-order tuples still grew
    it (F19)."""
    s = Stream(Sum(), allowed_lateness=3, final=final)
    s.add("t", Tumbling(3, offset=1))
    s.add("s", Session(2))
    s.insert(6, 1)
    s.insert(4, 10)
    assert rows(s.advance(6)) == [("s", 4, 6, 10, 1, True, ())]
    s.insert(3, 100)
    s.insert(5, 1000)
    assert rows(s.advance(6)) == [("t", 1, 4, 100, 1, False, ())]
    assert rows(s.advance(46)) == [("s", 3, 8, 1111, 4, False, ((4, 6),)), ("t", 4, 7, 1011, 3, True, ())]


@pytest.mark.parametrize("window", [Tumbling(0.1), Tumbling(0.5, offset=0.2), Sliding(1, 0.1), Sliding(2.1, 0.7),
                                    Sliding(1 / 3, 1 / 6)])
def test_float_window_edges_are_exact_and_the_slicer_always_moves_on(window):
    """Float sizes and slides: next_edge(0.7) of Tumbling(0.5, offset=0.2) was 0.7 (an end
    computed as start + size rounded down), and advance() looped forever (issue 18's outside
    test). Edges are now the floats nearest the exact decimals: a window's end is the next
    windows' start, bit for bit."""
    from fractions import Fraction
    from mta.windows import as_fraction
    size, slide, offset = (as_fraction(v) for v in (window.size, window.slide, window.offset))
    for k in range(-50, 400):
        assert window.start(k) == float(offset + k * slide)
        assert window.end(k) == float(offset + k * slide + size)
    for n in range(-300, 3000):
        t = n / 100
        assert window.floor_edge(t) <= t < window.next_edge(t)
        k = window.first_ending_after(t)
        assert window.end(k - 1) <= t < window.end(k)
    assert Fraction(repr(Sliding(1, 0.1).start(3))) == Fraction(3, 10)


@pytest.mark.parametrize("final", ["lazy", "auto", "shared"])
def test_float_slides_give_the_exact_decimal_windows(final):
    """Sliding(1, 0.1): the window [0.3, 1.3) holds the tuple at 0.3 (it started at
    0.30000000000000004 and left it out, while final="shared" counted it in: values differed
    from counts), and [0.2, 1.2) does not hold the tuple at 1.2."""
    s = Stream(Collect(), final=final)
    s.add("q", Sliding(1, 0.1))
    for t in [0.1, 0.2, 0.3, 0.5, 1.2, 1.25, 1.3]:
        s.insert(t, t)
    got = {(r.start, r.end): (r.value, r.count) for r in s.advance(5)}
    assert got[(0.3, 1.3)] == ([0.3, 0.5, 1.2, 1.25], 4)
    assert got[(0.2, 1.2)] == ([0.2, 0.3, 0.5], 3)


def test_count_window_shift_does_not_invert_a_float_out():
    """Count(3, 1) of a float Sum, tuples 1e16, 1, 1, 1 then a late 1 first: the shift
    inverted 1e16 out of the slice [0, 1) (1e16 + 1 - 1e16 is 0.0) and reported it as 0.0;
    it holds only the late 1."""
    s = Stream(Sum(), allowed_lateness=100)
    s.add("c", Count(3, 1))
    for ts, v in [(10, 1e16), (20, 1), (30, 1), (40, 1)]:
        s.insert(ts, v)
    s.advance(50)
    s.insert(5, 1)
    got = [(r.start, r.end, r.value) for r in s.advance(60)]
    assert got == [(0, 1, 1), (0, 2, 1e16), (0, 3, 1e16), (1, 4, 1e16), (2, 5, 3)]
    assert type(got[0][2]) is int and type(got[-1][2]) is int  # a fold of ints stays an int


def test_count_window_shift_of_last_recomputes_a_nan_aggregate():
    """Last over Count(3, 1), tuples nan, 2, 3, nan, then a late 1.5 at 15: the slice that
    handed its NaN on kept NaN (NaN != NaN read as "the selection kept another tuple"), so
    [1, 4) (tuples 1.5, 2, 3) was reported as nan instead of 3."""
    nan = float("nan")
    s = Stream(Last(), allowed_lateness=100)
    s.add("c", Count(3, 1))
    for ts, v in [(10, nan), (20, 2), (30, 3), (40, nan)]:
        s.insert(ts, v)
    s.advance(50)
    s.insert(15, 1.5)
    got = {(r.start, r.end): r.value for r in s.advance(60)}
    assert got[(0, 2)] == 1.5 and got[(0, 3)] == 2 and got[(1, 4)] == 3
    assert math.isnan(got[(2, 5)])


@pytest.mark.parametrize("late", [(10, 1e16), (5, 1e16)], ids=["middle", "first"])
def test_count_slice_gaining_a_late_float_is_the_fold_in_order(late):
    """Count(3) of a float Sum, tuples -1e16 at 0 (or 10) and 0.5 at 20, then a late 1e16 before
    the 0.5: the window is the fold -1e16 + 1e16 + 0.5 (or 1e16 - 1e16 + 0.5) = 0.5; the late
    tuple was combined out of order ((-1e16 + 0.5) + 1e16, or 1e16 + (-1e16 + 0.5)) giving 0.0."""
    s = Stream(Sum(), allowed_lateness=100)
    s.add("c", Count(3))
    s.insert(0 if late[0] == 10 else 10, -1e16)
    s.insert(20, 0.5)
    assert s.advance(30) == []
    s.insert(*late)
    assert rows(s.advance(30)) == [("c", 0, 3, 0.5, 3, False, ())]


_GUARDED = r'''
import sys
from mta import Stream, Sum
from mta.stream.edges import EdgeSet
from mta.stream.shared import Ticks
from mta.windows import Sliding, Tumbling

for t in (1e302, 1e306, 1e307, 8.5e307, 1e308, -1e307, -1e302):
    for spec in (Tumbling(10), Sliding(30, 1), Tumbling(0.5), Sliding(1.5, 0.1, 0.05), Sliding(7, 3, -2)):
        k = spec.first_starting_after(t)
        assert spec.start(k - 1) <= t < spec.start(k), (t, spec)
        k = spec.first_ending_after(t)
        assert spec.end(k - 1) <= t < spec.end(k), (t, spec)
        assert spec.floor_edge(t) <= t < spec.next_edge(t), (t, spec)
        s = Stream(Sum())
        s.add("w", spec)
        s.insert(t, 1)
        assert s.advance(t) == [], (t, spec)
        out = s.advance(spec.end(k))
        assert out and all(r.value == 1 and r.start <= t < r.end <= spec.end(k) for r in out), (t, spec, out)
    edges = EdgeSet([Tumbling(0.5), Sliding(1.5, 0.1, 0.05), Tumbling(10)])
    below, above = edges.around(t)
    assert below <= t < above, t
    for unit in (0.5, 0.1, 1 / 3):
        n = Ticks([unit])(t)
        p, q = Ticks([unit])._p, Ticks([unit])._q
        assert n * p / q <= t < (n + 1) * p / q, (t, unit)
print("ok")
'''


def test_huge_float_times_do_not_hang_the_window_index_search():
    """An outside tester's hang: ``Stream(Sum())`` with ``Tumbling(10)``, ``insert(1e307, 1)``,
    ``advance(1e307)`` never returned (also at 1e302..1e304, 1e306, 8.5e307, 1e308). The
    correction of a window index's float estimate stepped by one window, and at such a time
    the estimate is off by about ulp(t) / slide windows; ``edges.Progressions.around`` and
    ``shared.Ticks`` had the same loop. Run in a fresh interpreter with a timeout so that a
    hang fails the test instead of stopping the run."""
    import os
    import subprocess
    import sys

    import mta

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(mta.__file__))))
    try:
        done = subprocess.run([sys.executable, "-c", _GUARDED], capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("a window index search at a huge float time did not return in 60 s")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
