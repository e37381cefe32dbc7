"""The session windows of one key (mta.watermarked.sessions) against a naive model,
without Spark: fixed and dynamic gaps, any arrival order, micro-batches with a
watermark, the state packed and unpacked between them as a streaming run does."""

from __future__ import annotations

import math

import pytest
from conftest import hsettings
from hypothesis import given
from hypothesis import strategies as st

from kvs import codec
from mta.monoid import Monoid, Record, Sum
from mta.watermarked import Sessions, SessionWindow


class Concat(Monoid):
    """Non-commutative: the values in the order they were combined."""

    identity = ""

    @staticmethod
    def combine(a: str, b: str) -> str:
        return a + b


MONOID = Record(seq=Concat(), total=Sum())


def model(batches: list[tuple[list[tuple[int, str, int]], float]]) -> tuple[list[tuple], int]:
    """Every reported session (start, end, values in time order), and the late count, by
    brute force: each batch's events (time, value, end) in arrival order, then its watermark."""
    done, late, pending, rows = -math.inf, 0, [], []
    for events, until in batches:
        for t, v, e in events:
            if e <= done:
                late += 1
            else:
                pending.append((t, v, e))
        pending.sort(key=lambda p: p[0])  # stable: ties keep arrival order
        sessions = []
        for t, v, e in pending:
            if sessions and t <= sessions[-1][1]:
                sessions[-1][1] = max(sessions[-1][1], e)
                sessions[-1][2].append((t, v, e))
            else:
                sessions.append([t, e, [(t, v, e)]])
        pending = []
        for start, end, members in sessions:
            if end <= until and not pending:
                rows.append((start, end, "".join(v for _, v, _ in members)))
            else:
                pending += members
        done = max(done, until)
    return rows, late


def run(sessions: Sessions, batches: list[tuple[list[tuple[int, str, int]], float]],
        reload: bool) -> tuple[list[tuple], int]:
    """The rows of SessionWindow over ``batches``; with ``reload``, rebuilt from its packed
    state before each batch and each report, as the streaming processor does."""
    window, rows = SessionWindow(MONOID, sessions), []
    for events, until in batches:
        times = [t for t, _, _ in events]
        values = [(v, 1) for _, v, _ in events]
        ends = [e for _, _, e in events] if sessions.gap is None else None
        window.add(times, values, ends)
        if reload:
            window = SessionWindow(MONOID, sessions, codec.unpack(codec.pack(window.state())))
        wake = window.next_report()
        out = window.advance(until)
        if out:
            assert out[0][1] == wake  # the first session reported ends where next_report said
        elif wake is not None:
            assert wake > until
        rows += [(start, end, partial[0]) for start, end, partial in out]
        if reload:
            window = SessionWindow(MONOID, sessions, codec.unpack(codec.pack(window.state())))
    return rows, window.late


letters = st.sampled_from("abcdefgh")


@st.composite
def fixed_batches(draw: st.DrawFn) -> tuple[int, list]:
    gap = draw(st.integers(1, 6))
    batches, watermark = [], -5
    for _ in range(draw(st.integers(1, 6))):
        events = [(t, draw(letters), t + gap) for t in draw(st.lists(st.integers(0, 40), max_size=8))]
        watermark += draw(st.integers(0, 12))
        batches.append((events, watermark))
    if draw(st.booleans()):
        batches.append(([], math.inf))
    return gap, batches


@st.composite
def dynamic_batches(draw: st.DrawFn) -> list:
    batches, watermark = [], -5
    for _ in range(draw(st.integers(1, 6))):
        times = draw(st.lists(st.integers(0, 40), max_size=8))
        events = [(t, draw(letters), t + draw(st.integers(1, 8))) for t in times]
        watermark += draw(st.integers(0, 12))
        batches.append((events, watermark))
    batches.append(([], math.inf))
    return batches


@hsettings(max_examples=300)
@given(fixed_batches(), st.booleans())
def test_fixed_gap_sessions_equal_the_naive_model(case, reload) -> None:
    gap, batches = case
    assert run(Sessions(gap), batches, reload) == model(batches)


@hsettings(max_examples=300)
@given(dynamic_batches(), st.booleans())
def test_dynamic_gap_sessions_equal_the_naive_model(batches, reload) -> None:
    assert run(Sessions(None), batches, reload) == model(batches)


def test_events_exactly_a_gap_apart_share_a_session_and_one_more_microsecond_splits() -> None:
    window = SessionWindow(MONOID, Sessions(10))
    window.add([0, 10, 20, 31], [("a", 1), ("b", 1), ("c", 1), ("d", 1)])
    assert window.advance(math.inf) == [(0, 30, ("abc", 3)), (31, 41, ("d", 1))]


def test_a_dynamic_session_ends_at_its_largest_end_not_its_last_events() -> None:
    window = SessionWindow(MONOID, Sessions(None))
    window.add([0, 5, 22, 20], [("a", 1), ("b", 1), ("d", 1), ("c", 1)], [20, 6, 23, 21])
    assert window.advance(math.inf) == [(0, 21, ("abc", 3)), (22, 23, ("d", 1))]


def test_out_of_order_events_merge_open_sessions() -> None:
    window = SessionWindow(MONOID, Sessions(10))
    window.add([0, 30], [("a", 1), ("c", 1)])
    assert window.advance(5) == [] and window.next_report() == 10
    window.add([15], [("b", 1)])  # [15, 25): a session of its own between [0, 10) and [30, 40)
    assert window.next_report() == 10
    window.add([22, 8], [("x", 1), ("e", 1)])  # 8 bridges 0 and 15, 22 bridges 15 and 30
    assert window.next_report() == 40
    assert window.advance(math.inf) == [(0, 40, ("aebxc", 5))]


def test_a_late_event_is_one_whose_interval_ends_at_or_before_the_final_time() -> None:
    window = SessionWindow(MONOID, Sessions(10))
    window.add([100], [("z", 1)])
    window.advance(95)
    assert window.add([84, 85, 86, 90], [("a", 1), ("b", 1), ("c", 1), ("d", 1)]) == [0, 1]
    assert window.late == 2
    assert window.advance(math.inf) == [(86, 110, ("cdz", 3))]


def test_a_long_open_session_is_not_rescanned_from_its_first_event() -> None:
    window = SessionWindow(MONOID, Sessions(10))
    for t in range(0, 100, 5):
        window.add([t], [("a", 1)])
        assert window.advance(t - 20) == []
        state = window.state()
        assert state["scan"][0] == len(state["times"])  # the whole pending run is one scanned session
    window.add([92], [("b", 1)])  # inside the scanned run: the scan starts over and still finds it
    assert window.advance(math.inf) == [(0, 105, ("a" * 19 + "b" + "a", 21))]


@pytest.mark.parametrize("gap", [0, -1, 1.5, True, "10"])
def test_a_gap_that_is_not_a_positive_int_is_refused(gap) -> None:
    with pytest.raises(ValueError, match="session_gap"):
        Sessions(gap)


def test_bad_events_are_refused_and_leave_the_window_unchanged() -> None:
    fixed, dynamic = SessionWindow(MONOID, Sessions(10)), SessionWindow(MONOID, Sessions(None))
    with pytest.raises(TypeError, match="int microseconds"):
        fixed.add([1.5], [("a", 1)])
    with pytest.raises(ValueError, match="pass no ends"):
        fixed.add([1], [("a", 1)], [5])
    with pytest.raises(ValueError, match="needs the end"):
        dynamic.add([1], [("a", 1)])
    with pytest.raises(ValueError, match="must be an int after its time"):
        dynamic.add([1, 2], [("a", 1), ("b", 1)], [5, 2])
    assert fixed.times == dynamic.times == [] and fixed.late == dynamic.late == 0
