"""Time windows whose events go into panes as they come (mta.watermarked.panes), against
the naive models of Spark's windows in tests/test_watermarked_held.py (no Spark needed): any
arrival order, equal times, late events, a state round trip at every micro-batch."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from mta.monoid import Collect, Monoid, Record, Sum
from mta.watermarked import KeyWindow, PaneWindow, Windowing, key_window
from test_watermarked_held import batches_strategy, events_strategy, naive_time_windows, spark_streaming_windows


class Bag(Monoid):
    """Commutative: the values as a sorted tuple, so that a window shows every event it
    took, each once, whatever order they were combined in."""

    identity = ()
    commutative = True

    @staticmethod
    def combine(a: tuple, b: tuple) -> tuple:
        return tuple(sorted(a + b))

    def lift(self, value: int) -> tuple:
        return (value,)


def bag_rows(rows) -> list[tuple[int, int, list]]:
    return [(start, end, list(partial)) for start, end, partial in rows]


@given(events_strategy, st.integers(1, 40), st.integers(1, 40), st.integers(-45, 45), st.randoms())
@hsettings(max_examples=300, deadline=None)
def test_time_windows_in_any_arrival_order_equal_spark_semantics(events, size, slide, offset, rng) -> None:
    """Every window holding an event, with its events, whatever the order they come in;
    any start offset, negative times, slides longer than the size (gaps between windows)."""
    shuffled = list(events)
    rng.shuffle(shuffled)
    window = PaneWindow(Bag(), Windowing(size=size, slide=slide, offset=offset))
    window.add([t for t, _ in shuffled], Bag().lift_many([v for _, v in shuffled]))
    expected = [(s, e, sorted(values)) for s, e, values in naive_time_windows(events, size, slide, offset)]
    assert bag_rows(window.advance(math.inf)) == expected


@given(batches_strategy, st.integers(-40, 60), st.integers(1, 40), st.integers(1, 40), st.integers(-39, 39))
@hsettings(max_examples=300, deadline=None)
def test_a_stream_in_any_order_takes_late_events_as_spark_does(batches, start, size, slide, offset) -> None:
    """What MTAProcessor does with one key, micro-batch by micro-batch through a state round
    trip: catch up to the previous watermark, add the batch (in its arrival order), advance
    to the batch's watermark; a key without events advances when its timer fires. The rows
    and the late count of Spark's streaming window() (its naive model)."""
    offset = int(math.copysign(abs(offset) % slide, offset))
    windowing = Windowing(size=size, slide=slide, offset=offset)
    watermarks, level = [], start
    for _, step in batches:
        level += step
        watermarks.append(level)
    fed = [(events, watermark) for (events, _), watermark in zip(batches, watermarks)]
    state, rows, previous = None, [], -math.inf
    for n, (events, watermark) in enumerate(fed):
        key = PaneWindow(Bag(), windowing, state)
        wake, out = key.next_report(), []
        if events:
            if previous > key.done:
                out += key.advance(previous)
            key.add([t for t, _ in events], Bag().lift_many([v for _, v in events]))
            out += key.advance(watermark) if watermark > key.done else []
        elif wake is not None and wake <= watermark:
            out += key.advance(watermark)
        rows += [(n, *row) for row in bag_rows(out)]
        state = key.state()
        previous = watermark
    expected_rows, expected_late = spark_streaming_windows(fed, size, slide, offset)
    assert (rows, state["late"]) == (expected_rows, expected_late)


def test_equal_times_and_a_pane_filled_across_micro_batches() -> None:
    """Windows of 6 sliding by 4 (panes of 2): events at equal times, and a pane that later
    batches fill from behind the newest event, give the sums of every event of each window."""
    random_ = random.Random(5)
    key = PaneWindow(Sum(), Windowing(size=6, slide=4))
    events = [(t, random_.randrange(100)) for t in [9, 9, 3, 9, 10, 2, 2, 11, 9, 3]]
    for piece in (events[:3], events[3:7], events[7:]):
        key = PaneWindow(Sum(), Windowing(size=6, slide=4), key.state())
        assert key.add([t for t, _ in piece], [v for _, v in piece]) == []
    rows = key.advance(math.inf)
    assert rows == [(s, e, sum(v for t, v in events if s <= t < e)) for s, e in [(0, 6), (4, 10), (8, 14)]]


def test_key_window_takes_panes_for_commutative_time_windows_only() -> None:
    """Only for time windows of a commutative monoid: every other monoid keeps event-time
    order (first, last, collect_list) in the held-back window; PaneWindow refuses it."""
    time_windows = Windowing(size=10, slide=5)
    assert isinstance(key_window(Record(s=Sum()), time_windows), PaneWindow)
    assert isinstance(key_window(Record(s=Sum(), c=Collect()), time_windows), KeyWindow)
    assert isinstance(key_window(Sum(), Windowing(size=10, emit="event")), KeyWindow)
    with pytest.raises(ValueError, match="commutative"):
        PaneWindow(Collect(), time_windows)
    held = KeyWindow(Sum(), time_windows)
    held.add([3, 12], [1, 2])
    with pytest.raises(ValueError, match="held-back engine"):  # a state of the held-back window
        PaneWindow(Sum(), time_windows, held.state())
    # A key of a checkpoint written before panes goes on in the held-back window, where it was.
    again = key_window(Sum(), time_windows, held.state())
    assert isinstance(again, KeyWindow)
    rows = again.advance(100)
    assert rows and rows == held.advance(100) and again.advance(100) == []
